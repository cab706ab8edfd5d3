"""People, for admins: accounts, invitations by one-time link, password
reset links, deactivation. Groups and the roots they see: ``groups.py``."""

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.models import Group
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from mnote.pages.people_forms import InvitationForm, JoinForm, UserEditForm
from mnote.accounts.invitations import (
    InvitationUsed,
    accept,
    invitation_for,
    invitation_path,
    password_reset_path,
    users,
)
from mnote.accounts.models import Invitation
from mnote.accounts.roles import admin_only

# No database key is larger; SQLite cannot even compare a larger number.
MAX_ID = 2**63 - 1


def _user_or_404(user_id: int):
    return get_object_or_404(get_user_model(), pk=min(user_id, MAX_ID))


def _may_edit(editor, user) -> bool:
    """Staff manage members and other admins; a superuser only by a superuser
    (a staff admin must not be able to lock the site's owner out)."""
    return editor.is_superuser or not user.is_superuser


@require_GET
@admin_only
def people(request):
    return render(
        request,
        "accounts/people.html",
        {
            "users": users(),
            "groups": Group.objects.prefetch_related("visible_roots").order_by("name"),
            "invitations": Invitation.objects.open().prefetch_related("groups").select_related("created_by"),
        },
    )


@require_http_methods(["GET", "POST"])
@admin_only
def invite(request):
    form = InvitationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        invitation = form.save(commit=False)
        invitation.created_by = request.user
        invitation.save()
        form.save_m2m()
        return redirect("people:invitation", invitation.pk)
    return render(request, "accounts/invite.html", {"form": form})


@require_GET
@admin_only
def invitation(request, invitation_id):
    invitation = get_object_or_404(Invitation.objects.open(), pk=min(invitation_id, MAX_ID))
    return render(request, "accounts/invitation.html", {"invitation": invitation, "link": invitation_path(invitation)})


@require_POST
@admin_only
def invitation_revoke(request, invitation_id):
    Invitation.objects.filter(pk=min(invitation_id, MAX_ID), used_at__isnull=True).delete()
    messages.success(request, _("The invitation was revoked: its link no longer works."))
    return redirect("people:people")


@login_not_required
@require_http_methods(["GET", "POST"])
def join(request, token):
    """The invited person's page: choose a user name, give a name and a
    password; the account is made, signed in, and the link is spent."""
    invitation = invitation_for(token)
    if invitation is None:
        return render(request, "accounts/join_invalid.html", status=404)
    form = JoinForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = accept(invitation, form)
        except InvitationUsed:
            return render(request, "accounts/join_invalid.html", status=404)
        login(request, user)
        name = user.get_short_name() or user.get_username()
        messages.success(request, _("Welcome, %(name)s. Your account is ready.") % {"name": name})
        return redirect("home")
    return render(request, "accounts/join.html", {"form": form, "invitation": invitation})


@require_http_methods(["GET", "POST"])
@admin_only
def user_edit(request, user_id):
    user = _user_or_404(user_id)
    if not _may_edit(request.user, user):
        return render(request, "library/forbidden.html", status=403)
    form = UserEditForm(request.POST or None, instance=user, editor=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, _("Saved “%(user)s”.") % {"user": user.get_username()})
        return redirect("people:people")
    return render(request, "accounts/user_form.html", {"form": form, "person": user})


@require_POST
@admin_only
def user_reset_link(request, user_id):
    """A one-time link to set a new password, for the admin to pass on."""
    user = _user_or_404(user_id)
    if not _may_edit(request.user, user):
        return render(request, "library/forbidden.html", status=403)
    if not user.is_active:
        messages.error(
            request, _("“%(user)s” is deactivated: activate the account first.") % {"user": user.get_username()}
        )
        return redirect("people:people")
    return render(request, "accounts/reset_link.html", {"person": user, "link": password_reset_path(user)})


@require_POST
@admin_only
def user_active(request, user_id):
    """Deactivate (or activate again) an account; never one's own."""
    user = _user_or_404(user_id)
    if user.pk == request.user.pk or not _may_edit(request.user, user):
        messages.error(request, _("You cannot deactivate your own account."))
        return redirect("people:people")
    user.is_active = request.POST.get("active") == "1"
    user.save(update_fields=["is_active"])
    if user.is_active:
        messages.success(request, _("“%(user)s” can log in again.") % {"user": user.get_username()})
    else:
        messages.success(
            request,
            _("“%(user)s” is deactivated: their sessions and API tokens stopped working.")
            % {"user": user.get_username()},
        )
    return redirect("people:people")


class ResetView(auth_views.PasswordResetConfirmView):
    """Django's own: the link from an admin sets a new password once, then
    signs the person in."""

    template_name = "accounts/reset.html"
    post_reset_login = True
    success_url = reverse_lazy("home")

    def form_valid(self, form):
        messages.success(self.request, _("Your new password is set."))
        return super().form_valid(form)
