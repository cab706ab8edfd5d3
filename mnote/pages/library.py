"""The library's pages: the home page (the sources table, progress, recent
questions and cited passages), the library tree, and the admins' actions on
files and roots (reindex, delete from the index, retry failed). The roots
page and form: ``roots.py``."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from mnote.accounts.roles import admin_only, is_admin
from mnote.citations.models import Citation
from mnote.library.failures import not_retried, retry_failed
from mnote.library.models import IndexedRoot, Source
from mnote.lightrag.provider import health_report, lightrag_client, webui_url
from mnote.library.progress import library_progress
from mnote.text.snippet import snippet
from mnote.library.source_filters import (
    FILTERS,
    filter_counts,
    filtered_sources,
    has_index,
    reindex_refusal,
    source_filter,
)
from mnote.library.actions import (
    delete_index,
    library_status,
    prune_registry,
    pruned_message,
    reindex_source,
)
from mnote.library.tree import folder_level, roots_level
from mnote.search.recent import recent as recent_queries


PAGE_SIZE = 50


class SourceTableForm(forms.Form):
    filter = forms.ChoiceField(required=False)
    q = forms.CharField(required=False, max_length=200)
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data, *, admin: bool):
        super().__init__(data)
        self.fields["filter"].choices = [(f.key, f.label) for f in FILTERS if admin or not f.admin_only]


def _partial_wanted(request) -> bool:
    # A history restore asks for the whole page even though htmx sends it.
    return bool(request.htmx) and not request.htmx.history_restore_request


def _lightrag_side(request, *, full_page: bool, health_ok: bool, unmapped_wanted: bool):
    """LightRAG's counts and unmapped documents, or None when this response
    does not need them. Only admins get them: LightRAG counts every file,
    including those in folders a member may not see."""
    if not unmapped_wanted or not is_admin(request.user):
        return None
    if full_page and not health_ok:
        return library_status(None)
    with lightrag_client() as client:
        return library_status(client)


def _source_table(request, *, full_page: bool, health_ok: bool = True):
    """The context of the source table: filters with counts, one page of rows,
    and whether anything visible is in progress (then the table polls)."""
    admin = is_admin(request.user)
    form = SourceTableForm(request.GET, admin=admin)
    if not form.is_valid():
        return None, form
    chosen = source_filter(form.cleaned_data["filter"] or "", admin=admin)
    query = form.cleaned_data["q"]
    visible = Source.objects.visible_to(request.user)
    counts = filter_counts(visible)
    status = _lightrag_side(request, full_page=full_page, health_ok=health_ok, unmapped_wanted=admin)

    unmapped = None if status is None or status.lightrag_counts is None else status.unmapped
    if chosen.condition is None:
        rows = [d for d in unmapped or [] if query.lower() in d.file_path.lower()]
    else:
        rows = filtered_sources(visible, chosen.key, query).select_related("root", "duplicate_of__root")
    page = Paginator(rows, PAGE_SIZE).get_page(form.cleaned_data["page"])
    if admin and chosen.condition is not None:
        for source in page.object_list:
            source.can_reindex = not reindex_refusal(source)
            source.can_delete_index = has_index(source)
    filters = []
    for f in FILTERS:
        if f.admin_only and not admin:
            continue
        count = counts.get(f.key) if f.condition is not None else (None if unmapped is None else len(unmapped))
        label, help_text = f.words(admin=admin)
        filters.append({"filter": f, "label": label, "help": help_text, "count": count, "current": f.key == chosen.key})
    return {
        "admin": admin,
        "chosen": chosen,
        "chosen_help": chosen.words(admin=admin)[1],
        "filters": filters,
        "query": query,
        "page_obj": page,
        "showing_unmapped": chosen.condition is None,
        "in_progress": counts["indexing"] > 0,
        # What "Retry failed" would send: a damaged or encrypted file stays failed.
        "failed_total": visible.filter(status=Source.Status.FAILED).exclude(failure_kind=Source.Failure.PERMANENT).count() if admin else 0,
        "lightrag_status": status,
        "registry_total": counts["all"],
    }, form


def _bad_table_request(request, form):
    problems = " ".join(str(e) for errors in form.errors.values() for e in errors)
    return render(
        request,
        "library/problem.html",
        {"problem": _("This table view does not exist: %(problems)s") % {"problems": problems}},
        status=400,
    )


@require_GET
@vary_on_headers("HX-Request")
def home(request):
    """A reader's home: search and ask first, their recent questions and the
    library's recent citations, then the library itself; LightRAG's health
    and counts are for admins only. An htmx request (filters, search,
    polling) gets the table partial only."""
    if _partial_wanted(request):
        table, form = _source_table(request, full_page=False)
        if table is None:
            return _bad_table_request(request, form)
        return render(request, "library/home.html#sources", table)

    report = health_report()
    table, form = _source_table(request, full_page=True, health_ok=report.ok)
    if table is None:
        return _bad_table_request(request, form)
    visible = Source.objects.visible_to(request.user)
    return render(
        request,
        "library/home.html",
        {
            **table,
            "recent_queries": recent_queries(request),
            "level": roots_level(request.user),
            "tree_filter": "all",
            "tree_filters": _tree_filters("all", admin=is_admin(request.user)),
            "recent_citations": _with_snippets(
                Citation.objects.filter(source__in=visible).select_related("source").order_by("-created_at")[:6]
            ),
            "report": report,
            "webui_url": webui_url(request),
            "lightrag_url": settings.MNOTE_LIGHTRAG.base_url,
            "root_total": IndexedRoot.objects.visible_to(request.user).count(),
            **_progress_context(request.user),
            "upload_roots": IndexedRoot.objects.visible_to(request.user).filter(uploads_open=True, enabled=True),
        },
    )


def _with_snippets(citations) -> list:
    """Each citation with a short readable ``snippet`` of its quote."""
    citations = list(citations)
    for cited in citations:
        cited.snippet = snippet(cited.display_quote)
    return citations


def _progress_context(user, root_ids=None) -> dict:
    rows = library_progress(user, root_ids)
    return {"progress_rows": rows, "progress_busy": any(row.in_progress for row in rows)}


# Most roots one progress poll asks about.
MAX_PROGRESS_ROOTS = 50


@require_GET
@vary_on_headers("HX-Request")
def progress(request):
    """Indexing progress of the roots the user may see: those with files on
    the way in, or the ``root`` ids asked for (a live panel keeps asking for
    the roots it showed, so it ends on "done" instead of vanishing)."""
    asked = [int(v) for v in request.GET.getlist("root")[:MAX_PROGRESS_ROOTS] if v.isascii() and v.isdigit()]
    context = _progress_context(request.user, [v for v in asked if v <= MAX_ID] or None)
    if _partial_wanted(request):
        return render(request, "library/progress.html#panel", context)
    return render(request, "library/progress.html", context)


class TreeForm(forms.Form):
    root = forms.IntegerField(required=False, min_value=1)
    path = forms.CharField(required=False, max_length=2048, strip=True)
    filter = forms.ChoiceField(required=False)

    def __init__(self, data):
        super().__init__(data)
        self.fields["filter"].choices = [(f.key, f.label) for f in FILTERS if f.condition is not None]

    def clean_path(self):
        path = self.cleaned_data["path"].strip("/")
        if ".." in path.split("/"):
            raise forms.ValidationError(_("A folder path cannot contain “..”."))
        return path


def _tree_filters(chosen: str, *, admin: bool) -> list[dict]:
    return [
        {"filter": f, "label": f.words(admin=admin)[0], "help": f.words(admin=admin)[1], "current": f.key == chosen}
        for f in FILTERS
        if f.condition is not None
    ]


@require_GET
@vary_on_headers("HX-Request")
def tree(request):
    """One level of the library tree: the roots, or one folder of a root.
    htmx asks for a level when a folder is opened; without JavaScript the
    folder's link opens this page at that level."""
    form = TreeForm(request.GET)
    if not form.is_valid():
        return _bad_table_request(request, form)
    chosen = form.cleaned_data["filter"] or "all"
    root_id, path = form.cleaned_data["root"], form.cleaned_data["path"]
    if root_id is None:
        level = roots_level(request.user, chosen)
    else:
        root = IndexedRoot.objects.visible_to(request.user).filter(pk=root_id).first()
        if root is None:
            return render(request, "404.html", status=404)
        level = folder_level(request.user, root, path, chosen)
    admin = is_admin(request.user)
    context = {"level": level, "tree_filter": chosen, "tree_filters": _tree_filters(chosen, admin=admin), "admin": admin}
    if _partial_wanted(request):
        return render(request, "library/tree.html#level", context)
    return render(request, "library/tree.html", context)


def _back_to_table(request):
    """After an action: the refreshed table for htmx, else back to the same view of the dashboard."""
    if _partial_wanted(request):
        table, form = _source_table(request, full_page=False)
        if table is not None:
            return render(request, "library/home.html#sources", table)
    query = request.GET.urlencode()
    return redirect(reverse("home") + (f"?{query}" if query else ""))


# No database key is larger; SQLite cannot even compare a larger number (a 500).
MAX_ID = 2**63 - 1


def _source_or_message(request, source_id):
    source = Source.objects.select_related("root").filter(pk=source_id).first() if source_id <= MAX_ID else None
    if source is None:
        messages.error(request, _("That file is no longer in the registry; the table below is up to date."))
    return source


@require_POST
@admin_only
def reindex(request, source_id):
    source = _source_or_message(request, source_id)
    if source is not None:
        _reindex_and_report(request, source)
    return _back_to_table(request)


def _reindex_and_report(request, source: Source) -> None:
    refusal = reindex_refusal(source)
    if refusal:
        messages.error(request, refusal)
        return
    try:
        outcome = reindex_source(source)
    except OSError as e:
        messages.error(
            request,
            _("“%(path)s” could not be reindexed: %(error)s") % {"path": source.library_path, "error": e.strerror or e},
        )
        return
    if outcome == "missing":
        messages.warning(
            request,
            _("“%(path)s” is gone from its folder, so its LightRAG document is being removed instead.")
            % {"path": source.library_path},
        )
    else:
        messages.success(
            request,
            _("“%(path)s” is queued for reindexing; its old LightRAG document is being deleted.")
            % {"path": source.library_path},
        )


@require_POST
@admin_only
def delete_index_view(request, source_id):
    source = _source_or_message(request, source_id)
    if source is not None:
        delete_index(source)
        messages.success(
            request,
            _("LightRAG’s document of “%(path)s” is being removed; the file stays where it is.")
            % {"path": source.library_path},
        )
    return _back_to_table(request)


@require_POST
@admin_only
def clear_stale(request):
    messages.success(request, pruned_message(prune_registry()))
    return _back_to_table(request)


def _report_retry(request, count: int, where: str, left: int = 0) -> None:
    if left:
        messages.info(
            request,
            ngettext(
                "%(n)d failed file of %(where)s stays failed: it is damaged, encrypted, holds no text or is too large, "
                "and a retry cannot change that (it is sent again when the file changes).",
                "%(n)d failed files of %(where)s stay failed: they are damaged, encrypted, hold no text or are too large, "
                "and a retry cannot change that (each is sent again when its file changes).",
                left,
            )
            % {"n": left, "where": where},
        )
    if count:
        messages.success(
            request,
            ngettext(
                "%(n)d failed file of %(where)s will be sent to LightRAG again, a few at a time.",
                "%(n)d failed files of %(where)s will be sent to LightRAG again, a few at a time.",
                count,
            )
            % {"n": count, "where": where},
        )
    else:
        messages.info(request, _("No failed file in %(where)s to retry.") % {"where": where})


@require_POST
@admin_only
def retry_failed_view(request):
    sources = Source.objects.all()
    _report_retry(request, retry_failed(sources), _("the library"), not_retried(sources))
    return _back_to_table(request)


@require_POST
@admin_only
def root_retry_failed(request, root_id):
    root = get_object_or_404(IndexedRoot, pk=root_id)
    where = _("the root “%(root)s”") % {"root": root.name}
    _report_retry(request, retry_failed(root.sources.all()), where, not_retried(root.sources.all()))
    return redirect("library:roots")
