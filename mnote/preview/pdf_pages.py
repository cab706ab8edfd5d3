"""PDF pages for the preview: page sizes, page images and text on the text layer.

The files are whatever users put in their folders, so PDFium (pypdfium2) never
runs in the web process: each call starts this very file as a child process
with a time limit, a memory limit and at most ``MAX_WORKERS`` at a time. A file
that is broken, locked, hangs or crashes the reader becomes ``PdfRejected``
with a message for the user, never a crashed worker. The child's answer is
JSON or PNG bytes (nothing the parent would execute).

Finding the evidence text is pure Python here, over a cached copy of the text
layer (characters and their boxes): an exact match after normalisation first,
else the best fuzzy window. The result is a *text match* with its score; it
never stands in for a layout bbox.
"""

import base64
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz import fuzz

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_PAGES = 5000
MAX_WIDTH_PX = 2000
MIN_WIDTH_PX = 50
MAX_HEIGHT_PX = 8000
MAX_PAGE_PIXELS = 8_000_000
# The text layer is read up to these bounds (whichever comes first); pages
# beyond them are not searched.
MAX_TEXT_PAGES = 2000
MAX_TEXT_CHARS = 2_000_000
TEXT_TIME_BUDGET_S = 20.0
# Hard limits on each child process.
TIMEOUTS_S = {"info": 15.0, "render": 20.0, "text": TEXT_TIME_BUDGET_S + 10.0}
CHILD_MEMORY_BYTES = 1024 * 1024 * 1024
MAX_WORKERS = 4

MIN_SCORE = 0.6
MIN_NEEDLE_CHARS = 6  # evidence shorter than this (letters and digits) is not searched
MIN_FUZZY_CHARS = 20  # nor fuzzily below this: short strings match anything a little

_REJECTED_EXIT = 3


class PdfRejected(Exception):
    """The file cannot be previewed as a PDF; ``str(e)`` is a message for the user."""


class PdfBusy(PdfRejected):
    """Every PDF reader slot stayed busy; trying again later may work."""


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


@dataclass(frozen=True)
class PageText:
    """One page's text layer: ``text`` and, per character, four floats in
    ``boxes`` (x0, y0, x1, y1 as page fractions, top-left origin; NaN for
    characters the reader inferred, such as line breaks). ``boxes`` may be
    None when only the text is known (then matches have no rects)."""

    text: str
    boxes: Sequence[float] | None = None


# --- public functions -----------------------------------------------------------


def pdf_info(path: Path | str) -> PdfInfo:
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


def render_page_png(path: Path | str, page_number: int, *, width_px: int = 1000) -> bytes:
    """Page ``page_number`` (1-based) as a PNG ``width_px`` wide (at most
    2000), white background, annotations drawn. A page so tall that it would
    exceed 8000 px or 8 megapixels is drawn narrower instead."""
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
    path: Path | str,
    evidence_text: str,
    *,
    query: str = "",
    page_hint: int | None = None,
    min_score: float = MIN_SCORE,
) -> TextMatch | None:
    """Where ``evidence_text`` (a citation's locator evidence: a window of the
    cited chunk, perhaps prefixed with ``"Heading — "``) is on the PDF's text
    layer, or None when nothing scores ``min_score`` or more.

    Matching ignores case, width and compatibility forms (NFKC + casefold),
    whitespace, punctuation and line-end hyphenation, and works on characters,
    so CJK text without spaces matches too. ``query`` and ``page_hint`` only
    break ties between equally good places; the bare query is never searched.
    Only the pages within the text-layer bounds (``MAX_TEXT_PAGES``,
    ``MAX_TEXT_CHARS``, ``TEXT_TIME_BUDGET_S``) are searched.
    """
    return _text_index(path).locate(evidence_text, query=query, page_hint=page_hint, min_score=min_score)


def locate_text(
    pages: Sequence[PageText],
    evidence_text: str,
    *,
    query: str = "",
    page_hint: int | None = None,
    min_score: float = MIN_SCORE,
) -> TextMatch | None:
    """``find_text`` over a text layer already in hand (one ``PageText`` per page)."""
    return _TextIndex(list(pages)).locate(evidence_text, query=query, page_hint=page_hint, min_score=min_score)


# --- caches ---------------------------------------------------------------------

_cache_lock = threading.Lock()
_info_cache: OrderedDict = OrderedDict()
_png_cache: OrderedDict = OrderedDict()
_PNG_CACHE_BYTES = 48 * 1024 * 1024
_text_cache: OrderedDict = OrderedDict()
_TEXT_CACHE_CHARS = 4_000_000  # about 100 MB with boxes and the search index


def _trim(cache: OrderedDict, size: int) -> None:
    while len(cache) > size:
        cache.popitem(last=False)


def _trim_bytes(cache: OrderedDict, budget: int) -> None:
    total = sum(len(v) for v in cache.values())
    while total > budget and len(cache) > 1:
        total -= len(cache.popitem(last=False)[1])


def _checked(path: Path | str) -> tuple[str, tuple]:
    """The absolute path and a cache key that changes when the file does."""
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
        raise PdfRejected(f"The PDF is too large to preview ({stat.st_size // 2**20} MB; the limit is {MAX_FILE_BYTES // 2**20} MB).")
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError as e:
        raise PdfRejected(f"The file cannot be read: {e.strerror or e}.") from e
    if b"%PDF-" not in head:
        raise PdfRejected("This file is not a PDF (it has no PDF header).")
    return path, (path, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _text_index(path: Path | str) -> "_TextIndex":
    path, key = _checked(path)
    with _cache_lock:
        hit = _text_cache.get(key)
        if hit is not None:
            _text_cache.move_to_end(key)
            return hit
    data = json.loads(_run_child("text", path, {}))
    pages = []
    for item in data["pages"]:
        boxes = array("f", base64.b64decode(item["boxes"]))
        if len(boxes) != 4 * len(item["text"]):
            raise PdfRejected("The PDF reader returned an inconsistent text layer.")
        pages.append(PageText(item["text"], boxes))
    if data["truncated"]:
        log.info("text layer of %s read up to page %d of %d", path, len(pages), data["page_count"])
    index = _TextIndex(pages)
    with _cache_lock:
        _text_cache[key] = index
        total = sum(i.size for i in _text_cache.values())
        while total > _TEXT_CACHE_CHARS and len(_text_cache) > 1:
            total -= _text_cache.popitem(last=False)[1].size
    return index


# --- the child process ----------------------------------------------------------

_worker_slots = threading.BoundedSemaphore(MAX_WORKERS)


def _run_child(op: str, path: str, params: dict) -> bytes:
    timeout = TIMEOUTS_S[op]
    if not _worker_slots.acquire(timeout=timeout):
        raise PdfBusy("The PDF reader is busy; try again in a moment.")
    try:
        # -I: no user site, no PYTHON* variables, no script folder on sys.path
        # (the child imports pypdfium2 and the standard library only).
        command = [sys.executable, "-I", "-B", __file__, op, path, json.dumps(params)]
        done = subprocess.run(
            command, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env={"LC_ALL": "C.UTF-8"}, cwd="/"
        )
    except subprocess.TimeoutExpired as e:
        raise PdfRejected(f"Reading this PDF took too long (more than {timeout:g} s); it may be damaged or too complex.") from e
    except OSError as e:
        log.error("cannot start the PDF reader: %s", e)
        raise PdfRejected("The PDF reader could not be started.") from e
    finally:
        _worker_slots.release()
    if done.returncode == 0:
        return done.stdout
    if done.returncode == _REJECTED_EXIT:
        raise PdfRejected(json.loads(done.stdout)["rejected"])
    log.warning("PDF reader failed on %s (%s, exit %s): %s", path, op, done.returncode, done.stderr[-2000:].decode(errors="replace"))
    if done.returncode < 0:
        raise PdfRejected("The PDF reader crashed on this file; it may be damaged or too complex.")
    raise PdfRejected("The PDF reader failed on this file.")


class _Rejected(Exception):
    pass


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
        width, height = pdf.get_page_size(i)
        pages.append((round(width, 2), round(height, 2)))
    title = (pdf.get_metadata_value("Title") or "").strip()
    return json.dumps({"page_count": len(pdf), "pages": pages, "title": title}).encode()


def _child_render(path: str, page: int, width: int) -> bytes:
    import ctypes

    import pypdfium2.raw as raw

    pdf = _open(path)
    pdf_page = _load_page(pdf, page)
    w_pt, h_pt = pdf_page.get_size()
    if not (w_pt > 0.5 and h_pt > 0.5 and math.isfinite(w_pt * h_pt)):
        raise _Rejected(f"Page {page} of this PDF has no usable size.")
    height = max(1, round(h_pt * width / w_pt))
    shrink = min(1.0, MAX_HEIGHT_PX / height, math.sqrt(MAX_PAGE_PIXELS / (width * height)))
    if shrink < 1.0:
        width, height = max(1, int(width * shrink)), max(1, int(height * shrink))
    bitmap = raw.FPDFBitmap_Create(width, height, 0)  # 0: no alpha (BGRx)
    if not bitmap:
        raise _Rejected("There is not enough memory to draw this page.")
    try:
        raw.FPDFBitmap_FillRect(bitmap, 0, 0, width, height, 0xFFFFFFFF)
        raw.FPDF_RenderPageBitmap(bitmap, pdf_page.raw, 0, 0, width, height, 0, raw.FPDF_ANNOT | raw.FPDF_REVERSE_BYTE_ORDER)
        stride = raw.FPDFBitmap_GetStride(bitmap)
        pixels = ctypes.string_at(raw.FPDFBitmap_GetBuffer(bitmap), stride * height)
    finally:
        raw.FPDFBitmap_Destroy(bitmap)
    return _png_rgb(pixels, width, height, stride, bytes_per_pixel=4)


def _png_rgb(pixels: bytes, width: int, height: int, stride: int, *, bytes_per_pixel: int) -> bytes:
    """A PNG (8-bit RGB, no filtering) of RGB[x] rows ``stride`` bytes apart."""
    import struct
    import zlib

    rows = bytearray()
    for y in range(height):
        row = pixels[y * stride : y * stride + width * bytes_per_pixel]
        rgb = bytearray(width * 3)
        for channel in range(3):
            rgb[channel::3] = row[channel::bytes_per_pixel]
        rows += b"\x00" + rgb

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return _PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b"")


def _child_text(path: str) -> bytes:
    import ctypes
    import time

    import pypdfium2.raw as raw

    deadline = time.monotonic() + TEXT_TIME_BUDGET_S
    pdf = _open(path)
    pages, total_chars, truncated = [], 0, False
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    dx, dy = ctypes.c_int(), ctypes.c_int()
    scale = 1_000_000  # device size for the page → fraction transform
    for index in range(len(pdf)):
        if index >= MAX_TEXT_PAGES or total_chars >= MAX_TEXT_CHARS or time.monotonic() > deadline:
            truncated = True
            break
        try:
            page = pdf[index]
            textpage = page.get_textpage()
        except Exception:  # noqa: BLE001 - one unreadable page leaves a blank, not a rejected file
            pages.append({"text": "", "boxes": ""})
            continue
        # The display transform (crop box, /Rotate) as an affine map from three points.
        corners = []
        for px, py in ((0.0, 0.0), (1000.0, 0.0), (0.0, 1000.0)):
            raw.FPDF_PageToDevice(page.raw, 0, 0, scale, scale, 0, px, py, dx, dy)
            corners.append((dx.value / scale, dy.value / scale))
        (ox, oy), (ax, ay), (bx, by) = corners
        ax, ay, bx, by = (ax - ox) / 1000, (ay - oy) / 1000, (bx - ox) / 1000, (by - oy) / 1000
        chars: list[str] = []
        boxes = array("f")
        count = textpage.count_chars()
        nan = float("nan")
        i = 0
        while i < count and total_chars + len(chars) < MAX_TEXT_CHARS:
            code = raw.FPDFText_GetUnicode(textpage.raw, i)
            step = 1
            if 0xD800 <= code < 0xDC00 and i + 1 < count:
                low = raw.FPDFText_GetUnicode(textpage.raw, i + 1)
                if 0xDC00 <= low < 0xE000:
                    code, step = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), 2
            char = chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"
            if char.isspace() or raw.FPDFText_IsGenerated(textpage.raw, i) == 1:
                boxes.extend((nan, nan, nan, nan))
            else:
                raw.FPDFText_GetCharBox(textpage.raw, i, left, right, bottom, top)
                xs = [ox + ax * x + bx * y for x, y in ((left.value, bottom.value), (right.value, top.value))]
                ys = [oy + ay * x + by * y for x, y in ((left.value, bottom.value), (right.value, top.value))]
                boxes.extend((min(xs), min(ys), max(xs), max(ys)))
            chars.append(char)
            i += step
        total_chars += len(chars)
        pages.append({"text": "".join(chars), "boxes": base64.b64encode(boxes.tobytes()).decode()})
        if i < count:
            truncated = True
            break
    return json.dumps({"pages": pages, "page_count": len(pdf), "truncated": truncated}).encode()


def _child_main(argv: list[str]) -> int:
    import resource

    op, path, params = argv[1], argv[2], json.loads(argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    cpu = math.ceil(TIMEOUTS_S[op]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    work = {"info": _child_info, "render": _child_render, "text": _child_text}[op]
    try:
        out = work(path, **params)
    except _Rejected as e:
        out, status = json.dumps({"rejected": str(e)}).encode(), _REJECTED_EXIT
    except MemoryError:
        out, status = json.dumps({"rejected": "This PDF needs more memory than the preview allows."}).encode(), _REJECTED_EXIT
    else:
        status = 0
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    return status


# --- matching on the text layer -------------------------------------------------

_HEADING_SEPARATOR = " — "  # how citation_text.evidence_window prefixes the heading
_TRIGRAM_PAGES = 4  # fuzzy search looks at the pages sharing most character trigrams with the evidence


def _fold_char(char: str) -> str:
    """Letters and digits of one character after NFKC + casefold ('' for
    whitespace, punctuation and hyphens, which matching ignores)."""
    if char.isascii():
        return char.lower() if char.isalnum() else ""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", char).casefold())
    return "".join(c for c in folded if c.isalnum())


def _skeleton(text: str) -> tuple[str, list[int]]:
    """``text`` reduced to its folded letters and digits, and for each of them
    the index of the character it came from. Combining marks are folded with
    their base character, so "é" written as e + U+0301 folds like "é"."""
    out: list[str] = []
    origin: list[int] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        folded = _fold_char(text[i]) if j == i + 1 else "".join(
            c for c in unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text[i:j]).casefold()) if c.isalnum()
        )
        for c in folded:
            out.append(c)
            origin.append(i)
        i = j
    return "".join(out), origin


@dataclass
class _TextIndex:
    pages: list[PageText]
    skeleton: str = ""
    page_of: array = field(default_factory=lambda: array("i"))  # skeleton index → page index
    char_of: array = field(default_factory=lambda: array("i"))  # skeleton index → character index on that page
    page_starts: list[int] = field(default_factory=list)  # skeleton index where each page starts
    trigrams: list[set[str]] = field(default_factory=list)

    def __post_init__(self):
        parts, offset = [], 0
        for number, page in enumerate(self.pages):
            self.page_starts.append(offset)
            text, origin = _skeleton(page.text)
            parts.append(text)
            offset += len(text)
            self.page_of.extend([number] * len(text))
            self.char_of.extend(origin)
            self.trigrams.append({text[k : k + 3] for k in range(len(text) - 2)})
        self.skeleton = "".join(parts)
        self.page_starts.append(len(self.skeleton))

    @property
    def size(self) -> int:
        return len(self.skeleton)

    def locate(self, evidence: str, *, query: str, page_hint: int | None, min_score: float) -> TextMatch | None:
        needles = [n for n in dict.fromkeys(_skeleton(t)[0] for t in _evidence_variants(evidence)) if len(n) >= MIN_NEEDLE_CHARS]
        if not needles or not self.skeleton:
            return None
        hint = page_hint - 1 if page_hint else None
        wanted = _skeleton(query)[0]
        # Exact: the first variant found (the one with the heading first, so it is highlighted too).
        for needle in needles:
            spans = []
            start = self.skeleton.find(needle)
            while start != -1 and len(spans) < 50:
                spans.append((start, start + len(needle)))
                start = self.skeleton.find(needle, start + 1)
            if spans:
                best = min(spans, key=lambda s: abs(self._main_page(*s) - hint) if hint is not None else 0)
                return self._match(*best, score=1.0, method="exact")
        best_key, best_span = None, None
        for needle in needles:
            if len(needle) < MIN_FUZZY_CHARS:
                continue
            for start, end in self._fuzzy_candidates(needle, hint):
                window = self.skeleton[start:end]
                found = fuzz.partial_ratio_alignment(needle, window, score_cutoff=min_score * 100)
                if found is None:
                    continue
                span = (start + found.dest_start, start + found.dest_end)
                score = fuzz.ratio(needle, self.skeleton[span[0] : span[1]]) / 100
                if score < min_score:
                    continue
                page = self._main_page(*span)
                key = (round(score, 2), bool(wanted) and wanted in self.skeleton[span[0] : span[1]],
                       -abs(page - hint) if hint is not None else 0, score)
                if best_key is None or key > best_key:
                    best_key, best_span = key, span
        if best_span is None:
            return None
        return self._match(*best_span, score=best_key[3], method="fuzzy")

    def _fuzzy_candidates(self, needle: str, hint: int | None) -> list[tuple[int, int]]:
        """Skeleton ranges to align the needle in: the pages sharing most of its
        trigrams (and the hinted page), each widened by the needle's length on
        both sides so a passage across a page break is found whole."""
        grams = {needle[k : k + 3] for k in range(len(needle) - 2)}
        ranked = sorted(range(len(self.pages)), key=lambda p: -len(grams & self.trigrams[p]))
        chosen = [p for p in ranked[:_TRIGRAM_PAGES] if grams & self.trigrams[p]]
        if hint is not None and 0 <= hint < len(self.pages) and hint not in chosen:
            chosen.append(hint)
        pad = len(needle)
        return [(max(0, self.page_starts[p] - pad), min(self.size, self.page_starts[p + 1] + pad)) for p in chosen]

    def _main_page(self, start: int, end: int) -> int:
        pages = self.page_of[start:end]
        return max(set(pages), key=pages.count)

    def _match(self, start: int, end: int, *, score: float, method: str) -> TextMatch:
        page = self._main_page(start, end)
        on_page = [self.char_of[k] for k in range(start, end) if self.page_of[k] == page]
        first, last = min(on_page), max(on_page)
        text = self.pages[page].text
        matched = re.sub(r"\s+", " ", text[first : last + 1].replace("\x02", "-")).strip()
        return TextMatch(
            page=page + 1,
            rects=_line_rects(self.pages[page].boxes, first, last + 1),
            score=round(score, 3),
            matched_text=matched,
            method=method,
        )


def _evidence_variants(evidence: str) -> list[str]:
    """The evidence as given, then without its heading prefix (a heading is
    often not printed right before the passage on the page)."""
    variants = [evidence]
    if _HEADING_SEPARATOR in evidence:
        variants.append(evidence.split(_HEADING_SEPARATOR, 1)[1])
    return variants


def _line_rects(boxes: Sequence[float] | None, first: int, end: int) -> list[list[float]]:
    """The boxes of characters ``first``..``end - 1`` merged into one rectangle
    per line: a character starts a new line when it does not overlap the
    current line vertically or it goes back to the left."""
    if boxes is None:
        return []
    lines: list[list[float]] = []
    for k in range(first, end):
        x0, y0, x1, y1 = boxes[4 * k : 4 * k + 4]
        if math.isnan(x0) or x1 <= x0 and y1 <= y0:
            continue
        if lines:
            line = lines[-1]
            overlap = min(line[3], y1) - max(line[1], y0)
            if overlap > 0.5 * min(line[3] - line[1], y1 - y0) and x0 >= line[2] - 0.5 * (x1 - x0):
                lines[-1] = [min(line[0], x0), min(line[1], y0), max(line[2], x1), max(line[3], y1)]
                continue
        lines.append([x0, y0, x1, y1])
    return [[round(min(max(v, 0.0), 1.0), 4) for v in line] for line in lines]


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv))
