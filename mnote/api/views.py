"""The JSON API's views: thin, calling the same functions as the pages and
the management commands (search, answers, permalinks, chunk context, sync)."""

from collections import Counter
from urllib.parse import urlencode

from django.http import JsonResponse

from mnote.accounts.roles import is_admin
from mnote.api import openapi as openapi_description
from mnote.api.endpoint import ApiError, api_endpoint, error_response, read_json, validated
from mnote.api.forms import ChunkContextForm, DeleteSourceForm, EmptyForm, IngestForm, OpenReferenceForm, SearchForm
from mnote.citations.context import ChunkNotFound, chunk_context
from mnote.citations.mapper import CitationView
from mnote.citations.models import Citation
from mnote.citations.search import UnknownScope, answer_question, check_scope, full_library_search, not_in_lightrag
from mnote.library.ingest import queue_for_ingest
from mnote.library.models import IndexedRoot, Source
from mnote.library.provider import HealthReport, health_report, lightrag_client, webui_url
from mnote.library.sync import delete_index, library_status, prune_registry, sync_root

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
    report = health_report()
    body = {"schema": STATUS_SCHEMA, "lightrag": _health_json(report)}
    if is_admin(request.user):
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
        body["lightrag"]["webuiUrl"] = webui_url(request)
    else:
        library = library_status(None, sources=Source.objects.visible_to(request.user))
        body["registry"] = {"total": library.registry_total, "counts": library.registry_counts}
    return JsonResponse(body)


def _refuse_unknown_scope(user, params: dict) -> None:
    try:
        check_scope(user, params["sourcePaths"] or None)
    except UnknownScope as e:
        raise ApiError(400, "unknown_scope", str(e), unknownPaths=e.paths) from e


def _search_arguments(params: dict) -> dict:
    return {
        "mode": params["mode"],
        "top_k": params["topK"],
        "chunk_top_k": params["chunkTopK"],
        "scope": params["sourcePaths"] or None,
        "enable_rerank": params["enableRerank"],
    }


@api_endpoint("POST")
def search(request):
    """Full-library search: LightRAG's references as mapped citations, no answer."""
    params = validated(SearchForm, read_json(request))
    query = params["query"]
    _refuse_unknown_scope(request.user, params)
    mapped = full_library_search(request.user, query, **_search_arguments(params))
    diagnostics = {**mapped.diagnostics, "dropped": dict(Counter(d["reason"] for d in mapped.dropped))}
    return JsonResponse(
        {
            "schema": SEARCH_SCHEMA,
            "query": query,
            "mode": params["mode"],
            "results": [c.as_json() for c in mapped.citations],
            "notInLightRAG": not_in_lightrag(request.user, query),
            "diagnostics": diagnostics,
        }
    )


def _compact_citation(c: CitationView) -> dict:
    item = {
        "citationId": c.citation_id,
        "sourcePath": c.source_path,
        "fileName": c.file_name,
        "locatorPrecision": c.precision,
        "headingPath": c.heading_path,
        "displayQuote": c.display_quote,
        "citationUrl": c.citation_url,
        "citationMarkdown": c.citation_markdown,
    }
    if c.page is not None:
        item["page"] = c.page
    return item


@api_endpoint("POST")
def query(request):
    """An answer whose sentences carry this query's citation ids, and those citations."""
    params = validated(SearchForm, read_json(request))
    _refuse_unknown_scope(request.user, params)
    answer = answer_question(request.user, params["query"], **_search_arguments(params))
    notes = list(answer.notes)
    citations = [_compact_citation(c) for c in answer.mapped.citations]
    return JsonResponse(
        {
            "schema": QUERY_SCHEMA,
            "query": answer.query,
            "mode": params["mode"],
            "answer": {
                "kind": answer.kind,
                "text": answer.text,
                "sentences": [{"text": s.text, "citationIds": list(s.citation_ids)} for s in answer.sentences],
                "notes": notes,
            },
            "citations": citations,
            "contextUsed": len(citations),
        }
    )


def preview_url(source_id: int, token: str) -> str:
    return f"/preview/{source_id}/?{urlencode({'c': token})}"


@api_endpoint("POST")
def open_reference(request):
    """Where a permalink points now, and whether its source changed or is gone."""
    params = validated(OpenReferenceForm, read_json(request))
    cited = Citation.objects.select_related("source__root").filter(token=params["token"]).first()
    visible = cited is not None and (
        Source.objects.visible_to(request.user).filter(pk=cited.source_id).exists()
        if cited.source_id is not None
        # A pruned source has no root left to check against: admins only.
        else is_admin(request.user)
    )
    if not visible:
        raise ApiError(404, "not_found", "No such citation.")
    source = cited.source
    return JsonResponse(
        {
            "token": cited.token,
            "sourceId": cited.source_id,
            "sourcePath": source.library_path if source else cited.source_path,
            "state": cited.state,
            "precision": cited.precision,
            "locator": cited.locator,
            "headingPath": cited.heading_path,
            "displayQuote": cited.display_quote,
            "previewUrl": preview_url(source.pk, cited.token) if source else None,
            "citationUrl": cited.get_absolute_url(),
        }
    )


@api_endpoint("GET")
def source_chunks(request, source_id: int):
    """A chunk of a source with its neighbours (the preview's context panel)."""
    params = validated(ChunkContextForm, request.GET, allow_unknown=True)
    source = Source.objects.visible_to(request.user).select_related("root").filter(pk=source_id).first()
    if source is None:
        raise ApiError(404, "not_found", "No such source.")
    if not Source.objects.citable().filter(pk=source.pk).exists():
        state = "changed since it was indexed" if source.stale else source.get_status_display()
        raise ApiError(
            409,
            "source_not_citable",
            f"{source.library_path} is not citable now ({state}): LightRAG's chunks of it are missing or out of date.",
            sourceStatus=source.status,
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
                    "refused": summary.refused,
                    "error": summary.error or None,
                },
                "message": summary.line(),
            }
        )
    source = _source_for_admin(params["sourceId"])
    if not source.root.enabled:
        raise ApiError(409, "root_disabled", f"The root “{source.root.name}” is disabled; enable it first.")
    if source.status == Source.Status.EXCLUDED:
        raise ApiError(409, "source_excluded", f"{source.library_path} is excluded by “{source.excluded_by}”.")
    try:
        result = queue_for_ingest(source, force=params["force"])
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


@api_endpoint("GET", public=True)
def openapi(request):
    return JsonResponse(openapi_description.DESCRIPTION)


def not_found(request, *args, **kwargs):
    return error_response(404, "not_found", f"No API endpoint at {request.path}; see /api/openapi.json.")
