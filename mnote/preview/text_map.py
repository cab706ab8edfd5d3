"""The text a rendered preview shows, as a map from ink offsets to blocks
(``TextMap``), built once per document version and cached with the render.
``anchoring.py`` finds cited passages in it; the why of ink offsets,
skeletons and soft text is told there.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from array import array
from dataclasses import dataclass
from functools import lru_cache

import lxml.html

__all__ = ["Anchor", "TextMap", "build_text_map", "skeleton", "SKIPPED_CLASSES", "SOFT_CLASSES"]

COMPACT_VERSION = 2
# Not part of a block's text (same list in static/js/locate.js).
SKIPPED_CLASSES = frozenset({"docx-noteref", "docx-backref", "preview-note"})
# Shown and highlightable, but made by the renderer, not the file's words.
SOFT_CLASSES = frozenset({"docx-label", "docx-note-label", "docx-image-placeholder", "docx-hf-label"})
# The browser's /\s/ plus the invisible characters Word leaves in text.
_SPACE = re.compile(r"[\s\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff\u00ad]+")
# Share of a passage's skeleton that must sit in one place to call it found.
FOUND = 0.6
# At most this many places per seed; a seed found more often says nothing.
SEED_HITS = 24
QUOTE_CONTEXT = 32
# The most characters a passage's edge moves to reach a word's edge.
MAX_WORD_WIDEN = 40


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", ch).casefold() if c.isalnum())


def _fold(text: str) -> tuple[str, array]:
    """The skeleton of ``text`` and, for each of its characters, the index of
    the character of ``text`` it came from."""
    out: list[str] = []
    where = array("l")
    for i, ch in enumerate(text):
        if ch.isascii():
            if ch.isalnum():
                out.append(ch.lower())
                where.append(i)
            continue
        folded = _fold_char(ch)
        for c in folded:
            out.append(c)
            where.append(i)
    return "".join(out), where


def skeleton(text: str) -> str:
    return _fold(text)[0]


def _is_cjk(ch: str) -> bool:
    return "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\ufaff" or ch >= "\U00020000"


@dataclass(frozen=True)
class Anchor:
    """A passage found in a ``TextMap``: ink offsets ``[start, end)``."""

    status: str  # "exact" | "fuzzy"
    score: float
    start: int
    end: int
    text_map: TextMap

    def as_json(self) -> dict:
        tm = self.text_map
        first_block, first_offset = tm.block_position(self.start)
        last_block, last_offset = tm.block_position(self.end - 1)
        start, end = tm.text_offset(self.start), tm.text_offset(self.end - 1) + 1
        return {
            "status": self.status,
            "score": round(self.score, 3),
            "version": tm.version,
            "start": {"block": first_block, "offset": first_offset},
            "end": {"block": last_block, "offset": last_offset + 1},
            # W3C Web Annotation selectors over ``TextMap.text``.
            "textPosition": {"start": start, "end": end},
            "textQuote": {
                "exact": tm.text[start:end][:2000],
                "prefix": tm.text[max(0, start - QUOTE_CONTEXT) : start],
                "suffix": tm.text[end : end + QUOTE_CONTEXT],
            },
        }


class _Space:
    """A skeleton to search in, with the ink offset of each of its characters."""

    def __init__(self, skel: str, ink_of: array):
        self.s = skel
        self.ink_of = ink_of

    def to_ink(self, skel_start: int, skel_end: int) -> tuple[int, int]:
        return self.ink_of[skel_start], self.ink_of[skel_end - 1] + 1

    def bounds(self, within: tuple[int, int] | None) -> tuple[int, int]:
        if within is None:
            return 0, len(self.s)
        return bisect.bisect_left(self.ink_of, within[0]), bisect.bisect_left(self.ink_of, within[1])


class TextMap:
    """The rendered text of one document version and the block of each character."""

    def __init__(
        self,
        text: str,
        runs: list[tuple[int, int, int]],
        headings: dict[int, tuple[int, int]],
        version: str = "",
        soft: list[tuple[int, int]] | None = None,
    ):
        # The rendered text, whitespace runs collapsed to one space; runs and
        # headings count ink (``self.ink`` is ``text`` without its spaces).
        self.text = text
        self._ink_text = array("l", (i for i, ch in enumerate(text) if ch != " "))
        self.ink = text.replace(" ", "")
        # (ink start, block index, ink offset inside that block) where the owning block changes.
        self.runs = runs
        self._run_starts = [r[0] for r in runs]
        self._run_start_set = frozenset(self._run_starts)
        # Heading blocks: block index → (first ink, end ink).
        self.headings = headings
        self._heading_starts = sorted((start, end) for start, end in headings.values())
        # Ink ranges of text the renderer made (list labels, …): see SOFT_CLASSES.
        self.soft = sorted(soft or [])
        self.version = version
        self.skeleton, self._skel_ink = _fold(self.ink)
        self.full = _Space(self.skeleton, self._skel_ink)
        self._bare: _Space | None = None

    @property
    def bare(self) -> _Space:
        """The skeleton without the renderer's own text (built when first asked)."""
        if self._bare is None:
            if not self.soft:
                self._bare = self.full
            else:
                parts: list[str] = []
                ink_of = array("l")
                at = 0
                for start, end in self.soft + [(len(self.ink), len(self.ink))]:
                    if start > at:
                        folded, where = _fold(self.ink[at:start])
                        parts.append(folded)
                        ink_of.extend(w + at for w in where)
                    at = max(at, end)
                self._bare = _Space("".join(parts), ink_of)
        return self._bare

    # -- the compact form cached with the render ---------------------------------

    def compact(self) -> dict:
        return {
            "v": COMPACT_VERSION,
            "text": self.text,
            "runs": self.runs,
            "headings": [[b, s, e] for b, (s, e) in self.headings.items()],
            "soft": self.soft,
        }

    @classmethod
    def from_compact(cls, data: dict, version: str = "") -> TextMap | None:
        # Version 1 had no soft ranges: still right, only less tolerant of labels.
        if not isinstance(data, dict) or data.get("v") not in (1, COMPACT_VERSION):
            return None
        return cls(
            data["text"],
            [tuple(r) for r in data["runs"]],
            {b: (s, e) for b, s, e in data["headings"]},
            version,
            [tuple(r) for r in data.get("soft") or []],
        )

    # -- positions ---------------------------------------------------------------

    def block_position(self, ink: int) -> tuple[int, int]:
        """(block index, ink offset inside the block) of an ink offset."""
        i = max(0, bisect.bisect_right(self._run_starts, ink) - 1)
        start, block, offset = self.runs[i]
        return block, offset + (ink - start)

    def text_offset(self, ink: int) -> int:
        return self._ink_text[ink] if ink < len(self._ink_text) else len(self.text)

    def is_edge(self, ink: int, *, before: bool) -> bool:
        """Whether a passage may start (``before``) or end at ``ink``: a block
        edge, or a character that is not a letter or digit on that side."""
        if ink <= 0 or ink >= len(self.ink) or ink in self._run_start_set:
            return True
        neighbour = self.ink[ink - 1] if before else self.ink[ink]
        return not neighbour.isalnum()

    def whole_words(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` widened to whole words: a passage never starts or
        ends inside a word ("aumont" of "Beaumont", a chunk cut at a token
        boundary). Not through CJK text, which has no word boundaries, and at
        most ``MAX_WORD_WIDEN`` characters on each side."""

        def inside(ink: int) -> bool:
            # ``ink - 1`` and ``ink`` are letters or digits of one word: no space, no block edge between.
            if ink <= 0 or ink >= len(self.ink) or ink in self._run_start_set:
                return False
            before, after = self.ink[ink - 1], self.ink[ink]
            if not (before.isalnum() and after.isalnum()) or _is_cjk(before) or _is_cjk(after):
                return False
            return self._ink_text[ink] == self._ink_text[ink - 1] + 1

        for _ in range(MAX_WORD_WIDEN):
            if not inside(start):
                break
            start -= 1
        for _ in range(MAX_WORD_WIDEN):
            if not inside(end):
                break
            end += 1
        return start, end

    def heading_before(self, ink: int) -> str:
        """The skeleton of the last heading that starts at or before ``ink``."""
        i = bisect.bisect_right(self._heading_starts, (ink, float("inf"))) - 1
        if i < 0:
            return ""
        start, end = self._heading_starts[i]
        return skeleton(self.ink[start:end])

    def soft_between(self, start: int, end: int) -> int:
        """How many pieces of the renderer's own text start in ``[start, end)``."""
        starts = [s for s, _ in self.soft]
        return bisect.bisect_left(starts, end) - bisect.bisect_left(starts, start)


def build_text_map(html: str, version: str = "") -> TextMap:
    """The text map of a rendered fragment: every text node owned by its
    nearest ``[data-block-index]`` ancestor, in document order."""
    text_parts: list[str] = []
    runs: list[tuple[int, int, int]] = []
    headings: dict[int, tuple[int, int]] = {}
    soft: list[tuple[int, int]] = []
    per_block: dict[int, int] = {}
    total = 0
    if not html.strip():
        return TextMap("", [(0, 0, 0)], {}, version)
    root = lxml.html.fragment_fromstring(html, create_parent="div")

    def add(text: str | None, block: int | None) -> None:
        nonlocal total
        if not text or block is None:
            return
        spaced = _SPACE.sub(" ", text)
        ink = len(spaced) - spaced.count(" ")
        if not ink:
            if text_parts and not text_parts[-1].endswith(" "):
                text_parts.append(" ")
            return
        if not runs or runs[-1][1] != block:
            runs.append((total, block, per_block.get(block, 0)))
            if text_parts and not text_parts[-1].endswith(" "):
                text_parts.append(" ")  # blocks never run into each other
        if text_parts and text_parts[-1].endswith(" ") and spaced.startswith(" "):
            spaced = spaced[1:]
        text_parts.append(spaced)
        total += ink
        per_block[block] = per_block.get(block, 0) + ink

    def walk(element, block: int | None) -> None:
        classes = set((element.get("class") or "").split())
        if classes & SKIPPED_CLASSES or not isinstance(element.tag, str):
            return
        own = element.get("data-block-index")
        start = total
        if own is not None and own.isdigit():
            block = int(own)
        add(element.text, block)
        for child in element:
            walk(child, block)
            add(child.tail, block)
        if own is not None and own.isdigit() and element.get("data-heading-level"):
            headings[block] = (start, total)
        if classes & SOFT_CLASSES and total > start:
            soft.append((start, total))

    walk(root, None)
    if not runs:
        runs.append((0, 0, 0))
    return TextMap("".join(text_parts).strip(" "), runs, headings, version, soft)


