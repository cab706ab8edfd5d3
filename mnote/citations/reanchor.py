"""A cited passage found again in a new version of its file.

A citation keeps what it cited as the W3C Web Annotation selectors do: the
quoted words (``exact``), a little text before and after them (``prefix``,
``suffix``) and where they stood (``start``, ``end``: offsets in the text
the preview showed). When the file changes, :func:`reanchor` looks for the
quote in the new version's text and says which case it is:

- ``unchanged``: the same words, with the same words around them (they may
  stand further down: text was added above);
- ``moved``: the same words, somewhere else (their paragraph moved);
- ``reworded``: close words in the same surroundings (some words changed);
- ``removed``: nothing close enough — the citation shows the old words and
  marks nothing, rather than the wrong place.

Exact text first (the place whose context agrees best; the same characters
with other white space between the words count as exact: a PDF's paragraph
wrapped again breaks its lines elsewhere), then an alignment of
the quote's words: runs of three and two of its words vote for where it
starts in the new text, the best few places are aligned word by word (so an
alignment starts and ends on whole words, never inside one) and scored with
rapidfuzz. The quote's near twins (a list of "space before" / "space
after", lines that differ in a number) are what this search finds in the
cited version with the quote cut out: what would pass for the quote were it
deleted. A close place keeps more than half of the quote's words, in order,
and is never one of the twins (a twin standing there word for word, or a
place at least as close to a twin that no longer stands anywhere as to the
quote); what is left is taken when its context agrees, or when its letters
or words are very close (moved and reworded); and never when another place
is about as good. A reworded place whose first or last word became several
takes them whole, up to where its context stands again. Pure functions on
text: no Django.
"""

from __future__ import annotations

import difflib
import re
from array import array
from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate

from rapidfuzz import fuzz

# Characters of context kept on each side of a quote.
CONTEXT = 48
# Longest quote kept (the preview's anchors keep as much).
MAX_QUOTE = 2000
# A reworded passage: its words at least this close to the quote's (0-100)…
CLOSE = 70
# …and the text before or after it this close to the quote's context.
CONTEXT_AGREES = 60
# Without context, a quote this long whose letters or words are this close (0-100).
VERY_CLOSE = 80
LONG = 24
# Near twins kept with a quote, at most.
MAX_TWINS = 8
# Two places whose words and context score within this much of each other cannot be told apart.
AMBIGUOUS = 15

# A quote's first or last word replaced by at most this many words is taken whole.
REACH = 3

# Two spans overlapping by this much of their union are one place.
SAME_PLACE = 0.8

CASES = ("unchanged", "moved", "reworded", "removed")

# Words of letters and digits; CJK characters one by one (they have no spaces).
_CJK = "\u3040-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])[^\W_])+")


@dataclass(frozen=True)
class Selector:
    """What a citation quoted, in a form that outlives the version."""

    exact: str
    prefix: str = ""
    suffix: str = ""
    start: int | None = None
    end: int | None = None
    # Whether its version held other words close to the quote (near twins);
    # None when not known, and then close words count only where the context
    # agrees on both sides.
    twins: bool | None = None
    # Those twins' words: when the quote is gone and a twin slid into its
    # place, the twin is not taken for the quote reworded.
    twin_words: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict | None) -> Selector | None:
        """The selector a citation stores, or None when it has none (an older row)."""
        if not isinstance(data, dict) or not isinstance(data.get("exact"), str) or not data["exact"].strip():
            return None
        start, end = data.get("start"), data.get("end")
        position = isinstance(start, int) and isinstance(end, int)
        twins, twin_words = data.get("twins"), data.get("twinWords")
        twin_words = tuple(w for w in twin_words if isinstance(w, str)) if isinstance(twin_words, list) else ()
        return cls(data["exact"], str(data.get("prefix") or ""), str(data.get("suffix") or ""),
                   start if position else None, end if position else None, twins if isinstance(twins, bool) else None,
                   twin_words)

    @classmethod
    def from_anchor(cls, anchor: dict | None) -> Selector | None:
        """From a preview anchor (its ``textQuote`` and ``textPosition``)."""
        if not isinstance(anchor, dict):
            return None
        quote, position = anchor.get("textQuote") or {}, anchor.get("textPosition") or {}
        return cls.from_json({**quote, **position}) if isinstance(quote, dict) and isinstance(position, dict) else None

    @classmethod
    def at(cls, text: str, start: int, end: int, context: int = CONTEXT) -> Selector:
        """The selector of ``text[start:end]``, knowing whether it has twins in ``text``."""
        prefix, suffix = text[max(0, start - context) : start], text[end : end + context]
        selector = cls(text[start:end][:MAX_QUOTE], prefix, suffix, start, end)
        return selector.with_twins(text)

    def with_twins(self, text: str) -> Selector:
        """This selector, told what in ``text`` (its own version) would pass for
        its quote were the quote deleted: its near twins."""
        if self.start is None or self.end is None:
            return self
        # Asked of the version with the quote cut out, so a twin right next to
        # the quote is seen whole rather than merged into the quote's own span.
        without = text[: self.start] + " " + text[self.end :]
        decoys = _close_places(self, without, keep=MAX_TWINS, overlapping=True)
        exact_elsewhere = any(p != self.start for p in _exact_places(text, self.exact, 2))
        twin_words = tuple(dict.fromkeys(p[2][:MAX_QUOTE] for p in decoys))[:MAX_TWINS]
        return replace(self, twins=bool(decoys) or exact_elsewhere, twin_words=twin_words)

    def as_json(self) -> dict:
        """Stored with the citation: W3C TextQuoteSelector and TextPositionSelector fields in one dict."""
        return {"exact": self.exact, "prefix": self.prefix, "suffix": self.suffix, "start": self.start, "end": self.end,
                "twins": self.twins, "twinWords": list(self.twin_words)}


@dataclass(frozen=True)
class Reanchored:
    case: str  # one of CASES
    start: int | None = None  # offsets in the new text; None when removed
    end: int | None = None
    exact: str = ""  # the new words ("" when removed)
    score: float = 0.0  # 0-100: how close the words are to the quote


class _Words:
    """A text's words (case-folded) with their character spans, and the words
    joined by single spaces so that a run of words is found with ``str.find``."""

    def __init__(self, text: str):
        self.text = text
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.words: list[str] = []
        for m in _TOKEN.finditer(text):
            self.starts.append(m.start())
            self.ends.append(m.end())
            self.words.append(m.group().casefold())
        self.joined = " " + " ".join(self.words) + " "
        # Where each word starts in ``joined``: a place found there back to a word index.
        self._offsets = list(accumulate((len(w) + 1 for w in self.words), initial=1))

    def find(self, run: list[str], limit: int) -> list[int]:
        """The word indexes where ``run`` starts, at most ``limit`` + 1 of them."""
        needle = " " + " ".join(run) + " "
        found, i = [], self.joined.find(needle)
        while i >= 0 and len(found) <= limit:
            found.append(bisect_left(self._offsets, i + 1))
            i = self.joined.find(needle, i + 1)
        return found


@lru_cache(maxsize=4)
def _words_of(text: str) -> _Words:
    # One index per new version, not one per citation of it.
    return _Words(text)


def _sides(text: str, selector: Selector, start: int, end: int) -> list[float]:
    """How well the text before and after [start, end) agrees with the quote's context (0-100 each)."""
    scores = []
    if selector.prefix:
        scores.append(fuzz.ratio(selector.prefix, text[max(0, start - len(selector.prefix)) : start]))
    if selector.suffix:
        scores.append(fuzz.ratio(selector.suffix, text[end : end + len(selector.suffix)]))
    return scores


def _context_score(text: str, selector: Selector, start: int, end: int) -> float:
    return max(_sides(text, selector, start, end), default=0.0)


def _both_sides(text: str, selector: Selector, start: int, end: int) -> float:
    sides = _sides(text, selector, start, end)
    return sum(sides) / len(sides) if sides else 0.0


def _exact_places(text: str, exact: str, limit: int = 200) -> list[int]:
    places, i = [], text.find(exact)
    while i >= 0 and len(places) < limit:
        places.append(i)
        i = text.find(exact, i + 1)
    return places


@lru_cache(maxsize=4)
def _spaced(text: str) -> tuple[str, array]:
    """``text`` with each run of white space made one space, and where each
    of its characters stands in ``text`` (one per new version, as ``_words_of``)."""
    out, origin, space = [], array("i"), False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space:
                out.append(" ")
                origin.append(i)
            space = True
            continue
        space = False
        out.append(ch)
        origin.append(i)
    return "".join(out), origin


def _spaced_places(text: str, exact: str, limit: int = 200) -> list[tuple[int, int]]:
    """Where the quote stands with other white space between its words: spans in ``text``."""
    needle = " ".join(exact.split())
    if not needle:
        return []
    spaced, origin = _spaced(text)
    return [(origin[p], origin[p + len(needle) - 1] + 1) for p in _exact_places(spaced, needle, limit)]


def _nearness(selector: Selector, place: int, old_length: int, new_length: int) -> float:
    """0-1: how near ``place`` is to where the quote stood, relative to each text's length."""
    if selector.start is None or not old_length or not new_length:
        return 0.0
    return 1.0 - abs(place / new_length - selector.start / old_length)


def _candidates(words: _Words, quote_words: list[str], keep: int = 5) -> list[int]:
    """Where (first word index in the new text) the quote most likely starts:
    runs of its words vote for the diagonal they imply."""
    votes: dict[int, int] = defaultdict(int)
    n = len(quote_words)
    # Word pairs too: a list of near twins may differ every third word.
    for size in (3, 2):
        for o in range(max(0, n - size + 1)):
            places = words.find(quote_words[o : o + size], 20)
            if len(places) > 20:
                continue  # a common phrase says nothing about where
            for p in places:
                votes[p - o] += 1
    if not votes and n < 3:
        for p, w in enumerate(words.words):
            if quote_words and w == quote_words[0]:
                votes[p] += 1
    # Votes within a few words of each other are one place (inserted or deleted words shift it).
    tolerance = max(3, n // 5)
    ranked = sorted(votes, key=lambda d: -votes[d])
    chosen: list[int] = []
    for d in ranked:
        if all(abs(d - c) > tolerance for c in chosen):
            chosen.append(d)
        if len(chosen) == keep:
            break
    return chosen


def _align(words: _Words, quote_words: list[str], diagonal: int) -> tuple[int, int] | None:
    """The quote's words aligned with the new text's around ``diagonal``:
    (first word, last word + 1) in the new text, whole words only."""
    n = len(quote_words)
    slack = max(4, n // 3)
    lo, hi = max(0, diagonal - slack), min(len(words.words), diagonal + n + slack)
    if lo >= hi:
        return None
    matcher = difflib.SequenceMatcher(None, quote_words, words.words[lo:hi], autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        return None
    first, last = blocks[0], blocks[-1]
    # Quote words missing before the first match (or after the last) were
    # replaced: take as many of the new text's words there, inside the window.
    start = lo + max(0, first.b - first.a)
    end = lo + min(hi - lo, last.b + last.size + (n - last.a - last.size))
    return start, end


def reanchor(selector: Selector, text: str, old_length: int | None = None) -> Reanchored:
    """Where the quote is in ``text`` (a new version's rendered text), and
    which case it is. ``old_length``: the old text's length, when known, so
    the old position can break ties between equally good places."""
    exact = selector.exact
    if not exact.strip() or not text:
        return Reanchored("removed")
    old_length = old_length or (selector.end or 0) + len(selector.suffix) or len(text)
    # The same characters, or the same characters with other white space
    # between them (a paragraph wrapped again: a PDF's lines and pages break
    # elsewhere once words above them change).
    spans = [(p, p + len(exact)) for p in _exact_places(text, exact)] or _spaced_places(text, exact)
    if spans:
        def agreement(span: tuple[int, int]) -> tuple[float, float]:
            context = _context_score(text, selector, *span) + _both_sides(text, selector, *span)
            return context, _nearness(selector, span[0], old_length, len(text))

        best, end = max(spans, key=agreement)
        context = _context_score(text, selector, best, end)
        # Several places with the same words: only the one whose context agrees is the cited one.
        if len(spans) > 1 and context < CONTEXT_AGREES:
            return Reanchored("removed")
        case = "unchanged" if context >= 80 or not (selector.prefix or selector.suffix) else "moved"
        return Reanchored(case, best, end, text[best:end], 100.0)
    places = sorted(_close_places(selector, text), key=lambda place: -place[4])
    quote_words = _words(exact)
    # More than half of the quote's words, in order: close letters alone may
    # be other words ("Article II" for "Section 2.01").
    places = [p for p in places if _words_kept(quote_words, p[2]) > 50 and not _a_twin(selector, text, p)]
    if not places:
        return Reanchored("removed")
    start, end, found, score, rank, context, both = places[0]
    if selector.twins is None:
        # Not known what else in its version looked like the quote (it was
        # never opened since it was made): close words count only where the
        # context agrees on both sides.
        accepted = both >= CONTEXT_AGREES
    else:
        # Its twins are refused above; what is left is the quote reworded
        # when its context agrees, or when its words are very close to the
        # quote's (its paragraph moved and reworded).
        very_close = max(score, _words_kept(quote_words, found)) >= VERY_CLOSE
        accepted = context >= CONTEXT_AGREES or (very_close and len(exact) >= LONG)
    # Two places about as close: which one was cited cannot be told; say so, never guess.
    if not accepted or (len(places) > 1 and places[1][4] >= rank - AMBIGUOUS):
        return Reanchored("removed")
    # A first or last word of the quote replaced by more words than one: the
    # words up to where its context stands again are taken whole.
    words = _words_of(text)
    # Its words: those that start inside it (its own punctuation at either edge aside).
    first, last = bisect_left(words.starts, start), bisect_left(words.starts, end)
    widened = _up_to_context(words, selector, (first, last))
    if widened is not None and words.starts[widened[0]] <= start and end <= words.ends[widened[1] - 1]:
        start, end = words.starts[widened[0]], words.ends[widened[1] - 1]
        found = text[start:end]
        score = fuzz.ratio(exact, found)
    return Reanchored("reworded", start, end, found, score)


def _words(text: str) -> list[str]:
    return [m.group().casefold() for m in _TOKEN.finditer(text)]


def _words_kept(quote_words: list[str], found: str) -> float:
    """0-100: how many of the quote's words stand, in order, in ``found``."""
    found_words = _words(found)
    # rapidfuzz's ratio of two word lists is 2 × (words in common, in order) / (both lengths).
    kept = fuzz.ratio(quote_words, found_words) / 100 * (len(quote_words) + len(found_words)) / 2
    return 100 * kept / len(quote_words)


def _a_twin(selector: Selector, text: str, place: tuple) -> bool:
    """Whether a close place is one of the quote's twins rather than the quote:
    a twin still standing there word for word, or, for a twin no longer
    standing anywhere word for word, a place at least as close to it as to the quote."""
    start, end, found, score = place[:4]
    for twin in selector.twin_words:
        spots = _exact_places(text, twin, 50)
        # The same place: they overlap by most of both (a twin that is only
        # a few of the quote's words may stand inside the quote reworded).
        if any(min(end, s + len(twin)) - max(start, s) >= SAME_PLACE * (max(end, s + len(twin)) - min(start, s))
               for s in spots):
            return True
        if not spots and fuzz.ratio(twin, found) >= score:
            return True
    return False


def _close_places(selector: Selector, text: str, keep: int = 5, overlapping: bool = False) -> list[tuple]:
    """Places of ``text`` whose words are close to the quote's: (start, end,
    words, score, rank, context on the better side, context on the worse
    side). ``overlapping``: keep places that overlap a better one (twins in a
    list, where one alignment may take in part of its neighbour)."""
    exact = selector.exact
    words = _words_of(text)
    quote_words = _words(exact)
    places: list = []
    if not quote_words:
        return places
    lead = len(exact) - len(exact.lstrip("\"'“‘(["))
    trail = len(exact) - len(exact.rstrip(".,;:!?\"'”’)]"))
    n = len(quote_words)

    def scored(first: int, last: int) -> tuple[float, int, int]:
        start, end = words.starts[first], words.ends[last - 1]
        # The quote's own punctuation at its edges, when the new text has it there too.
        if lead and text[start - lead : start] == exact[:lead]:
            start -= lead
        if trail and text[end : end + trail] == exact[-trail:]:
            end += trail
        return fuzz.ratio(exact, text[start:end]), start, end

    for diagonal in _candidates(words, quote_words, keep):
        span = _align(words, quote_words, diagonal)
        if span is None:
            continue
        # The alignment may reach over into a near twin next to it: as many
        # words as the quote has, from the diagonal, may be closer.
        tries = [span]
        if 0 <= diagonal and diagonal + n <= len(words.words) and (diagonal, diagonal + n) != span:
            tries.append((diagonal, diagonal + n))
        score, start, end = max(scored(*t) for t in tries)
        found = text[start:end]
        # Of two overlapping places, the closer one (an alignment that took in
        # a neighbour's words must not hide the quote reworded next to it).
        overlaps = [] if overlapping else [p for p in places if p[0] < end and start < p[1]]
        if score >= CLOSE and all(score > p[3] for p in overlaps):
            places = [p for p in places if p not in overlaps]
            sides = _sides(text, selector, start, end)
            context, worse = (max(sides), min(sides)) if sides else (0.0, 0.0)
            places.append((start, end, found, score, score + sum(sides) / max(1, len(sides)), context, worse))
    return places


def _up_to_context(words: _Words, selector: Selector, span: tuple[int, int]) -> tuple[int, int] | None:
    """``span`` (word indexes) widened by a few words on a side to where the
    quote's context stands right next to it (its prefix's last word before,
    its suffix's first word after); None when neither side widens."""
    first, last = span
    before, after = _words(selector.prefix)[-1:], _words(selector.suffix)[:1]
    if not before or not after:
        return None
    # Within REACH words of the alignment, the nearest word of context, on both sides.
    start = next((s + 1 for s in range(first - 1, max(-1, first - 1 - REACH), -1) if words.words[s] == before[0]), None)
    end = next((e for e in range(last, min(len(words.words), last + REACH)) if words.words[e] == after[0]), None)
    if start is None or end is None or start >= end or (start, end) == span:
        return None
    return start, end


def word_changes(old: str, new: str) -> list[tuple[str, str]]:
    """The two texts as runs of words, each run "same", "removed" (only in
    ``old``) or "added" (only in ``new``), in reading order: what a reader
    needs to see what was reworded."""
    a, b = old.split(), new.split()
    runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            runs.append(("same", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("removed", " ".join(a[i1:i2])))
        if j2 > j1:
            runs.append(("added", " ".join(b[j1:j2])))
    return runs
