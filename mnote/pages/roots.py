"""The roots page, for admins: every root with its counts, and the form that
adds or edits one (a folder picked from the base directory, its groups, what
it includes), with a preview of what it would take in; disable, enable,
remove."""

from django import forms
from django.contrib import messages
from django.db.models import Count, Q
from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from mnote.accounts.roles import admin_only
from mnote.library.forms import IndexedRootForm
from mnote.library.actions import remove_root
from mnote.library.models import IndexedRoot, Source
from mnote.library.roots_preview import base_folders, preview_root, suggested_root_name
from mnote.library.sync_report import sync_and_report
from mnote.pages.library import MAX_ID


def _root_or_404(root_id: int) -> IndexedRoot:
    if root_id > MAX_ID:
        raise Http404("No such root.")
    return get_object_or_404(IndexedRoot, pk=root_id)

class RootPageForm(IndexedRootForm):
    class Meta(IndexedRootForm.Meta):
        widgets = {
            "visible_to_groups": forms.CheckboxSelectMultiple,
            # The folder picker: the base directory's folders as suggestions.
            "path": forms.TextInput(attrs={"list": "base-folders", "autocomplete": "off", "spellcheck": "false"}),
        }


@require_GET
@admin_only
def roots(request):
    rows = IndexedRoot.objects.prefetch_related("visible_to_groups").annotate(
        source_count=Count("sources"),
        failed_count=Count(
            "sources",
            filter=Q(sources__status=Source.Status.FAILED) & ~Q(sources__failure_kind=Source.Failure.PERMANENT),
        ),
        indexed_count=Count("sources", filter=Q(sources__status=Source.Status.INDEXED)),
        on_the_way_count=Count("sources", filter=Q(sources__status__in=Source.IN_PROGRESS)),
    )
    return render(request, "library/roots.html", {"roots": rows})


def _root_form_page(request, root: IndexedRoot | None):
    form = RootPageForm(request.POST or None, instance=root)
    if request.method == "POST" and request.POST.get("pick"):
        # A folder picked from the list: the same form again with that path, unsaved and without errors yet.
        initial = {name: request.POST.get(name) for name in form.fields}
        picked = request.POST["pick"]
        initial.update(path=picked, visible_to_groups=request.POST.getlist("visible_to_groups"))
        if not (initial.get("name") or "").strip():
            initial["name"] = suggested_root_name(picked)
        for flag in ("recursive", "run_on_change", "enabled", "visible_to_all", "uploads_open"):
            initial[flag] = flag in request.POST
        form = RootPageForm(initial=initial, instance=root)
    taken = set(IndexedRoot.objects.exclude(pk=root.pk if root else None).values_list("path", flat=True))
    folders = [folder for folder in base_folders() if folder not in taken]
    context = {"form": form, "root": root, "base_dir": settings.MNOTE_LIBRARY_BASE_DIR, "folders": folders}
    if request.method == "POST" and request.POST.get("pick"):
        return render(request, "library/root_form.html", context)
    if request.method == "POST" and "preview" in request.POST:
        # Show which files would be in the root; nothing is saved or synced.
        if form.is_valid():
            data = form.cleaned_data
            context["preview"] = preview_root(
                data["path"],
                recursive=data["recursive"],
                include_patterns=data["include_patterns"],
                exclude_patterns=data["exclude_patterns"],
            )
        return render(request, "library/root_form.html", context)
    if request.method == "POST":
        if form.is_valid():
            saved = form.save()
            messages.success(request, _("Saved the root “%(root)s”.") % {"root": saved.name})
            sync_and_report(request, saved)
            return redirect("library:roots")
        messages.error(request, _("The root was not saved; please correct the fields marked below."))
    return render(request, "library/root_form.html", context)


@require_http_methods(["GET", "POST"])
@admin_only
def root_add(request):
    return _root_form_page(request, None)


@require_http_methods(["GET", "POST"])
@admin_only
def root_edit(request, root_id):
    return _root_form_page(request, _root_or_404(root_id))


@require_http_methods(["GET", "POST"])
@admin_only
def root_disable(request, root_id):
    root = _root_or_404(root_id)
    if request.method == "POST":
        root.enabled = False
        root.save(update_fields=["enabled", "updated_at"])
        messages.success(request, _("Disabled the root “%(root)s”.") % {"root": root.name})
        sync_and_report(request, root)
        return redirect("library:roots")
    return render(request, "library/root_confirm.html", {"root": root, "action": "disable"})


@require_POST
@admin_only
def root_enable(request, root_id):
    root = _root_or_404(root_id)
    root.enabled = True
    root.save(update_fields=["enabled", "updated_at"])
    messages.success(request, _("Enabled the root “%(root)s”.") % {"root": root.name})
    sync_and_report(request, root)
    return redirect("library:roots")


@require_http_methods(["GET", "POST"])
@admin_only
def root_remove(request, root_id):
    root = _root_or_404(root_id)
    if request.method == "POST":
        messages.success(request, remove_root(root).line())
        return redirect("library:roots")
    return render(
        request,
        "library/root_confirm.html",
        {"root": root, "action": "remove", "source_count": root.sources.count()},
    )
