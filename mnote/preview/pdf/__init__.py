"""PDF pages for the preview: page sizes, page images, text found on the text layer."""

from mnote.preview.pdf.pages import (
    PdfBusy,
    PdfInfo,
    PdfRejected,
    TextMatch,
    find_text,
    locate_text,
    pdf_info,
    preview_pdf,
    render_page_png,
)

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
