"""Finding a citation's evidence on a PDF's text layer: pure Python over the
page texts. An exact match after normalisation first, else the best fuzzy
window; the result is a *text match* with its score, never a layout bbox.
"""

import bisect
import functools
import math
import re
import unicodedata
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

MIN_SCORE = 0.6
MIN_NEEDLE_CHARS = 6  # evidence shorter than this (letters and digits) is not searched
MIN_FUZZY_CHARS = 20  # nor fuzzily below this: short strings match anything a little


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


_HEADING_SEPARATOR = " — "  # how mnote.text.evidence_window prefixes the heading
_FUZZY_PAGES = 4  # fuzzy alignment runs on the pages holding most of the evidence's 4-grams
_PROBE_GRAMS = 64  # 4-grams sampled from the evidence for that


_ASCII_WORDS_OR_OTHER = re.compile(r"[A-Za-z0-9]+|[^\x00-\x7f]+")


# One entry per distinct character ever seen (small); lru_cache, as the web
# process's threads share it.
@functools.cache
def _fold_char(char: str) -> str:
    """The letters and digits of one character with case, width, compatibility
    forms and accents folded (NFKD + casefold, combining marks dropped); ''
    for whitespace, punctuation and hyphens, which matching ignores."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", char).casefold())
    return "".join(c for c in decomposed if c.isalnum())


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
            # A passage never starts or ends inside a word: a fuzzy window may
            # cut one, and so may exact evidence cut from a chunk at a token boundary.
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
