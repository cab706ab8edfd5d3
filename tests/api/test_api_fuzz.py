"""A property-based fuzz of the JSON API from its own OpenAPI description
(schemathesis): every operation, admin ones included, against a throwaway
library, with LightRAG faked at the transport by recorded real responses.
Each response must be no server error and match the description (status,
content type, body schema) — 0 server errors, 0 schema violations.

    nice .venv/bin/python -m pytest tests/api/test_api_fuzz.py -q
"""

import json

import httpx
import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings

from mnote.api.models import ApiToken
from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot, Source
from mnote.library.sync import sync_root
from tests.lightrag_fakes import query_stream_lines, recorded

pytestmark = pytest.mark.django_db

# Bounded so the whole run stays well under a minute on a busy 2-core machine.
EXAMPLES_PER_OPERATION = 15

LIGHTRAG_ROUTES = {
    ("GET", "/health"): "health.json",
    ("POST", "/query/data"): "query_data_mix.json",
    ("POST", "/query"): "query.json",
    ("POST", "/query/stream"): "query/stream NDJSON",
    ("POST", "/documents/paginated"): "documents_paginated_after_delete.json",
    ("POST", "/documents/scan"): "scan.json",
    ("DELETE", "/documents/delete_document"): "delete_document.json",
}


def lightrag_transport(unexpected: list) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        name = LIGHTRAG_ROUTES.get((request.method, request.url.path))
        if name is None:
            unexpected.append(f"{request.method} {request.url.path}")
            return httpx.Response(404, json={"detail": "Not Found"})
        if name == "query/stream NDJSON":
            lines = "".join(json.dumps(line) + "\n" for line in query_stream_lines())
            return httpx.Response(200, content=lines.encode(), headers={"Content-Type": "application/x-ndjson"})
        status, body = recorded(name)
        return httpx.Response(status, json=body)

    return httpx.MockTransport(handle)


@pytest.fixture(autouse=True)
def connection_kept_between_requests():
    """The fuzz calls Django's WSGI handler directly, inside the test's
    transaction: keep the database connection open after each request, as
    Django's test client does (a request's end would otherwise close it)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def throwaway_library(library_dir, lightrag_dirs, settings):
    (library_dir / "papers" / "2024").mkdir(parents=True)
    (library_dir / "papers" / "intro.md").write_text("# Intro\nMirror coating and telescopes.")
    (library_dir / "papers" / "2024" / "report.txt").write_text("Quarterly report on the mirror.")
    (library_dir / "lab").mkdir()
    (library_dir / "lab" / "notes.md").write_text("# Lab\nRestricted notes.")
    settings.MNOTE_LIGHTRAG_TRANSPORT = lightrag_transport([])
    papers = IndexedRoot.objects.create(name="Papers", path="papers")
    lab = IndexedRoot.objects.create(name="Lab", path="lab", visible_to_all=False)
    for root in (papers, lab):
        sync_root(root)
    source = Source.objects.filter(root=papers).first()
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXED, stale=False, lightrag_doc_id="doc-1")
    Citation.objects.create(source=source, source_path=source.library_path, source_sha256=source.sha256,
                            precision="file", display_quote="Mirror coating")
    return papers, lab


@pytest.mark.parametrize("role", ["admin", "member"])
def test_every_operation_answers_as_described(throwaway_library, admin_user, member, settings, role):
    unexpected: list[str] = []
    settings.MNOTE_LIGHTRAG_TRANSPORT = lightrag_transport(unexpected)
    key = ApiToken.objects.create_token(admin_user if role == "admin" else member)[1]
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", WSGIHandler())
    failures = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings_for_fuzz
        @given(case=operation.as_strategy())
        def check(case):
            auth = {"Authorization": f"Bearer {key}"}
            # Told which headers carried the credentials, the auth check also
            # re-sends without them and with a wrong token, expecting a 401.
            case.validate_response(case.call(headers=auth), headers=auth)

        try:
            check()
        except (Exception, BaseExceptionGroup) as e:  # collected: one run reports every operation that fails
            failures.append(f"{operation.label}: {e}")
    assert failures == []
    assert unexpected == []


settings_for_fuzz = settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)
