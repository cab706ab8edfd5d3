"""The LightRAG client as the web app uses it: configured from settings, and
turned into a report a page can always render, whatever state LightRAG is in."""

import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.http.request import split_domain_port
from django.utils.translation import gettext as _

from mnote.lightrag import Health, LightRAGClient, LightRAGError, LightRAGUnauthorized, make_client

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def lightrag_client() -> LightRAGClient:
    # Tests put an httpx.MockTransport here; production leaves it unset.
    transport = getattr(settings, "MNOTE_LIGHTRAG_TRANSPORT", None)
    return make_client(settings.MNOTE_LIGHTRAG, transport=transport)


_recent: dict[str, tuple[float, Health]] = {}
# Rerank and LLM availability change with a server restart, not per search.
HEALTH_MAX_AGE_S = 15.0


def recent_health(client: LightRAGClient) -> Health:
    """LightRAG's health, asked at most every HEALTH_MAX_AGE_S per server:
    searches need it for diagnostics, not to the second."""
    key = settings.MNOTE_LIGHTRAG.base_url
    now = time.monotonic()
    cached = _recent.get(key)
    if cached and now - cached[0] < HEALTH_MAX_AGE_S:
        return cached[1]
    health = client.health()
    _recent[key] = (now, health)
    return health


@dataclass(frozen=True)
class HealthReport:
    health: Health | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.health is not None and self.health.healthy


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
    return HealthReport(health)


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
