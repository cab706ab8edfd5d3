"""PDF pages for the preview: page sizes, page images, text found on the text layer."""

from mnote.preview.pdf.pages import (
    PdfBusy,
    PdfInfo,
    PdfRejected,
    find_text,
    locate_text,
    pdf_info,
    preview_pdf,
    render_page_png,
)
from mnote.preview.pdf.matching import TextMatch

# PDFium runs only in the PDF reader's own limited child (child.py): the
# preview calls this package's functions directly, not through render_child.
RUNS_OWN_CHILD = True

__all__ = [
    "PdfBusy",
    "PdfInfo",
    "PdfRejected",
    "TextMatch",
    "find_text",
    "locate_text",
    "pdf_info",
    "preview_pdf",
    "render_page_png",
]
