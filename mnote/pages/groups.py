"""Groups and the roots each sees, for admins (the people pages link here;
roots and their visibility are the library's)."""

from django.contrib import messages
from django.contrib.auth.models import Group
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from mnote.accounts.roles import admin_only
from mnote.library.forms import GroupForm

MAX_ID = 2**63 - 1


def _next_or(request, default: str):
    """Back where the admin came from (the root form's "create a group"), when it is this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(default)


def _group_page(request, group: Group | None):
    form = GroupForm(request.POST or None, instance=group)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, _("Saved the group “%(group)s”.") % {"group": saved.name})
        return _next_or(request, "people:people")
    context = {"form": form, "group": group, "next": request.GET.get("next", "")}
    return render(request, "library/group_form.html", context)


@require_http_methods(["GET", "POST"])
@admin_only
def group_add(request):
    return _group_page(request, None)


@require_http_methods(["GET", "POST"])
@admin_only
def group_edit(request, group_id):
    return _group_page(request, get_object_or_404(Group, pk=min(group_id, MAX_ID)))


@require_POST
@admin_only
def group_delete(request, group_id):
    group = get_object_or_404(Group, pk=min(group_id, MAX_ID))
    group.delete()
    messages.success(
        request, _("Deleted the group “%(group)s”; its members keep their accounts.") % {"group": group.name}
    )
    return redirect("people:people")
