"""The API tokens page's ready-to-paste MCP configurations, and the API's
documentation page at /api/docs/ (rendered from the OpenAPI description)."""

import json
import re
import sys
from html import unescape

import pytest

from mnote.api.openapi import DESCRIPTION
from mnote.data_dir import BASE_DIR

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def configurations(response) -> dict:
    found = re.findall(r'<pre class="mcp-config" id="mcp-(\w+)-config"[^>]*>(.*?)</pre>', response.content.decode(), re.S)
    return {name: json.loads(unescape(text))["mcpServers"]["mnote"] for name, text in found}


def test_a_new_token_comes_with_mcp_configurations_that_hold_it(member_client, settings):
    response = member_client.post("/tokens/", {"name": "my agent"}, follow=True)
    key = re.search(r'<code class="token-key" id="new-token">([^<]+)</code>', response.content.decode()).group(1)
    assert 'data-copy-from="new-token"' in response.content.decode()
    config = configurations(response)
    assert config["http"] == {"type": "http", "url": "http://testserver/mcp", "headers": {"Authorization": f"Bearer {key}"}}
    stdio = config["stdio"]
    # Absolute paths: the client may start it from any working folder.
    assert stdio["command"] == sys.executable and stdio["args"] == [str(BASE_DIR / "manage.py"), "mcp_stdio"]
    assert stdio["env"] == {"MNOTE_API_TOKEN": key, "MNOTE_DATA_DIR": str(settings.DATA_DIR),
                            "MNOTE_PUBLIC_URL": "http://testserver"}  # fmt: skip
    # Shown once: afterwards the configurations stand for it.
    again = configurations(member_client.get("/tokens/"))
    assert again["stdio"]["env"]["MNOTE_API_TOKEN"] == "mnote_…" and key not in json.dumps(again)


def test_the_configurations_use_the_public_url_when_it_is_set(member_client, settings):
    settings.MNOTE_PUBLIC_URL = "https://library.example.com"
    config = configurations(member_client.get("/tokens/"))
    assert config["http"]["url"] == "https://library.example.com/mcp"
    assert config["stdio"]["env"]["MNOTE_PUBLIC_URL"] == "https://library.example.com"


def test_the_api_documentation_page_shows_every_operation_and_schema_from_this_site_alone(client):
    response = client.get("/api/docs/")  # no login: like /api/openapi.json
    assert response.status_code == 200
    page = response.content.decode()
    for path, methods in DESCRIPTION["paths"].items():
        for method in methods:
            assert f"<code>{method.upper()} {path}</code>" in page
    for name in DESCRIPTION["components"]["schemas"]:
        assert f'id="schema-{name}"' in page
    assert "<code>verbose</code>" in page
    # Nothing fetched from elsewhere, no script of its own.
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<script" not in page.split("</head>", 1)[1]


def test_the_token_page_links_to_the_documentation(member_client):
    assert 'href="/api/docs/"' in member_client.get("/tokens/").content.decode()
