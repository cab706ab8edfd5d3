"""Locator evidence windows and sentences, the de-duplication fingerprint, MNote's lexical score and term marks."""

import hashlib
import math
import unicodedata
from functools import lru_cache

from mnote.text.display import _ALNUM_RUN, clean_display_text
from mnote.text.terms import (
    _WORD_TOKEN,
    _fold,
    _occurs,
    _is_cjk,
    _is_latin_word_char,
    _term_spans,
    _window_bounds,
    content_units,
    is_real_heading,
    query_terms,
    query_units,
)
from mnote.text.sentences import sentence_spans

def _densest_cluster(text: str, query: str, width: int) -> tuple[int, int] | None:
    """The span holding the most distinct query terms (longer terms weigh
    more) within ``width`` characters.

    Ties go to matches that start a word or clause, then to more matches,
    then to the earliest: ``吡咯烷`` after ``。`` beats the one inside
    ``N-甲基吡咯烷酮``.
    """
    spans = _term_spans(text, query)
    if not spans:
        return None
    starts_word = [s == 0 or not text[s - 1].isalnum() for s, _, _ in spans]
    best: tuple[tuple[int, int, int], int, int] | None = None
    counts: dict[str, int] = {}
    weight = standalone = 0
    j = 0
    for i, (start, _, _) in enumerate(spans):
        while j < len(spans) and (j == i or spans[j][1] - start <= width):
            term = spans[j][2]
            counts[term] = counts.get(term, 0) + 1
            weight += len(term) if counts[term] == 1 else 0
            standalone += starts_word[j]
            j += 1
        score = (weight, standalone, j - i)
        if best is None or score > best[0]:
            best = (score, i, j)
        term = spans[i][2]
        counts[term] -= 1
        weight -= len(term) if counts[term] == 0 else 0
        standalone -= starts_word[i]
    _, i, j = best
    return spans[i][0], max(end for _, end, _ in spans[i:j])


def evidence_window(
    text: str, query: str, *, heading_path: list[str] | None = None, width: int = 280, cleaned: bool = False
) -> str:
    """The locator evidence text: ``"<last heading> — <window>"``.

    The window is about ``width`` characters of the cleaned text, centred on
    the densest cluster of query terms (the start of the text when none is
    found), cut only between whole words (anywhere between CJK characters).
    The heading is left out when there is none or the window already starts
    with it. No markup, no ellipses: the browser scorer tokenises it as is.
    ``cleaned``: ``text`` is ``clean_display_text``'s output for the text
    already (a caller that keeps those), so it is not cleaned again here.
    """
    if not cleaned:
        text = clean_display_text(text)
    cluster = _densest_cluster(text, query, width) or (0, 0)
    start, end = _window_bounds(text, cluster[0], cluster[1], width)
    return with_heading(text[start:end], heading_path)


def with_heading(window: str, heading_path: list[str] | None) -> str:
    """The locator evidence text of a window: ``"<last heading> — <window>"``,
    the heading left out when there is none or the window starts with it."""
    heading = clean_display_text(next((h for h in reversed(heading_path or []) if is_real_heading(h)), ""))
    if not heading or _fold(window)[0].startswith(_fold(heading)[0]):
        return window
    return f"{heading} — {window}" if window else heading


# --- fingerprint, score, marks --------------------------------------------------


def fingerprint(text: str) -> str:
    """sha1 hex of the text with case, width and compatibility forms folded
    (NFKC + casefold) and everything but letters and digits dropped.

    Pass the display quote. All of it is hashed, not a prefix: two chunks of
    one section can share a long opening and differ later, and merging them
    would lose a citation, which is worse than showing a near-duplicate.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text or "").casefold())
    kept = "".join(_ALNUM_RUN.findall(folded))  # the characters str.isalnum() accepts
    return hashlib.sha1(kept.encode(), usedforsecurity=False).hexdigest()


@lru_cache(maxsize=1024)
def _phrase(text: str) -> str:
    # Kept per text (the same chunks and blocks are scored search after
    # search, against other queries): tokenising a long chunk is the costly part.
    return " ".join(_WORD_TOKEN.findall(_fold(text)[0]))


@lru_cache(maxsize=256)
def _scored_query(query: str) -> tuple[tuple[str, ...], str]:
    """A query's terms and phrase, worked out once per query (a mapping
    scores a few dozen texts against the same query)."""
    return tuple(query_terms(query)), _phrase(query)


def lexical_score(text: str, query: str) -> float:
    """MNote's lexical score in [0, 1]: 0.9 × the fraction of query terms the
    text contains, + 0.1 when it contains the whole query as a phrase.
    Shown as "MNote lexical score", never as rerank."""
    terms, phrase = _scored_query(query)
    if not terms or not text:
        return 0.0
    folded = _fold(text)[0]
    find = folded.find  # most terms are absent from most texts: one find tells
    found = sum(1 for term in terms if find(term) != -1 and _occurs(folded, term))
    # Every term is a piece of the phrase's words: a text missing one cannot
    # hold the phrase, and tokenising all of it (the costly part) is skipped.
    has_phrase = found == len(terms) and bool(phrase) and _occurs(_phrase(text), phrase)
    return round(min(1.0, 0.9 * found / len(terms) + (0.1 if has_phrase else 0.0)), 4)


def mark_terms(display: str, query: str) -> list[tuple[str, bool]]:
    """The display quote as (segment, is a query-term match) pairs, in order,
    for templates to wrap matches in ``<mark>`` with auto-escaping on. A
    Latin match is extended to the end of its word (``mirror`` marks
    ``mirrors``); a CJK run is marked whole, or by bigrams when the display
    does not contain it whole."""
    if not display:
        return []
    marked: list[tuple[int, int]] = []
    for start, end, term in _term_spans(display, query):
        if not _is_cjk(term[0]):
            while end < len(display) and _is_latin_word_char(display[end]):
                end += 1
        if marked and start <= marked[-1][1]:
            marked[-1] = (marked[-1][0], max(marked[-1][1], end))
        else:
            marked.append((start, end))
    segments: list[tuple[str, bool]] = []
    pos = 0
    for start, end in marked:
        if start > pos:
            segments.append((display[pos:start], False))
        segments.append((display[start:end], True))
        pos = end
    if pos < len(display):
        segments.append((display[pos:], False))
    return segments


# --- evidence sentences ---------------------------------------------------------

# The most a card's evidence runs to. Chosen on the question set's tuned part
# (the answer inside the chosen sentences of the chunk that holds it: 0.82 at
# 400 characters, 0.88 at 500, 0.95 at 700, against 0.94 for the 700-character
# window cut around the query's words before): without the embedder's meaning
# of each sentence, words alone need this much room to hold a paraphrased
# question's answer.
EVIDENCE_WIDTH = 700


def _unit_weights(sentence_units: list[set[str]], query: set[str]) -> dict[str, float]:
    """A query unit found in fewer of the chunk's sentences says more about
    which one answers (an IDF within the chunk); a longer unit more than a
    short one."""
    n = len(sentence_units)
    return {
        u: math.log(1 + n / (1 + sum(u in s for s in sentence_units))) * (1 + min(len(u), 8) / 8)
        for u in query
    }


@lru_cache(maxsize=1024)
def _sentences_of(text: str) -> tuple[list[tuple[int, int]], list[frozenset[str]]]:
    """A text's sentences and the content units of each: kept per text (the
    same chunks come back search after search, for other queries)."""
    spans = sentence_spans(text)
    return spans, [frozenset(content_units(text[s:e])) for s, e in spans]


def evidence_span(
    text: str, query: str, *, width: int = EVIDENCE_WIDTH, meaning: list[float] | None = None
) -> tuple[int, int]:
    """Where in ``text`` (a display text, already cleaned) the evidence is:
    the run of whole sentences, at most ``width`` characters, that holds
    most of the query's terms (weighted by :func:`_unit_weights`), padded
    with the sentences around it up to ``width``. ``meaning``: each
    sentence's similarity to the query (``sentence_spans(text)``'s order, 0
    to 1; from the embedder), blended in at MEANING_WEIGHT. A sentence
    longer than ``width`` alone is cut between words around the query's
    terms. The start of the text when nothing matches."""
    spans, sentence_units = _sentences_of(text)
    if not spans:
        return 0, 0
    query_set = set(query_units(query))
    units = [held & query_set for held in sentence_units]
    weights = _unit_weights(units, query_set)
    total = sum(weights.values()) or 1.0
    blend = meaning if meaning is not None and len(meaning) == len(spans) else None
    # Without the embedder's blend a run's score is that of the query terms
    # it holds, so a run that starts on, or grows by, a sentence adding none
    # scores as a shorter run and never wins: it is not scored (this is most
    # of a search's evidence time). Only when some sentence holds a term:
    # else every run scores 0 and the shortest wins.
    prune = blend is None and any(units)
    best: tuple[tuple[float, int], int, int] | None = None
    for i in range(len(spans)):
        if prune and not units[i]:
            continue
        held: set[str] = set()
        close = 0.0
        for j in range(i, len(spans)):
            if j > i and spans[j][1] - spans[i][0] > width:
                break
            if prune and j > i and units[j] <= held:
                continue
            held |= units[j]
            score = sum(weights[u] for u in held) / total
            if blend is not None:
                close = max(close, blend[j])
                score = (1 - MEANING_WEIGHT) * score + MEANING_WEIGHT * close
            key = (round(score, 9), -(spans[j][1] - spans[i][0]))
            if best is None or key > best[0]:
                best = (key, i, j)
    _, first, last = best
    # Padded on both sides in turn: the answer may follow the sentence that
    # names the question's terms, or lead to it.
    grew = True
    while grew:
        grew = False
        if last + 1 < len(spans) and spans[last + 1][1] - spans[first][0] <= width:
            last, grew = last + 1, True
        if first > 0 and spans[last][1] - spans[first - 1][0] <= width:
            first, grew = first - 1, True
    start, end = spans[first][0], spans[last][1]
    if end - start > width:
        cluster = _densest_cluster(text[start:end], query, width) or (0, 0)
        inner = _window_bounds(text[start:end], cluster[0], cluster[1], width)
        start, end = start + inner[0], start + inner[1]
    return start, end


MEANING_WEIGHT = 0.5


def evidence_sentences(text: str, query: str, *, width: int = EVIDENCE_WIDTH, cleaned: bool = False) -> str:
    """The sentences of a chunk that answer the query (:func:`evidence_span`), as a card quotes them."""
    if not cleaned:
        text = clean_display_text(text)
    start, end = evidence_span(text, query, width=width)
    return text[start:end]


def evidence_core(text: str, query: str) -> tuple[int, int]:
    """Where in an evidence text (the sentences a card quotes) the sentence
    is that holds most of the query's terms, without the sentences
    :func:`evidence_span` padded it with: the place a preview takes the
    reader to when the evidence runs over a page break or a long passage.
    The whole text when no sentence holds a term of the query."""
    spans, sentence_units = _sentences_of(text)
    query_set = set(query_units(query))
    if not spans or not query_set:
        return 0, len(text)
    units = [held & query_set for held in sentence_units]
    weights = _unit_weights(units, query_set)
    scores = [sum(weights[u] for u in held) for held in units]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    return spans[best] if scores[best] > 0 else (0, len(text))
