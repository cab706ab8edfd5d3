"""What /api/search writes back: every citation LightRAG's text gives,
whatever that text holds."""

import json

import httpx
import pytest

from tests.app_requests import post
from tests.factories import indexed_source
from tests.lightrag_fakes import recorded

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_a_quote_holding_text_that_is_no_character_still_reaches_the_agent(member_client, settings, manuals,
                                                                            lightrag_dirs):  # fmt: skip
    # LightRAG's JSON may carry "\ud800" (a lone surrogate, which no UTF-8 can
    # hold); the agent gets its search, the surrogate escaped, not a 500.
    source = indexed_source(manuals, "log.txt")
    chunk = {"reference_id": "1", "content": "The coating chamber log \ud800 says the mirror is re-aluminised.",
             "file_path": source.lightrag_name, "chunk_id": f"{source.lightrag_doc_id}-chunk-000"}  # fmt: skip
    answer = {"status": "success", "data": {"entities": [], "relationships": [], "chunks": [chunk],
              "references": [{"reference_id": "1", "file_path": source.lightrag_name}]}}  # fmt: skip
    health = recorded("health.json")[1]

    def lightrag(request):
        if request.url.path == "/health":
            return httpx.Response(200, json=health)
        return httpx.Response(200, content=json.dumps(answer).encode(), headers={"Content-Type": "application/json"})

    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(lightrag)
    response = post(member_client, "/api/search", {"query": "mirror coating chamber"})
    assert response.status_code == 200
    [citation] = response.json()["results"]
    assert citation["sourcePath"] == "manuals/log.txt"
    assert "\ud800" in citation["displayQuote"]


def test_a_streamed_answer_refuses_an_unknown_scope_before_it_starts(member_client, fake_lightrag, gamma):
    fake_lightrag.on("GET", "/health", "health.json")
    response = post(member_client, "/api/query", {"query": "mirror coating chamber", "stream": True,
                                                  "sourcePaths": ["manulas"]})  # fmt: skip
    assert response.status_code == 404
    assert response.json()["error"]["unknownPaths"] == ["manulas"]
