import json
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path, PurePosixPath

from django import forms
from django.conf import settings

from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from mnote.citations.models import Citation
from mnote.library.models import Source
from mnote.library.ingest import current_sha256
from mnote.preview.anchoring import TextMap, build_text_map, find_passage
from mnote.preview.render_cache import RENDERER_VERSION, cached
from mnote.preview.text_render import TextRejected, render_markdown, render_plain_text

_KINDS = {".docx": "docx", ".pdf": "pdf", ".md": "markdown", ".mdx": "markdown", ".txt": "text", ".log": "text"}
_LOCATOR_KEYS = {
    "precision", "degraded", "resourceKind", "sourceId", "sourcePath", "page", "bbox", "blockId", "paraIds",
    "headingPath", "evidenceText", "searchQuery", "displayQuote", "chunkId", "chunkIndex",
}  # fmt: skip
_TEXT_KINDS = {"docx", "markdown", "text"}
# Text maps of recently opened document versions, so a click on another
# citation does not re-read the cached render.
_TEXT_MAPS: OrderedDict[str, TextMap] = OrderedDict()
_TEXT_MAPS_KEPT = 8
MAX_LOCATOR_CHARS = 20_000
PDF_PAGE_WIDTHS = (600, 1000, 1600)


def resource_kind(name: str) -> str:
    return _KINDS.get(PurePosixPath(name).suffix.lower(), "other")


def _visible_source(request, source_id: int) -> Source:
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
    except ValueError:
        return None, None
    if not isinstance(locator, dict):
        return None, None
    return {k: v for k, v in locator.items() if k in _LOCATOR_KEYS}, None


def _render_docx(source: Source, path: Path) -> dict:
    from mnote.preview.docx_render import render_docx

    base = reverse("preview-docx-image", args=[source.pk, "x"]).removesuffix("x")
    rendered = render_docx(path, image_url=lambda part: base + part.lstrip("/"))
    return {"html": rendered.html, "blocks": rendered.block_count, "title": rendered.title, "warnings": rendered.warnings,
            "textMap": build_text_map(rendered.html).compact()}


def _render_text(render_file, path: Path) -> dict:
    html, blocks, truncated = render_file(path)
    warnings = [_("Only the beginning of this large file is shown.")] if truncated else []
    return {"html": html, "blocks": blocks, "title": "", "warnings": warnings, "textMap": build_text_map(html).compact()}


def _rendered(source: Source, kind: str, path: Path, sha256: str) -> dict:
    if kind == "docx":
        return cached("docx", sha256, lambda: _render_docx(source, path))
    if kind == "markdown":
        return cached("markdown", sha256, lambda: _render_text(render_markdown, path))
    return cached("text", sha256, lambda: _render_text(render_plain_text, path))


def _version(sha256: str) -> str:
    return f"{RENDERER_VERSION}-{sha256[:16]}"


def _text_map(source: Source, kind: str, path: Path, sha256: str, rendered: dict | None = None) -> TextMap | None:
    """The text map of this version of the file (built with its render)."""
    version = _version(sha256)
    text_map = _TEXT_MAPS.get(version)
    if text_map is None:
        rendered = rendered or _rendered(source, kind, path, sha256)
        text_map = TextMap.from_compact(rendered.get("textMap"), version)
        if text_map is None:
            return None
        _TEXT_MAPS[version] = text_map
        while len(_TEXT_MAPS) > _TEXT_MAPS_KEPT:
            _TEXT_MAPS.popitem(last=False)
    _TEXT_MAPS.move_to_end(version)
    return text_map


def _chunk_text(chunk_id: str) -> str:
    """The cited chunk's own text, when LightRAG's chunk store is readable."""
    from mnote.citations.citation_text import clean_display_text
    from mnote.citations.sidecar import load_chunk_store

    if not chunk_id:
        return ""
    store = load_chunk_store(settings.MNOTE_LIGHTRAG.working_dir) or {}
    stored = store.get(chunk_id)
    return clean_display_text(stored.content) if stored else ""


def anchor_locator(text_map: TextMap, locator: dict, *, tail: str = "") -> dict | None:
    """Where a locator's passage is in the rendered text: the evidence text,
    inside the cited chunk's place when the server knows the chunk. With a
    ``tail``, the passage runs from the evidence's place to the tail's."""
    evidence = str(locator.get("evidenceText") or locator.get("displayQuote") or "")[:MAX_LOCATOR_CHARS]
    headings = [h for h in locator.get("headingPath") or [] if isinstance(h, str)]
    heading = headings[-1] if headings else ""
    chunk = _chunk_text(str(locator.get("chunkId") or ""))
    place = find_passage(text_map, chunk, whole=True) if chunk else None
    if place is None:
        anchor = find_passage(text_map, evidence, heading=heading)
    else:
        # Never outside the cited chunk: the evidence inside it, else the
        # chunk's own query-centred window, else the whole chunk.
        from mnote.citations.citation_text import evidence_window

        within = (place.start, place.end)
        anchor = (
            find_passage(text_map, evidence, heading=heading, within=within)
            or find_passage(text_map, evidence_window(chunk, str(locator.get("searchQuery") or "")), within=within, whole=True)
            or place
        )
    if anchor is not None and tail:
        end = find_passage(text_map, tail, within=(anchor.start, len(text_map.ink)))
        if end is None or end.end - anchor.start > 4 * MAX_LOCATOR_CHARS:
            return None  # head without its tail: not the cited passage
        anchor = replace(anchor, end=max(anchor.end, end.end), status="exact" if anchor.status == end.status == "exact" else "fuzzy")
    return anchor.as_json() if anchor else None


def _pdf_pages(path: Path) -> dict:
    from mnote.preview.pdf_pages import pdf_info

    info = pdf_info(path)
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
    path = Path(source.absolute_path)
    context = {
        "source": source,
        "kind": kind,
        "locator": locator,
        "citation": citation,
        "citation_state": citation.state if citation else "",
        "problem": "",
        "rendered": None,
        "text_version": "",
        "pdf": None,
    }
    if source.deleted_at is not None or not path.is_file():
        context["problem"] = _("This file is no longer in the library (it was moved, renamed or deleted).")
        return render(request, "preview/document.html", context)
    try:
        sha256 = current_sha256(source)
        if kind in _TEXT_KINDS:
            context["rendered"] = _rendered(source, kind, path, sha256)
            context["text_version"] = _version(sha256)
            if locator:
                # Resolved here, so the first highlight needs no second request.
                text_map = _text_map(source, kind, path, sha256, context["rendered"])
                anchor = anchor_locator(text_map, locator) if text_map else None
                locator = context["locator"] = {**locator, "anchor": anchor} if anchor else locator
        elif kind == "pdf":
            context["pdf"] = cached("pdf", sha256, lambda: _pdf_pages(path))
        else:
            context["problem"] = _("There is no preview for this kind of file; open the original instead.")
    except _rejections() as e:
        context["problem"] = str(e)
    except OSError as e:
        context["problem"] = _("This file cannot be read: %(error)s") % {"error": e.strerror or e}
    return render(request, "preview/document.html", context)


class AnchorForm(forms.Form):
    evidence = forms.CharField(max_length=MAX_LOCATOR_CHARS)
    # The end of an evidence text too long for one URL (the page sends head and tail).
    tail = forms.CharField(max_length=MAX_LOCATOR_CHARS, required=False)
    heading = forms.CharField(max_length=1000, required=False)
    chunk_id = forms.CharField(max_length=200, required=False)
    query = forms.CharField(max_length=1000, required=False)


@require_GET
def anchor(request, source_id: int):
    """Where a passage is in this source's rendered preview (text offsets and
    blocks), for a citation sent to a preview that is already open."""
    source = _visible_source(request, source_id)
    form = AnchorForm(request.GET)
    kind = resource_kind(source.file_name)
    if not form.is_valid() or kind not in _TEXT_KINDS:
        return JsonResponse({"error": {"code": "bad_request", "message": "Give the evidence text of a passage in a text document."}}, status=400)
    path = Path(source.absolute_path)
    try:
        text_map = _text_map(source, kind, path, current_sha256(source))
    except _rejections() as e:
        return JsonResponse({"error": {"code": "unreadable", "message": str(e)}}, status=422)
    except OSError:
        raise Http404("This file is no longer in the library.") from None
    locator = {"evidenceText": form.cleaned_data["evidence"], "chunkId": form.cleaned_data["chunk_id"], "searchQuery": form.cleaned_data["query"],
               "headingPath": [form.cleaned_data["heading"]] if form.cleaned_data["heading"] else []}
    found = anchor_locator(text_map, locator, tail=form.cleaned_data["tail"]) if text_map else None
    return JsonResponse({"anchor": found, "version": text_map.version if text_map else ""})


@require_GET
def original(request, source_id: int):
    """The user's file itself, read only, as a download."""
    source = _visible_source(request, source_id)
    try:
        handle = open(source.absolute_path, "rb")
    except OSError as e:
        raise Http404("This file is no longer in the library.") from e
    return FileResponse(handle, as_attachment=True, filename=source.file_name)


@require_GET
def docx_image(request, source_id: int, part: str):
    """An image from inside the DOCX package (never an external link)."""
    from mnote.preview.docx_render import DocxRejected, load_docx_image

    source = _visible_source(request, source_id)
    if resource_kind(source.file_name) != "docx":
        raise Http404("Not a Word document.")
    try:
        content_type, data = load_docx_image(Path(source.absolute_path), part)
    except (DocxRejected, KeyError, OSError) as e:
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
        png = render_page_png(Path(source.absolute_path), page, width_px=width)
    except (PdfRejected, OSError) as e:
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
        match = find_text(Path(source.absolute_path), evidence, query=request.GET.get("query", "")[:500], page_hint=page_hint)
    except (PdfRejected, OSError) as e:
        return JsonResponse({"error": {"code": "unreadable", "message": str(e)}}, status=422)
    if match is None:
        return JsonResponse({"page": None})
    return JsonResponse(
        {"page": match.page, "rects": match.rects, "score": match.score, "text": match.matched_text, "method": match.method,
         "parts": match.parts}
    )
