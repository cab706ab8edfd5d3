"""The preview of a source in an iframe of the app's own pages: the document
at a cited passage, its pictures, a PDF's pages and text search, the original
file, and where a passage is in a rendered version."""

import hashlib
import json
import time
from pathlib import Path
from urllib.parse import quote

from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from mnote.citations.models import Citation
from mnote.citations.sidecar import cited_chunk_text
from mnote.json_errors import error_response
from mnote.kinds import kind_of
from mnote.library.ingest import opened_sha256
from mnote.library.models import Source
from mnote.library.source_files import SourceUnavailable, open_source_file
from mnote.library.text_size import is_held_back
from mnote.preview import render_child
from mnote.preview.docx.limits import PreviewRejected
from mnote.pages.preview_forms import AnchorForm, PdfFindForm, PdfPageForm, PreviewForm
from mnote.preview.locator_anchor import MAX_LOCATOR_CHARS, anchor_locator, text_map_of
from mnote.preview.pdf import PdfRejected, find_text, render_page_png
from mnote.preview.render_cache import RenderRefused, cached, cached_picture
from mnote.preview.render_rate import RenderRateLimited
from mnote.preview.renderers import PreviewContext, asset_loader_for, page_finder_for, pages_renderer_for, renderer_for
from mnote.preview.rendering import REJECTIONS, render_version, rendered
from mnote.preview.text_render import TextRejected
from mnote.text.evidence import evidence_core

_LOCATOR_KEYS = {
    "precision", "degraded", "resourceKind", "sourceId", "sourcePath", "page", "bbox", "blockId", "paraIds",
    "headingPath", "evidenceText", "searchQuery", "displayQuote", "chunkId", "chunkIndex",
    # Where the place index put the cited words (mnote.citations.mapper.PLACE_FIELDS).
    "slide", "shape", "sheet", "cellRange", "sheetPage", "blockIndex", "charRange", "lineStart",
}  # fmt: skip
MAX_ID = 2**63 - 1


def resource_kind(name: str) -> str:
    return kind_of(name).name


def _visible_source(request, source_id: int) -> Source:
    if source_id > MAX_ID:
        raise Http404("No such source.")  # no database key is that large (SQLite cannot even compare it)
    return get_object_or_404(Source.objects.visible_to(request.user).select_related("root"), pk=source_id)


def _initial_locator(request, source: Source) -> tuple[dict | None, Citation | None]:
    """A citation token (?c=) or a locator (?locator=JSON) opens the preview at
    the passage; anything malformed opens it at the top."""
    token = request.GET.get("c", "")
    if token:
        citation = Citation.objects.filter(token=token, source=source).first()
        return (citation.locator if citation else None), citation
    raw = request.GET.get("locator", "")
    if not raw or len(raw) > MAX_LOCATOR_CHARS:
        return None, None
    try:
        locator = json.loads(raw)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(locator, dict):
        return None, None
    return {k: v for k, v in locator.items() if k in _LOCATOR_KEYS and _flat(v)}, None


def _flat(value) -> bool:
    """A locator holds scalars and flat lists of them (bbox, paraIds,
    headingPath); anything nested is dropped before it reaches a template."""
    scalar = (str, int, float, bool, type(None))
    return isinstance(value, scalar) or (isinstance(value, list) and all(isinstance(v, scalar) for v in value))


def _preview_context(source: Source, path: Path, page: int = 1) -> PreviewContext:
    base = reverse("preview-asset", args=[source.pk, "x"]).removesuffix("x")
    return PreviewContext(
        # Part names may hold spaces, "#", "?" or any script (an EPUB's 夏目漱石.jpg).
        asset_url=lambda part: base + quote(part.lstrip("/"), safe="/"),
        asset_base=base,
        path=path,
        page=page,
        options={"page_url": reverse("preview", args=[source.pk]) + "?rows_page="},
    )


def _chunk_text(source: Source, locator: dict) -> str:
    return cited_chunk_text(source, str(locator.get("chunkId") or ""))


def current_text_of(request, source: Source, locator: dict | None = None) -> dict | None:
    """The text this file's preview shows now (rendered when the cache does
    not hold it, as opening the preview would), for a citation of an older
    version to find its words again; None when there is no such text."""
    kind = kind_of(source.file_name)
    if renderer_for(kind) is None:
        return None
    try:
        with open_source_file(source) as handle:
            sha256 = opened_sha256(source, handle)
            ctx = _preview_context(source, Path(source.absolute_path))
            text_map = text_map_of(render_version(sha256, ctx), lambda: rendered(request.user, kind, handle, sha256, ctx))
    except (SourceUnavailable, RenderRateLimited, *REJECTIONS, RenderRefused, OSError):
        return None
    if text_map is None:
        return None
    anchor = anchor_locator(text_map, locator, chunk=_chunk_text(source, locator)) if locator else None
    return {"sha256": sha256, "text": text_map.text, "anchor": anchor}


def _page_of_passage(source: Source, kind, path: Path, sha256: str, evidence: str) -> int | None:
    """A cited passage past the first page of a big sheet: open that page
    (found once per file content and passage, in a child process, then cached)."""
    if page_finder_for(kind) is None:
        return None
    evidence = evidence[:4000]

    def find_now() -> dict:
        with open_source_file(source) as fp:
            return {"page": render_child.page_of(kind, fp, PreviewContext(path=path), evidence)}

    key = f"{kind.name}-page-{hashlib.sha256(evidence.encode()).hexdigest()[:16]}"
    try:
        return cached(key, sha256, find_now, refusals=(PreviewRejected,))["page"]
    except (PreviewRejected, TextRejected, OSError, SourceUnavailable, RenderRefused):
        return None  # the render below says what is wrong


def _unavailable_problem(source: Source, error: SourceUnavailable) -> tuple[str, int]:
    """What the preview says of a file it cannot open, and the status: a file
    held back for its size is still in its folder, and says so."""
    if source.status == Source.Status.EXCLUDED and is_held_back(source.excluded_by):
        return _(
            "This file is held back by the text-size limit (MNOTE_MAX_TEXT_MB): it has more text than the "
            "library sends to its index, so it is not searched or previewed. An admin can reindex it to send it anyway."
        ), 200
    return error.message, error.status


@require_GET
def document(request, source_id: int):
    """The preview of one source, made to sit in an iframe of the app's own
    pages (or be opened on its own), at the passage when a locator is given."""
    source = _visible_source(request, source_id)
    locator, citation = _initial_locator(request, source)
    form = PreviewForm(request.GET)
    kind = kind_of(source.file_name)
    paged = pages_renderer_for(kind) is not None
    rows_page = (form.cleaned_data.get("rows_page") if form.is_valid() and paged else None) or 1
    render_file = renderer_for(kind)
    path = Path(source.absolute_path)
    context = {
        "source": source,
        "kind": kind.name,
        "locator": locator,
        "citation": citation,
        "citation_state": citation.state if citation else "",
        "problem": "",
        "rendered": None,
        "text_version": "",
    }
    try:
        handle = open_source_file(source)
    except SourceUnavailable as e:
        context["problem"], status = _unavailable_problem(source, e)
        return render(request, "preview/document.html", context, status=status)
    if render_file is None:
        handle.close()
        context["problem"] = _("There is no preview for this kind of file; open the original instead.")
        return render(request, "preview/document.html", context)
    try:
        with handle:
            sha256 = opened_sha256(source, handle)
            if paged and rows_page == 1 and not request.GET.get("rows_page") and locator and locator.get("evidenceText"):
                rows_page = _page_of_passage(source, kind, path, sha256, str(locator["evidenceText"])) or 1
            ctx = _preview_context(source, path, rows_page)
            context["rows_page"] = rows_page if paged else None
            result = context["rendered"] = rendered(request.user, kind, handle, sha256, ctx)
            if result.get("textMap"):
                context["text_version"] = render_version(sha256, ctx)
                if locator:
                    # Resolved here, so the first highlight needs no second request.
                    text_map = text_map_of(context["text_version"], result)
                    anchor = anchor_locator(text_map, locator, chunk=_chunk_text(source, locator)) if text_map else None
                    locator = context["locator"] = {**locator, "anchor": anchor} if anchor else locator
    except (*REJECTIONS, RenderRefused) as e:
        context["problem"] = str(e)
    except RenderRateLimited as e:
        context["problem"] = _(
            "You have opened many previews in a short time; this one will be ready in about %(seconds)d seconds."
        ) % {"seconds": e.retry_after}
        response = render(request, "preview/document.html", context, status=429)
        response["Retry-After"] = str(e.retry_after)
        return response
    except OSError as e:
        context["problem"] = _("This file cannot be read: %(error)s") % {"error": e.strerror or e}
    return render(request, "preview/document.html", context)


def _gone_page(request, source: Source, error: SourceUnavailable):
    problem, status = _unavailable_problem(source, error)
    return render(request, "preview/document.html", {"source": source, "kind": "other", "problem": problem}, status=status)


@require_GET
def anchor(request, source_id: int):
    """Where a passage is in this source's rendered preview (text offsets and
    blocks), for a citation sent to a preview that is already open."""
    started, cpu_started = time.perf_counter(), time.thread_time()
    source = _visible_source(request, source_id)
    form = AnchorForm(request.GET)
    kind = kind_of(source.file_name)
    if not form.is_valid() or renderer_for(kind) is None:
        return error_response(400, "bad_request", "Give the evidence text of a passage in a document.")
    try:
        with open_source_file(source) as handle:
            sha256 = opened_sha256(source, handle)
            page = None
            if pages_renderer_for(kind) is not None:
                # A citation sent to an open sheet may be on another page
                # than the one shown: the passage's page, which the page
                # then shows (the answer names it).
                page = form.cleaned_data["rows_page"] or _page_of_passage(
                    source, kind, Path(source.absolute_path), sha256, form.cleaned_data["evidence"]
                ) or 1
            ctx = _preview_context(source, Path(source.absolute_path), page or 1)
            text_map = text_map_of(render_version(sha256, ctx), lambda: rendered(request.user, kind, handle, sha256, ctx))
    except SourceUnavailable as e:
        return error_response(e.status, "gone", e.message)
    except RenderRateLimited as e:
        return error_response(429, "rate_limited", "Too many previews in a short time.", headers={"Retry-After": str(e.retry_after)})
    except (*REJECTIONS, RenderRefused) as e:
        return error_response(422, "unreadable", str(e))
    except OSError:
        raise Http404("This file is no longer in the library.") from None
    locator = {"evidenceText": form.cleaned_data["evidence"], "chunkId": form.cleaned_data["chunk_id"], "searchQuery": form.cleaned_data["query"],
               "headingPath": [form.cleaned_data["heading"]] if form.cleaned_data["heading"] else []}
    found = anchor_locator(text_map, locator, chunk=_chunk_text(source, locator), tail=form.cleaned_data["tail"]) if text_map else None
    response = JsonResponse({"anchor": found, "version": text_map.version if text_map else "", "rowsPage": page})
    # The view's own wall and CPU time (this thread), for the browser's
    # resource timing: the jump-accuracy bench reports them per locate.
    response["Server-Timing"] = (
        f"anchor;dur={(time.perf_counter() - started) * 1000:.2f}, cpu;dur={(time.thread_time() - cpu_started) * 1000:.2f}"
    )
    return response


@require_GET
def original(request, source_id: int):
    """The user's file itself, read only, as a download — the very file the
    checks passed on, or a 404/410 page."""
    source = _visible_source(request, source_id)
    try:
        handle = open_source_file(source)
    except SourceUnavailable as e:
        return _gone_page(request, source, e)
    return FileResponse(handle, as_attachment=True, filename=source.file_name)


@require_GET
def asset(request, source_id: int, part: str):
    """A picture from inside the file (a DOCX/PPTX/EPUB/ODT part, or an image
    file itself), checked to be an image browsers show; never an external link."""
    source = _visible_source(request, source_id)
    kind = kind_of(source.file_name)
    if asset_loader_for(kind) is None:
        raise Http404("This kind of file has no pictures to show.")
    try:
        with open_source_file(source) as handle:
            sha256 = opened_sha256(source, handle)
            content_type, data = cached_picture(
                sha256, part, lambda: render_child.load_asset(kind, handle, part), refusals=(PreviewRejected,)
            )
    except (PreviewRejected, RenderRefused, OSError, SourceUnavailable) as e:
        raise Http404("No such image in this document.") from e
    response = HttpResponse(data, content_type=content_type)
    response["Cache-Control"] = "private, max-age=3600"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
def pdf_page(request, source_id: int, page: int):
    source = _visible_source(request, source_id)
    if resource_kind(source.file_name) != "pdf":
        raise Http404("Not a PDF.")
    form = PdfPageForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Give the page width in pixels (w).", status=400, content_type="text/plain; charset=utf-8")
    try:
        with open_source_file(source) as handle:
            png = render_page_png(handle, page, width_px=form.cleaned_data["w"])
    except (PdfRejected, OSError, SourceUnavailable) as e:
        raise Http404(str(e)) from e
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response


@require_GET
def pdf_find(request, source_id: int):
    """Where the evidence text is on the PDF's text layer: a text match with its
    score, never presented as a layout box."""
    source = _visible_source(request, source_id)
    form = PdfFindForm(request.GET)
    if resource_kind(source.file_name) != "pdf" or not form.is_valid():
        return error_response(400, "bad_request", "Give the evidence text of a PDF citation.")
    evidence, query, page_hint = (form.cleaned_data[k] for k in ("evidence", "query", "page"))
    try:
        with open_source_file(source) as handle:
            match = find_text(handle, evidence, query=query, page_hint=page_hint)
            focus = _pdf_focus(handle, evidence, query, match) if match else None
    except SourceUnavailable as e:
        return error_response(e.status, "gone", e.message)
    except (PdfRejected, OSError) as e:
        return error_response(422, "unreadable", str(e))
    if match is None:
        return JsonResponse({"page": None})
    return JsonResponse(
        {"page": match.page, "rects": match.rects, "score": match.score, "text": match.matched_text, "method": match.method,
         "parts": match.parts, "focus": focus}
    )


def _pdf_focus(handle, evidence: str, query: str, match) -> dict | None:
    """The page and boxes of the evidence's sentence that holds the query,
    when the evidence is longer than it: a card's evidence is padded with
    the sentences around that one, which may sit on the page before, and
    the preview opens the page holding the answer, not the padding's."""
    start, end = evidence_core(evidence, query)
    core = evidence[start:end]
    if not core.strip() or len(core) == len(evidence):
        return None
    found = find_text(handle, core, query=query, page_hint=match.page)
    return {"page": found.page, "rects": found.rects} if found else None
