"""The embedded LightRAG's rerank provider: BM25 (``bm25s``) fused with the
embedding order LightRAG retrieved the candidates in.

LightRAG calls it as its ``cohere`` rerank binding (``RERANK_BINDING=cohere``,
``RERANK_BINDING_HOST=<model endpoint>/v1/rerank``): a POST of ``{model,
query, documents[, top_n]}`` answered with ``{"results": [{"index",
"relevance_score"}]}``, best first. The documents arrive in LightRAG's dense
order, so their position is the embedding score's rank; re-embedding them
here would cost seconds per query on two cores and say nothing new.

Why lexical: a dense model of this size ranks a tiny chunk ("Hello", a file
name) above the paragraph that holds the user's very words; BM25 over the
candidates puts the words back in charge while the dense rank still decides
between paragraphs that share them.

Runs under the LightRAG virtualenv (``bm25s`` and numpy live there); importing
this module needs only the standard library.
"""
from __future__ import annotations

import functools
import math
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from mnote.text.relevance import CJK_CHARACTER, content_key, tokens

RERANK_MODEL = "mnote-bm25-dense-fusion"
MAX_DOCUMENTS = 500
# How the query is embedded for the cosine against LightRAG's stored "passage"
# vectors: as an e5 query (measured better than as a passage on the tuned part).
QUERY_INPUT_TYPE = "query"

@functools.lru_cache(maxsize=2048)
def passage_tokens(text: str) -> tuple[str, ...]:
    """:func:`tokens` of a candidate passage, kept: the candidates are the
    library's chunks, which recur from one question to the next (60 of them a
    search, ~14 ms of tokenizing on two cores), while each question is new.
    The words are interned, so kept passages share their vocabulary."""
    return tuple(sys.intern(t) for t in tokens(text))


@dataclass(frozen=True)
class Fusion:
    """How the fused score weighs its parts (they sum to 1): lexical (BM25
    over the candidates, scaled to the best), LightRAG's dense order, and the
    embedder's own query-passage cosine (scaled between the candidates'
    lowest and highest). A chunk with fewer than ``substance_words`` words
    has its score scaled down (a hub: a heading, a table of empty cells, a
    file name) and filler text (lorem ipsum) by ``filler_factor``."""

    lexical: float = 0.7
    rank: float = 0.3
    similarity: float = 0.0
    substance_words: int = 0
    filler_factor: float = 1.0


# Chosen on the question set's tuned part (bench/rerank_tuning.py): the
# embedder's cosine carries the meaning a paraphrased question shares with its
# answer; BM25 the exact words; LightRAG's order adds nothing once both are in.
# The hub settings tie with none on that set; they are kept for the tiny and
# empty-cell chunks that won unrelated queries on larger libraries.
FUSION = Fusion(lexical=0.5, rank=0.0, similarity=0.5, substance_words=10, filler_factor=0.3)

_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
_FILLER = re.compile(r"lorem ipsum|dolor sit amet", re.IGNORECASE)


@functools.lru_cache(maxsize=8192)  # LightRAG sends the same candidates again and again
def substance(text: str) -> int:
    """Words a passage says: Latin words of two letters or more, and Chinese
    characters two to a word."""
    return len(_LATIN_WORD.findall(text)) + len(CJK_CHARACTER.findall(text)) // 2


def lexical_scores(query: str, documents: list[str]) -> list[float]:
    """BM25 of each document among the candidates, scaled to the best (0 when no word matches)."""
    import bm25s  # only the LightRAG virtualenv has it

    n = len(documents)
    query_tokens = tokens(query)
    if not n or not query_tokens:
        return [0.0] * n
    retriever = bm25s.BM25()
    retriever.index([list(passage_tokens(d)) or ["\x00empty"] for d in documents], show_progress=False)
    known = [t for t in query_tokens if t in retriever.vocab_dict]
    if not known:
        return [0.0] * n
    raw = retriever.get_scores(known)
    best = float(max(raw)) if len(raw) else 0.0
    return [float(s) / best for s in raw] if best > 0 else [0.0] * n


def fused_scores(query: str, documents: list[str], similarities: list[float | None] | None = None,
                 fusion: Fusion = FUSION, lexical: list[float] | None = None) -> list[float]:
    """One score in [0, 1] per document, in the documents' order.
    ``similarities``: the query's cosine to each document (None where unknown);
    without them the similarity weight goes to the dense order."""
    n = len(documents)
    if n == 0:
        return []
    rank = [1.0 - i / n for i in range(n)]
    if lexical is None:
        lexical = lexical_scores(query, documents)
    known = [c for c in similarities or [] if c is not None]
    rank_weight, similarity_weight = fusion.rank, fusion.similarity
    if known and max(known) > min(known):
        low, span = min(known), max(known) - min(known)
        similar = [0.0 if c is None else (c - low) / span for c in similarities]
    else:
        similar = [0.0] * n
        rank_weight, similarity_weight = fusion.rank + fusion.similarity, 0.0
    out = []
    for i, text in enumerate(documents):
        score = fusion.lexical * lexical[i] + rank_weight * rank[i] + similarity_weight * similar[i]
        if fusion.substance_words:
            score *= min(1.0, substance(text) / fusion.substance_words)
        if fusion.filler_factor < 1.0 and _FILLER.search(text):
            score *= fusion.filler_factor
        out.append(round(score, 6))
    return out


def unit(values) -> "array | None":
    """The vector scaled to length 1 (float32), None for a zero vector."""
    from array import array

    norm = math.sqrt(sum(v * v for v in values))
    return array("f", (v / norm for v in values)) if norm > 0 else None


def cosine(a, b) -> float:
    """Of two unit vectors."""
    return sum(x * y for x, y in zip(a, b))


class StoredVectors:
    """LightRAG's own chunk vectors, found by the chunk's text: read from its
    NanoVectorDB file (``vdb_chunks.json`` in the working directory, each
    record's ``content`` and its ``vector``: float16, zlib, base64), read
    again when the file changes. Embedding the candidates anew would cost
    seconds per chunk on two cores; these were computed once, at ingest."""

    RECHECK_SECONDS = 5.0

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        self._vectors: dict[bytes, object] = {}
        self._stamp = None
        self._checked = 0.0
        self._reading = False

    def _refresh(self) -> None:
        """Under the lock. The first read is waited for; a later change of the
        file (LightRAG flushes as it indexes) is read by a thread while
        searches go on with the vectors already read."""
        now = time.monotonic()
        if now - self._checked < self.RECHECK_SECONDS and self._stamp is not None:
            return
        self._checked = now
        try:
            stat = os.stat(self.path)
        except OSError:
            self._vectors, self._stamp = {}, None
            return
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp or self._reading:
            return
        if self._stamp is None:
            self._vectors, self._stamp = self._read(), stamp
            return
        self._reading = True
        threading.Thread(target=self._read_in_background, args=(stamp,), name="stored-vectors", daemon=True).start()

    def _read_in_background(self, stamp) -> None:
        try:
            vectors = self._read()
        finally:
            with self._lock:
                self._reading = False
        with self._lock:
            self._vectors, self._stamp = vectors, stamp

    def _read(self) -> dict:
        import base64
        import json
        import struct
        import zlib

        try:
            with open(self.path, encoding="utf-8") as f:
                records = json.load(f).get("data") or []
        except (OSError, ValueError):
            return {}
        out = {}
        for record in records:
            content, packed = record.get("content"), record.get("vector")
            if not isinstance(content, str) or not isinstance(packed, str):
                continue
            try:
                raw = zlib.decompress(base64.b64decode(packed))
            except (ValueError, zlib.error):
                continue
            vector = unit(struct.unpack(f"<{len(raw) // 2}e", raw[: len(raw) // 2 * 2]))
            if vector is not None:
                out[content_key(content)] = vector
        return out

    def lookup(self, texts: list[str]) -> list:
        """Each text's unit vector, or None where LightRAG stored none for it."""
        return self.lookup_keys([content_key(t) for t in texts])

    def lookup_keys(self, keys: list[bytes]) -> list:
        """Each :func:`content_key`'s unit vector, or None."""
        with self._lock:
            self._refresh()
            vectors = self._vectors
        return [vectors.get(k) for k in keys]


class PassageVectors:
    """The vectors of the passages LightRAG had this endpoint embed for its
    vector storage (the embedder hands them over: ``Embedder.keep_passages``),
    kept in a SQLite file by the text's hash, so the rerank finds a chunk's
    vector whatever storage LightRAG keeps its own copy in (NanoVectorDB's
    file, PostgreSQL, ...). Chunks embedded before this file existed are
    looked up in ``fallback`` (:class:`StoredVectors`), when given."""

    FILE_NAME = "mnote_passage_vectors.sqlite3"

    def __init__(self, path, fallback: "StoredVectors | None" = None):
        import sqlite3

        self.path = path
        self.fallback = fallback
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID")

    def record(self, texts: list[str], vectors) -> None:
        """Keep each text's vector (a row of float32s, length 1)."""
        rows = [(content_key(t), v.astype("<f2").tobytes()) for t, v in zip(texts, vectors)]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)

    def lookup(self, texts: list[str]) -> list:
        """Each text's unit vector, or None where none was kept (nor is in the fallback)."""
        return self.lookup_keys([content_key(t) for t in texts])

    def lookup_keys(self, keys: list[bytes]) -> list:
        """Each :func:`content_key`'s unit vector, or None."""
        import struct

        found: dict[bytes, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                piece = keys[start : start + 500]
                marks = ",".join("?" * len(piece))
                found.update(self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", piece))
        out = [None if found.get(k) is None else unit(struct.unpack(f"<{len(found[k]) // 2}e", found[k])) for k in keys]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing and self.fallback is not None:
            for i, vector in zip(missing, self.fallback.lookup_keys([keys[i] for i in missing])):
                out[i] = vector
        return out


class RerankRequestError(ValueError):
    pass


class QueryVectors:
    """The unit vectors of recent queries: a question's search and the
    answer LightRAG writes for it ask the rerank about the same query."""

    SIZE = 256

    def __init__(self, embed):
        self._embed = embed  # list[str] -> list of vectors
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, object] = OrderedDict()

    def __call__(self, query: str):
        with self._lock:
            vector = self._recent.get(query)
            if vector is not None:
                self._recent.move_to_end(query)
                return vector
        vector = unit(list(self._embed([query])[0]))
        with self._lock:
            self._recent[query] = vector
            while len(self._recent) > self.SIZE:
                self._recent.popitem(last=False)
        return vector


class Similarities:
    """The query's cosine to passages, from their kept vectors (``stored``:
    :class:`PassageVectors` or :class:`StoredVectors`) and the query's
    vector (``query_vector``: :class:`QueryVectors`). ``(query, texts)``:
    what the rerank weighs; :meth:`of_keys`: what the search asks for its
    relevance floor after LightRAG's own rerank call, naming the cards'
    passages by :func:`content_key` (the query's vector is kept from that
    call, the passages' are looked up: no embedding, no BM25)."""

    def __init__(self, stored, query_vector):
        self.stored = stored
        self.query_vector = query_vector

    def __call__(self, query: str, texts: list[str]) -> list[float | None] | None:
        return self._cosines(query, self.stored.lookup(texts))

    def of_keys(self, query: str, keys: list[bytes]) -> list[float | None] | None:
        return self._cosines(query, self.stored.lookup_keys(keys))

    def _cosines(self, query: str, vectors: list) -> list[float | None] | None:
        """None for a passage with no kept vector; None overall when none has
        one (nothing is embedded for that)."""
        if all(v is None for v in vectors):
            return None
        q = self.query_vector(query)
        if q is None:
            return None
        return [None if v is None else round(cosine(v, q), 6) for v in vectors]


def similarity_source(stored, query_vector) -> Similarities:
    return Similarities(stored, query_vector)


MAX_KEYS = 500


def similarities_response(body: dict, similarities: Similarities | None) -> dict:
    """The answer to ``/v1/rerank/similarities``: ``{query, keys: [hex
    content_key]}`` -> ``{"similarities": [cosine or null, ...]}`` in the
    keys' order (all null when no vector is kept for any)."""
    query, keys = body.get("query"), body.get("keys")
    if not isinstance(query, str) or not query.strip():
        raise RerankRequestError("'query' must be a non-empty string")
    if not isinstance(keys, list) or len(keys) > MAX_KEYS:
        raise RerankRequestError("'keys' must be a list of at most %d hex keys" % MAX_KEYS)
    try:
        raw = [bytes.fromhex(k) for k in keys]
    except (TypeError, ValueError):
        raise RerankRequestError("each key must be a hex string") from None
    cosines = similarities.of_keys(query, raw) if similarities is not None and raw else None
    return {"model": RERANK_MODEL, "similarities": cosines or [None] * len(raw)}


def rerank_response(body: dict, similarities=None) -> dict:
    """The answer to one ``/v1/rerank`` request (Cohere/Jina shape).
    ``similarities``: ``(query, texts) -> cosines`` (:func:`similarity_source`);
    each result then also carries its ``query_similarity`` (the search reads
    the cards' cosines afterwards by key: :func:`similarities_response`)."""
    query = body.get("query")
    documents = body.get("documents")
    if not isinstance(query, str) or not query.strip():
        raise RerankRequestError("'query' must be a non-empty string")
    if not isinstance(documents, list):
        raise RerankRequestError("'documents' must be a list")
    if len(documents) > MAX_DOCUMENTS:
        raise RerankRequestError("at most %d documents per request" % MAX_DOCUMENTS)
    texts = []
    for doc in documents:
        if isinstance(doc, dict):  # Cohere v1 also accepted {"text": ...}
            doc = doc.get("text")
        if not isinstance(doc, str):
            raise RerankRequestError("each document must be a string")
        texts.append(doc)
    top_n = body.get("top_n")
    if top_n is not None and (not isinstance(top_n, int) or top_n < 1):
        raise RerankRequestError("'top_n' must be a positive integer")
    cosines = similarities(query, texts) if similarities is not None and texts else None
    scores = fused_scores(query, texts, cosines)
    order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
    if top_n is not None:
        order = order[:top_n]
    results = []
    for i in order:
        result = {"index": i, "relevance_score": scores[i]}
        if cosines is not None:
            result["query_similarity"] = cosines[i]
        results.append(result)
    return {"model": RERANK_MODEL, "results": results}
