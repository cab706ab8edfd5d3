"""One LightRAG client per web process, its connections kept alive; the
health a search needs refreshed off the request path."""

import threading
import time

import httpx
import pytest

from mnote.lightrag import client as client_module
from mnote.lightrag import provider
from tests.lightrag_fakes import recorded


@pytest.fixture
def served(settings, monkeypatch):
    """The production path (no test transport in settings), its HTTP faked underneath."""
    calls = []
    release = threading.Event()
    release.set()

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        release.wait(10)
        status, body = recorded("health.json")
        return httpx.Response(status, json=body)

    transport = httpx.MockTransport(handler)
    real = client_module.make_client
    monkeypatch.setattr(provider, "make_client", lambda config, **kw: real(config, transport=transport, **kw))
    settings.MNOTE_LIGHTRAG_TRANSPORT = None
    monkeypatch.setattr(provider, "_shared", {})
    return calls, release


def test_every_request_of_a_process_uses_the_same_open_client(served):
    with provider.lightrag_client() as first:
        first.health()
    with provider.lightrag_client() as second:
        second.health()
    assert first is second and not second._http.is_closed


def test_an_old_health_is_answered_at_once_and_refreshed_in_the_background(served, settings):
    calls, release = served
    client = provider.lightrag_client()
    known = provider.recent_health(client)  # a process's first search asks
    assert calls == ["/health"]
    release.clear()  # LightRAG now slow to answer /health
    key = settings.MNOTE_LIGHTRAG.base_url
    provider._recent[key] = (time.monotonic() - provider.HEALTH_MAX_AGE_S - 1, known)
    started = time.monotonic()
    assert provider.recent_health(client) is known
    assert time.monotonic() - started < 1  # not waiting for LightRAG
    release.set()
    for _ in range(100):
        if provider._recent[key][1] is not known:
            break
        time.sleep(0.05)
    assert calls == ["/health", "/health"] and provider._recent[key][1] is not known
