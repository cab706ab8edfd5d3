import json
from pathlib import PurePosixPath

from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from mnote.citations.models import Citation
from mnote.library.ingest import opened_sha256
from mnote.library.models import Source
from mnote.library.source_files import SourceUnavailable, open_source_file
from mnote.preview.render_cache import RenderRefused, cached
from mnote.preview.render_rate import RenderRateLimited, charge_render
from mnote.preview.text_render import TextRejected, render_markdown, render_plain_text

_KINDS = {".docx": "docx", ".pdf": "pdf", ".md": "markdown", ".mdx": "markdown", ".txt": "text", ".log": "text"}
_LOCATOR_KEYS = {
    "precision", "degraded", "resourceKind", "sourceId", "sourcePath", "page", "bbox", "blockId", "paraIds",
    "headingPath", "evidenceText", "searchQuery", "displayQuote", "chunkId", "chunkIndex",
}  # fmt: skip
MAX_LOCATOR_CHARS = 20_000
MAX_ID = 2**63 - 1
PDF_PAGE_WIDTHS = (600, 1000, 1600)


def resource_kind(name: str) -> str:
    return _KINDS.get(PurePosixPath(name).suffix.lower(), "other")


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


def _render_docx(source: Source, handle) -> dict:
    from mnote.preview.docx_child import render_docx_isolated

    return render_docx_isolated(handle, image_base=reverse("preview-docx-image", args=[source.pk, "x"]).removesuffix("x"))


def _render_text(render_file, handle) -> dict:
    html, blocks, truncated = render_file(handle)
    warnings = [_("Only the beginning of this large file is shown.")] if truncated else []
    return {"html": html, "blocks": blocks, "title": "", "warnings": warnings}


def _pdf_pages(handle) -> dict:
    from mnote.preview.pdf_pages import pdf_info

    info = pdf_info(handle)
    return {"pages": [{"number": i + 1, "width": w, "height": h} for i, (w, h) in enumerate(info.pages)], "title": info.title or ""}


def _rejections():
    from mnote.preview.docx_render import DocxRejected
    from mnote.preview.pdf_pages import PdfRejected

    return (DocxRejected, PdfRejected, TextRejected)


@require_GET
def document(request, source_id: int):
    """The preview of one source, made to sit in an iframe of the app's own
    pages (or be opened on its own), at the passage when a locator is given."""
    source = _visible_source(request, source_id)
    locator, citation = _initial_locator(request, source)
    kind = resource_kind(source.file_name)
    context = {
        "source": source,
        "kind": kind,
        "locator": locator,
        "citation": citation,
        "citation_state": citation.state if citation else "",
        "problem": "",
        "rendered": None,
        "pdf": None,
    }
    try:
        handle = open_source_file(source)
    except SourceUnavailable as e:
        context["problem"] = e.message
        return render(request, "preview/document.html", context, status=e.status)
    try:
        with handle:
            sha256 = opened_sha256(source, handle)
            renderer = {
                "docx": lambda: _render_docx(source, handle),
                "markdown": lambda: _render_text(render_markdown, handle),
                "text": lambda: _render_text(render_plain_text, handle),
                "pdf": lambda: _pdf_pages(handle),
            }.get(kind)
            if renderer is not None:

                def render_now(renderer=renderer):
                    # Only a render the cache does not hold counts against the user's budget.
                    charge_render(request.user)
                    return renderer()

                result = cached(kind, sha256, render_now, refusals=_rejections())
                context["pdf" if kind == "pdf" else "rendered"] = result
            else:
                context["problem"] = _("There is no preview for this kind of file; open the original instead.")
    except (*_rejections(), RenderRefused) as e:
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
    return render(
        request, "preview/document.html", {"source": source, "kind": "other", "problem": error.message}, status=error.status
    )


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
def docx_image(request, source_id: int, part: str):
    """An image from inside the DOCX package (never an external link)."""
    from mnote.preview.docx_render import DocxRejected, load_docx_image

    source = _visible_source(request, source_id)
    if resource_kind(source.file_name) != "docx":
        raise Http404("Not a Word document.")
    try:
        with open_source_file(source) as handle:
            content_type, data = load_docx_image(handle, part)
    except (DocxRejected, KeyError, OSError, SourceUnavailable) as e:
        raise Http404("No such image in this document.") from e
    response = HttpResponse(data, content_type=content_type)
    response["Cache-Control"] = "private, max-age=3600"
    return response


@require_GET
def pdf_page(request, source_id: int, page: int):
    from mnote.preview.pdf_pages import PdfRejected, render_page_png

    source = _visible_source(request, source_id)
    if resource_kind(source.file_name) != "pdf":
        raise Http404("Not a PDF.")
    try:
        width = int(request.GET.get("w", 1000))
    except ValueError:
        width = 1000
    width = min(PDF_PAGE_WIDTHS, key=lambda w: abs(w - width))
    try:
        with open_source_file(source) as handle:
            png = render_page_png(handle, page, width_px=width)
    except (PdfRejected, OSError, SourceUnavailable) as e:
        raise Http404(str(e)) from e
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response


@require_GET
def pdf_find(request, source_id: int):
    """Where the evidence text is on the PDF's text layer: a text match with its
    score, never presented as a layout box."""
    from mnote.preview.pdf_pages import PdfRejected, find_text

    source = _visible_source(request, source_id)
    evidence = request.GET.get("evidence", "")[:4000]
    if resource_kind(source.file_name) != "pdf" or not evidence.strip():
        return JsonResponse({"error": {"code": "bad_request", "message": "Give the evidence text of a PDF citation."}}, status=400)
    try:
        page_hint = int(request.GET["page"]) if request.GET.get("page", "").isdigit() else None
        with open_source_file(source) as handle:
            match = find_text(handle, evidence, query=request.GET.get("query", "")[:500], page_hint=page_hint)
    except SourceUnavailable as e:
        return JsonResponse({"error": {"code": "gone", "message": e.message}}, status=e.status)
    except (PdfRejected, OSError) as e:
        return JsonResponse({"error": {"code": "unreadable", "message": str(e)}}, status=422)
    if match is None:
        return JsonResponse({"page": None})
    return JsonResponse(
        {"page": match.page, "rects": match.rects, "score": match.score, "text": match.matched_text, "method": match.method}
    )
