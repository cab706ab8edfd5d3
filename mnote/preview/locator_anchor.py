"""Where a citation's passage is in a version's rendered preview: the text map
of each rendered version (kept by the process) and a locator placed in it.

The mapper asks with ``cached_text_map`` and ``anchor_locator`` for each
citation it makes (a search never renders a file: only a preview already
rendered is anchored); the preview's page asks when it opens at a passage,
and the citation's page when it looks for cited words in a changed file.
Needs only text: the cited chunk's text is handed in by the caller."""

import threading
from collections import OrderedDict
from dataclasses import replace
from functools import lru_cache

from django.conf import settings
from django.utils.translation import get_language

from mnote.kinds import kind_of
from mnote.preview.anchoring import find_passage, shared_with
from mnote.preview.text_map import TextMap
from mnote.preview.render_cache import cache_file, peek_at
from mnote.preview.renderers import PreviewContext, render_cache_key, renderer_for
from mnote.preview.rendering import render_version
from mnote.text import evidence_window

# The longest evidence text a locator carries (the preview's forms refuse longer).
MAX_LOCATOR_CHARS = 20_000
# Text maps of recently opened document versions, so a click on another
# citation does not re-read the cached render; every web thread shares them.
_TEXT_MAPS: OrderedDict[str, TextMap] = OrderedDict()
_TEXT_MAPS_KEPT = 8
_TEXT_MAPS_LOCK = threading.Lock()
# Shorter than this, the words a chunk shares with the evidence say too little
# to mark; the evidence is looked for as it is.
MIN_SHARED_CHARS = 24


def text_map_of(version: str, rendered) -> TextMap | None:
    """The text map of this version of the file (built with its render);
    ``rendered`` is the render or a function that gives it."""
    with _TEXT_MAPS_LOCK:
        text_map = _TEXT_MAPS.get(version)
        if text_map is not None:
            _TEXT_MAPS.move_to_end(version)
            return text_map
    # Made outside the lock: a render may take seconds, and others wait for no one.
    result = rendered() if callable(rendered) else rendered
    text_map = TextMap.from_compact(result.get("textMap"), version)
    if text_map is None:
        return None
    with _TEXT_MAPS_LOCK:
        _TEXT_MAPS[version] = text_map
        _TEXT_MAPS.move_to_end(version)
        while len(_TEXT_MAPS) > _TEXT_MAPS_KEPT:
            _TEXT_MAPS.popitem(last=False)
    return text_map


def cached_text_map(file_name: str, sha256: str) -> TextMap | None:
    """The text map of this content's preview when it has been rendered
    already (the first page), else None: never renders."""
    place = _render_place(file_name, sha256, get_language() or "", str(settings.DATA_DIR))
    if place is None:
        return None
    version, cache_path = place
    with _TEXT_MAPS_LOCK:
        text_map = _TEXT_MAPS.get(version)
    if text_map is None:
        # A search reads at most a few MB per file it cites; a bigger preview is anchored when opened.
        rendered = peek_at(cache_path, max_bytes=4 * 1024 * 1024)
        text_map = text_map_of(version, rendered) if rendered else None
    return text_map


@lru_cache(maxsize=4096)
def _render_place(file_name: str, sha256: str, language: str, _data_dir: str) -> tuple[str, str] | None:
    """(text map version, cached render file) of the first page of this
    content, or None when its kind has no preview: worked out once per
    process (a search looks for each file it cites; only the look on disk is
    repeated). Only the page names the render here: no asset URLs."""
    kind = kind_of(file_name)
    if renderer_for(kind) is None or not sha256:
        return None
    ctx = PreviewContext()
    return render_version(sha256, ctx), cache_file(render_cache_key(kind, ctx, language), sha256)


# Where a chunk stands in a version's text does not depend on the query: a
# search cites the same chunks again for other questions, and placing a
# chunk whose rendered words differ from LightRAG's text (an alignment over
# the whole document) was most of a search's mapping time.
_CHUNK_PLACES: OrderedDict[tuple[str, str], object] = OrderedDict()
_CHUNK_PLACES_KEPT = 4096
_CHUNK_PLACES_LOCK = threading.Lock()


def chunk_place(text_map: TextMap, chunk: str):
    """The cited chunk's place in this version's text (None: not in it), kept by the process."""
    if not text_map.version:  # a map with no version names no content: nothing to keep it by
        return find_passage(text_map, chunk, whole=True)
    key = (text_map.version, chunk)
    with _CHUNK_PLACES_LOCK:
        if key in _CHUNK_PLACES:
            _CHUNK_PLACES.move_to_end(key)
            return _CHUNK_PLACES[key]
    place = find_passage(text_map, chunk, whole=True)
    with _CHUNK_PLACES_LOCK:
        _CHUNK_PLACES[key] = place
        while len(_CHUNK_PLACES) > _CHUNK_PLACES_KEPT:
            _CHUNK_PLACES.popitem(last=False)
    return place


def anchor_locator(text_map: TextMap, locator: dict, *, chunk: str = "", tail: str = "") -> dict | None:
    """Where a locator's passage is in the rendered text: the evidence text,
    inside the cited chunk's place when the chunk's text is known. With a
    ``tail``, the passage runs from the evidence's place to the tail's."""
    evidence = str(locator.get("evidenceText") or locator.get("displayQuote") or "")[:MAX_LOCATOR_CHARS]
    headings = [h for h in locator.get("headingPath") or [] if isinstance(h, str)]
    heading = headings[-1] if headings else ""
    place = chunk_place(text_map, chunk) if chunk else None
    shared = shared_with(evidence, chunk, heading=heading) if chunk and place is None else ""
    if len(shared) >= MIN_SHARED_CHARS:
        # The chunk is known but not placed whole: mark only the evidence's
        # words the chunk holds (the evidence can run past the chunk's end).
        anchor = find_passage(text_map, shared, heading=heading, whole=True)
    elif place is None:
        anchor = find_passage(text_map, evidence, heading=heading)
    else:
        # Never outside the cited chunk: the evidence inside it, else the
        # chunk's own query-centred window, else the whole chunk.
        within = (place.start, place.end)
        anchor = (
            find_passage(text_map, evidence, heading=heading, within=within)
            or find_passage(text_map, evidence_window(chunk, str(locator.get("searchQuery") or "")), within=within, whole=True)
            or place
        )
    if anchor is not None and tail:
        end = find_passage(text_map, tail, within=(anchor.start, len(text_map.ink)))
        if end is None or end.end - anchor.start > 4 * MAX_LOCATOR_CHARS:
            return None  # head without its tail: not the cited passage
        anchor = replace(anchor, end=max(anchor.end, end.end), status="exact" if anchor.status == end.status == "exact" else "fuzzy")
    return anchor.as_json() if anchor else None
