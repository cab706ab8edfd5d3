"""A per-user budget of expensive preview renders (a render the cache does
not already hold), so one account cannot keep the readers busy for everyone.

Counted in Django's cache: with the default per-process cache each web
worker counts on its own, which still bounds what one worker spends; point
CACHES at a shared cache for one count across workers.
"""

import threading
import time

from django.conf import settings
from django.core.cache import cache


class RenderRateLimited(Exception):
    def __init__(self, retry_after: int):
        super().__init__(retry_after)
        self.retry_after = retry_after


WINDOW_S = 60
# The count is read, then written: the threads of one web process take turns,
# so two renders at once are both counted.
_COUNTING = threading.Lock()


def charge_render(user) -> None:
    """Count one render for ``user``; RenderRateLimited when the last minute
    already had the budget's worth (a sliding minute, so no burst fits
    across a clock-minute boundary)."""
    limit = settings.MNOTE_PREVIEW_RENDERS_PER_MINUTE
    if not limit:
        return
    now = time.time()
    key = f"mnote:preview-renders:{user.pk}"
    with _COUNTING:
        recent = [t for t in cache.get(key, []) if t > now - WINDOW_S]
        if len(recent) >= limit:
            raise RenderRateLimited(retry_after=max(1, int(recent[0] + WINDOW_S - now) + 1))
        cache.set(key, [*recent, now][-limit:], timeout=WINDOW_S)
