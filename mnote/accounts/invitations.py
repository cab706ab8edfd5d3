"""Invitations and password resets by one-time link.

An invitation's link carries its id signed with the secret key (Django's
``signing``), so links cannot be guessed or made up; the row says whether it
was used or expired. A password reset link is Django's own
(``default_token_generator``): it stops working once the password changes,
and after ``PASSWORD_RESET_TIMEOUT``.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from mnote.accounts.models import Invitation

_SALT = "mnote.accounts.invitation"


def invitation_path(invitation: Invitation) -> str:
    token = signing.dumps([invitation.pk, invitation.created_at.isoformat()], salt=_SALT, compress=True)
    return reverse("people:join", args=[token])


def invitation_for(token: str) -> Invitation | None:
    """The open invitation a link names; None for a link made up, used,
    revoked or expired (the page says the same for all)."""
    try:
        pk, created = signing.loads(token, salt=_SALT)
    except (signing.BadSignature, ValueError, TypeError):
        return None
    invitation = Invitation.objects.open().filter(pk=pk).first()
    if invitation is None or invitation.created_at.isoformat() != created:
        return None
    return invitation


class InvitationUsed(Exception):
    """Another request used the invitation first."""


def accept(invitation: Invitation, form) -> object:
    """Create the account from the join form, once: the invitation row is
    locked, so two tabs submitting the same link make one account."""
    with transaction.atomic():
        locked = Invitation.objects.select_for_update().open().filter(pk=invitation.pk).first()
        if locked is None:
            raise InvitationUsed
        user = form.save(commit=False)
        user.is_staff = locked.make_admin
        user.save()
        user.groups.set(locked.groups.all())
        locked.used_at = timezone.now()
        locked.used_by = user
        locked.save(update_fields=["used_at", "used_by"])
    return user


def password_reset_path(user) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("people:reset", args=[uid, default_token_generator.make_token(user)])


def users():
    return get_user_model().objects.prefetch_related("groups").order_by("-is_active", "username")
