"""The JSON API's views: thin, calling the same functions as the pages and
the management commands (search, answers, permalinks, chunk context, sync)."""

import json
import unicodedata
from collections import Counter
from contextlib import contextmanager
from urllib.parse import urlencode

import orjson
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from mnote.accounts.roles import is_admin
from mnote.api import openapi as openapi_description
from mnote.api.endpoint import ApiError, api_endpoint, error_response, read_json, validated
from mnote.api.forms import (
    MAX_ID,
    ChunkContextForm,
    DeleteSourceForm,
    EmptyForm,
    IngestForm,
    OpenReferenceForm,
    QueryForm,
    RetryFailedForm,
    SearchForm,
)
from mnote.api.links import absolute, citation_markdown, link_base
from mnote.citations.context import ChunkNotFound, chunk_context
from mnote.citations.mapper import CitationView
from mnote.citations import permalinks
from mnote.citations.models import Citation
from mnote.search.answers import (
    UnknownScope,
    answer_question,
    answer_stream,
    full_library_search,
    not_in_lightrag,
)
from mnote.library.failures import not_retried, retry_failed
from mnote.library.reasons import plain_reason
from mnote.library.ingest import queue_for_ingest
from mnote.lightrag import LightRAGError
from mnote.library.models import IndexedRoot, Source
from mnote.lightrag.provider import HealthReport, health_report, lightrag_client, webui_url
from mnote.library.actions import allow_large_text, delete_index, library_status, prune_registry
from mnote.library.sync import sync_root
from mnote.library.text_size import is_held_back
from mnote.text.evidence import evidence_window

SEARCH_SCHEMA = "mnote.knowledge_rag.search_results.v1"
QUERY_SCHEMA = "mnote.knowledge_rag.agent_query_result.v1"
STATUS_SCHEMA = "mnote.library.status.v1"


def _health_json(report: HealthReport) -> dict:
    h = report.health
    return {
        "healthy": report.ok,
        "error": report.error or None,
        "coreVersion": h.core_version if h else None,
        "apiVersion": h.api_version if h else None,
        "llm": {"available": bool(h and h.has_llm), "binding": h and h.llm_binding, "model": h and h.llm_model},
        "embedding": {"binding": h and h.embedding_binding, "model": h and h.embedding_model},
        "rerank": {
            "enabled": bool(h and h.rerank_enabled),
            "binding": h and h.rerank_binding,
            "model": h and h.rerank_model,
        },
        "queue": {
            "pipelineBusy": h.pipeline_busy if h else None,
            "rerankQueueAvailable": h.rerank_queue_available if h else None,
        },
    }


@api_endpoint("GET")
def status(request):
    """LightRAG's health and the registry's counts; LightRAG's own counts for admins."""
    return JsonResponse(status_result(request.user, request))


def status_result(user, request=None) -> dict:
    """``mnote.library.status.v1`` as ``user`` may see it (the JSON API and MCP)."""
    report = health_report()
    body = {"schema": STATUS_SCHEMA, "lightrag": _health_json(report)}
    if is_admin(user):
        if report.ok:
            with lightrag_client() as client:
                library = library_status(client)
        else:
            library = library_status(None)
        body["registry"] = {"total": library.registry_total, "counts": library.registry_counts}
        # LightRAG's file names of documents nobody registered: admins only.
        body["lightragDocuments"] = {
            "total": library.lightrag_total,
            "counts": library.lightrag_counts,
            "unmapped": len(library.unmapped) if library.lightrag_counts is not None else None,
            "error": library.lightrag_error or report.error or None,
        }
        if request is not None:
            body["lightrag"]["webuiUrl"] = webui_url(request)
    else:
        library = library_status(None, sources=Source.objects.visible_to(user))
        body["registry"] = {"total": library.registry_total, "counts": library.registry_counts}
    return body


@contextmanager
def _unknown_scope_refused():
    """The search checks the scope before it asks LightRAG (once: not here
    again); a scope naming nothing the user may see is refused."""
    try:
        yield
    except UnknownScope as e:
        # 404, not 400: the request is well formed; what it names is not there (for this user).
        raise ApiError(404, "unknown_scope", str(e), unknownPaths=e.paths) from e


def _search_arguments(params: dict) -> dict:
    return {
        # Blank: the mode that fits the provider (naive without an LLM, which builds no graph).
        "mode": params["mode"] or None,
        "top_k": params["topK"],
        "chunk_top_k": params["chunkTopK"],
        "scope": params["sourcePaths"] or None,
        "enable_rerank": params["enableRerank"],
    }


# Admins see why each reference LightRAG returned was or was not cited.
# A member sees none of those counts: how many references LightRAG found,
# or how many were dropped as "not visible", would tell that hidden
# documents are about the query. What a member is told concerns their own
# view only (the mode, the provider's abilities, matches outside their scope).
MEMBER_DIAGNOSTICS = ("mode", "llmAvailable", "providerRerankRequested", "providerRerankAvailable", "outsideScope")


def _diagnostics(user, mapped) -> dict:
    if is_admin(user):
        return {**mapped.diagnostics, "dropped": dict(Counter(d["reason"] for d in mapped.dropped))}
    return {name: mapped.diagnostics[name] for name in MEMBER_DIAGNOSTICS if name in mapped.diagnostics}


@api_endpoint("POST")
def search(request):
    """Full-library search: LightRAG's references as mapped citations, no answer."""
    params = validated(SearchForm, read_json(request))
    return _agent_json(search_result(request.user, params, link_base(request)))


def search_result(user, params: dict, base: str = "") -> dict:
    """``search_results.v1`` for validated ``SearchForm`` parameters (the JSON
    API and MCP); links start with ``base`` (see ``mnote.api.links``)."""
    query = params["query"]
    # The visible roots read once, for the mapper and the name matches (as the search page does).
    roots = IndexedRoot.objects.visible_ids(user)
    with _unknown_scope_refused():
        mapped = full_library_search(
            user, query, **_search_arguments(params), sources=Source.objects.filter(root_id__in=roots)
        )
    return {
        "schema": SEARCH_SCHEMA,
        "query": query,
        "mode": mapped.diagnostics["mode"],
        "results": [_citation_json(c, base, params["verbose"]) for c in mapped.citations],
        # Below the relevance floor: nothing found matches the query well.
        "lowConfidence": bool(mapped.diagnostics.get("lowConfidence")),
        "notInLightRAG": not_in_lightrag(user, query, root_ids=roots),
        "diagnostics": _diagnostics(user, mapped),
    }


def _agent_json(body: dict) -> HttpResponse:
    """Text as UTF-8, not \\uXXXX escapes (a Chinese quote is half the bytes),
    no padding. Written by orjson: a search's twenty citations take the
    standard library about 0.5 ms of the web tier's CPU and orjson a tenth of
    it, and the web tier's CPU per search bounds the searches per second the
    scaled set-up reaches."""
    try:
        content = orjson.dumps(body)
    except orjson.JSONEncodeError:
        # Text that is no character (a lone surrogate LightRAG's JSON may
        # hold) has no UTF-8: the standard library writes it as an escape.
        return JsonResponse(body, json_dumps_params={"separators": (",", ":")})
    return HttpResponse(content, content_type="application/json")


# A compact citation's quote: the passage around the query's words, about 400
# columns, a wide (Chinese, Japanese, Korean) character taking two as on
# screen. The whole display quote (up to 700 characters, three bytes each in
# Chinese) put ten Chinese citations at 16 KB; verbose gives it whole.
COMPACT_QUOTE_COLUMNS = 400


def _columns(text: str) -> int:
    """Screen columns of ``text``: one per character, two for a wide one."""
    if text.isascii():
        return len(text)  # no ASCII character is wide: the common case, counted without a look at each
    widths = Counter(map(unicodedata.east_asian_width, text))
    return len(text) + widths["W"] + widths["F"]


def _compact_quote(c: CitationView) -> str:
    quote = c.display_quote
    if 2 * len(quote) <= COMPACT_QUOTE_COLUMNS:
        return quote  # fits even if every character is wide
    columns = _columns(quote)
    if columns <= COMPACT_QUOTE_COLUMNS:
        return quote
    width = COMPACT_QUOTE_COLUMNS * len(quote) // columns
    return evidence_window(quote, c.search_query, width=width, cleaned=True)


def _citation_json(c: CitationView, base: str, verbose: bool = False) -> dict:
    """A citation for an agent: by default each thing once (the quote once,
    around the query's words; the link once — ``[fileName](citationUrl)`` is
    its Markdown — and no LightRAG ids or locator internals); ``verbose``
    gives the whole quote, the raw LightRAG fields, the locator, the Markdown
    link and the mapping's diagnostics."""
    url = absolute(base, c.citation_url)
    if verbose:
        return {**c.as_json(), "citationUrl": url, "citationMarkdown": citation_markdown(c, base)}
    item = {
        "citationId": c.citation_id,
        "sourceId": c.source_id,
        "sourcePath": c.source_path,
        "fileName": c.file_name,
        "locatorPrecision": c.precision,
        "headingPath": c.heading_path,
        "displayQuote": _compact_quote(c),
        "citationUrl": url,
    }
    if c.page is not None:
        item["page"] = c.page
    # The place a person would name (slide 3, Sheet1 A7:F9); ids and offsets only with verbose.
    named = {key: c.locator[key] for key in ("slide", "sheet", "cellRange") if key in c.locator}
    if named:
        item["locatorPlace"] = named
    return item


def query_result(answer, base: str = "", verbose: bool = False) -> dict:
    """An answer in the ``agent_query_result.v1`` schema (the JSON API and MCP)."""
    citations = [_citation_json(c, base, verbose) for c in answer.mapped.citations]
    return {
        "schema": QUERY_SCHEMA,
        "query": answer.query,
        "mode": answer.mapped.diagnostics.get("mode", ""),
        "answer": {
            "kind": answer.kind,
            "text": answer.text,
            "sentences": [{"text": s.text, "citationIds": list(s.citation_ids)} for s in answer.sentences],
            "notes": list(answer.notes),
        },
        "citations": citations,
        "contextUsed": len(citations),
    }


def _ndjson(item: dict) -> bytes:
    return (json.dumps(item, ensure_ascii=False) + "\n").encode()


def _answer_lines(events, first, base: str, verbose: bool):
    """NDJSON of a streamed answer: its citations before any word, sentences
    with their citation ids as they complete, then the whole result."""
    try:
        answer = first.answer
        citations = [_citation_json(c, base, verbose) for c in answer.mapped.citations]
        yield _ndjson({"event": "context", "schema": QUERY_SCHEMA, "kind": answer.kind, "citations": citations})
        for event in events:
            if event.kind == "text":
                sentences = [{"text": s.text, "citationIds": list(s.citation_ids)} for s in event.sentences]
                yield _ndjson({"event": "sentences", "sentences": sentences, "pending": event.pending})
            elif event.kind == "done":
                yield _ndjson({"event": "done", **query_result(event.answer, base, verbose)})
    except LightRAGError as e:
        yield _ndjson({"event": "error", "error": {"code": "lightrag_unavailable", "message": str(e)}})
    finally:
        events.close()


@api_endpoint("POST")
def query(request):
    """An answer whose sentences carry this query's citation ids, and those
    citations; with ``stream`` as NDJSON while it is written."""
    params = validated(QueryForm, read_json(request))
    arguments = {**_search_arguments(params), "history": params["conversationHistory"] or None}
    if params["stream"]:
        events = answer_stream(request.user, params["query"], **arguments)
        # The citations are read here, so LightRAG being down is still a 503
        # and an unknown scope a 404.
        with _unknown_scope_refused():
            first = next(event for event in events if event.kind != "cards")
        lines = _answer_lines(events, first, link_base(request), params["verbose"])
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Cache-Control"] = "no-cache"
        return response
    with _unknown_scope_refused():
        answer = answer_question(request.user, params["query"], **arguments)
    return _agent_json(query_result(answer, link_base(request), params["verbose"]))


def preview_url(source_id: int, token: str) -> str:
    return f"{reverse('preview', args=[source_id])}?{urlencode({'c': token})}"


@api_endpoint("POST")
def open_reference(request):
    """Where a permalink points now, and whether its source changed or is gone."""
    params = validated(OpenReferenceForm, read_json(request))
    return _agent_json(reference_result(request.user, params, link_base(request)))


def reference_result(user, params: dict, base: str = "") -> dict:
    """Where a permalink points now, for validated ``OpenReferenceForm`` parameters; ApiError 404 if ``user`` may not see it."""
    if params.get("reference"):
        # A search's link, not yet a row: opening it makes one (a POST).
        try:
            cited = permalinks.cited(user, params["reference"])
        except permalinks.SourceChanged as e:
            raise ApiError(
                409, "source_changed", f"{e.source.library_path} has changed since this link was made; the cited place was not kept. Search again."
            ) from e
        if cited is None:
            raise ApiError(404, "not_found", "No such citation.")
    elif params["token"] is None:
        raise ApiError(404, "not_found", "No citation at this URL (expected /c/<token>).")
    else:
        cited = Citation.objects.select_related("source__root").filter(token=params["token"]).first()
    visible = cited is not None and (
        Source.objects.visible_to(user).filter(pk=cited.source_id).exists()
        if cited.source_id is not None
        # A pruned source has no root left to check against: admins only.
        else is_admin(user)
    )
    if not visible:
        raise ApiError(404, "not_found", "No such citation.")
    source = cited.source
    return (
        {
            "token": cited.token,
            "sourceId": cited.source_id,
            "sourcePath": source.library_path if source else cited.source_path,
            "state": cited.state,
            "precision": cited.precision,
            "locator": cited.locator,
            "headingPath": cited.heading_path,
            "displayQuote": cited.display_quote,
            "previewUrl": absolute(base, preview_url(source.pk, cited.token)) if source else None,
            "citationUrl": absolute(base, cited.get_absolute_url()),
        }
    )


@api_endpoint("GET")
def source_chunks(request, source_id: int):
    """A chunk of a source with its neighbours (the preview's context panel)."""
    params = validated(ChunkContextForm, request.GET, allow_unknown=True)
    source = (
        Source.objects.visible_to(request.user).select_related("root").filter(pk=source_id).first()
        if source_id <= MAX_ID
        else None
    )
    if source is None:
        raise ApiError(404, "not_found", "No such source.")
    if not Source.objects.citable().filter(pk=source.pk).exists():
        state = "changed since it was indexed" if source.stale else source.get_status_display()
        raise ApiError(
            409,
            "source_not_citable",
            f"{source.library_path} is not citable now ({state}): LightRAG's chunks of it are missing or out of date.",
            sourceStatus=source.status,
            sourceReason=plain_reason(source) or None,
        )
    try:
        context = chunk_context(source, params["chunk_index"], context=params["context"], block_id=params["block_id"])
    except ChunkNotFound as e:
        raise ApiError(404, "chunk_not_found", str(e)) from e
    return JsonResponse(
        {
            "sourceId": source.pk,
            "sourcePath": source.library_path,
            "chunkIndex": params["chunk_index"],
            "context": params["context"],
            "unit": context.unit,
            "chunks": [c.as_json() for c in context.chunks],
        }
    )


# --- admin actions ------------------------------------------------------------


def _source_for_admin(source_id: int) -> Source:
    source = Source.objects.select_related("root").filter(pk=source_id).first()
    if source is None:
        raise ApiError(404, "not_found", "No such source.")
    return source


@api_endpoint("POST", admin=True)
def admin_ingest(request):
    """Sync a root, or send one source to LightRAG (again, with ``force``)."""
    params = validated(IngestForm, read_json(request))
    if params["rootId"] is not None:
        root = IndexedRoot.objects.filter(pk=params["rootId"]).first()
        if root is None:
            raise ApiError(404, "not_found", "No such root.")
        summary = sync_root(root)
        return JsonResponse(
            {
                "rootId": root.pk,
                "root": root.name,
                "summary": {
                    "new": summary.new,
                    "changed": summary.changed,
                    "missing": summary.missing,
                    "unchanged": summary.unchanged,
                    "excluded": summary.excluded,
                    "queued": summary.queued,
                    "capped": summary.capped,
                    "held": summary.held,
                    "refused": summary.refused,
                    "error": summary.error or None,
                },
                "message": summary.line(),
            }
        )
    source = _source_for_admin(params["sourceId"])
    if not source.root.enabled:
        raise ApiError(409, "root_disabled", f"The root “{source.root.name}” is disabled; enable it first.")
    held_back = source.status == Source.Status.EXCLUDED and is_held_back(source.excluded_by)
    if source.status == Source.Status.EXCLUDED and not held_back:
        raise ApiError(409, "source_excluded", f"{source.library_path} is excluded by “{source.excluded_by}”.")
    try:
        if held_back:
            # Asking for a file held back for its size is the admin's allowance.
            allow_large_text(source)
        result = queue_for_ingest(source, force=params["force"] or held_back)
    except OSError as e:
        raise ApiError(409, "file_unreadable", f"{source.library_path} cannot be read: {e.strerror or e}") from e
    return JsonResponse(
        {"sourceId": source.pk, "sourcePath": source.library_path, "result": result, "status": source.status}
    )


@api_endpoint("POST", admin=True)
def admin_delete_source(request):
    """Drop what LightRAG derived from a file; the file stays."""
    params = validated(DeleteSourceForm, read_json(request))
    source = _source_for_admin(params["sourceId"])
    delete_index(source)
    return JsonResponse({"sourceId": source.pk, "sourcePath": source.library_path, "status": source.status})


@api_endpoint("POST", admin=True)
def admin_prune_registry(request):
    """Clear stale records (removed, failed, stale); rows still being deleted stay."""
    validated(EmptyForm, read_json(request))
    return JsonResponse({"pruned": prune_registry()})


@api_endpoint("POST", admin=True)
def admin_retry_failed(request):
    """Send the failed files of one root, or of the whole library, back to
    LightRAG with a fresh retry budget (the worker sends them a few at a time)."""
    params = validated(RetryFailedForm, read_json(request))
    root = None
    sources = Source.objects.all()
    if params["rootId"] is not None:
        root = IndexedRoot.objects.filter(pk=params["rootId"]).first()
        if root is None:
            raise ApiError(404, "not_found", "No such root.")
        sources = root.sources.all()
    retried = retry_failed(sources)
    # Damaged, encrypted, textless or too large: a retry cannot cure them.
    left = not_retried(sources)
    where = f"the root “{root.name}”" if root else "the library"
    return JsonResponse(
        {
            "rootId": root.pk if root else None,
            "root": root.name if root else None,
            "retried": retried,
            "notRetried": left,
            "message": f"{retried} failed file(s) of {where} will be sent to LightRAG again, a few at a time."
            if retried
            else f"No failed file in {where} to retry.",
        }
    )


@api_endpoint("GET", public=True)
def openapi(request):
    return JsonResponse(openapi_description.DESCRIPTION)


@login_not_required
@require_GET
def docs(request):
    """The OpenAPI description as a page to read, rendered here (no viewer
    script, nothing from another site)."""
    context = {**openapi_description.reference(), "mcp_url": request.build_absolute_uri("/mcp")}
    return render(request, "api/docs.html", context)


def not_found(request, *args, **kwargs):
    return error_response(404, "not_found", f"No API endpoint at {request.path}; see /api/openapi.json.")
