"""The PDF child process: PDFium (pypdfium2) runs only here, started by
``pages._run_child`` through ``preview/sandbox.py`` with a time limit and a
memory limit. It answers JSON or PNG bytes (nothing the parent would execute);
a file it cannot read becomes a message for ``PdfRejected``.
"""

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

if __name__ == "__main__":  # the child process (see sandbox.py): find the mnote package
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from mnote.preview import sandbox  # noqa: E402

MAX_PAGES = 5000
MAX_HEIGHT_PX = 8000
MAX_PAGE_PIXELS = 8_000_000
# The text layer is read up to these bounds (whichever comes first); pages
# beyond them are not searched.
MAX_TEXT_CHARS = 5_000_000
TEXT_TIME_BUDGET_S = 20.0


class _Rejected(Exception):
    """In the child: the message for PdfRejected."""


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _open(path: str):
    import pypdfium2 as pdfium

    messages = {
        2: "The file could not be opened.",
        3: "This file is not a valid PDF, or it is damaged.",
        4: "This PDF is password-protected; the preview cannot open it.",
        5: "This PDF uses an encryption the preview does not support.",
    }
    try:
        pdf = pdfium.PdfDocument(path)
    except pdfium.PdfiumError as e:
        raise _Rejected(messages.get(e.err_code, f"This PDF could not be read ({e}).")) from e
    count = len(pdf)
    if count == 0:
        raise _Rejected("This PDF has no pages.")
    if count > MAX_PAGES:
        raise _Rejected(f"This PDF has {count} pages; the preview shows at most {MAX_PAGES}.")
    return pdf


def _load_page(pdf, page_number: int):
    import pypdfium2 as pdfium

    if not 1 <= page_number <= len(pdf):
        raise _Rejected(f"There is no page {page_number}; this PDF has {len(pdf)} page{'s' if len(pdf) != 1 else ''}.")
    try:
        return pdf[page_number - 1]
    except pdfium.PdfiumError as e:
        raise _Rejected(f"Page {page_number} of this PDF is damaged.") from e


def _child_info(path: str) -> bytes:
    pdf = _open(path)
    pages = []
    for i in range(len(pdf)):
        width, height = pdf.get_page_size(i)  # /Rotate applied: as displayed
        pages.append((round(width, 2), round(height, 2)))
    title = (pdf.get_metadata_value("Title") or "").strip()
    return json.dumps({"page_count": len(pdf), "pages": pages, "title": title}).encode()


def _child_render(path: str, page: int, width: int) -> bytes:
    import ctypes

    from pypdfium2 import raw

    pdf_page = _load_page(_open(path), page)
    w_pt, h_pt = pdf_page.get_size()
    if not (w_pt > 0.5 and h_pt > 0.5 and math.isfinite(w_pt * h_pt)):
        raise _Rejected(f"Page {page} of this PDF has no usable size.")
    height = max(1, round(h_pt * width / w_pt))
    shrink = min(1.0, MAX_HEIGHT_PX / height, math.sqrt(MAX_PAGE_PIXELS / (width * height)))
    if shrink < 1.0:
        width, height = max(1, int(width * shrink)), max(1, int(height * shrink))
    bitmap = raw.FPDFBitmap_CreateEx(width, height, raw.FPDFBitmap_BGR, None, 0)
    if not bitmap:
        raise _Rejected("There is not enough memory to draw this page.")
    try:
        raw.FPDFBitmap_FillRect(bitmap, 0, 0, width, height, 0xFFFFFFFF)
        flags = raw.FPDF_ANNOT | raw.FPDF_REVERSE_BYTE_ORDER  # reversed: RGB, as PNG wants
        raw.FPDF_RenderPageBitmap(bitmap, pdf_page.raw, 0, 0, width, height, 0, flags)
        stride = raw.FPDFBitmap_GetStride(bitmap)
        pixels = ctypes.string_at(raw.FPDFBitmap_GetBuffer(bitmap), stride * height)
    finally:
        raw.FPDFBitmap_Destroy(bitmap)
    return _png_rgb(pixels, width, height, stride)


def _png_rgb(pixels: bytes, width: int, height: int, stride: int) -> bytes:
    """A PNG (8-bit RGB, filter 0) of RGB rows ``stride`` bytes apart; zlib level 3
    is within 1% of level 6 in size on page images at half the time."""
    import struct
    import zlib

    row = width * 3
    data = b"".join(b"\x00" + pixels[y * stride : y * stride + row] for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return _PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(data, 3)) + chunk(b"IEND", b"")


def _child_text(path: str) -> bytes:
    import time

    import pypdfium2 as pdfium

    deadline = time.monotonic() + TEXT_TIME_BUDGET_S
    pdf = _open(path)
    pages, total_chars, truncated = [], 0, False
    for index in range(len(pdf)):
        if total_chars >= MAX_TEXT_CHARS or time.monotonic() > deadline:
            truncated = True
            break
        try:
            textpage = pdf[index].get_textpage()
        except pdfium.PdfiumError:  # one unreadable page is searched as blank
            pages.append("")
            continue
        chars, _ = _page_chars(textpage, MAX_TEXT_CHARS - total_chars)
        pages.append("".join(chars))
        total_chars += len(chars)
    return json.dumps({"pages": pages, "page_count": len(pdf), "truncated": truncated}).encode()


def _child_boxes(path: str, page: int, first: int, end: int) -> bytes:
    """Boxes of characters ``first``..``end - 1`` (as ``_page_chars`` counts
    them) as [x0, y0, x1, y1] page fractions, top-left origin, as displayed;
    null for whitespace."""
    import ctypes

    from pypdfium2 import raw

    pdf_page = _load_page(_open(path), page)
    textpage = pdf_page.get_textpage()
    chars, indices = _page_chars(textpage, end)
    # The display transform (crop box, /Rotate) as an affine map, from three points.
    scale, dx, dy, corners = 1_000_000, ctypes.c_int(), ctypes.c_int(), []
    for px, py in ((0.0, 0.0), (1000.0, 0.0), (0.0, 1000.0)):
        raw.FPDF_PageToDevice(pdf_page.raw, 0, 0, scale, scale, 0, px, py, dx, dy)
        corners.append((dx.value / scale, dy.value / scale))
    (ox, oy), (ax, ay), (bx, by) = corners
    ax, ay, bx, by = (ax - ox) / 1000, (ay - oy) / 1000, (bx - ox) / 1000, (by - oy) / 1000
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    boxes = []
    for k in range(first, len(chars)):
        if chars[k].isspace() or not raw.FPDFText_GetCharBox(textpage.raw, indices[k], left, right, bottom, top):
            boxes.append(None)
            continue
        x_a, x_b = ox + ax * left.value + bx * bottom.value, ox + ax * right.value + bx * top.value
        y_a, y_b = oy + ay * left.value + by * bottom.value, oy + ay * right.value + by * top.value
        boxes.append([round(v, 5) for v in (min(x_a, x_b), min(y_a, y_b), max(x_a, x_b), max(y_a, y_b))])
    return json.dumps(boxes).encode()


def _page_chars(textpage, limit: int) -> tuple[list[str], Sequence[int]]:
    """The characters of a page (at most ``limit``) and each one's index in
    PDFium's character list: the page text in one call when it lines up with
    that list (nearly always), else character by character."""
    from pypdfium2 import raw

    count = min(textpage.count_chars(), limit)
    text = textpage.get_text_range(0, count, errors="replace")
    if len(text) == count:
        return list(text), range(count)
    chars, indices, i = [], [], 0
    while i < count:
        code, step = raw.FPDFText_GetUnicode(textpage.raw, i), 1
        if 0xD800 <= code < 0xDC00 and i + 1 < count:
            low = raw.FPDFText_GetUnicode(textpage.raw, i + 1)
            if 0xDC00 <= low < 0xE000:
                code, step = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), 2
        chars.append(chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd")
        indices.append(i)
        i += step
    return chars, indices


def _child_main(argv: list[str]) -> int:
    work = {"info": _child_info, "render": _child_render, "text": _child_text, "boxes": _child_boxes}
    return sandbox.child_main(argv, work, _Rejected, "This PDF needs more memory than the preview allows.")


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv))
