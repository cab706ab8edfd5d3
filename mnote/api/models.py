"""API tokens: only a sha256 of the key is stored; the key itself is shown
once, when it is made."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

TOKEN_PREFIX = "mnote_"
# last_used_at is a hint for admins, not an audit log: one write a minute is enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def create_token(self, user, name: str = "") -> tuple["ApiToken", str]:
        """A new token for ``user`` and its key, which is never stored."""
        key = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = self.create(user=user, name=name, key_hash=hash_key(key), prefix=key[: len(TOKEN_PREFIX) + 6])
        return token, key

    def authenticate(self, key: str) -> "ApiToken | None":
        """The token with this key, when its user is active; its last use is noted."""
        if not key:
            return None
        try:
            # The key's hash is unique: get(), not first(), which would sort by the model's ordering.
            token = self.select_related("user").get(key_hash=hash_key(key))
        except self.model.DoesNotExist:
            return None
        if not token.user.is_active:
            return None
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            self.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return token


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(_("name"), max_length=120, blank=True)
    key_hash = models.CharField(_("key sha256"), max_length=64, unique=True, editable=False)
    prefix = models.CharField(_("key prefix"), max_length=16, editable=False, help_text=_("To recognise a key."))
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self):
        return f"{self.name or self.prefix + '…'} ({self.user})"
