"""Where a cited passage is in a file, in the preview's own terms, known
without rendering in a search: a *place index* per file version.

LightRAG gives a chunk's words but no position. The preview's render knows
every block's place (a slide and shape, a sheet row's cell range and the
sheet page it is on, a code block's first line), and a PDF's text layer
knows each page's words. The worker writes that down once per content
(``write_place_index``, after the file is indexed: one render in the
preview's child process, or one read of the PDF's text layer) into
``cache/places/<renderer version>-<sha256>.json``; a search reads it
(``place_index``, kept by the process) and finds the cited words in it
(``locate``) with the same anchoring as the preview. The citation's badge
then names what the preview will show: "page 3", "slide 2", "Sheet1 A7:F9",
"passage" — and "file only" only when none of these is known.

Its text maps are the render's own (same renderer version), but a search
does not hand their offsets to the preview as an anchor: the preview's page
may be rendered in another language and finds the words itself.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html
from django.conf import settings

from mnote.kinds import Kind
from mnote.private_files import write_private_file

from . import render_child
from .locator_anchor import anchor_locator
from .pdf.matching import MIN_SCORE as PDF_MIN_SCORE
from .pdf.matching import _TextIndex as PdfTextIndex
from .pdf.pages import page_texts
from .render_cache import RENDERER_VERSION
from .renderers import PreviewContext, renderer_for
from .rendering import render_version
from .text_map import TextMap

FORMAT = 1
# The block attributes that name a place (the renderers set them).
_PLACE_ATTRIBUTES = {"data-slide": "slide", "data-shape": "shape", "data-sheet": "sheet", "data-range": "range",
                     "data-line-start": "line"}  # fmt: skip
# A search reads at most this much of one file's index (a bigger one: the badge says less).
MAX_READ_BYTES = 8 * 1024 * 1024
_KEPT = 32
_LOADED: OrderedDict[str, "PlaceIndex | None"] = OrderedDict()
# Shared by the web process's threads.
_LOCK = threading.Lock()


def has_places(kind: Kind) -> bool:
    """Whether the kind's preview can say where words are (a PDF's pages, or a render's blocks)."""
    return kind.name == "pdf" or (bool(kind.renderer) and not kind.image)


def place_index_path(sha256: str) -> Path:
    return Path(settings.DATA_DIR) / "cache" / "places" / f"{RENDERER_VERSION}-{sha256}.json"


def build_place_index(kind: Kind, handle, path: Path | None = None) -> dict:
    """The place index of the opened file (read in the preview's limited
    child, as a preview is). Raises the renderer's refusal."""
    if kind.name == "pdf":
        handle.seek(0)
        return {"v": FORMAT, "kind": kind.name, "pdfPages": page_texts(handle)}
    if renderer_for(kind) is None:
        raise ValueError(f"no preview renders {kind.name}")
    handle.seek(0)
    pages = []
    for line in render_child.render_pages(kind, handle, PreviewContext(path=path)):
        page = json.loads(line)
        pages.append({"textMap": page.get("textMap"), "blocks": block_places(page.get("html") or "")})
    return {"v": FORMAT, "kind": kind.name, "pages": pages}


def block_places(html: str) -> dict[str, dict]:
    """Each block's place attributes in a rendered fragment (block index → {slide, shape, sheet, range, line})."""
    if not html.strip():
        return {}
    places = {}
    root = lxml.html.fragment_fromstring(html, create_parent="div")
    for element in root.iterfind(".//*[@data-block-index]"):
        place = {name: element.get(attribute) for attribute, name in _PLACE_ATTRIBUTES.items() if element.get(attribute)}
        if place:
            places[element.get("data-block-index")] = place
    return places


def write_place_index(sha256: str, index: dict) -> None:
    write_private_file(place_index_path(sha256), json.dumps(index, ensure_ascii=False))
    forget(sha256)


def write_refusal(sha256: str, reason: str) -> None:
    """Remember that this content has no places (a damaged file, no text), so it is not read again."""
    write_place_index(sha256, {"v": FORMAT, "refused": reason[:500]})


def index_written(sha256: str) -> bool:
    return place_index_path(sha256).exists()


def forget(sha256: str | None = None) -> None:
    with _LOCK:
        if sha256 is None:
            _LOADED.clear()
        else:
            _LOADED.pop(sha256, None)


@dataclass
class Place:
    """Where the cited words are: ``page`` (a PDF's page, a sheet's page in
    the preview), and the place attributes of the first and last block."""

    page: int
    first: dict = field(default_factory=dict)
    last: dict = field(default_factory=dict)
    anchor: dict | None = None


class PlaceIndex:
    def __init__(self, data: dict, sha256: str):
        self.kind = data.get("kind", "")
        self.pdf_pages: list[str] | None = data.get("pdfPages")
        self._pages = data.get("pages") or []
        self._maps: dict[int, TextMap | None] = {}
        self._pdf_index: PdfTextIndex | None = None
        self._lock = threading.Lock()
        self.sha256 = sha256

    def _text_map(self, number: int) -> TextMap | None:
        with self._lock:
            if number not in self._maps:
                version = render_version(self.sha256, PreviewContext(page=number))
                self._maps[number] = TextMap.from_compact(self._pages[number - 1].get("textMap"), version)
            return self._maps[number]

    def _pdf(self) -> PdfTextIndex:
        with self._lock:
            if self._pdf_index is None:
                self._pdf_index = PdfTextIndex([str(t) for t in self.pdf_pages or []])
            return self._pdf_index

    def locate(self, locator: dict, chunk: str = "") -> Place | None:
        """The place of a locator's evidence (inside the cited chunk when its text is given), or None."""
        if self.pdf_pages is not None:
            return self._locate_pdf(locator)
        for number in range(1, len(self._pages) + 1):
            text_map = self._text_map(number)
            if text_map is None:
                continue
            anchor = anchor_locator(text_map, locator, chunk=chunk)
            if anchor is None:
                continue
            blocks = self._pages[number - 1].get("blocks") or {}
            return Place(
                number,
                blocks.get(str(anchor["start"]["block"]), {}),
                blocks.get(str(anchor["end"]["block"]), {}),
                anchor,
            )
        return None

    def _locate_pdf(self, locator: dict) -> Place | None:
        # The evidence only, as the preview looks for it (pages.find_text):
        # the badge names the page the preview will mark, or none.
        evidence = str(locator.get("evidenceText") or locator.get("displayQuote") or "")
        if not evidence.strip():
            return None
        index = self._pdf()
        # The preview's own bar: a page it would mark is a page the badge may name.
        span = index.locate(evidence, query=str(locator.get("searchQuery") or ""), page_hint=None, min_score=PDF_MIN_SCORE)
        return Place(index.match(span, lambda page, first, end: None).page) if span else None


def place_index(sha256: str) -> PlaceIndex | None:
    """The place index of this content when the worker has written it, else
    None (kept by the process: a search cites the same few files again)."""
    if not sha256:
        return None
    with _LOCK:
        if sha256 in _LOADED:
            _LOADED.move_to_end(sha256)
            return _LOADED[sha256]
    path = place_index_path(sha256)
    try:
        if os.stat(path).st_size > MAX_READ_BYTES:
            index = None
        else:
            data = json.loads(path.read_text(encoding="utf-8"))
            index = PlaceIndex(data, sha256) if isinstance(data, dict) and data.get("v") == FORMAT and "refused" not in data else None
    except FileNotFoundError:
        return None  # not written yet: asked again next time
    except (OSError, ValueError):
        index = None
    with _LOCK:
        _LOADED[sha256] = index
        while len(_LOADED) > _KEPT:
            _LOADED.popitem(last=False)
    return index
