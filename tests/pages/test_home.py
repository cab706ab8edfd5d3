import dataclasses

import httpx
import pytest
from tests.factories import restricted_root

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


# A healthy LightRAG is also asked for its document list (registry vs LightRAG counts).
DOCUMENTS = "documents_paginated_after_delete.json"


def test_it_sends_anonymous_visitors_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")


def test_it_shows_the_apps_own_login_page(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b"Log in to MNote Library" in response.content
    assert b"Django administration" not in response.content


def test_it_logs_a_member_in_and_shows_a_home_that_starts_with_search(client, member, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    response = client.post("/accounts/login/", {"username": "mia", "password": "member-pass-123"}, follow=True)
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == "/"
    page = response.content.decode()
    assert page.index('class="start-form"') < page.index('id="sources"')
    assert 'formaction="/ask/"' in page
    # Admin telemetry stays on the admin's dashboard.
    assert "Input directory" not in page and "WebUI" not in page and "Documents in LightRAG" not in page


def test_it_counts_for_a_member_only_the_files_they_may_see_and_asks_lightrag_for_no_document_list(
    member_client, fake_lightrag, library_dir
):
    from mnote.library.models import IndexedRoot, Source

    fake_lightrag.on("GET", "/health", "health.json")  # /documents/paginated would fail the test
    open_root = IndexedRoot.objects.create(name="Papers", path="papers")
    hidden = restricted_root("HR", "hr", group="hr")
    Source.objects.create(root=open_root, relative_path="a.md", absolute_path="/x/a.md", status="indexed")
    for name in ("p1.md", "p2.md", "p3.md"):
        Source.objects.create(root=hidden, relative_path=name, absolute_path=f"/x/{name}", status="indexed")
    page = member_client.get("/").content.decode()
    assert "1 file in the folders you can see · 1 searchable." in page
    assert "4" not in page.split('class="member-counts"')[1].split("</p>")[0]


def test_it_offers_a_members_recent_questions_and_the_librarys_recent_citations(member_client, fake_lightrag, library_dir):
    from mnote.citations.models import Citation
    from mnote.library.models import IndexedRoot, Source

    fake_lightrag.on("GET", "/health", "health.json")
    root = IndexedRoot.objects.create(name="Papers", path="papers")
    source = Source.objects.create(root=root, relative_path="a.md", absolute_path="/x/a.md", status="indexed", sha256="c" * 64)
    Citation.objects.create(source=source, source_path="papers/a.md", source_sha256="c" * 64, precision="file", display_quote="Mirrors are cleaned monthly.")
    session = member_client.session
    session["mnote_recent_queries"] = [{"kind": "ask", "q": "How often are mirrors cleaned?", "scope": ""}]
    session.save()
    page = member_client.get("/").content.decode()
    assert "How often are mirrors cleaned?" in page and "/ask/?q=How+often+are+mirrors+cleaned%3F" in page
    assert "Mirrors are cleaned monthly." in page


def test_it_refuses_a_wrong_password(client, member):
    response = client.post("/accounts/login/", {"username": "mia", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_it_reports_lightrag_health_with_version_models_and_rerank(admin_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)
    page = admin_client.get("/").content.decode()
    assert "1.5.7" in page
    assert "text-embedding-3-small" in page
    assert "disabled" in page  # rerank off in the recording
    assert "results are in retrieval order, not reranked" in page


def test_it_sends_the_api_key_to_lightrag(admin_client, fake_lightrag, settings):
    settings.MNOTE_LIGHTRAG = dataclasses.replace(settings.MNOTE_LIGHTRAG, api_key="team-key")
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)
    admin_client.get("/")
    assert fake_lightrag.requests[0].headers["X-API-Key"] == "team-key"


def test_it_says_there_is_no_llm_when_the_stack_is_retrieval_only(admin_client, fake_lightrag):
    status, body = _health_with(llm_model="mnote-no-llm")
    fake_lightrag.on("GET", "/health", (status, body)).on("POST", "/documents/paginated", DOCUMENTS)
    page = admin_client.get("/").content.decode()
    assert "No LLM: retrieval-only." in page
    assert "generated answers and the knowledge graph do not" in page


def test_it_renders_with_a_clear_message_when_lightrag_is_down(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", httpx.ConnectError("Connection refused"))
    response = member_client.get("/")
    assert response.status_code == 200
    # A member reads it without the engine's name or its error.
    assert "The search engine cannot be reached right now." in response.content.decode()
    assert b"LightRAG" not in response.content and b"Connection refused" not in response.content


def test_it_says_when_lightrag_refuses_the_key(member, admin_user, fake_lightrag):
    from django.test import Client

    fake_lightrag.on("GET", "/health", "health_unauthenticated.json")
    admin, reader = Client(), Client()
    admin.force_login(admin_user)
    reader.force_login(member)
    response = admin.get("/")
    assert response.status_code == 200
    assert b"refused MNote&#x27;s API key" in response.content
    # The key is the admins' business: a member reads that search is paused.
    assert b"API key" not in reader.get("/").content


def test_it_rewrites_a_loopback_webui_link_to_the_host_the_user_reached(admin_client, fake_lightrag, settings):
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)
    settings.ALLOWED_HOSTS = ["library.example.com"]
    page = admin_client.get("/", HTTP_HOST="library.example.com").content.decode()
    port = settings.MNOTE_LIGHTRAG.base_url.rsplit(":", 1)[1].strip("/")
    assert f"http://library.example.com:{port}/webui/" in page


def test_it_counts_sources_by_status(admin_client, fake_lightrag, library_dir):
    from mnote.library.models import IndexedRoot, Source

    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)
    root = IndexedRoot.objects.create(name="Papers", path="papers")
    Source.objects.create(root=root, relative_path="a.md", absolute_path="/x/a.md", status="indexed")
    Source.objects.create(root=root, relative_path="b.md", absolute_path="/x/b.md", status="failed")
    page = admin_client.get("/").content.decode()
    assert "2 sources in MNote" in page


def test_it_shows_the_administration_link_only_to_admins(client, member, admin_user, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)
    client.force_login(member)
    assert b"/admin/" not in client.get("/").content
    assert client.get("/admin/").status_code == 302
    client.force_login(admin_user)
    assert b"/admin/" in client.get("/").content
    assert client.get("/admin/library/source/").status_code == 200


def test_it_sets_a_content_security_policy_with_a_nonce(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)
    response = member_client.get("/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in policy
    nonce = policy.split("'nonce-")[1].split("'")[0]
    assert f'nonce="{nonce}"'.encode() in response.content


def _health_with(**configuration):
    from tests.lightrag_fakes import recorded

    status, body = recorded("health.json")
    body = {**body, "configuration": {**body["configuration"], **configuration}}
    return status, body


def test_it_shows_the_admin_that_rerank_is_enabled_with_its_binding_and_model(admin_client, fake_lightrag):
    status, body = _health_with(enable_rerank=True, rerank_binding="cohere", rerank_model="mnote-bm25-dense-fusion")
    fake_lightrag.on("GET", "/health", (status, body)).on("POST", "/documents/paginated", DOCUMENTS)
    page = admin_client.get("/").content.decode()
    rerank = page.split(">Rerank</dt>")[1].split("</dd>")[0]
    assert "enabled" in rerank and "cohere · mnote-bm25-dense-fusion" in rerank
    assert "not reranked" not in page
