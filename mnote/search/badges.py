"""Badges on answer sentences: which of this query's citations back each sentence.

Pure functions, no Django. An answer (LightRAG's, or one built here from the
citations when no LLM is configured) is cleaned of the LLM's own reference
markers, split into sentences, and each sentence gets at most three citation
ids whose display quote supports it. Ids only ever come from the citations
passed in; a sentence nothing supports gets no badge.
"""

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rapidfuzz import fuzz

from mnote.search.markers import (
    _REFERENCE_HEADING,
    _numeric_to_ref,
    _outside_code,
    _without_reference_section,
    map_ref_markers,
    strip_llm_markers,
)
from mnote.text import content_units, is_cjk_unit, query_units, stemmed_words
from mnote.text.sentences import sentence_spans, split_sentences, without_list_marker

__all__ = [
    "MIN_SUPPORT",
    "AnsweredSentence",
    "BadgePlacer",
    "extractive_answer",
    "map_ref_markers",
    "place_badges",
    "render_badged_text",
    "split_sentences",
    "strip_llm_markers",
]

# Share of a sentence's (weighted) content terms a quote must contain. LLM
# answers paraphrase and add connective words, so a faithful sentence
# typically keeps 40-70% of its terms in the quote it came from, while a
# quote that is merely on the same topic shares one or two words (<25%).
MIN_SUPPORT = 0.4
# A weaker quote is not badged next to one that states the sentence outright.
_RELATIVE_SUPPORT = 0.7
# rapidfuzz partial_ratio at which a sentence counts as lifted from the quote.
_VERBATIM_RATIO = 90
_VERBATIM_MIN_CHARS = 12
# Share of the query's terms a quote sentence must contain to be offered as
# an extractive answer, and how close to the best one it must be.
_MIN_QUERY_MATCH = 0.4
_RELATIVE_QUERY_MATCH = 0.6


class CitationLike(Protocol):
    citation_id: str
    chunk_id: str | None
    display_quote: str


@dataclass(frozen=True)
class AnsweredSentence:
    text: str
    citation_ids: list[str] = field(default_factory=list)
    # The whitespace that preceded the sentence: "" first or between CJK
    # sentences, " " inside a paragraph, "\n" a new line or list item, "\n\n"
    # a new paragraph. Lets renderers keep the answer's layout.
    space_before: str = ""




def _space_between(text: str, previous_end: int | None, start: int) -> str:
    if previous_end is None:
        return ""
    newlines = text.count("\n", previous_end, start)
    if newlines:
        return "\n\n" if newlines > 1 else "\n"
    return " " if start > previous_end else ""


# ---------------------------------------------------------------- support

def _units(text: str) -> list[str]:
    return content_units(without_list_marker(text))


class _Evidence:
    """A text prepared once for repeated "does it contain this term" checks."""

    def __init__(self, text: str):
        self.lowered = text.lower()
        self.latin = stemmed_words(self.lowered)
        self.flat = _flat(text)

    def contains(self, unit: str) -> bool:
        return unit in self.lowered if is_cjk_unit(unit) else unit in self.latin


def _flat(text: str) -> str:
    text = without_list_marker(text)
    return " ".join(re.sub(r"[*_`#>|]", " ", text).lower().split())


def _weight(unit: str, query_units: set[str]) -> float:
    if unit[0].isdigit():
        return 2.0
    # Every citation was retrieved for the query, so its words say least about which one backs a sentence.
    return 0.5 if unit in query_units else 1.0


def _support(sentence: str, units: list[str], evidence: _Evidence, query_units: set[str]) -> float:
    """How well a quote backs a sentence, 0..1: weighted share of its terms the quote holds."""
    matched = [unit for unit in units if evidence.contains(unit)]
    score = 0.0
    if len(matched) >= 2 and (not query_units or any(unit not in query_units for unit in matched)):
        total = sum(_weight(unit, query_units) for unit in units)
        score = sum(_weight(unit, query_units) for unit in matched) / total
    flat = _flat(sentence)
    if _VERBATIM_MIN_CHARS <= len(flat) <= len(evidence.flat) and units:
        ratio = fuzz.partial_ratio(flat, evidence.flat, score_cutoff=_VERBATIM_RATIO)
        score = max(score, ratio / 100)
    return score


def _supporting_ids(
    sentence: str,
    pool: list[tuple[str, _Evidence]],
    query_units: set[str],
    min_support: float,
) -> list[str]:
    """Citation ids whose quote backs ``sentence``, strongest first, ties in citation order."""
    units = _units(sentence)
    if not units:
        return []
    scored = []
    for position, (citation_id, evidence) in enumerate(pool):
        score = _support(sentence, units, evidence, query_units)
        if score >= min_support:
            scored.append((-score, position, citation_id))
    if not scored:
        return []
    scored.sort()
    floor = -scored[0][0] * _RELATIVE_SUPPORT
    return list(dict.fromkeys(citation_id for score, _, citation_id in scored if -score >= floor))


def _evidence_pool(citations: Sequence[CitationLike]) -> list[tuple[str, _Evidence]]:
    pool, seen = [], set()
    for citation in citations:
        if citation.citation_id and citation.citation_id not in seen:
            seen.add(citation.citation_id)
            pool.append((citation.citation_id, _Evidence(citation.display_quote or "")))
    return pool


# ---------------------------------------------------------------- answers


def place_badges(
    answer: str,
    citations: Sequence[CitationLike],
    *,
    query: str = "",
    max_per_sentence: int = 3,
    min_support: float = MIN_SUPPORT,
    ids_by_reference: dict[str, list[str]] | None = None,
) -> list[AnsweredSentence]:
    """Split an LLM answer into sentences badged with the citations that support them.

    A `[ref:<chunk_id>]` marker badges the sentence it sits in first; a
    LightRAG `[n]` marker, given ``ids_by_reference`` (reference id → ids of
    its citations), badges the citation of reference n that best supports the
    sentence. The remaining places go to quotes whose support score reaches
    ``min_support``. Only ids of ``citations`` are used.
    """
    placer = BadgePlacer(
        citations, query=query, max_per_sentence=max_per_sentence, min_support=min_support, ids_by_reference=ids_by_reference
    )
    placer.feed(answer)
    placer.finish()
    return placer.sentences


class BadgePlacer:
    """Badges placed while an answer streams in: ``feed`` the pieces as they
    come and get back each sentence once it is complete (another sentence has
    begun after it); ``finish`` gives the rest. A trailing reference list is
    held back until it is known to be one. ``pending`` is the cleaned text
    not yet returned."""

    def __init__(
        self,
        citations: Sequence[CitationLike],
        *,
        query: str = "",
        max_per_sentence: int = 3,
        min_support: float = MIN_SUPPORT,
        ids_by_reference: dict[str, list[str]] | None = None,
    ):
        self._by_chunk: dict[str, str] = {}
        for citation in citations:
            if citation.chunk_id and citation.citation_id:
                self._by_chunk.setdefault(citation.chunk_id, citation.citation_id)
        self._references = {f"#{ref}": ids for ref, ids in (ids_by_reference or {}).items()}
        for ref in self._references:
            self._by_chunk[ref] = ref
        self._pool = _evidence_pool(citations)
        self._evidence = dict(self._pool)
        self._query_units = query_units(query) if query else set()
        self._max = max_per_sentence
        self._min_support = min_support
        self._raw = ""
        self.pending = ""
        self.sentences: list[AnsweredSentence] = []

    def feed(self, piece: str) -> list[AnsweredSentence]:
        self._raw += piece
        return self._emit(final=False)

    def finish(self) -> list[AnsweredSentence]:
        return self._emit(final=True)

    def _emit(self, *, final: bool) -> list[AnsweredSentence]:
        converted = _outside_code(_without_reference_section(self._raw), _numeric_to_ref)
        text, refs = map_ref_markers(strip_llm_markers(converted), self._by_chunk)
        spans = sentence_spans(text)
        ready = len(spans) if final else max(len(spans) - 1, 0)
        held = len(text)
        if not final:
            for index in range(len(self.sentences), len(spans)):
                if _REFERENCE_HEADING.fullmatch(text[spans[index][0] : spans[index][1]]):
                    # Perhaps the start of the reference list: wait and see.
                    ready, held = min(ready, index), spans[index][0]
                    break
        starts = [start for start, _ in spans]
        explicit: dict[int, list[str]] = {}
        for offset, ids in sorted(refs.items()):
            # A marker belongs to the sentence it follows, even when written after its full stop.
            explicit.setdefault(max(bisect_left(starts, offset) - 1, 0), []).extend(ids)
        new = []
        for index in range(len(self.sentences), ready):
            start, end = spans[index]
            sentence = text[start:end]
            chosen = self._explicit(sentence, explicit.get(index, []))
            chosen += _supporting_ids(sentence, self._pool, self._query_units, self._min_support)
            previous_end = spans[index - 1][1] if index else None
            new.append(AnsweredSentence(sentence, list(dict.fromkeys(chosen))[: self._max], _space_between(text, previous_end, start)))
        self.sentences.extend(new)
        first = len(self.sentences)
        self.pending = "" if final or first >= len(spans) else text[spans[first][0] : held].rstrip()
        return new

    def _explicit(self, sentence: str, ids: list[str]) -> list[str]:
        chosen = []
        units = _units(sentence)
        for cid in ids:
            if cid not in self._references:
                chosen.append(cid)
                continue
            # LightRAG names a file, not a passage: its citation that best backs the sentence.
            scored = [
                (_support(sentence, units, self._evidence[c], self._query_units), -i, c)
                for i, c in enumerate(self._references[cid])
                if c in self._evidence
            ]
            best = max(scored, default=None)
            if best and best[0] >= self._min_support / 2:
                chosen.append(best[2])
        return chosen


@dataclass
class _Candidate:
    text: str
    score: float
    citation_index: int
    position: int


def _query_match(sentence: str, query_units: set[str]) -> float:
    """Weighted share of the query's terms the sentence holds; 0 if it only repeats the query."""
    units = _units(sentence)
    if not any(unit not in query_units for unit in units):
        return 0.0
    evidence = _Evidence(sentence)
    total = sum(_weight(unit, set()) for unit in query_units)
    return sum(_weight(unit, set()) for unit in query_units if evidence.contains(unit)) / total


def _is_repeat(flat: str, kept: list[str]) -> bool:
    """Quotes overlap: the same sentence, or one inside another, is said once."""
    return any(fuzz.partial_ratio(flat, other, score_cutoff=90) for other in kept)


# Longer "sentences" are flattened tables or lists, not statements.
_MAX_ANSWER_SENTENCE = 400


def _answers_something(sentence: str) -> bool:
    """A question, a table row or a wall of text is not an answer sentence."""
    text = sentence.strip()
    return (
        bool(text)
        and text[-1] not in "?？"
        and len(text) <= _MAX_ANSWER_SENTENCE
        and text.count("|") < 3
    )


def extractive_answer(
    query: str,
    citations: Sequence[CitationLike],
    *,
    max_sentences: int = 4,
) -> list[AnsweredSentence]:
    """An answer without an LLM: the quote sentences that best match the query.

    Each sentence is badged with the citation it came from, then up to two
    others whose quotes also support it. Sentences from one citation stay in
    their reading order; citations come in the order of their best sentence.
    Empty when no sentence matches.
    """
    units = query_units(query)
    if not units:
        return []
    candidates = []
    for citation_index, citation in enumerate(citations):
        if not citation.citation_id:
            continue
        for position, sentence in enumerate(split_sentences(citation.display_quote or "")):
            if not _answers_something(sentence):
                continue
            score = _query_match(sentence, units)
            if score >= _MIN_QUERY_MATCH:
                candidates.append(_Candidate(sentence, score, citation_index, position))
    if not candidates:
        return []
    candidates.sort(key=lambda c: (-c.score, c.citation_index, c.position))
    floor = candidates[0].score * _RELATIVE_QUERY_MATCH
    chosen: list[_Candidate] = []
    kept_flat: list[str] = []
    for candidate in candidates:
        flat = _flat(candidate.text)
        if candidate.score < floor or len(chosen) == max_sentences:
            break
        if not _is_repeat(flat, kept_flat):
            chosen.append(candidate)
            kept_flat.append(flat)

    citation_rank = {}
    for candidate in chosen:
        citation_rank.setdefault(candidate.citation_index, len(citation_rank))
    chosen.sort(key=lambda c: (citation_rank[c.citation_index], c.position))

    pool = _evidence_pool(citations)
    answer = []
    for candidate in chosen:
        own = citations[candidate.citation_index].citation_id
        others = [cid for cid in _supporting_ids(candidate.text, pool, set(), MIN_SUPPORT) if cid != own]
        space = "" if not answer else ("" if answer[-1].text[-1:] in "。！？；" else " ")
        answer.append(AnsweredSentence(candidate.text, [own, *others[:2]], space))
    return answer


def render_badged_text(sentences: Sequence[AnsweredSentence]) -> str:
    """Plain text with ` [a3z1]` after each sentence, for the JSON API."""
    return "".join(
        sentence.space_before + sentence.text + "".join(f" [{cid}]" for cid in sentence.citation_ids)
        for sentence in sentences
    )
