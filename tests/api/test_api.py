"""The JSON API: status, search, query, open-reference, chunk context, the
admin actions and the OpenAPI description. Authentication, tokens and CSRF
are in test_api_auth.py.

    nice .venv/bin/python -m pytest tests/api/test_api.py
"""

import json

import httpx
import pytest

from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot, Job, Source
from tests.app_requests import post
from tests.factories import add_gamma, indexed_source, install_sidecar, restricted_root
from tests.lightrag_fakes import GAMMA_DOC, QUERY, query_stream_lines
from tests.paths import FIXTURES

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

MAPPER_FIXTURES = FIXTURES / "mapper"
ORBIT_DOC = "doc-f7cc584058d4dd48ec0d1bbaac8e1ca0"


@pytest.fixture
def restricted(db):
    root = restricted_root("HR", "hr", group="hr")
    return root


@pytest.fixture
def hidden_gamma(restricted, lightrag_dirs):
    return add_gamma(restricted, lightrag_dirs)


@pytest.fixture
def lightrag_answers(fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    return fake_lightrag


def sent_to_lightrag(fake, path) -> list[dict]:
    return [json.loads(r.content) for r in fake.requests if r.url.path == path]


# --- status -----------------------------------------------------------------


def test_it_reports_lightrag_health_and_only_visible_counts_to_members(member_client, fake_lightrag, gamma, restricted):
    fake_lightrag.on("GET", "/health", "health.json")
    Source.objects.create(root=restricted, relative_path="pay.md", absolute_path="/l/hr/pay.md", status="failed")
    body = member_client.get("/api/status").json()
    lightrag = body["lightrag"]
    assert lightrag["healthy"] is True and lightrag["coreVersion"] == "1.5.7"
    assert lightrag["llm"] == {"available": True, "binding": "openai", "model": "gpt-4o-mini"}
    assert lightrag["embedding"] == {"binding": "openai", "model": "text-embedding-3-small"}
    assert lightrag["rerank"] == {"enabled": False, "binding": None, "model": None}
    assert lightrag["queue"]["pipelineBusy"] is False
    assert body["registry"]["total"] == 1
    assert body["registry"]["counts"]["indexed"] == 1 and body["registry"]["counts"]["failed"] == 0
    assert "lightragDocuments" not in body


def test_it_gives_admins_lightrag_counts_and_unmapped_documents(client, admin_user, fake_lightrag, gamma):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/documents/paginated", "documents_paginated_after_delete.json")
    client.force_login(admin_user)
    body = client.get("/api/status").json()
    assert body["registry"]["total"] == 1
    documents = body["lightragDocuments"]
    assert documents["total"] == 5 and documents["counts"] == {"failed": 2, "processed": 3}
    assert documents["unmapped"] == 4  # everything but gamma.docx
    assert documents["error"] is None


def test_it_reports_lightrag_down_in_the_status_without_failing(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", httpx.ConnectError("connection refused"))
    response = member_client.get("/api/status")
    assert response.status_code == 200
    lightrag = response.json()["lightrag"]
    assert lightrag["healthy"] is False and "Cannot reach LightRAG" in lightrag["error"]
    assert lightrag["llm"]["available"] is False


# --- search -----------------------------------------------------------------


def test_it_returns_mapped_citations_and_never_raw_chunks(member_client, lightrag_answers, gamma):
    response = post(member_client, "/api/search", {"query": QUERY, "mode": "naive"})
    assert response.status_code == 200
    body = response.json()
    assert body["schema"] == "mnote.knowledge_rag.search_results.v1"
    assert body["query"] == QUERY and body["mode"] == "naive"
    [citation] = body["results"]
    assert citation["sourceId"] == gamma.pk and citation["sourcePath"] == "manuals/gamma.docx"
    assert citation["locatorPrecision"] == "paragraph"
    assert citation["headingPath"] == ["Gamma Telescope Manual", "Maintenance"]
    # Absolute, from the request's own scheme and host: an agent hands it to its user.
    assert citation["citationUrl"].startswith("http://testserver/c/")
    text = response.content.decode()
    assert "rawQuote" not in text and "raw_quote" not in text
    assert "<table" not in text  # the raw chunk's markup never leaves MNote
    assert body["notInLightRAG"] == []
    assert body["diagnostics"]["llmAvailable"] is True


def test_it_sends_hybrid_to_lightrag_as_mix(member_client, lightrag_answers, gamma):
    response = post(member_client, "/api/search", {"query": QUERY, "mode": "hybrid", "topK": 5, "chunkTopK": 3})
    assert response.status_code == 200
    [sent] = sent_to_lightrag(lightrag_answers, "/query/data")
    assert sent["mode"] == "mix" and sent["top_k"] == 5 and sent["chunk_top_k"] == 3
    assert response.json()["diagnostics"]["mode"] == "mix"


def test_it_defaults_to_mix(member_client, lightrag_answers, gamma):
    body = post(member_client, "/api/search", {"query": QUERY}).json()
    assert body["mode"] == "mix"
    assert sent_to_lightrag(lightrag_answers, "/query/data")[0]["mode"] == "mix"


def test_it_reports_rerank_requested_but_not_available(member_client, lightrag_answers, gamma):
    body = post(member_client, "/api/search", {"query": QUERY, "enableRerank": True}).json()
    assert sent_to_lightrag(lightrag_answers, "/query/data")[0]["enable_rerank"] is True
    assert body["diagnostics"]["providerRerankRequested"] is True
    assert body["diagnostics"]["providerRerankAvailable"] is False


def test_it_limits_search_to_source_paths(member_client, lightrag_answers, gamma, manuals):
    indexed_source(manuals, "other/notes.md", "doc-other", "notes.md")
    body = post(member_client, "/api/search", {"query": QUERY, "sourcePaths": ["manuals/other"]}).json()
    assert body["results"] == []
    assert body["diagnostics"]["outsideScope"] == 1
    body = post(member_client, "/api/search", {"query": QUERY, "sourcePaths": ["/manuals/"]}).json()
    assert [c["sourcePath"] for c in body["results"]] == ["manuals/gamma.docx"]


def test_it_refuses_a_scope_that_names_nothing_in_the_library(member_client, lightrag_answers, gamma, restricted):
    indexed_source(restricted, "pay.docx", "doc-pay", "pay.docx")
    response = post(member_client, "/api/search", {"query": QUERY, "sourcePaths": ["manuals/gamma.docx", "manulas"]})
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "unknown_scope" and error["unknownPaths"] == ["manulas"]
    # A folder the member may not see is as unknown as a misspelt one.
    response = post(member_client, "/api/query", {"query": QUERY, "sourcePaths": ["hr"]})
    assert response.status_code == 404 and response.json()["error"]["unknownPaths"] == ["hr"]
    assert sent_to_lightrag(lightrag_answers, "/query/data") == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": 42}, "query"),
        ({"query": "mirror", "mode": "fuzzy"}, "mode"),
        ({"query": "mirror", "topK": 0}, "topK"),
        ({"query": "mirror", "topK": 500}, "topK"),
        ({"query": "mirror", "chunkTopK": "many"}, "chunkTopK"),
        ({"query": "mirror", "enableRerank": "yes"}, "enableRerank"),
        ({"query": "mirror", "sourcePaths": "manuals"}, "sourcePaths"),
        ({"query": "mirror", "sourcePaths": ["../etc"]}, "sourcePaths"),
        ({"query": "mirror", "top_k": 5}, "top_k"),
    ],
)
def test_it_refuses_invalid_search_parameters_naming_the_field(member_client, fake_lightrag, body, field):
    response = post(member_client, "/api/search", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and field in error["message"]
    assert fake_lightrag.requests == []


def test_it_refuses_a_body_that_is_not_a_json_object(member_client, fake_lightrag):
    response = member_client.post("/api/search", "query=mirror", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_json"
    response = post(member_client, "/api/search", ["mirror"])
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_json"


def test_it_answers_503_when_lightrag_is_down(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", httpx.ConnectError("connection refused"))
    response = post(member_client, "/api/search", {"query": QUERY})
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "lightrag_unavailable" and "Cannot reach LightRAG" in error["message"]


def test_it_answers_503_with_retry_after_when_lightrag_is_busy(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", (429, {"detail": "Too many concurrent queries"}))
    response = post(member_client, "/api/search", {"query": QUERY})
    assert response.status_code == 503
    assert response["Retry-After"].isdigit()
    assert response.json()["error"]["code"] == "lightrag_busy"


def test_it_passes_on_lightrags_message_when_lightrag_refuses_a_query(member_client, fake_lightrag):
    # A LightRAG configured with a higher minimum than MNote's check.
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", "query_data_too_short.json")
    response = post(member_client, "/api/search", {"query": "abc"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "lightrag_rejected" and "RAG query is too short" in error["message"]


@pytest.mark.parametrize("query", ["0", "ab", "安", " a "])
def test_it_refuses_a_query_lightrag_would_call_too_short_without_asking_it(member_client, fake_lightrag, query):
    response = post(member_client, "/api/search", {"query": query})
    assert response.status_code == 400
    assert "Too short to search" in response.json()["error"]["message"]
    assert fake_lightrag.requests == []


def test_it_never_gives_a_member_a_source_of_a_root_restricted_to_another_group(
    member_client, lightrag_answers, hidden_gamma
):
    response = post(member_client, "/api/search", {"query": QUERY})
    body = response.json()
    assert body["results"] == []
    # No count of what LightRAG found or dropped: it would say a hidden document matched.
    assert set(body["diagnostics"]) <= {"mode", "llmAvailable", "providerRerankRequested", "providerRerankAvailable"}
    assert "gamma" not in response.content.decode().lower()
    assert "visible" not in response.content.decode()


def test_it_tells_why_a_matching_file_is_not_in_lightrag(member_client, lightrag_answers, manuals, gamma):
    Source.objects.create(root=manuals, relative_path="mirror-log.md", absolute_path="/l/m.md", status="failed")
    body = post(member_client, "/api/search", {"query": QUERY}).json()
    assert body["notInLightRAG"] == [
        {"sourceId": Source.objects.get(relative_path="mirror-log.md").pk, "sourcePath": "manuals/mirror-log.md",
         "status": "failed", "reason": "LightRAG failed to index it"}
    ]


# --- query ------------------------------------------------------------------


def test_it_answers_with_badges_from_this_querys_citations(member_client, lightrag_answers, gamma):
    lightrag_answers.on("POST", "/query/stream", (200, query_stream_lines()))
    response = post(member_client, "/api/query", {"query": QUERY, "mode": "hybrid"})
    assert response.status_code == 200
    body = response.json()
    assert body["schema"] == "mnote.knowledge_rag.agent_query_result.v1"
    assert body["answer"]["kind"] == "llm"
    assert "[1]" not in body["answer"]["text"]
    [citation] = body["citations"]
    assert set(citation) == {"citationId", "sourceId", "sourcePath", "fileName", "locatorPrecision", "headingPath",
                             "displayQuote", "citationUrl"}  # no page: a DOCX paragraph
    ids = {c["citationId"] for c in body["citations"]}
    assert all(set(s["citationIds"]) <= ids and len(s["citationIds"]) <= 3 for s in body["answer"]["sentences"])
    assert body["contextUsed"] == 1
    # One retrieval (the search's), then the LLM with MNote's context, which
    # holds the cited chunk's text and the question, and no other file.
    [retrieval] = sent_to_lightrag(lightrag_answers, "/query/data")
    [sent] = sent_to_lightrag(lightrag_answers, "/query/stream")
    assert retrieval["mode"] == "mix" and sent["mode"] == "bypass" and not sent_to_lightrag(lightrag_answers, "/query")
    assert QUERY in sent["query"] and "manuals/" in sent["query"]
    assert "rawQuote" not in response.content.decode()


def test_it_passes_topk_to_lightrag_for_answers_too(member_client, lightrag_answers, gamma):
    lightrag_answers.on("POST", "/query/stream", (200, query_stream_lines()))
    post(member_client, "/api/query", {"query": QUERY, "topK": 5, "chunkTopK": 7})
    [sent] = sent_to_lightrag(lightrag_answers, "/query/data")
    assert (sent["top_k"], sent["chunk_top_k"]) == (5, 7)


def test_a_hidden_source_never_reaches_the_llm(member_client, lightrag_answers, hidden_gamma):
    lightrag_answers.on("POST", "/query/stream", (200, query_stream_lines()))
    body = post(member_client, "/api/query", {"query": QUERY}).json()
    assert body["citations"] == [] and body["answer"]["sentences"] == []
    assert "Stub answer" not in json.dumps(body)
    # Nothing the member may open was found: the LLM was not asked at all.
    assert not sent_to_lightrag(lightrag_answers, "/query/stream")


def test_the_llms_context_holds_only_chunks_the_asker_may_open(member_client, lightrag_answers, gamma, restricted):
    """One retrieval brings a visible file, a hidden one, and graph entities
    naming the hidden one's secret: the LLM's prompt holds the visible chunk only."""
    from tests.lightrag_fakes import recorded

    indexed_source(restricted, "pay/salaries.md", "doc-salaries", "salaries.md")
    _, data = recorded("query_data_mix.json")
    _, naive = recorded("query_data_naive.json")
    secret = {"reference_id": "2", "file_path": "salaries.md", "chunk_id": "doc-salaries-chunk-000",
              "content": "The director's salary is 412,000 euros a year."}
    body = {**data, "data": {
        **data["data"],
        "entities": [{"entity_name": "Director", "description": "The director's salary is 412,000 euros a year.",
                      "file_path": "salaries.md<SEP>gamma.docx"}],
        "relationships": [],
        "chunks": [secret, *naive["data"]["chunks"]],
        "references": [{"reference_id": "2", "file_path": "salaries.md"}, *naive["data"]["references"]],
    }}
    lightrag_answers.on("POST", "/query/data", (200, body))
    lightrag_answers.on("POST", "/query/stream", (200, query_stream_lines()))
    post(member_client, "/api/query", {"query": QUERY, "mode": "local"})
    [sent] = sent_to_lightrag(lightrag_answers, "/query/stream")
    assert "re-aluminised every three years" in sent["query"] and "[1] manuals/gamma.docx" in sent["query"]
    assert "412,000" not in sent["query"] and "salaries" not in sent["query"] and "Director" not in sent["query"]


def test_it_answers_extractively_without_an_llm(member_client, fake_lightrag, gamma):
    from tests.lightrag_fakes import recorded

    _, health = recorded("health.json")
    health = {**health, "configuration": {**health["configuration"], "llm_binding": None, "llm_model": None}}
    fake_lightrag.on("GET", "/health", (200, health))
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    body = post(member_client, "/api/query", {"query": "How often is the mirror re-aluminised?"}).json()
    assert body["answer"]["kind"] == "extractive" and body["answer"]["notes"]
    assert all(r.url.path != "/query" for r in fake_lightrag.requests)


# --- open-reference ---------------------------------------------------------


def cite(client) -> str:
    """A search result's permalink: its link opened once (a search makes no rows)."""
    [citation] = post(client, "/api/search", {"query": QUERY}).json()["results"]
    return client.get(citation["citationUrl"])["Location"]


def test_it_opens_a_reference_by_url_or_token(member_client, lightrag_answers, gamma):
    url = cite(member_client)
    token = url.rsplit("/", 1)[1]
    for body in ({"citationUrl": url}, {"citationUrl": f"http://testserver{url}"}, {"token": token}):
        response = post(member_client, "/api/open-reference", body)
        assert response.status_code == 200, response.content
        opened = response.json()
        assert opened["token"] == token and opened["citationUrl"] == f"http://testserver{url}"
        assert opened["sourceId"] == gamma.pk and opened["sourcePath"] == "manuals/gamma.docx"
        assert opened["state"] == "current"
        assert opened["previewUrl"] == f"http://testserver/preview/{gamma.pk}/?c={token}"
        assert opened["locator"]["precision"] == "paragraph" and opened["locator"]["blockId"]


def test_it_reports_a_changed_source_when_opening_a_reference(member_client, lightrag_answers, gamma):
    url = cite(member_client)
    gamma.sha256 = "b" * 64
    gamma.save()
    opened = post(member_client, "/api/open-reference", {"citationUrl": url}).json()
    assert opened["state"] == "changed"


def test_it_hides_a_reference_to_a_source_the_member_may_not_see(
    member_client, admin_user, lightrag_answers, hidden_gamma
):
    from django.test import Client

    admin = Client()
    admin.force_login(admin_user)
    url = cite(admin)
    hidden = post(member_client, "/api/open-reference", {"citationUrl": url})
    missing = post(member_client, "/api/open-reference", {"token": "no-such-token"})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


def test_it_refuses_an_open_reference_without_exactly_one_of_url_and_token(member_client):
    for body in ({}, {"citationUrl": "/c/x", "token": "x"}):
        response = post(member_client, "/api/open-reference", body)
        assert response.status_code == 400
    # A URL that is no permalink names no citation, like an unknown token.
    response = post(member_client, "/api/open-reference", {"citationUrl": "/api/status"})
    assert response.status_code == 404 and "expected /c/<token>" in response.json()["error"]["message"]


def test_it_shows_a_pruned_sources_reference_to_admins_only(member_client, admin_user, client):
    cited = Citation.objects.create(source=None, source_path="hr/pay.md", source_sha256="a" * 64,
                                    precision="file", display_quote="salary bands")
    assert post(member_client, "/api/open-reference", {"token": cited.token}).status_code == 404
    client.force_login(admin_user)
    opened = post(client, "/api/open-reference", {"token": cited.token}).json()
    assert opened["state"] == "gone" and opened["previewUrl"] is None and opened["sourcePath"] == "hr/pay.md"


# --- chunk context ----------------------------------------------------------


@pytest.fixture
def orbit(manuals, lightrag_dirs):
    """A PDF whose three blocks are three LightRAG chunks, and another document's chunk beside them."""
    inputs, storage = lightrag_dirs
    install_sidecar(inputs, "orbit.pdf", "sidecar_pdf_sample.blocks.jsonl")
    rows = [json.loads(line) for line in (MAPPER_FIXTURES / "sidecar_pdf_sample.blocks.jsonl").read_text().splitlines()]
    blocks = [r for r in rows if r.get("type") == "content"]
    store = {
        f"{ORBIT_DOC}-chunk-{i:03d}": {
            "content": block["content"],
            "chunk_order_index": i,
            "full_doc_id": ORBIT_DOC,
            "file_path": "orbit.pdf",
            "sidecar": {"type": "block", "id": block["blockid"], "refs": [{"type": "block", "id": block["blockid"]}]},
        }
        for i, block in enumerate(blocks)
    }
    store["doc-other-chunk-000"] = {"content": "Another document.", "chunk_order_index": 1, "full_doc_id": "doc-other"}
    (storage / "kv_store_text_chunks.json").write_text(json.dumps(store))
    return indexed_source(manuals, "orbit.pdf", ORBIT_DOC, "orbit.pdf")


def test_it_returns_a_chunk_with_its_neighbours(member_client, orbit):
    response = member_client.get(f"/api/sources/{orbit.pk}/chunks?chunk_index=1&context=1")
    assert response.status_code == 200
    body = response.json()
    assert body["unit"] == "lightrag_chunks" and body["context"] == 1
    chunks = body["chunks"]
    assert [c["chunkIndex"] for c in chunks] == [0, 1, 2]
    assert [c["isTarget"] for c in chunks] == [False, True, False]
    assert [c["page"] for c in chunks] == [1, 2, 3]
    assert chunks[1]["headingPath"] == ["Orbital Debris Report 2025", "Collision risk"]
    assert "<equation" not in chunks[1]["text"] and "Φ" in chunks[1]["text"]
    assert "Another document" not in response.content.decode()


def test_it_defaults_to_two_neighbours_and_stops_at_the_ends(member_client, orbit):
    chunks = member_client.get(f"/api/sources/{orbit.pk}/chunks?chunk_index=0").json()["chunks"]
    assert [(c["chunkIndex"], c["isTarget"]) for c in chunks] == [(0, True), (1, False), (2, False)]
    chunks = member_client.get(f"/api/sources/{orbit.pk}/chunks?chunk_index=2&context=0").json()["chunks"]
    assert [c["chunkIndex"] for c in chunks] == [2]


def test_it_falls_back_to_sidecar_blocks_without_a_chunk_store(member_client, manuals, lightrag_dirs):
    inputs, _ = lightrag_dirs
    install_sidecar(inputs, "gamma.docx", "server_gamma.blocks.jsonl")
    source = indexed_source(manuals, "gamma.docx", GAMMA_DOC, "gamma.docx")
    body = member_client.get(
        f"/api/sources/{source.pk}/chunks?chunk_index=0&context=1&block_id=c8f8348d93dec9a1676b869fd3c29155"
    ).json()
    assert body["unit"] == "sidecar_blocks"
    assert [(c["chunkIndex"], c["isTarget"]) for c in body["chunks"]] == [(1, False), (2, True)]
    assert body["chunks"][1]["headingPath"] == ["Gamma Telescope Manual", "Maintenance"]
    assert all("page" not in c for c in body["chunks"])  # a DOCX has no pages


@pytest.mark.parametrize("query", ["", "?chunk_index=-1", "?chunk_index=x", "?chunk_index=0&context=11"])
def test_it_refuses_invalid_chunk_parameters(member_client, orbit, query):
    response = member_client.get(f"/api/sources/{orbit.pk}/chunks{query}")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_request"


def test_it_answers_404_for_a_chunk_the_source_does_not_have(member_client, orbit):
    response = member_client.get(f"/api/sources/{orbit.pk}/chunks?chunk_index=7")
    assert response.status_code == 404 and response.json()["error"]["code"] == "chunk_not_found"


def test_it_hides_chunks_of_a_source_the_member_may_not_see(member_client, hidden_gamma):
    hidden = member_client.get(f"/api/sources/{hidden_gamma.pk}/chunks?chunk_index=0")
    missing = member_client.get("/api/sources/999999/chunks?chunk_index=0")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
    assert "gamma" not in hidden.content.decode()


def test_it_answers_409_for_a_source_that_is_not_citable(member_client, orbit):
    orbit.stale = True
    orbit.status = Source.Status.STALE
    orbit.save()
    response = member_client.get(f"/api/sources/{orbit.pk}/chunks?chunk_index=0")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "source_not_citable" and "not citable" in error["message"]
    assert error["sourceStatus"] == "stale"


# --- admin actions ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/admin/ingest", {"sourceId": 1}),
        ("/api/admin/delete-source", {"sourceId": 1}),
        ("/api/admin/prune-registry", {}),
        ("/api/admin/retry-failed", {}),
    ],
)
def test_it_refuses_admin_actions_to_members(member_client, url, body):
    response = post(member_client, url, body)
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


@pytest.fixture
def notes_root(library_dir, lightrag_dirs):
    folder = library_dir / "notes"
    folder.mkdir()
    (folder / "dome.md").write_text("The dome opens at dusk.")
    return IndexedRoot.objects.create(name="Notes", path="notes")


def test_it_syncs_a_root_on_ingest(admin_client, notes_root):
    body = post(admin_client, "/api/admin/ingest", {"rootId": notes_root.pk}).json()
    assert body["summary"]["new"] == 1 and body["summary"]["queued"] == 1
    assert Source.objects.get().status == Source.Status.QUEUED


def test_it_queues_a_source_and_says_when_it_is_already_registered(admin_client, notes_root):
    post(admin_client, "/api/admin/ingest", {"rootId": notes_root.pk})
    source = Source.objects.get()
    source.status, source.lightrag_doc_id = Source.Status.INDEXED, "doc-1"
    source.save()
    body = post(admin_client, "/api/admin/ingest", {"sourceId": source.pk}).json()
    assert body["result"] == "already_registered"
    body = post(admin_client, "/api/admin/ingest", {"sourceId": source.pk, "force": True}).json()
    assert body["result"] == "queued" and body["status"] == "queued"
    assert Job.objects.filter(kind=Job.Kind.DELETE, payload__doc_ids=["doc-1"]).exists()


def test_it_refuses_an_ingest_without_exactly_one_target(admin_client, notes_root):
    for body in ({}, {"sourceId": 1, "rootId": 1}, {"rootId": notes_root.pk, "force": True}):
        assert post(admin_client, "/api/admin/ingest", body).status_code == 400
    response = post(admin_client, "/api/admin/ingest", {"sourceId": 999})
    assert response.status_code == 404


def test_it_answers_409_when_the_file_to_ingest_is_gone(admin_client, notes_root, library_dir):
    post(admin_client, "/api/admin/ingest", {"rootId": notes_root.pk})
    (library_dir / "notes" / "dome.md").unlink()
    response = post(admin_client, "/api/admin/ingest", {"sourceId": Source.objects.get().pk})
    assert response.status_code == 409 and response.json()["error"]["code"] == "file_unreadable"


def test_it_deletes_a_sources_index(admin_client, manuals):
    source = indexed_source(manuals, "old.md", "doc-2", "old.md")
    body = post(admin_client, "/api/admin/delete-source", {"sourceId": source.pk}).json()
    assert body["status"] == "delete_submitted"
    source.refresh_from_db()
    assert source.stale and source.lightrag_doc_id == ""


def test_it_prunes_the_registry(admin_client, manuals):
    Source.objects.create(root=manuals, relative_path="gone.md", absolute_path="/x", status="removed", stale=True)
    Source.objects.create(root=manuals, relative_path="going.md", absolute_path="/y", status="delete_submitted")
    assert post(admin_client, "/api/admin/prune-registry", {}).json() == {"pruned": 1}
    empty = admin_client.post("/api/admin/prune-registry", "", content_type="application/json")
    assert empty.json() == {"pruned": 0}


# --- OpenAPI and the shape of errors ----------------------------------------


def test_it_describes_every_endpoint_in_openapi(client):
    from mnote.api.urls import urlpatterns

    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    spec = json.loads(response.content)
    assert spec["openapi"].startswith("3.1")
    routes = {"/api/" + str(p.pattern).replace("<int:source_id>", "{sourceId}") for p in urlpatterns
              if p.name}
    assert set(spec["paths"]) == routes == {
        "/api/status", "/api/search", "/api/query", "/api/open-reference", "/api/sources/{sourceId}/chunks",
        "/api/admin/ingest", "/api/admin/delete-source", "/api/admin/prune-registry", "/api/admin/retry-failed",
        "/api/openapi.json", "/api/docs/",
    }
    schemas = spec["components"]["schemas"]
    assert schemas["SearchResults"]["properties"]["schema"]["const"] == "mnote.knowledge_rag.search_results.v1"
    assert schemas["AgentQueryResult"]["title"] == "mnote.knowledge_rag.agent_query_result.v1"
    refs = {m for m in json.dumps(spec).split('"') if m.startswith("#/components/schemas/")}
    assert {r.rsplit("/", 1)[1] for r in refs} <= set(schemas)


def test_it_answers_unknown_api_paths_and_wrong_methods_with_json(member_client):
    response = member_client.get("/api/nope")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    response = member_client.get("/api/search")
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_it_streams_an_answer_as_ndjson_citations_first(member_client, lightrag_answers, gamma):
    lightrag_answers.on("POST", "/query/stream", (200, query_stream_lines()))
    history = [{"role": "user", "content": "Tell me about the mirror"}, {"role": "assistant", "content": "It is Zerodur."}]
    response = post(member_client, "/api/query", {"query": QUERY, "stream": True, "conversationHistory": history})
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert lines[0]["event"] == "context" and [c["fileName"] for c in lines[0]["citations"]] == ["gamma.docx"]
    assert lines[-1]["event"] == "done" and lines[-1]["schema"] == "mnote.knowledge_rag.agent_query_result.v1"
    assert any(line["event"] == "sentences" for line in lines)
    [sent] = sent_to_lightrag(lightrag_answers, "/query/stream")
    assert sent["conversation_history"] == history


def test_it_refuses_a_malformed_conversation_history(member_client, fake_lightrag):
    body = post(member_client, "/api/query", {"query": QUERY, "conversationHistory": [{"role": "system", "content": "x"}]})
    assert body.status_code == 400 and "conversationHistory" in body.json()["error"]["fields"]


# --- what an agent gets: compact, absolute links, the mode used, no hidden counts ---


ENGLISH_ENTRY = "Entry {n}: the mirror was re-aluminised in the coating chamber; vacuum held at 1e-6 mbar. "
CHINESE_ENTRY = "第{n}条记录：主镜在镀膜室中重新镀铝，真空度保持在百万分之一毫巴，操作人员记录了温度和湿度。"


def ten_chunk_answer(manuals, entry: str = ENGLISH_ENTRY) -> dict:
    """/query/data with ten long chunks (LightRAG's default chunk is ~1,200
    tokens), one per registered Markdown file."""
    chunks, references = [], []
    for n in range(10):
        name = f"log-{n}.md"
        indexed_source(manuals, name, f"doc-log{n}", name)
        paragraph = entry.format(n=n)
        chunks.append({"reference_id": str(n + 1), "content": f"# Log {n}\n\n" + paragraph * 50,
                       "file_path": name, "chunk_id": f"doc-log{n}-chunk-000"})
        references.append({"reference_id": str(n + 1), "file_path": name})
    return {"status": "success", "message": "", "data": {"entities": [], "relationships": [], "chunks": chunks,
                                                         "references": references}, "metadata": {}}


@pytest.mark.parametrize(("entry", "query"), [(ENGLISH_ENTRY, QUERY), (CHINESE_ENTRY, "主镜 镀铝 真空")])
def test_a_default_search_for_ten_citations_is_compact_and_verbose_brings_the_raw_fields(
    member_client, fake_lightrag, manuals, entry, query
):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", (200, ten_chunk_answer(manuals, entry)))
    compact = post(member_client, "/api/search", {"query": query})
    verbose = post(member_client, "/api/search", {"query": query, "verbose": True})
    assert len(compact.json()["results"]) == len(verbose.json()["results"]) == 10
    assert len(compact.content) <= 15_000, len(compact.content)
    for citation in compact.json()["results"]:
        # The quote once; no LightRAG ids, locator internals or mapping diagnostics.
        assert compact.content.decode().count(citation["displayQuote"]) == 1
        assert not {"lightragDocId", "lightragFilePath", "chunkId", "locator", "diagnostics"} & set(citation)
    raw = verbose.json()["results"][0]
    assert raw["lightragDocId"] == "doc-log0" and raw["chunkId"] == "doc-log0-chunk-000" and raw["locator"]
    assert raw["citationUrl"].startswith("http://testserver/c/r/")
    assert len(verbose.content) > 2 * len(compact.content)


def test_links_start_with_the_public_url_when_it_is_set(member_client, lightrag_answers, gamma, settings):
    settings.MNOTE_PUBLIC_URL = "https://library.example.com"
    [citation] = post(member_client, "/api/search", {"query": QUERY}).json()["results"]
    assert citation["citationUrl"].startswith("https://library.example.com/c/r/")
    [verbose] = post(member_client, "/api/search", {"query": QUERY, "verbose": True}).json()["results"]
    assert verbose["citationMarkdown"].endswith(f"({verbose['citationUrl']})")
    token = member_client.get(citation["citationUrl"])["Location"].rsplit("/", 1)[1]
    opened = post(member_client, "/api/open-reference", {"token": token}).json()
    assert opened["citationUrl"] == f"https://library.example.com/c/{token}"
    assert opened["previewUrl"] == f"https://library.example.com/preview/{gamma.pk}/?c={token}"


def test_without_an_llm_a_search_uses_and_reports_vectors_only(member_client, fake_lightrag, gamma):
    from tests.lightrag_fakes import recorded

    _, health = recorded("health.json")
    health = {**health, "configuration": {**health["configuration"], "llm_binding": None, "llm_model": None}}
    fake_lightrag.on("GET", "/health", (200, health))
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    body = post(member_client, "/api/search", {"query": QUERY}).json()
    assert body["mode"] == "naive" and body["diagnostics"]["mode"] == "naive"
    assert sent_to_lightrag(fake_lightrag, "/query/data")[0]["mode"] == "naive"
    answered = post(member_client, "/api/query", {"query": QUERY}).json()
    assert answered["mode"] == "naive"


def test_only_admins_learn_what_lightrag_found_and_dropped(client, member, admin_user, lightrag_answers, hidden_gamma):
    client.force_login(member)
    member_view = post(client, "/api/search", {"query": QUERY}).json()["diagnostics"]
    assert not {"references", "chunks", "dropped", "referencesBuiltFromChunks"} & set(member_view)
    client.force_login(admin_user)
    admin_view = post(client, "/api/search", {"query": QUERY}).json()["diagnostics"]
    assert admin_view["references"] == 1 and admin_view["dropped"] == {}
