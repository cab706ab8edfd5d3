"""Invitations: an admin asks someone in by a one-time link (no mail
server: the admin copies the link and sends it the way the team talks)."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


def _default_expiry():
    return timezone.now() + timedelta(days=settings.MNOTE_INVITATION_DAYS)


class InvitationQuerySet(models.QuerySet):
    def open(self, now=None):
        """Not used yet and not expired: the links that still work."""
        return self.filter(used_at__isnull=True, expires_at__gt=now or timezone.now())


class Invitation(models.Model):
    note = models.CharField(
        _("for"), max_length=120, blank=True, help_text=_("Who it is for, so you recognise it in the list.")
    )
    groups = models.ManyToManyField(
        Group, blank=True, related_name="+", verbose_name=_("groups"),
        help_text=_("The new account joins these groups, and sees the roots they see."),
    )  # fmt: skip
    make_admin = models.BooleanField(
        _("admin"), default=False, help_text=_("The new account may manage roots, files and people.")
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(_("expires at"), default=_default_expiry)
    used_at = models.DateTimeField(_("used at"), null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")

    def __str__(self):
        return self.note or f"#{self.pk}"
