"""PDF pages for the preview: page sizes, page images and text on the text layer.

The files are whatever users put in their folders, so PDFium (pypdfium2) never
runs in the web process: each call starts ``child.py`` as a child process
with a time limit, a memory limit and at most ``MAX_WORKERS`` at a time. A file
that is broken, locked, hangs or crashes the reader becomes ``PdfRejected``
with a message for the user, never a crashed worker.

Finding the evidence text (``matching.py``) is pure Python, over a cached copy
of the page texts; only the matched span's character boxes are then asked for.
"""

import json
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from mnote.preview import sandbox
from mnote.preview.pdf import child
from mnote.preview.pdf.child import _PNG_SIGNATURE, TEXT_TIME_BUDGET_S
from mnote.preview.pdf.matching import MIN_SCORE, PageText, TextMatch, _TextIndex

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_WIDTH_PX = 2000
MIN_WIDTH_PX = 50
MAX_SPAN_CHARS = 5000  # boxes are read for a matched span up to this long
# Hard limits on each child process.
TIMEOUTS_S = {"info": 15.0, "render": 20.0, "text": TEXT_TIME_BUDGET_S + 10.0, "boxes": 15.0}
CHILD_MEMORY_BYTES = 1024 * 1024 * 1024
MAX_WORKERS = sandbox.MAX_WORKERS


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


def page_texts(path: Path | str | BinaryIO) -> list[str]:
    """The text layer of each page (the pages ``find_text`` searches), from the limited child."""
    path, key = _checked(path)
    return list(_text_index(path, key).pages)


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
        fd = path.fileno()
        stat = os.fstat(fd)
        _check_pdf(stat.st_size, lambda: os.pread(fd, 1024, 0))
        return f"{_FD_PATH}{fd}", ("fd", stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    path = os.path.abspath(path)
    try:
        stat = os.stat(path)
    except FileNotFoundError as e:
        raise PdfRejected("The file is missing.") from e
    except OSError as e:
        raise PdfRejected(f"The file cannot be read: {e.strerror or e}.") from e
    if not os.path.isfile(path):
        raise PdfRejected("This is not a file.")

    def head() -> bytes:
        with open(path, "rb") as f:
            return f.read(1024)

    _check_pdf(stat.st_size, head)
    return path, (path, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _check_pdf(size: int, read_head) -> None:
    """PdfRejected unless the file has a size the preview takes and a PDF header."""
    if size == 0:
        raise PdfRejected("The file is empty.")
    if size > MAX_FILE_BYTES:
        raise PdfRejected(f"The PDF is too large to preview ({size // 2**20} MB; the limit is {MAX_FILE_BYTES // 2**20} MB).")
    try:
        head = read_head()
    except OSError as e:
        raise PdfRejected(f"The file cannot be read: {e.strerror or e}.") from e
    if b"%PDF-" not in head:
        raise PdfRejected("This file is not a PDF (it has no PDF header).")


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
            child.__file__, op, path, params, timeout=timeout, memory=CHILD_MEMORY_BYTES, slots=_worker_slots, log=log
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


def preview_pdf(fp, ctx) -> dict:
    """Page sizes for the preview's page images; the PDF itself is read by
    the limited subprocess, from the file the preview opened."""
    info = pdf_info(fp)
    return {"pages": [{"number": i + 1, "width": w, "height": h} for i, (w, h) in enumerate(info.pages)], "title": info.title or "", "html": ""}
