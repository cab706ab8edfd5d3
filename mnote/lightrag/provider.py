"""The LightRAG client as the web app uses it: configured from settings, and
turned into a report a page can always render, whatever state LightRAG is in."""

import logging
import os
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.http.request import split_domain_port
from django.utils.translation import gettext as _

from mnote.lightrag import Health, LightRAGClient, LightRAGError, LightRAGUnauthorized, make_client
from mnote.lightrag.config import ImproperlyConfiguredLightRAG, read_dotenv

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


log = logging.getLogger(__name__)
_shared: dict[tuple, LightRAGClient] = {}
_lock = threading.Lock()


def lightrag_client() -> LightRAGClient:
    """This process's client for the configured LightRAG: one per process,
    its connections kept alive between requests (a new client cost a TLS
    context and a TCP connection per search). ``with lightrag_client() as c``
    does not close it."""
    # Tests put an httpx.MockTransport here; production leaves it unset.
    transport = getattr(settings, "MNOTE_LIGHTRAG_TRANSPORT", None)
    config = settings.MNOTE_LIGHTRAG
    if transport is not None:
        return make_client(config, transport=transport)
    # Per process id: a client made before a fork must not share its sockets.
    key = (os.getpid(), config.base_url, config.query_urls, config.api_key)
    with _lock:
        client = _shared.get(key)
        if client is None:
            client = _shared[key] = make_client(config, shared=True)
    return client


_recent: dict[str, tuple[float, Health]] = {}
_refreshing: set[str] = set()
# Rerank and LLM availability change with a server restart, not per search.
HEALTH_MAX_AGE_S = 15.0
# Older than this (refreshes keep failing), a request asks again itself.
HEALTH_MAX_STALE_S = 300.0


def recent_health(client: LightRAGClient) -> Health:
    """LightRAG's health, asked at most every HEALTH_MAX_AGE_S per server:
    searches need it for diagnostics, not to the second. Once known, an old
    answer is returned at once and a thread asks again (never on the request
    path); only a process's first search waits for it."""
    key = settings.MNOTE_LIGHTRAG.base_url
    now = time.monotonic()
    with _lock:  # _recent is shared by the process's threads
        cached = _recent.get(key)
    if cached and now - cached[0] < HEALTH_MAX_AGE_S:
        return cached[1]
    in_background = getattr(settings, "MNOTE_LIGHTRAG_TRANSPORT", None) is None  # tests: deterministic
    if cached and in_background and now - cached[0] < HEALTH_MAX_STALE_S:
        with _lock:
            start = key not in _refreshing
            _refreshing.add(key)
        if start:
            threading.Thread(target=_refresh_health, args=(key,), name="lightrag-health", daemon=True).start()
        return cached[1]
    health = client.health()
    with _lock:
        _recent[key] = (time.monotonic(), health)
    return health


def _refresh_health(key: str) -> None:
    try:
        health = lightrag_client().health()
        with _lock:
            _recent[key] = (time.monotonic(), health)
    except LightRAGError as e:
        log.info("LightRAG's health not refreshed: %s", e)
    finally:
        with _lock:
            _refreshing.discard(key)


@dataclass(frozen=True)
class HealthReport:
    health: Health | None
    error: str = ""
    seconds_per_chunk: float | None = None
    """The embedded stack's start-up measurement its embedding limits were sized from."""

    @property
    def ok(self) -> bool:
        return self.health is not None and self.health.healthy

    @property
    def chunks_per_minute(self) -> float | None:
        return 60 / self.seconds_per_chunk if self.seconds_per_chunk else None


def measured_seconds_per_chunk() -> float | None:
    """Written by the embedded stack into LightRAG's .env (LightRAG ignores it)."""
    env_file = settings.MNOTE_LIGHTRAG.env_file
    if env_file is None:
        return None
    try:
        value = read_dotenv(env_file).get("MNOTE_EMBEDDING_SECONDS_PER_CHUNK")
        return float(value) if value else None
    except (ImproperlyConfiguredLightRAG, ValueError):
        return None


def health_report() -> HealthReport:
    try:
        with lightrag_client() as client:
            health = client.health()
    except LightRAGUnauthorized as e:
        return HealthReport(None, _("LightRAG refused MNote's API key: %(detail)s") % {"detail": e})
    except LightRAGError as e:
        return HealthReport(None, str(e))
    # /health answers without a valid key too, just without its configuration.
    if not health.authenticated:
        return HealthReport(None, _("LightRAG refused MNote's API key: check MNOTE_LIGHTRAG_API_KEY or its .env file."))
    return HealthReport(health, seconds_per_chunk=measured_seconds_per_chunk())


def webui_url(request) -> str:
    """LightRAG's own WebUI, reachable by the browser: a loopback host in the
    configured URL means "the machine MNote runs on", which for a remote user
    is the host they reached MNote on."""
    parts = urlsplit(settings.MNOTE_LIGHTRAG.base_url)
    host = parts.hostname or ""
    netloc = parts.netloc
    if host in _LOOPBACK_HOSTS:
        request_host, _port = split_domain_port(request.get_host())
        if ":" in request_host:
            request_host = f"[{request_host}]"
        netloc = f"{request_host}:{parts.port}" if parts.port else request_host
    path = parts.path.rstrip("/") + "/webui/"
    return urlunsplit((parts.scheme, netloc, path, "", ""))
