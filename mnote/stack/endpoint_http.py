"""The local model endpoint's HTTP side: the server and its OpenAI-shaped routes over the
embedder (:mod:`mnote.stack.embedder`), the chat stand-in
(:mod:`mnote.stack.chat_standin`) and the reranker (:mod:`mnote.stack.rerank`).
"""
from __future__ import annotations

import base64
import json
import os
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mnote.stack import event_stream
from mnote.stack.chat_standin import (
    NO_LLM_MODEL, _message_text, _rough_tokens, chat_reply, extraction_input, graph_extraction,
)
from mnote.stack.embedder import EMBEDDING_DIM, EMBEDDING_MODEL, Busy, Embedder, InjectedFailure

MAX_BODY_BYTES = 64 * 1024 * 1024


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
            ("POST", "/rerank/similarities"): self._rerank_similarities,
            ("GET", "/stats/engine"): self._engine_turns,
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
                  "queue": embedder.lanes.snapshot(), **embedder.stats()})
        return ""

    def _engine_turns(self, route: str) -> str:
        # When the engine computed (wall clock), for the ingest benchmark's
        # busy/idle profile; ?since=<unix seconds> keeps the answer short.
        query = parse_qs(urlsplit(self.path).query)
        try:
            since = float(query.get("since", ["0"])[0])
        except ValueError as err:
            raise HTTPError(400, "'since' must be a number of seconds") from err
        turns = self.server.embedder.turns_since(since)
        self._ok({"turns": turns})
        return "n=%d" % len(turns)

    def _knobs(self, route: str) -> str:
        """Test only: slow the engine down (seconds per ingest piece) or fail
        the next N ingest requests (cached vectors or not), as a loaded or
        failing machine would."""
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
        except InjectedFailure as err:
            raise HTTPError(503, str(err), "server_error") from err
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
            answer = rerank.rerank_response(self._read_json(), self.server.similarities)
        except rerank.RerankRequestError as err:
            raise HTTPError(400, str(err)) from err
        self._ok(answer)
        return "n=%d" % len(answer["results"])

    def _rerank_similarities(self, route: str) -> str:
        # The search's relevance floor, after LightRAG's own rerank call.
        from mnote.stack import rerank

        try:
            answer = rerank.similarities_response(self._read_json(), self.server.similarities)
        except rerank.RerankRequestError as err:
            raise HTTPError(400, str(err)) from err
        self._ok(answer)
        return "n=%d" % len(answer["similarities"])

    def _chat(self, route: str) -> str:
        body = self._read_json()
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise HTTPError(400, "'messages' must be a non-empty list")
        kind, text = chat_reply(messages, body.get("response_format"))
        chunk = None
        if kind in ("extract", "extract_json"):
            # The chunk's vector, computed now outside LightRAG's storage lock
            # (see mnote.stack.embedder): the reply waits for it as it would
            # for a real model.
            chunk = extraction_input(messages)
            if chunk is not None:
                self.server.embedder.ahead(chunk)
        answering = self.server.test_answers is not None and self.server.test_answers.wants(body)
        if kind == "answer" and answering:
            return self.server.test_answers.serve(self, body)
        if kind in ("extract", "extract_json") and answering and chunk is not None:
            # The tests' answering LightRAG builds a knowledge graph.
            text = graph_extraction(chunk, as_json=kind == "extract_json")
        if kind == "keywords" and answering:
            # ...and searches it: relations are found by high-level keywords.
            keywords = json.loads(text)
            text = json.dumps({**keywords, "high_level_keywords": keywords["low_level_keywords"]}, ensure_ascii=False)
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
        event_stream.start(self)
        for event in events:
            event_stream.send(self, json.dumps(event, ensure_ascii=False))
        event_stream.end(self)


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], embedder: Embedder, quiet: bool = False,
                 test_answers=None, test_knobs: bool = False, lightrag_working_dir: str | None = None,
                 passage_vectors: str | None = None):
        self.embedder = embedder
        # The rerank's query-passage cosines: the chunk vectors this endpoint
        # computed for LightRAG (kept in ``passage_vectors``, by default in
        # LightRAG's working directory; older ones read from NanoVectorDB's
        # file there) against the query's vector. The stack keeps them in its
        # own folder, so that with every LightRAG store in PostgreSQL LightRAG's
        # working directory holds no file at all.
        self.similarities = None
        if lightrag_working_dir or passage_vectors:
            from mnote.stack.rerank import (
                QUERY_INPUT_TYPE, PassageVectors, QueryVectors, StoredVectors, similarity_source,
            )

            fallback = StoredVectors(os.path.join(lightrag_working_dir, "vdb_chunks.json")) if lightrag_working_dir else None
            stored = PassageVectors(passage_vectors or os.path.join(lightrag_working_dir, PassageVectors.FILE_NAME),
                                    fallback=fallback)
            embedder.keep_passages = stored.record
            query_vectors = QueryVectors(lambda texts: embedder.embed(texts, QUERY_INPUT_TYPE)[0])
            self.similarities = similarity_source(stored, query_vectors)
        self.quiet = quiet
        self.test_answers = test_answers
        self.test_knobs = test_knobs
        super().__init__(address, Handler)
