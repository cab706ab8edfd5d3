"""PDF pages for the preview: page sizes, page images and text on the text layer.

The files are whatever users put in their folders, so PDFium (pypdfium2) never
runs in the web process: each call starts this very file as a child process
with a time limit, a memory limit and at most ``MAX_WORKERS`` at a time. A file
that is broken, locked, hangs or crashes the reader becomes ``PdfRejected``
with a message for the user, never a crashed worker. The child's answer is
JSON or PNG bytes (nothing the parent would execute).

Finding the evidence text is pure Python here, over a cached copy of the
page texts: an exact match after normalisation first, else the best fuzzy
window; only the matched span's character boxes are then asked for. The result
is a *text match* with its score; it never stands in for a layout bbox.
"""

import bisect
import json
import logging
import math
import os
import re
import subprocess
import sys
import threading
import unicodedata
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from rapidfuzz import fuzz

if __name__ == "__main__":  # the child process (see sandbox.py): find the mnote package
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from mnote.preview import sandbox  # noqa: E402

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_PAGES = 5000
MAX_WIDTH_PX = 2000
MIN_WIDTH_PX = 50
MAX_HEIGHT_PX = 8000
MAX_PAGE_PIXELS = 8_000_000
# The text layer is read up to these bounds (whichever comes first); pages
# beyond them are not searched.
MAX_TEXT_CHARS = 5_000_000
TEXT_TIME_BUDGET_S = 20.0
MAX_SPAN_CHARS = 5000  # boxes are read for a matched span up to this long
# Hard limits on each child process.
TIMEOUTS_S = {"info": 15.0, "render": 20.0, "text": TEXT_TIME_BUDGET_S + 10.0, "boxes": 15.0}
CHILD_MEMORY_BYTES = 1024 * 1024 * 1024
MAX_WORKERS = sandbox.MAX_WORKERS

MIN_SCORE = 0.6
MIN_NEEDLE_CHARS = 6  # evidence shorter than this (letters and digits) is not searched
MIN_FUZZY_CHARS = 20  # nor fuzzily below this: short strings match anything a little



class PdfRejected(Exception):
    """The file cannot be previewed as a PDF; ``str(e)`` is a message for the user."""


class PdfBusy(PdfRejected):
    """Every PDF reader slot stayed busy; trying again later may work."""

    transient = True  # never cached as the file's refusal


@dataclass(frozen=True)
class PdfInfo:
    page_count: int
    pages: list[tuple[float, float]]  # (width, height) in points, as displayed (page rotation applied)
    title: str | None


@dataclass(frozen=True)
class TextMatch:
    page: int  # 1-based
    rects: list[list[float]]  # [x0, y0, x1, y1] page fractions, top-left origin, one per line of the match
    score: float  # 0..1; 1.0 for an exact match
    matched_text: str
    method: str  # "exact" | "fuzzy"
    # Every page the match covers, in order: [{"page": n, "rects": [...]}, …].
    parts: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class PageText:
    """One page's text layer: ``text`` and, per character, four floats in
    ``boxes`` (x0, y0, x1, y1 as page fractions, top-left origin; NaN for a
    character without a box, such as a space or line break). ``boxes`` may be
    None when only the text is known (then matches have no rects)."""

    text: str
    boxes: Sequence[float] | None = None


# --- public functions -----------------------------------------------------------


def pdf_info(path: Path | str | BinaryIO) -> PdfInfo:
    """Page count, page sizes and title of the PDF at ``path``."""
    path, key = _checked(path)
    with _cache_lock:
        hit = _info_cache.get(key)
    if hit is not None:
        return hit
    data = json.loads(_run_child("info", path, {}))
    info = PdfInfo(
        page_count=int(data["page_count"]),
        pages=[(float(w), float(h)) for w, h in data["pages"]],
        title=str(data["title"]) if data["title"] else None,
    )
    with _cache_lock:
        _info_cache[key] = info
        _trim(_info_cache, 256)
    return info


def render_page_png(path: Path | str | BinaryIO, page_number: int, *, width_px: int = 1000) -> bytes:
    """Page ``page_number`` (1-based) as a PNG ``width_px`` wide (clamped to
    50..2000), white background, annotations drawn. A page so tall that it
    would pass 8000 px or 8 megapixels is drawn narrower instead."""
    path, key = _checked(path)
    if page_number < 1:
        raise PdfRejected(f"There is no page {page_number}; pages are numbered from 1.")
    width_px = max(MIN_WIDTH_PX, min(int(width_px), MAX_WIDTH_PX))
    cache_key = (key, page_number, width_px)
    with _cache_lock:
        hit = _png_cache.get(cache_key)
        if hit is not None:
            _png_cache.move_to_end(cache_key)
            return hit
    png = _run_child("render", path, {"page": page_number, "width": width_px})
    if not png.startswith(_PNG_SIGNATURE):
        raise PdfRejected("The PDF reader returned no image for this page.")
    with _cache_lock:
        _png_cache[cache_key] = png
        _trim_bytes(_png_cache, _PNG_CACHE_BYTES)
    return png


def find_text(
    path: Path | str | BinaryIO,
    evidence_text: str,
    *,
    query: str = "",
    page_hint: int | None = None,
    min_score: float = MIN_SCORE,
) -> TextMatch | None:
    """Where ``evidence_text`` (a citation's locator evidence: a window of the
    cited chunk, perhaps prefixed with ``"Heading — "``) is on the PDF's text
    layer, or None when nothing scores ``min_score`` or more.

    Matching ignores case, width, compatibility forms and accents (NFKD +
    casefold), whitespace, punctuation and line-end hyphenation, and works on
    characters, so CJK text without spaces matches too. ``query`` and
    ``page_hint`` only break ties between equally good places; the bare query
    is never searched. Pages past the text-layer bounds (``MAX_TEXT_CHARS``,
    ``TEXT_TIME_BUDGET_S``) are not searched. A match whose character boxes
    cannot be read comes back with no rects.
    """
    path, key = _checked(path)
    cache_key = (key, evidence_text, query, page_hint, min_score)
    with _cache_lock:
        if cache_key in _match_cache:
            return _match_cache[cache_key]
    index = _text_index(path, key)
    span = index.locate(evidence_text, query=query, page_hint=page_hint, min_score=min_score)
    match = index.match(span, lambda page, first, end: _span_boxes(path, page, first, end)) if span else None
    with _cache_lock:
        _match_cache[cache_key] = match
        _trim(_match_cache, 512)
    return match


def locate_text(
    pages: Sequence[PageText],
    evidence_text: str,
    *,
    query: str = "",
    page_hint: int | None = None,
    min_score: float = MIN_SCORE,
) -> TextMatch | None:
    """``find_text`` over a text layer already in hand (one ``PageText`` per page)."""
    index = _TextIndex([page.text for page in pages])
    span = index.locate(evidence_text, query=query, page_hint=page_hint, min_score=min_score)
    if span is None:
        return None
    return index.match(span, lambda page, first, end: (pages[page].boxes or [])[4 * first : 4 * end] or None)


# --- caches ---------------------------------------------------------------------

_cache_lock = threading.Lock()
_info_cache: OrderedDict = OrderedDict()
_match_cache: OrderedDict = OrderedDict()
_png_cache: OrderedDict = OrderedDict()
_PNG_CACHE_BYTES = 48 * 1024 * 1024
_text_cache: OrderedDict = OrderedDict()
_TEXT_CACHE_CHARS = 10_000_000  # about 150 MB with the search index


def _trim(cache: OrderedDict, size: int) -> None:
    while len(cache) > size:
        cache.popitem(last=False)


def _trim_bytes(cache: OrderedDict, budget: int) -> None:
    total = sum(len(v) for v in cache.values())
    while total > budget and len(cache) > 1:
        total -= len(cache.popitem(last=False)[1])


def _checked(path: Path | str | BinaryIO) -> tuple[str, tuple]:
    """The absolute path and a cache key that changes when the file does.

    An open file (from ``open_source_file``) is handed to the child as that
    very file descriptor (``/dev/fd/N``), never by a name that could be
    swapped for another file in between."""
    if hasattr(path, "fileno"):
        return _checked_open_file(path.fileno())
    path = os.path.abspath(path)
    try:
        stat = os.stat(path)
    except FileNotFoundError as e:
        raise PdfRejected("The file is missing.") from e
    except OSError as e:
        raise PdfRejected(f"The file cannot be read: {e.strerror or e}.") from e
    if not os.path.isfile(path):
        raise PdfRejected("This is not a file.")
    if stat.st_size == 0:
        raise PdfRejected("The file is empty.")
    if stat.st_size > MAX_FILE_BYTES:
        raise PdfRejected(
            f"The PDF is too large to preview ({stat.st_size // 2**20} MB; the limit is {MAX_FILE_BYTES // 2**20} MB)."
        )
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError as e:
        raise PdfRejected(f"The file cannot be read: {e.strerror or e}.") from e
    if b"%PDF-" not in head:
        raise PdfRejected("This file is not a PDF (it has no PDF header).")
    return path, (path, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _checked_open_file(fd: int) -> tuple[str, tuple]:
    stat = os.fstat(fd)
    if stat.st_size == 0:
        raise PdfRejected("The file is empty.")
    if stat.st_size > MAX_FILE_BYTES:
        raise PdfRejected(
            f"The PDF is too large to preview ({stat.st_size // 2**20} MB; the limit is {MAX_FILE_BYTES // 2**20} MB)."
        )
    try:
        head = os.pread(fd, 1024, 0)
    except OSError as e:
        raise PdfRejected(f"The file cannot be read: {e.strerror or e}.") from e
    if b"%PDF-" not in head:
        raise PdfRejected("This file is not a PDF (it has no PDF header).")
    return f"{_FD_PATH}{fd}", ("fd", stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _text_index(path: str, key: tuple) -> "_TextIndex":
    with _cache_lock:
        hit = _text_cache.get(key)
        if hit is not None:
            _text_cache.move_to_end(key)
            return hit
    data = json.loads(_run_child("text", path, {}))
    if data["truncated"]:
        log.info("text layer of %s read up to page %d of %d", path, len(data["pages"]), data["page_count"])
    index = _TextIndex([str(text) for text in data["pages"]])
    with _cache_lock:
        _text_cache[key] = index
        total = sum(i.size for i in _text_cache.values())
        while total > _TEXT_CACHE_CHARS and len(_text_cache) > 1:
            total -= _text_cache.popitem(last=False)[1].size
    return index


def _span_boxes(path: str, page: int, first: int, end: int) -> list[float] | None:
    """Boxes of characters ``first``..``end - 1`` of page index ``page``, flat."""
    end = min(end, first + MAX_SPAN_CHARS)
    try:
        boxes = json.loads(_run_child("boxes", path, {"page": page + 1, "first": first, "end": end}))
    except PdfRejected as e:
        log.warning("no character boxes for page %d of %s: %s", page + 1, path, e)
        return None
    return [math.nan if v is None else float(v) for box in boxes for v in (box or (None,) * 4)]


# --- the child process ----------------------------------------------------------

_worker_slots = sandbox.render_slots
_FD_PATH = sandbox.FD_PATH


def _run_child(op: str, path: str, params: dict) -> bytes:
    timeout = TIMEOUTS_S[op]
    too_slow = f"Reading this PDF took too long (more than {timeout:g} s); it may be damaged or too complex."
    try:
        return sandbox.run_child(
            __file__, op, path, params, timeout=timeout, memory=CHILD_MEMORY_BYTES, slots=_worker_slots, log=log
        )
    except sandbox.ChildRejected as e:
        raise PdfRejected(str(e)) from e
    except sandbox.ChildFailed as e:
        message = {
            "busy": None,
            "timeout": too_slow,
            "start": "The PDF reader could not be started.",
            "memory": "This PDF needs more memory than the preview allows, or it is damaged.",
            "crash": "The PDF reader crashed on this file; it may be damaged or too complex.",
        }.get(e.reason, "The PDF reader failed on this file.")
        if message is None:
            raise PdfBusy("The PDF reader is busy; try again in a moment.") from e
        refusal = PdfRejected(message)
        if e.reason == "timeout":
            refusal.remember_s = 600  # maybe the file, maybe a busy machine: remembered for a while only
        raise refusal from e


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


# --- matching on the text layer -------------------------------------------------

_HEADING_SEPARATOR = " — "  # how citation_text.evidence_window prefixes the heading
_FUZZY_PAGES = 4  # fuzzy alignment runs on the pages holding most of the evidence's 4-grams
_PROBE_GRAMS = 64  # 4-grams sampled from the evidence for that


_ASCII_WORDS_OR_OTHER = re.compile(r"[A-Za-z0-9]+|[^\x00-\x7f]+")
_folded: dict[str, str] = {}  # one entry per distinct character ever seen: small


def _fold_char(char: str) -> str:
    """The letters and digits of one character with case, width, compatibility
    forms and accents folded (NFKD + casefold, combining marks dropped); ''
    for whitespace, punctuation and hyphens, which matching ignores."""
    folded = _folded.get(char)
    if folded is None:
        decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", char).casefold())
        folded = _folded[char] = "".join(c for c in decomposed if c.isalnum())
    return folded


def _skeleton(text: str) -> tuple[str, list[int]]:
    """``text`` reduced to its folded letters and digits (see ``_fold_char``),
    and for each of them the index of the character it came from. CJK text
    keeps every character, so it matches whatever spaces a PDF put in it."""
    out: list[str] = []
    origin: list[int] = []
    for run in _ASCII_WORDS_OR_OTHER.finditer(text):
        chunk, start = run.group(), run.start()
        if chunk[0].isascii():
            out.append(chunk.lower())
            origin.extend(range(start, run.end()))
            continue
        for i, char in enumerate(chunk, start):
            folded = _fold_char(char)
            if folded:
                out.append(folded)
                origin.extend([i] * len(folded))
    return "".join(out), origin


class _TextIndex:
    """The page texts of one document as one skeleton string (see
    ``_skeleton``), with a way back from each skeleton character to its page
    and its character on that page."""

    def __init__(self, pages: list[str]):
        self.pages = pages
        parts, origins, self.page_starts = [], array("i"), []
        offset = 0
        for text in pages:
            folded, origin = _skeleton(text)
            self.page_starts.append(offset)
            parts.append(folded)
            origins.extend(origin)
            offset += len(folded)
        self.skeleton = "".join(parts)
        self.char_of = origins  # skeleton index → character index on its page
        self.page_starts.append(len(self.skeleton))

    @property
    def size(self) -> int:
        return len(self.skeleton)

    def page_of(self, k: int) -> int:
        return bisect.bisect_right(self.page_starts, k) - 1

    def locate(self, evidence: str, *, query: str, page_hint: int | None, min_score: float) -> "_Span | None":
        variants = (_skeleton(t)[0] for t in _evidence_variants(evidence))
        needles = [n for n in dict.fromkeys(variants) if len(n) >= MIN_NEEDLE_CHARS]
        if not needles or not self.skeleton:
            return None
        hint = page_hint - 1 if page_hint else None
        # Exact: the first variant found (the one with the heading first, so it is highlighted too).
        for needle in needles:
            spans = []
            start = self.skeleton.find(needle)
            while start != -1 and len(spans) < 50:
                spans.append(_Span(start, start + len(needle), 1.0, "exact"))
                start = self.skeleton.find(needle, start + 1)
            if spans:
                return min(spans, key=lambda s: abs(self._main_page(s) - hint) if hint is not None else 0)
        wanted = _skeleton(query)[0]
        best_key, best = None, None
        for needle in needles:
            if len(needle) < MIN_FUZZY_CHARS:
                continue
            for start, end in self._fuzzy_ranges(needle, hint):
                found = fuzz.partial_ratio_alignment(needle, self.skeleton[start:end], score_cutoff=min_score * 100)
                if found is None:
                    continue
                span = self._refined(needle, start + found.dest_start, start + found.dest_end)
                if span.score < min_score:
                    continue
                # Equally good places: the one holding the query, then the one
                # nearest the hinted page, then the one covering more evidence.
                key = (
                    round(span.score, 2),
                    bool(wanted) and wanted in self.skeleton[span.start : span.end],
                    -abs(self._main_page(span) - hint) if hint is not None else 0,
                    len(needle),
                    span.score,
                )
                if best_key is None or key > best_key:
                    best_key, best = key, span
        return best

    def match(self, span: "_Span", boxes_of: Callable[[int, int, int], Sequence[float] | None]) -> TextMatch:
        """The TextMatch for ``span``; ``boxes_of(page index, first, end)``
        gives the flat boxes of those characters of the page (or None). A
        span across a page break gets the rects of every page it covers."""
        page = self._main_page(span)
        parts, text, rects = [], "", []
        for p in range(self.page_of(span.start), self.page_of(max(span.start, span.end - 1)) + 1):
            on_page = [self.char_of[k] for k in range(max(span.start, self.page_starts[p]), min(span.end, self.page_starts[p + 1]))]
            if not on_page:
                continue
            first, end = min(on_page), max(on_page) + 1
            if span.method == "fuzzy":
                first, end = _whole_words(self.pages[p], first, end)
            boxes = boxes_of(p, first, end)
            part_rects = _line_rects(boxes) if boxes else []
            parts.append({"page": p + 1, "rects": part_rects})
            if p == page:
                # \x02 (or U+FFFE) is PDFium's hyphen at a line end: the word is shown joined.
                text = re.sub(r"\s+", " ", re.sub("[\x02\ufffe]", "", self.pages[p][first:end])).strip()
                rects = part_rects
        return TextMatch(page=page + 1, rects=rects, score=round(span.score, 3), matched_text=text, method=span.method, parts=parts)

    def _refined(self, needle: str, start: int, end: int) -> "_Span":
        """The aligned window (as long as the needle) with its ends moved to
        where the whole needle matches best, so an inserted or dropped word
        does not cut the highlight short."""
        slack = max(3, len(needle) // 10)
        best = (fuzz.ratio(needle, self.skeleton[start:end]), start, end)
        for _ in range(2):
            _, start, end = best
            for e in range(max(start + 1, end - slack), min(self.size, end + slack) + 1):
                best = max(best, (fuzz.ratio(needle, self.skeleton[start:e]), start, e), key=lambda b: b[0])
            _, start, end = best
            for s in range(max(0, start - slack), min(end - 1, start + slack) + 1):
                best = max(best, (fuzz.ratio(needle, self.skeleton[s:end]), s, end), key=lambda b: b[0])
        return _Span(best[1], best[2], best[0] / 100, "fuzzy")

    def _fuzzy_ranges(self, needle: str, hint: int | None) -> list[tuple[int, int]]:
        """Skeleton ranges to align the needle in: the pages holding most of
        its 4-grams (and the hinted page), each widened by the needle's length
        on both sides so a passage across a page break is found whole."""
        step = max(1, (len(needle) - 3) // _PROBE_GRAMS)
        grams = {needle[k : k + 4] for k in range(0, len(needle) - 3, step)}
        pages, starts = len(self.pages), self.page_starts
        hits = [sum(self.skeleton.find(g, starts[p], starts[p + 1]) != -1 for g in grams) for p in range(pages)]
        chosen = [p for p in sorted(range(pages), key=lambda p: -hits[p])[:_FUZZY_PAGES] if hits[p]]
        if hint is not None and 0 <= hint < pages and hint not in chosen:
            chosen.append(hint)
        pad = len(needle)
        return [(max(0, self.page_starts[p] - pad), min(self.size, self.page_starts[p + 1] + pad)) for p in chosen]

    def _main_page(self, span: "_Span") -> int:
        """The page holding most of the span."""
        first, last = self.page_of(span.start), self.page_of(max(span.start, span.end - 1))
        return max(
            range(first, last + 1),
            key=lambda p: min(span.end, self.page_starts[p + 1]) - max(span.start, self.page_starts[p]),
        )


@dataclass
class _Span:
    start: int  # skeleton indices
    end: int
    score: float
    method: str


def _whole_words(text: str, first: int, end: int) -> tuple[int, int]:
    """``first``..``end`` widened to whole words (a fuzzy window may cut one);
    not through CJK text, which has no word boundaries."""

    def in_word(k: int) -> bool:
        return 0 <= k < len(text) and text[k].isalnum() and unicodedata.east_asian_width(text[k]) not in "WF"

    limit = 40
    while first > 0 and limit and in_word(first - 1) and in_word(first):
        first, limit = first - 1, limit - 1
    limit = 40
    while end < len(text) and limit and in_word(end) and in_word(end - 1):
        end, limit = end + 1, limit - 1
    return first, end


def _evidence_variants(evidence: str) -> list[str]:
    """The evidence as given, then without its heading prefix (a heading is
    often not printed right before the passage on the page)."""
    variants = [evidence]
    if _HEADING_SEPARATOR in evidence:
        variants.append(evidence.split(_HEADING_SEPARATOR, 1)[1])
    return variants


def _line_rects(boxes: Sequence[float]) -> list[list[float]]:
    """Character boxes (flat, four floats each, NaN for none) merged into one
    rectangle per line. A character continues the line when it moves on from the
    previous one along the writing direction (x, or y on rotated pages; set by
    the line's first two characters), at most 1.5 em from it, and stays within
    a quarter em of the line's band (so punctuation and underscores stay in)."""
    lines: list[list] = []  # [x0, y0, x1, y1, axis or None, previous box]
    for k in range(0, len(boxes) - 3, 4):
        box = boxes[k : k + 4]
        x0, y0, x1, y1 = box
        if math.isnan(x0) or (x1 <= x0 and y1 <= y0):
            continue
        line = lines[-1] if lines else None
        axes = () if line is None else (0, 1) if line[4] is None else (line[4],)
        axis = next((a for a in axes if _continues(line, box, a)), None)
        if axis is None:
            lines.append([x0, y0, x1, y1, None, box])
        else:
            lines[-1] = [min(line[0], x0), min(line[1], y0), max(line[2], x1), max(line[3], y1), axis, box]
    return [[round(min(max(v, 0.0), 1.0), 4) for v in line[:4]] for line in lines]


def _continues(line: list, box: Sequence[float], axis: int) -> bool:
    """Whether ``box`` continues ``line`` along ``axis`` (0: x, 1: y)."""
    across = 1 - axis
    previous = line[5]
    em = max(line[across + 2] - line[across], box[across + 2] - box[across])
    if max(box[across] - line[across + 2], line[across] - box[across + 2]) > 0.25 * em:
        return False
    along = abs(box[axis] + box[axis + 2] - previous[axis] - previous[axis + 2])
    if along < abs(box[across] + box[across + 2] - previous[across] - previous[across + 2]):
        return False
    return max(box[axis] - previous[axis + 2], previous[axis] - box[axis + 2]) < 1.5 * em


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv))


def preview_pdf(fp, ctx) -> dict:
    """Page sizes for the preview's page images; the PDF itself is read by
    the limited subprocess, from the file the preview opened."""
    info = pdf_info(fp)
    return {"pages": [{"number": i + 1, "width": w, "height": h} for i, (w, h) in enumerate(info.pages)], "title": info.title or "", "html": ""}
