"""The one client for LightRAG's HTTP API, as observed on lightrag-hku 1.5.7.

Every call either returns parsed data or raises a LightRAGError subclass; nothing
here retries (the job ledger does), except that a query a server refused the
connection for goes to the next of several servers (logged).
"""

from __future__ import annotations

import functools
import itertools
import json as jsonlib
import logging
import math
import ssl
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import orjson

from .config import LightRAGConfig
from .errors import (
    LightRAGBusy,
    LightRAGRejected,
    LightRAGUnauthorized,
    LightRAGUnavailable,
)
from .responses import DeleteResult, Document, DocumentsPage, Health, ScanResult

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=3.0)
HEALTH_TIMEOUT = httpx.Timeout(5.0, connect=3.0)
# /query waits for the LLM to write the answer, not only for retrieval.
ANSWER_TIMEOUT = httpx.Timeout(120.0, connect=3.0)

# The query modes MNote offers (pages, API, MCP); "hybrid" is sent as "mix".
QUERY_MODES = ("naive", "local", "global", "hybrid", "mix")


def _json_loads(content: bytes) -> Any:
    """A response body's JSON. orjson first: it reads a search's /query/data
    answer (tens of KB, 60 chunks) several times faster than the standard
    library, and every search waits for that answer; whatever orjson refuses
    (NaN, a lone surrogate) goes to the standard library, which accepts or
    refuses it as before."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return jsonlib.loads(content)


def lightrag_mode(mode: str) -> str:
    """The contract: MNote's "hybrid" is LightRAG's "mix" (graph and vector together)."""
    return "mix" if mode == "hybrid" else mode


MIN_PAGE_SIZE, MAX_PAGE_SIZE = 10, 200
# Documents added while we page through the list may push a few more pages.
EXTRA_PAGES_ALLOWED = 10


def make_client(
    config: LightRAGConfig,
    *,
    transport: httpx.BaseTransport | None = None,
    timeout: httpx.Timeout | None = None,
    shared: bool = False,
) -> LightRAGClient:
    """`timeout` replaces the default for documents and retrieval; health and answers keep theirs.
    A ``shared`` client is one process's for all its requests: leaving its
    ``with`` block keeps its connections open (keep-alive). With several
    servers configured (``config.query_urls``), queries take turns among them."""
    headers = {"Accept": "application/json"}
    if config.api_key:
        headers["X-API-Key"] = config.api_key

    def http(url: str) -> httpx.Client:
        timeouts = timeout or DEFAULT_TIMEOUT
        return httpx.Client(base_url=url, headers=headers, timeout=timeouts, transport=transport, verify=_tls_context())

    others = [(http(url), url) for url in config.query_urls if url != config.base_url]
    return LightRAGClient(http(config.base_url), base_url=config.base_url, shared=shared, others=others)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Building the default context loads the CA bundle (~15 ms); a client is
    # made per request, so build it once per process.
    return httpx.create_ssl_context()


class _Server:
    """One LightRAG server: its HTTP client and the URLs a search calls."""

    def __init__(self, http: httpx.Client, base_url: str):
        self.http = http
        self.base_url = base_url
        # The URLs of the calls a search makes, joined to the base once: httpx
        # would otherwise parse and merge the same relative URL on every request.
        base = http.base_url  # httpx keeps its path ending in "/"
        self.urls = {
            path: base.copy_with(raw_path=base.raw_path + path.lstrip("/").encode())
            for path in ("/health", "/query/data", "/query")
        }


class LightRAGClient:
    """Documents (scan, list, delete, track) and health go to the first server;
    queries take turns among all (``others``: servers sharing its storage).
    LightRAG lets one pipeline run at a time only within one server, so scans
    and deletes stay on one; a query is read-only and may go anywhere. A
    server that cannot be connected to passes a query to the next one."""

    def __init__(self, http: httpx.Client, *, base_url: str, shared: bool = False,
                 others: Iterable[tuple[httpx.Client, str]] = ()):  # fmt: skip
        self._http = http
        self.base_url = base_url
        self.shared = shared
        self._servers = [_Server(http, base_url), *(_Server(h, url) for h, url in others)]
        # next() on a count is atomic under the GIL: threads sharing the client take distinct turns.
        self._turns = itertools.count()

    def __enter__(self) -> LightRAGClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if not self.shared:
            for server in self._servers:
                server.http.close()

    @property
    def query_urls(self) -> list[str]:
        return [server.base_url for server in self._servers]

    def _in_turn(self) -> list[_Server]:
        start = next(self._turns) % len(self._servers)  # the next in turn first, then the others
        return self._servers[start:] + self._servers[:start]

    def _query(self, path: str, request: dict[str, Any], timeout: httpx.Timeout | None = None) -> dict[str, Any]:
        *earlier, last = self._in_turn()
        for server in earlier:
            try:
                return self._json_object("POST", path, json=request, timeout=timeout, server=server)
            except LightRAGUnavailable as e:
                # Refused or unroutable: the query never reached that server, so another may answer it.
                if not isinstance(e.__cause__, httpx.ConnectError):
                    raise
                log.warning("%s; the query goes to the next server.", e)
        return self._json_object("POST", path, json=request, timeout=timeout, server=last)

    def health(self) -> Health:
        return Health.from_body(self._json_object("GET", "/health", timeout=HEALTH_TIMEOUT))

    def scan(self) -> ScanResult:
        body = self._json_object("POST", "/documents/scan")
        result = ScanResult(
            track_id=body.get("track_id") or "",
            status=body.get("status") or "",
            message=body.get("message") or "",
        )
        # LightRAG answers 200 when it skips a scan because it is busy: nothing was scanned.
        if result.status == "scanning_skipped_pipeline_busy":
            raise LightRAGBusy(
                result.message or "LightRAG skipped the scan: its pipeline is busy.",
                track_id=result.track_id or None,
                detail=result.message or None,
            )
        if result.status != "scanning_started":
            raise LightRAGUnavailable(f"LightRAG answered a scan with an unknown status {result.status!r}.")
        return result

    def documents_page(
        self,
        page: int = 1,
        page_size: int = 100,
        status_filters: Iterable[str] | None = None,
        sort_field: str = "updated_at",
        sort_direction: str = "desc",
    ) -> DocumentsPage:
        request: dict[str, Any] = {
            "page": max(1, page),
            "page_size": min(MAX_PAGE_SIZE, max(MIN_PAGE_SIZE, page_size)),
            "sort_field": sort_field,
            "sort_direction": sort_direction,
        }
        if status_filters is not None:
            request["status_filters"] = list(status_filters)
        body = self._json_object("POST", "/documents/paginated", json=request)
        try:
            pagination = body["pagination"]
            return DocumentsPage(
                documents=[Document.from_body(item) for item in body["documents"]],
                total=int(pagination["total_count"]),
                page=int(pagination["page"]),
                page_size=int(pagination["page_size"]),
                has_next=bool(pagination["has_next"]),
                status_counts=dict(body.get("status_counts") or {}),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise LightRAGUnavailable(f"LightRAG's document list has an unexpected shape: {e!r}") from e

    def iter_documents(
        self,
        *,
        status_filters: Iterable[str] | None = None,
        page_size: int = MAX_PAGE_SIZE,
        sort_field: str = "id",
        sort_direction: str = "asc",
    ) -> Iterator[Document]:
        """Every document, each once. Sorted by id by default: updates then don't move
        a document to a page we have already read, which would hide it from us."""
        status_filters = None if status_filters is None else list(status_filters)
        seen: set[str] = set()
        page_number = 1
        page_limit = None
        while True:
            page = self.documents_page(
                page=page_number,
                page_size=page_size,
                status_filters=status_filters,
                sort_field=sort_field,
                sort_direction=sort_direction,
            )
            if page_limit is None:
                page_limit = math.ceil(page.total / max(page.page_size, 1)) + EXTRA_PAGES_ALLOWED
            for document in page.documents:
                if document.id not in seen:
                    seen.add(document.id)
                    yield document
            if not page.has_next or not page.documents:
                return
            # A partial list would make present documents look deleted, so fail instead.
            if page_number >= page_limit:
                raise LightRAGUnavailable(
                    f"LightRAG still reports more documents after {page_number} pages "
                    f"of {page.page_size} (total {page.total}); stopped reading."
                )
            page_number += 1

    def delete_documents(self, doc_ids: list[str]) -> DeleteResult:
        """Delete LightRAG's derived data only: never the input file, never the LLM cache."""
        unique_ids = list(dict.fromkeys(doc_id.strip() for doc_id in doc_ids))
        if not unique_ids or not all(unique_ids):
            raise ValueError("delete_documents needs at least one non-blank document id.")
        request = {"doc_ids": unique_ids, "delete_file": False, "delete_llm_cache": False}
        body = self._json_object("DELETE", "/documents/delete_document", json=request)
        result = DeleteResult(
            status=body.get("status") or "",
            message=body.get("message") or "",
            doc_ids=unique_ids,
        )
        if result.status == "busy":
            raise LightRAGBusy(result.message or "LightRAG's pipeline is busy.", detail=result.message or None)
        if result.status == "not_allowed":
            raise LightRAGRejected(
                result.message or "LightRAG does not allow this deletion.", detail=result.message or None
            )
        if result.status != "deletion_started":
            raise LightRAGUnavailable(f"LightRAG answered a deletion with an unknown status {result.status!r}.")
        return result

    def query_data(
        self,
        query: str,
        *,
        mode: str = "mix",
        top_k: int | None = None,
        chunk_top_k: int | None = None,
        enable_rerank: bool | None = None,
    ) -> dict[str, Any]:
        """Retrieval only: entities, relationships, chunks and references; no answer.

        A 200 with status "failure" and metadata.failure_reason "no_results" just means
        nothing matched; it is returned as is.
        """
        request = _query_request(query, mode, top_k, chunk_top_k, enable_rerank)
        return self._query("/query/data", request)

    def query(
        self,
        query: str,
        *,
        mode: str = "mix",
        top_k: int | None = None,
        chunk_top_k: int | None = None,
        enable_rerank: bool | None = None,
    ) -> dict[str, Any]:
        """An answer written by LightRAG's LLM, with the references it used."""
        request = _query_request(query, mode, top_k, chunk_top_k, enable_rerank)
        return self._query("/query", request, timeout=ANSWER_TIMEOUT)

    @contextmanager
    def query_stream(
        self,
        query: str,
        *,
        mode: str = "mix",
        top_k: int | None = None,
        chunk_top_k: int | None = None,
        enable_rerank: bool | None = None,
        conversation_history: list[dict[str, str]] | None = None,
    ) -> Iterator[AnswerStream]:
        """One retrieval and its answer: ``/query/stream``'s references (with
        chunk content) first, then the LLM's words as they are written.
        LightRAG builds that context from every file it holds, so MNote's
        answers use :meth:`answer_stream` with a context of their own instead.

        Leaving the ``with`` block closes the connection, which makes LightRAG
        stop the answer (a Stop button, a client gone away).
        """
        request = _query_request(query, mode, top_k, chunk_top_k, enable_rerank)
        if conversation_history:
            request["conversation_history"] = conversation_history
        with self._stream("/query/stream", request) as stream:
            yield stream

    @contextmanager
    def answer_stream(
        self, prompt: str, *, conversation_history: list[dict[str, str]] | None = None
    ) -> Iterator[AnswerStream]:
        """The LLM's words for a prompt MNote made, as they are written:
        ``/query/stream`` in LightRAG's ``bypass`` mode, which retrieves
        nothing and neither reads nor writes LightRAG's answer cache (the
        prompt goes to the LLM as the user's message, after the history).

        Leaving the ``with`` block closes the connection, which makes LightRAG
        stop the answer (a Stop button, a client gone away).
        """
        request: dict[str, Any] = {"query": prompt, "mode": "bypass", "include_references": False, "stream": True}
        if conversation_history:
            request["conversation_history"] = conversation_history
        with self._stream("/query/stream", request) as stream:
            yield stream

    @contextmanager
    def _stream(self, path: str, request: dict[str, Any]) -> Iterator[AnswerStream]:
        request_name = f"POST {path}"
        *earlier, last = self._in_turn()
        with ExitStack() as opened:
            for server in (*earlier, last):
                try:
                    response = opened.enter_context(
                        server.http.stream("POST", path, json=request, timeout=ANSWER_TIMEOUT)
                    )
                    break
                except httpx.TransportError as e:
                    # Refused or unroutable: the query never reached that server, so another may answer it.
                    if not isinstance(e, httpx.ConnectError) or server is last:
                        raise _unavailable(server, request_name, e) from e
                    log.warning("%s; the query goes to the next server.", _unavailable(server, request_name, e))
            try:
                if response.status_code >= 300:
                    response.read()
                    self._raise_for_status(response, request_name)
                yield AnswerStream(response, server.base_url)
            except httpx.TransportError as e:
                raise _unavailable(server, request_name, e) from e

    def _json_object(self, method: str, path: str, *, json: dict[str, Any] | None = None,
                     timeout: httpx.Timeout | None = None, server: _Server | None = None) -> dict[str, Any]:  # fmt: skip
        request_name = f"{method} {path}"
        server = server or self._servers[0]
        try:
            response = server.http.request(
                method,
                server.urls.get(path, path),
                json=json,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.TransportError as e:
            raise _unavailable(server, request_name, e) from e

        body, decode_error = self._raise_for_status(response, request_name)
        status = response.status_code
        if decode_error is not None:
            raise LightRAGUnavailable(
                f"LightRAG answered {request_name} with something that is not JSON "
                f"({response.headers.get('content-type', 'no content type')}): {_snippet(response)}",
                status_code=status,
            ) from decode_error
        if not isinstance(body, dict):
            raise LightRAGUnavailable(
                f"LightRAG answered {request_name} with JSON that is not an object.", status_code=status
            )
        return body

    def _raise_for_status(self, response: httpx.Response, request_name: str) -> tuple[Any, ValueError | None]:
        """The response's JSON body (or the error decoding it); a typed error for a non-2xx status."""
        try:
            body = _json_loads(response.content)
            decode_error = None
        except ValueError as e:
            body, decode_error = None, e
        detail = _lightrag_message(body)
        status = response.status_code

        if status in (401, 403):
            raise LightRAGUnauthorized(
                f"LightRAG refused MNote's API key ({detail or f'HTTP {status}'}).",
                status_code=status,
                detail=detail,
            )
        if status == 429:
            raise LightRAGBusy(detail or "LightRAG is too busy to accept this now.", status_code=status, detail=detail)
        if 400 <= status < 500:
            raise LightRAGRejected(
                detail or f"LightRAG refused {request_name} (HTTP {status}): {_snippet(response)}",
                status_code=status,
                detail=detail,
            )
        if not 200 <= status < 300:
            raise LightRAGUnavailable(
                f"LightRAG failed {request_name} (HTTP {status}): {detail or _snippet(response)}",
                status_code=status,
                detail=detail,
            )
        return body, decode_error


class AnswerStream:
    """``/query/stream``'s NDJSON lines: a references line, then response
    pieces. With LightRAG's answer cache the whole answer comes as one line
    holding both; progress and timing lines are skipped."""

    def __init__(self, response: httpx.Response, base_url: str):
        self._lines = response.iter_lines()
        self._base_url = base_url
        self._first_text: str | None = None
        self.references: list[dict[str, Any]] | None = None

    def _next(self) -> dict[str, Any] | None:
        for line in self._lines:
            if not line.strip():
                continue
            try:
                item = jsonlib.loads(line)
            except ValueError as e:
                raise LightRAGUnavailable(f"LightRAG's answer stream has a line that is not JSON: {line[:120]!r}") from e
            if not isinstance(item, dict):
                continue
            if "error" in item:
                raise LightRAGUnavailable(f"LightRAG could not finish the answer: {item['error']}", detail=str(item["error"]))
            return item
        return None

    def read_references(self) -> list[dict[str, Any]]:
        """The context's references, each with its chunks' ``content`` (read before any word)."""
        while self.references is None:
            item = self._next()
            if item is None:
                self.references = []
                break
            if "references" in item:
                self.references = [r for r in item.get("references") or [] if isinstance(r, dict)]
            if isinstance(item.get("response"), str):
                self.references = self.references or []
                self._first_text = item["response"]
        return self.references

    def pieces(self) -> Iterator[str]:
        """The answer's text as LightRAG streams it."""
        self.read_references()
        if self._first_text:
            yield self._first_text
        while (item := self._next()) is not None:
            if isinstance(item.get("response"), str) and item["response"]:
                yield item["response"]


def _unavailable(server: _Server, request_name: str, error: httpx.TransportError) -> LightRAGUnavailable:
    if isinstance(error, httpx.TimeoutException):
        return LightRAGUnavailable(f"LightRAG at {server.base_url} did not answer {request_name} in time.")
    return LightRAGUnavailable(f"Cannot reach LightRAG at {server.base_url} ({request_name}): {error}")


def _query_request(
    query: str,
    mode: str,
    top_k: int | None,
    chunk_top_k: int | None,
    enable_rerank: bool | None,
) -> dict[str, Any]:
    if mode not in QUERY_MODES:
        raise ValueError(f"Unknown query mode {mode!r}; expected one of {list(QUERY_MODES)}.")
    request: dict[str, Any] = {
        "query": query,
        "mode": lightrag_mode(mode),
        "include_references": True,
        "include_chunk_content": True,
    }
    optional = {"top_k": top_k, "chunk_top_k": chunk_top_k, "enable_rerank": enable_rerank}
    request.update({name: value for name, value in optional.items() if value is not None})
    return request


def _lightrag_message(body: Any) -> str | None:
    """LightRAG's explanation: FastAPI's `detail` (text or validation list) or `/query/data`'s `message`."""
    if not isinstance(body, dict):
        return None
    detail = body.get("detail")
    if isinstance(detail, str) and detail:
        return detail
    if isinstance(detail, list) and detail:
        return "; ".join(str(item.get("msg", item)) if isinstance(item, dict) else str(item) for item in detail)
    message = body.get("message")
    return message if isinstance(message, str) and message else None


def _snippet(response: httpx.Response, limit: int = 200) -> str:
    text = " ".join(response.text.split())
    return text if len(text) <= limit else text[:limit] + "…"

