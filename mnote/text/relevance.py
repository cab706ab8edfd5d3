"""How well passages match a query, in words and in the embedder's meaning:
the tokens the embedded rerank's BM25 counts, and the measure the relevance
floor reads.

Pure functions on strings and numbers: the rerank (under LightRAG's
virtualenv) and the search stage (deciding the floor from the cosines the
rerank returned) use the same ones.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
CJK_CHARACTER = re.compile(rf"[{_CJK}]")
# Words that say nothing about which paragraph is meant (English; Chinese
# bigrams carry their own weight through IDF).
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with "
    "what which who how when where why do does did can should would could i you we they he she".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased words and their neighbour pairs; Chinese runs as single
    characters and character pairs (no word segmenter ships offline)."""
    out: list[str] = []
    words: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        run = match.group(0)
        if CJK_CHARACTER.match(run):
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
            words.append(run)
        elif run not in _STOPWORDS:
            out.append(run)
            words.append(run)
    out.extend(f"{a}_{b}" for a, b in zip(words, words[1:]))
    return out


def content_key(text: str) -> bytes:
    """A passage's key: the rerank keeps each passage's vector under it, and
    the search names the passages whose cosine it wants by it (hex) instead
    of sending their text again."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


# The relevance floor's measure (see match_confidence). Chosen on the question
# set's tuned part (bench/rerank_tuning.py: the most no-answer questions held
# back at 5 % of answerable ones, then the best separation of the two).
CONFIDENCE_FIRST = 3
STAND_OUT_WEIGHT = 3.0
COVERAGE_WEIGHT = 0.2
ABSENT_WEIGHT = 0.3


@functools.lru_cache(maxsize=1024)  # the cards' chunks come back search after search
def token_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


def query_words(query: str) -> set[str]:
    return {t for t in tokens(query) if "_" not in t}


def word_coverage(query: str, documents: list[str], first: int = CONFIDENCE_FIRST) -> float:
    """The share of the query's words (weighted by their rarity among the
    documents; a word none of them has weighs most) that the first documents hold."""
    words = query_words(query)
    if not words or not documents:
        return 0.0
    held = [token_set(d) for d in documents]
    n = len(held)
    weight = {w: math.log((n + 1) / (1 + sum(w in h for h in held))) + 1 for w in words}
    found = set().union(*held[:first])
    return sum(weight[w] for w in words if w in found) / sum(weight.values())


def absent_words(query: str, documents: list[str]) -> float:
    """The share of the query's words that none of the documents holds (a
    question about something the library never mentions: "Kubernetes",
    "ibuprofen", "年假")."""
    words = query_words(query)
    if not words:
        return 1.0
    held = set().union(*(token_set(d) for d in documents)) if documents else set()
    return sum(w not in held for w in words) / len(words)


def _median(values: list[float]) -> float:
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def match_confidence(query: str, documents: list[str], cosines: list[float | None],
                     candidates: list[str] | None = None, candidate_cosines: list[float | None] | None = None,
                     ) -> float | None:
    """How well the first documents (in the order given: the page's) match the
    query, for the relevance floor: the best cosine among the first
    CONFIDENCE_FIRST, plus STAND_OUT_WEIGHT times how far it stands above the
    median cosine of all the candidates LightRAG found (a question the
    library answers has a passage that stands out from the rest; one it does
    not answer gets a flat field), plus COVERAGE_WEIGHT times
    :func:`word_coverage`, less ABSENT_WEIGHT times :func:`absent_words` among
    the candidates. ``candidates`` and their cosines default to the
    documents'. None without cosines."""
    best = [c for c in cosines[:CONFIDENCE_FIRST] if c is not None]
    if candidates is None or candidate_cosines is None:
        candidates, candidate_cosines = documents, cosines
    known = [c for c in candidate_cosines if c is not None]
    if not best or not known:
        return None
    top = max(best)
    return round(top + STAND_OUT_WEIGHT * (top - _median(known)) + COVERAGE_WEIGHT * word_coverage(query, documents)
                 - ABSENT_WEIGHT * absent_words(query, candidates), 6)
