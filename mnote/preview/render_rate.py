"""A per-user budget of expensive preview renders (a render the cache does
not already hold), so one account cannot keep the readers busy for everyone.

Counted in Django's cache: with the default per-process cache each web
worker counts on its own, which still bounds what one worker spends; point
CACHES at a shared cache for one count across workers.
"""

import time

from django.conf import settings
from django.core.cache import cache


class RenderRateLimited(Exception):
    def __init__(self, retry_after: int):
        super().__init__(retry_after)
        self.retry_after = retry_after


def charge_render(user) -> None:
    """Count one render for ``user``; RenderRateLimited past the budget of this minute."""
    limit = settings.MNOTE_PREVIEW_RENDERS_PER_MINUTE
    if not limit:
        return
    now = time.time()
    key = f"mnote:preview-renders:{user.pk}:{int(now // 60)}"
    cache.add(key, 0, timeout=120)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=120)
        count = 1
    if count > limit:
        raise RenderRateLimited(retry_after=max(1, 60 - int(now % 60)))
