"""The per-user render budget holds when a user's renders start at once."""

import threading
import time

import pytest
from django.core.cache import cache, caches

from mnote.preview import render_rate


@pytest.mark.django_db
def test_renders_started_at_once_are_each_counted(settings, member, monkeypatch):
    settings.MNOTE_PREVIEW_RENDERS_PER_MINUTE = 5
    cache.clear()
    # Each thread has its own cache object (Django's per-thread handle): slow them all down, in their class.
    cache_class = type(caches["default"])
    read = cache_class.get

    def get(self, *args, **kwargs):  # another thread may run between the read and the write
        found = read(self, *args, **kwargs)
        time.sleep(0.02)
        return found

    monkeypatch.setattr(cache_class, "get", get)
    outcomes = []

    def render():
        try:
            render_rate.charge_render(member)
            outcomes.append("rendered")
        except render_rate.RenderRateLimited:
            outcomes.append("limited")

    threads = [threading.Thread(target=render) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["limited"] * 5 + ["rendered"] * 5
