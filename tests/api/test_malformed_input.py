"""Malformed input gets a 4xx with a message, never a 500 (issue 9, finding
5 and the OpenAPI disagreements of finding 6), and what the OpenAPI
description calls invalid is what the API refuses.

    nice .venv/bin/python -m pytest tests/api/test_malformed_input.py -q
"""

import json

import jsonschema_rs
import pytest

from mnote.api.models import ApiToken
from mnote.api.openapi import DESCRIPTION
from mnote.library.models import IndexedRoot, Source

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

DEEP_JSON = "[" * 5000 + "]" * 5000


def post(client, url, body: str | dict, key: str):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data, content_type="application/json", headers={"Authorization": f"Bearer {key}"})


@pytest.fixture
def admin_key(admin_user):
    return ApiToken.objects.create_token(admin_user)[1]


@pytest.fixture
def member_key(member):
    return ApiToken.objects.create_token(member)[1]


def request_schema(name: str):
    schemas = DESCRIPTION["components"]["schemas"]
    return jsonschema_rs.validator_for({**schemas[name], "components": DESCRIPTION["components"]})


@pytest.mark.parametrize(
    "url, body",
    [
        ("/api/search", '{"query": ' + DEEP_JSON + "}"),
        ("/api/search", DEEP_JSON),
        ("/api/admin/ingest", '{"rootId": ' + DEEP_JSON + "}"),
        ("/api/open-reference", '{"token": ' + '{"a":' * 3000 + "1" + "}" * 3001),
    ],
)
def test_deeply_nested_json_is_a_400(client, admin_key, url, body):
    response = post(client, url, body, admin_key)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


@pytest.mark.parametrize(
    "url, body",
    [
        ("/api/search", '{"query": "telescope \\ud800 mirror"}'),
        ("/api/query", '{"query": "\\udfff\\udfff\\udfff"}'),
        ("/api/open-reference", '{"token": "\\ud800"}'),
        ("/api/open-reference", '{"citationUrl": "/c/\\ud834"}'),
        ("/api/search", '{"query": "mirror coating", "sourcePaths": ["\\ud800"]}'),
    ],
)
def test_a_lone_surrogate_is_a_400(client, member_key, fake_lightrag, url, body):
    response = post(client, url, body, member_key)
    assert response.status_code == 400
    assert "lone surrogate" in response.json()["error"]["message"]
    assert fake_lightrag.requests == []


def test_a_deeply_nested_locator_opens_the_preview_at_the_top(member_client, library_dir):
    (library_dir / "open").mkdir()
    (library_dir / "open" / "a.md").write_text("# Title\nBody text.")
    root = IndexedRoot.objects.create(name="Open", path="open")
    source = Source.objects.create(root=root, relative_path="a.md", absolute_path=str(library_dir / "open" / "a.md"))
    for locator in ('{"bbox": ' + "[" * 1500 + "]" * 1500 + "}", "[" * 1600 + "]" * 1600, '{"page": {"a": [[1]]}}'):
        response = member_client.get(f"/preview/{source.pk}/", {"locator": locator})
        assert response.status_code == 200
        assert b"Body text." in response.content


@pytest.mark.parametrize(
    "url, schema, body",
    [
        ("/api/open-reference", "OpenReferenceRequest", {}),
        ("/api/open-reference", "OpenReferenceRequest", {"token": "abc", "citationUrl": "/c/abc"}),
        ("/api/admin/ingest", "IngestRequest", {"rootId": {}}),
        ("/api/admin/ingest", "IngestRequest", {"rootId": []}),
        ("/api/admin/ingest", "IngestRequest", {"rootId": "1"}),
        ("/api/admin/ingest", "IngestRequest", {"rootId": True}),
        ("/api/admin/ingest", "IngestRequest", {"rootId": 1, "sourceId": 1}),
        ("/api/admin/ingest", "IngestRequest", {"rootId": 1, "force": True}),
        ("/api/admin/ingest", "IngestRequest", {"rootId": 2**70}),
        ("/api/admin/delete-source", "DeleteSourceRequest", {"sourceId": {}}),
        ("/api/search", "SearchRequest", {"query": "0"}),
        ("/api/search", "SearchRequest", {"query": "安"}),
        ("/api/search", "SearchRequest", {"query": "mirror", "topK": {}}),
        ("/api/search", "SearchRequest", {"query": "mirror", "sourcePaths": ["a/../b"]}),
    ],
)
def test_what_the_description_calls_invalid_the_api_refuses(client, admin_key, fake_lightrag, url, schema, body):
    assert not request_schema(schema).is_valid(body)
    response = post(client, url, body, admin_key)
    assert response.status_code == 400, response.content
    assert fake_lightrag.requests == []


@pytest.mark.parametrize(
    "schema, body",
    [
        ("OpenReferenceRequest", {"token": "abc"}),
        ("IngestRequest", {"rootId": 1}),
        ("IngestRequest", {"rootId": 1, "force": False}),
        ("IngestRequest", {"sourceId": 1, "force": True}),
        ("SearchRequest", {"query": "abc"}),
        ("SearchRequest", {"query": "安全"}),
        ("SearchRequest", {"query": "mirror", "sourcePaths": ["papers/2024", "/a/"]}),
    ],
)
def test_the_description_accepts_the_requests_the_api_takes(schema, body):
    assert request_schema(schema).is_valid(body)


def test_an_id_too_large_for_the_database_is_a_404(member_client, admin_user, client):
    huge = 2**70
    assert member_client.get(f"/api/sources/{huge}/chunks", {"chunk_index": 0}).status_code == 404
    assert member_client.get(f"/preview/{huge}/").status_code == 404
    assert member_client.get(f"/preview/{huge}/original").status_code == 404
    client.force_login(admin_user)
    assert client.get(f"/library/roots/{huge}/edit/").status_code == 404
    assert client.post(f"/library/sources/{huge}/reindex/").status_code == 302  # back to the table, with a message
