"""mnote.lightrag's client, against responses recorded from a real LightRAG 1.5.7.

HTTP is faked at the transport; the fake fails the test on any request it was not
told to expect.

    nice .venv/bin/python -m pytest tests/lightrag/test_lightrag_client.py
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest

from mnote.lightrag import (
    NO_LLM_MODEL,
    LightRAGBusy,
    LightRAGConfig,
    LightRAGRejected,
    LightRAGUnauthorized,
    LightRAGUnavailable,
    make_client,
)
from tests import paths

FIXTURES = paths.FIXTURES / "lightrag"
API_KEY = "test-key"


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def recorded_response(name: str) -> httpx.Response:
    data = recorded(name)
    return httpx.Response(data["_http_status"], json=data["body"])


Route = str | Callable[[httpx.Request], httpx.Response]


class FakeLightRAG:
    """Answers each expected (method, path) and, like LightRAG, checks X-API-Key.

    A route is a recorded fixture's file name or a function of the request.
    """

    def __init__(self, routes: dict[tuple[str, str], Route], *, api_key: str | None = API_KEY):
        self.routes = routes
        self.api_key = api_key
        self.requests: list[httpx.Request] = []
        self.unexpected: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        route = self.routes.get((request.method, request.url.path))
        if route is None:
            self.unexpected.append(f"{request.method} {request.url.path}")
            raise AssertionError(f"unexpected request to LightRAG: {request.method} {request.url}")
        sent_key = request.headers.get("X-API-Key")
        if self.api_key and sent_key != self.api_key:
            # /health is whitelisted: it answers, but without the configuration.
            if request.url.path == "/health":
                return recorded_response("health_unauthenticated.json")
            return recorded_response(
                "documents_paginated_wrong_key.json" if sent_key else "documents_paginated_no_key.json"
            )
        return route(request) if callable(route) else recorded_response(route)

    def sent_json(self, index: int = -1) -> dict:
        return json.loads(self.requests[index].content)


def config(api_key: str | None = API_KEY) -> LightRAGConfig:
    return LightRAGConfig(
        base_url="http://lightrag.test",
        api_key=api_key,
        input_dir=Path("/srv/lightrag/inputs"),
        working_dir=Path("/srv/lightrag/rag_storage"),
        env_file=None,
        sources={},
    )


@pytest.fixture
def lightrag():
    """serve(routes, api_key=...) -> (fake server, client using that key)."""
    opened = []

    def serve(routes: dict[tuple[str, str], Route], *, api_key: str | None = API_KEY):
        fake = FakeLightRAG(routes)
        client = make_client(config(api_key), transport=httpx.MockTransport(fake))
        opened.append((fake, client))
        return fake, client

    yield serve
    for fake, client in opened:
        client.close()
        assert fake.unexpected == []


def failing_transport(error: Exception) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    return httpx.MockTransport(handler)


def test_it_parses_health_with_rerank_disabled(lightrag):
    fake, client = lightrag({("GET", "/health"): "health.json"})

    health = client.health()

    assert fake.requests[0].headers["X-API-Key"] == API_KEY
    assert health.healthy and health.authenticated
    assert (health.core_version, health.api_version) == ("1.5.7", "0344")
    assert health.webui_available and not health.pipeline_busy
    assert (health.llm_binding, health.llm_model, health.has_llm) == ("openai", "gpt-4o-mini", True)
    assert (health.embedding_binding, health.embedding_model) == ("openai", "text-embedding-3-small")
    assert health.rerank_enabled is False
    assert health.rerank_binding is None
    assert health.rerank_model is None
    assert health.rerank_queue_available is False
    assert health.working_directory == "/srv/lightrag/rag_storage"
    assert health.input_directory == "/srv/lightrag/inputs"
    assert health.raw["server_mode"] == "uvicorn"


def test_it_reports_no_llm_when_the_stub_model_is_announced(lightrag):
    body = recorded("health.json")["body"]
    body["configuration"]["llm_model"] = NO_LLM_MODEL
    _, client = lightrag({("GET", "/health"): lambda request: httpx.Response(200, json=body)})

    health = client.health()

    assert health.llm_model == NO_LLM_MODEL
    assert health.has_llm is False


def test_it_shows_health_without_configuration_to_a_wrong_key(lightrag):
    _, client = lightrag({("GET", "/health"): "health.json"}, api_key="wrong-key")

    health = client.health()

    assert health.healthy and health.core_version == "1.5.7"
    assert health.authenticated is False
    assert health.llm_model is None and health.has_llm is False
    assert health.rerank_queue_available is None


def test_it_raises_unauthorized_without_a_key(lightrag):
    fake, client = lightrag({("POST", "/documents/paginated"): "documents_paginated_after_delete.json"}, api_key=None)

    with pytest.raises(LightRAGUnauthorized) as raised:
        client.documents_page()

    assert "X-API-Key" not in fake.requests[0].headers
    assert raised.value.status_code == 403
    assert raised.value.detail == "API Key required"


def test_it_raises_unauthorized_with_a_wrong_key(lightrag):
    _, client = lightrag({("POST", "/documents/paginated"): "documents_paginated_after_delete.json"}, api_key="nope")

    with pytest.raises(LightRAGUnauthorized) as raised:
        client.documents_page()

    assert raised.value.detail == "Invalid API Key"
    assert "Invalid API Key" in str(raised.value)


def test_it_returns_the_track_id_of_a_started_scan(lightrag):
    _, client = lightrag({("POST", "/documents/scan"): "scan.json"})

    result = client.scan()

    assert result.status == "scanning_started"
    assert result.track_id == "scan_20261129_113334_1562fa05"


def test_it_raises_busy_when_lightrag_skips_the_scan(lightrag):
    _, client = lightrag({("POST", "/documents/scan"): "scan_second_immediately.json"})

    with pytest.raises(LightRAGBusy) as raised:
        client.scan()

    assert raised.value.track_id == "scan_20261129_113334_d8f40de8"
    assert "Pipeline is currently busy" in str(raised.value)


def test_it_parses_a_documents_page(lightrag):
    fake, client = lightrag({("POST", "/documents/paginated"): "documents_paginated_after_delete.json"})

    page = client.documents_page(page=1, page_size=5, status_filters=["processed", "failed"])

    assert fake.sent_json() == {
        "page": 1,
        "page_size": 10,
        "status_filters": ["processed", "failed"],
        "sort_field": "updated_at",
        "sort_direction": "desc",
    }
    assert (page.total, page.page, page.page_size, page.has_next) == (5, 1, 50, False)
    assert page.status_counts["failed"] == 2
    filename_duplicate, content_duplicate, text_insert, gamma, _ = page.documents
    assert filename_duplicate.id.startswith("dup-")
    assert filename_duplicate.is_duplicate and filename_duplicate.parse_engine is None
    assert content_duplicate.original_doc_id == "doc-b7cf006581394ea318c700a870cecd9f"
    assert content_duplicate.status == "failed"
    assert content_duplicate.error_msg.startswith("Identical content already exists")
    assert text_insert.file_path == "delta_note.txt"
    assert gamma.file_path == "gamma.docx"
    assert (gamma.status, gamma.chunks_count, gamma.parse_engine) == ("processed", 1, "native")
    assert gamma.is_duplicate is False and gamma.error_msg is None
    assert gamma.updated_at == datetime(2026, 11, 29, 11, 33, 35, 112572, tzinfo=timezone.utc)


def test_it_clamps_the_page_size_to_what_lightrag_accepts(lightrag):
    fake, client = lightrag({("POST", "/documents/paginated"): "documents_paginated_after_delete.json"})

    client.documents_page(page_size=1000)

    assert fake.sent_json()["page_size"] == 200


def test_it_iterates_all_documents_over_several_pages(lightrag):
    recorded_documents = recorded("documents_paginated_after_delete.json")["body"]["documents"]
    per_page = 2

    def paginated(request: httpx.Request) -> httpx.Response:
        page = json.loads(request.content)["page"]
        start = (page - 1) * per_page
        return httpx.Response(
            200,
            json={
                "documents": recorded_documents[start : start + per_page],
                "pagination": {
                    "page": page,
                    "page_size": per_page,
                    "total_count": len(recorded_documents),
                    "total_pages": 3,
                    "has_next": start + per_page < len(recorded_documents),
                    "has_prev": page > 1,
                },
                "status_counts": {"all": len(recorded_documents)},
            },
        )

    fake, client = lightrag({("POST", "/documents/paginated"): paginated})

    documents = list(client.iter_documents())

    assert [document.id for document in documents] == [item["id"] for item in recorded_documents]
    assert [fake.sent_json(index)["page"] for index in range(len(fake.requests))] == [1, 2, 3]
    assert fake.sent_json(0)["sort_field"] == "id"


def test_it_stops_reading_a_list_that_never_ends(lightrag):
    body = recorded("documents_paginated_after_delete.json")["body"]
    body["pagination"].update(page_size=10, has_next=True)
    fake, client = lightrag({("POST", "/documents/paginated"): lambda request: httpx.Response(200, json=body)})

    with pytest.raises(LightRAGUnavailable, match="still reports more documents"):
        list(client.iter_documents())

    assert len(fake.requests) <= 20


def test_it_never_asks_lightrag_to_delete_the_file(lightrag):
    fake, client = lightrag({("DELETE", "/documents/delete_document"): "delete_document.json"})

    result = client.delete_documents(["doc-25435f6ae9afbdf5982025bb7776e88c"])

    assert fake.sent_json() == {
        "doc_ids": ["doc-25435f6ae9afbdf5982025bb7776e88c"],
        "delete_file": False,
        "delete_llm_cache": False,
    }
    assert result.status == "deletion_started"
    assert result.doc_ids == ["doc-25435f6ae9afbdf5982025bb7776e88c"]


def test_it_raises_busy_when_deleting_while_lightrag_is_busy(lightrag):
    _, client = lightrag({("DELETE", "/documents/delete_document"): "delete_document_while_busy.json"})

    with pytest.raises(LightRAGBusy, match="Pipeline is busy"):
        client.delete_documents(["dup-63dfc8af3485775dc9beb2694420cc10"])


def test_it_raises_rejected_when_deletion_is_not_allowed(lightrag):
    not_allowed = {"status": "not_allowed", "message": "Deletion is not allowed now.", "doc_id": "doc-1"}
    _, client = lightrag(
        {("DELETE", "/documents/delete_document"): lambda request: httpx.Response(200, json=not_allowed)}
    )

    with pytest.raises(LightRAGRejected, match="Deletion is not allowed now."):
        client.delete_documents(["doc-1"])


def test_it_sends_hybrid_as_mix_with_references_and_chunk_content(lightrag):
    fake, client = lightrag({("POST", "/query/data"): "query_data_mix.json"})

    data = client.query_data("What mirror does the Gamma telescope have?", mode="hybrid", chunk_top_k=5)

    assert fake.sent_json() == {
        "query": "What mirror does the Gamma telescope have?",
        "mode": "mix",
        "include_references": True,
        "include_chunk_content": True,
        "chunk_top_k": 5,
    }
    assert data["data"]["chunks"][0]["chunk_id"] == "doc-b7cf006581394ea318c700a870cecd9f-chunk-000"
    assert data["data"]["references"] == [{"reference_id": "1", "file_path": "gamma.docx"}]


def test_it_passes_the_rerank_flag_through(lightrag):
    fake, client = lightrag({("POST", "/query/data"): "query_data_mix.json"})

    client.query_data("Gamma telescope mirror", mode="naive", top_k=10, enable_rerank=False)

    sent = fake.sent_json()
    assert (sent["mode"], sent["top_k"], sent["enable_rerank"]) == ("naive", 10, False)


def test_it_refuses_an_unknown_query_mode_without_calling_lightrag(lightrag):
    fake, client = lightrag({})

    with pytest.raises(ValueError, match="bypass"):
        client.query_data("Gamma telescope mirror", mode="bypass")

    assert fake.requests == []


def test_it_keeps_lightrags_message_when_a_query_is_too_short(lightrag):
    _, client = lightrag({("POST", "/query/data"): "query_data_too_short.json"})

    with pytest.raises(LightRAGRejected) as raised:
        client.query_data("ab")

    assert raised.value.status_code == 400
    assert "RAG query is too short. Enter at least 3 English characters" in str(raised.value)
    assert raised.value.detail == str(raised.value)


def test_it_joins_fastapi_validation_messages(lightrag):
    too_short = {"detail": [{"type": "value_error", "loc": ["body"], "msg": "Value error, RAG query is too short."}]}
    _, client = lightrag({("POST", "/query"): lambda request: httpx.Response(422, json=too_short)})

    with pytest.raises(LightRAGRejected, match="RAG query is too short"):
        client.query("ab")


def test_it_asks_for_an_answer_with_its_references(lightrag):
    fake, client = lightrag({("POST", "/query"): "query.json"})

    answer = client.query("What mirror does the Gamma telescope have?", mode="naive")

    assert fake.sent_json()["include_references"] is True
    assert answer["response"].startswith("Stub answer")
    assert answer["references"][0]["file_path"] == "gamma.docx"


def test_it_raises_unavailable_when_the_connection_is_refused():
    refused = httpx.ConnectError("[Errno 111] Connection refused")
    client = make_client(config(), transport=failing_transport(refused))

    with client, pytest.raises(LightRAGUnavailable, match="Cannot reach LightRAG at http://lightrag.test") as raised:
        client.health()

    assert raised.value.__cause__ is refused


def test_it_raises_unavailable_when_lightrag_is_too_slow():
    client = make_client(config(), transport=failing_transport(httpx.ReadTimeout("timed out")))

    with client, pytest.raises(LightRAGUnavailable, match="did not answer POST /query/data in time"):
        client.query_data("Gamma telescope mirror")


def test_it_raises_unavailable_on_a_server_error(lightrag):
    _, client = lightrag(
        {("POST", "/documents/scan"): lambda request: httpx.Response(503, json={"detail": "Job store unavailable"})}
    )

    with pytest.raises(LightRAGUnavailable, match="Job store unavailable") as raised:
        client.scan()

    assert raised.value.status_code == 503


def test_it_raises_unavailable_on_a_body_that_is_not_json(lightrag):
    _, client = lightrag(
        {("GET", "/health"): lambda request: httpx.Response(200, text="<html>proxy login</html>")}
    )

    with pytest.raises(LightRAGUnavailable, match="not JSON") as raised:
        client.health()

    assert isinstance(raised.value.__cause__, ValueError)


def test_it_reads_every_recorded_answer_and_what_only_the_standard_json_reader_accepts(lightrag):
    """Bodies are decoded by orjson (issue 17: CPU per search), falling back to
    the standard library for what orjson refuses, so nothing once read is refused now."""
    for name in sorted(p.name for p in FIXTURES.glob("query*.json")):
        data = recorded(name)
        if data["_http_status"] != 200:
            continue
        _, client = lightrag({("POST", "/query/data"): name})
        assert client.query_data("Gamma telescope mirror") == data["body"], name
    odd = b'{"status": "success", "data": {"chunks": [{"score": NaN, "content": "\\ud800 lone"}]}}'
    _, client = lightrag({("POST", "/query/data"): lambda request: httpx.Response(200, content=odd)})
    assert client.query_data("Gamma telescope mirror") == json.loads(odd)


def test_behind_a_path_prefix_every_call_goes_under_it():
    """The search's calls use URLs joined to the base once; behind a proxy's
    path prefix they must still land under it, like every other call."""
    import dataclasses

    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        body = recorded("health.json")["body"] if request.url.path.endswith("/health") else {"status": "scanning_started", "track_id": "t"}
        return httpx.Response(200, json=body)

    for base in ("http://proxy.test/lightrag", "http://proxy.test/lightrag/"):
        seen.clear()
        with make_client(dataclasses.replace(config(), base_url=base), transport=httpx.MockTransport(handler)) as client:
            client.health()
            client.query_data("Gamma telescope mirror")
            client.scan()
        assert seen == [f"http://proxy.test/lightrag/{p}" for p in ("health", "query/data", "documents/scan")]


def test_it_fails_the_test_on_an_unexpected_request():
    fake = FakeLightRAG({("GET", "/health"): "health.json"})
    client = make_client(config(), transport=httpx.MockTransport(fake))

    with client, pytest.raises(AssertionError, match="unexpected request"):
        client.scan()

    assert fake.unexpected == ["POST /documents/scan"]


def _ndjson(*lines) -> Callable[[httpx.Request], httpx.Response]:
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return lambda request: httpx.Response(200, content=body, headers={"Content-Type": "application/x-ndjson"})


def test_it_streams_the_references_before_the_answer(lightrag):
    references = [{"reference_id": "1", "file_path": "gamma.docx", "content": ["The mirror is re-aluminised."]}]
    fake, client = lightrag(
        {("POST", "/query/stream"): _ndjson({"references": references}, {"response": "The mirror "}, {"response": "is re-aluminised [1]."})}
    )
    history = [{"role": "user", "content": "Tell me about the mirror"}]
    with client.query_stream("How often is the mirror re-aluminised?", mode="naive", conversation_history=history) as stream:
        assert stream.read_references() == references
        assert "".join(stream.pieces()) == "The mirror is re-aluminised [1]."
    sent = fake.sent_json()
    assert sent["include_chunk_content"] is True and sent["conversation_history"] == history


def test_it_reads_a_cached_answer_sent_as_one_line_and_skips_progress(lightrag):
    _, client = lightrag(
        {
            ("POST", "/query/stream"): _ndjson(
                {"progress": "retrieving_chunks"},
                {"response": "Cached [1].", "llm_generated": True, "references": [{"reference_id": "1", "file_path": "a.md"}]},
                {"response_time": 0.1},
            )
        }
    )
    with client.query_stream("cached question", mode="naive") as stream:
        assert stream.read_references() == [{"reference_id": "1", "file_path": "a.md"}]
        assert list(stream.pieces()) == ["Cached [1]."]


def test_it_raises_when_the_answer_stream_reports_an_error_or_is_refused(lightrag):
    _, client = lightrag({("POST", "/query/stream"): _ndjson({"references": []}, {"error": "LLM down"})})
    with pytest.raises(LightRAGUnavailable, match="LLM down"):
        with client.query_stream("a question", mode="naive") as stream:
            list(stream.pieces())
    _, client = lightrag({("POST", "/query/stream"): lambda request: httpx.Response(400, json={"detail": "query too short"})})
    with pytest.raises(LightRAGRejected, match="query too short"):
        with client.query_stream("ab", mode="naive"):
            pass


# --- several LightRAG servers sharing one storage (MNOTE_LIGHTRAG_URL=a,b) ---


def two_servers(down: set[str] = frozenset()) -> tuple[list[str], LightRAGConfig]:
    """A client over servers a and b (each host in ``down`` refuses connections);
    the hosts the requests went to, in order."""
    import dataclasses

    hosts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host in down:
            raise httpx.ConnectError("[Errno 111] Connection refused")
        hosts.append(f"{request.url.host} {request.url.path}")
        if request.url.path == "/query/stream":
            return _ndjson({"references": []}, {"response": request.url.host})(request)
        if request.url.path == "/documents/scan":
            return httpx.Response(200, json={"status": "scanning_started", "track_id": "t"})
        return httpx.Response(200, json={"status": "success", "data": {}, "server": request.url.host})

    urls = ("http://a.test", "http://b.test")
    both = dataclasses.replace(config(), base_url=urls[0], query_urls=urls)
    return hosts, make_client(both, transport=httpx.MockTransport(handler))


def test_queries_take_turns_on_the_servers_and_documents_stay_on_the_first():
    hosts, client = two_servers()
    with client:
        for _ in range(2):
            client.query_data("Gamma telescope mirror")
            client.scan()
            with client.query_stream("mirror?", mode="naive") as stream:
                assert "".join(stream.pieces()) in ("a.test", "b.test")
            client.query("mirror?")
    assert hosts == [
        "a.test /query/data", "a.test /documents/scan", "b.test /query/stream", "a.test /query",
        "b.test /query/data", "a.test /documents/scan", "a.test /query/stream", "b.test /query",
    ]  # fmt: skip


def test_a_server_that_refuses_connections_passes_the_query_to_the_next(caplog, monkeypatch):
    import logging

    from mnote.lightrag import client as client_module

    # Earlier tests in the session may have configured logging again (a management command, a server
    # started in-process): the warning is read from this module's own logger, whatever they left.
    monkeypatch.setattr(client_module.log, "disabled", False)
    monkeypatch.setattr(client_module.log, "propagate", True)
    caplog.set_level(logging.WARNING, logger=client_module.log.name)
    hosts, client = two_servers(down={"a.test"})
    with client:
        assert [client.query_data("mirror")["server"] for _ in range(3)] == ["b.test"] * 3
        # Said in the log, so an operator learns of the server down.
        assert "Cannot reach LightRAG at http://a.test (POST /query/data)" in caplog.text
        with client.query_stream("mirror?", mode="naive") as stream:
            assert "".join(stream.pieces()) == "b.test"
        # Documents are the first server's: it is down, so they wait (the job ledger retries).
        with pytest.raises(LightRAGUnavailable, match="Cannot reach LightRAG at http://a.test"):
            client.scan()
    _, client = two_servers(down={"a.test", "b.test"})
    with client:
        with pytest.raises(LightRAGUnavailable, match="Cannot reach LightRAG"):
            client.query_data("mirror")
        with pytest.raises(LightRAGUnavailable, match="Cannot reach LightRAG"):
            with client.query_stream("mirror?", mode="naive"):
                pass
