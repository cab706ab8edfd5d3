"""Sentences of English and Chinese text: where each starts and ends.

Used for an answer's badges (one badge per sentence) and for a card's
evidence (the whole sentences of a chunk that answer the query).
"""

import re

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CLOSERS = "\"'”’」』）)】\\]"
_BOUNDARY = re.compile(rf"[。！？；]+[{_CLOSERS}]*|[.!?]+[{_CLOSERS}]*(?=\s|[{_CJK_CHARS}]|$)")
_LIST_MARKER = re.compile(r"\s*(?:#{1,6}\s+|[-*+•]\s+|(?:\d{1,3}|[a-zA-Z])[.)]\s+|>\s*)+")
# Words that end in a full stop without ending the sentence.
_ABBREVIATIONS = frozenset(
    "e.g i.e al cf vs approx ca fig figs eq eqs vol vols pp sec ch tab ref refs dr mr mrs ms prof"
    " inc ltd co jr sr st dept est incl resp wt u.s u.k".split()
)
# "No." abbreviates "number" only when a number follows.
_NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "p", "art"})


def without_list_marker(text: str) -> str:
    marker = _LIST_MARKER.match(text)
    return text[marker.end() :] if marker else text


def _ends_sentence(text: str, segment_start: int, line_end: int, boundary: re.Match) -> bool:
    mark = boundary.group()
    if mark[0] in "。！？；" or "!" in mark or "?" in mark:
        return True
    following = text[boundary.end() : line_end].lstrip(" \t")
    if following[:1].islower():
        return False
    # The segment's last word, split in Python: a search for r"(\S*)$" retries at
    # every character of a long run without spaces, quadratic in its length.
    segment = text[segment_start : boundary.start()]
    last = "" if not segment or segment[-1].isspace() else segment.split()[-1]
    word = last.lstrip("([\"'“‘").lower()
    # No rule for initials ("J. Smith"): in technical text "3.7 V. The" ends far more sentences.
    if word in _ABBREVIATIONS:
        return False
    return not (word in _NUMBER_ABBREVIATIONS and following[:1].isdigit())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence; every line (list item, heading) starts one."""
    spans = []
    line_start = 0
    for line in text.splitlines(keepends=True):
        line_end = line_start + len(line.rstrip("\r\n"))
        marker = _LIST_MARKER.match(text, line_start, line_end)
        segment_start = line_start
        for boundary in _BOUNDARY.finditer(text, marker.end() if marker else line_start, line_end):
            if _ends_sentence(text, segment_start, line_end, boundary):
                spans.append((segment_start, boundary.end()))
                segment_start = boundary.end()
        spans.append((segment_start, line_end))
        line_start += len(line)
    trimmed = []
    for start, end in spans:
        piece = text[start:end]
        if piece.strip():
            start += len(piece) - len(piece.lstrip())
            trimmed.append((start, start + len(piece.strip())))
    return trimmed


def split_sentences(text: str) -> list[str]:
    """Sentences of English and Chinese text, one line at least per sentence.

    Splits after 。！？； and after . ! ? followed by a space; keeps decimals
    (4.2), abbreviations (e.g., Fig. 3, et al.) and list numbers (1.) whole.
    """
    return [text[start:end] for start, end in sentence_spans(text)]
