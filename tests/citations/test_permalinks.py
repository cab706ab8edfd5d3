"""A search writes no rows; a card's link becomes a permalink row when it is
first opened (or its answer saved), for whoever may see the source, and
never for a link the app did not sign. LightRAG is faked at the transport."""

import html
import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

import mnote.pages.search as search_views
from mnote.citations.models import Citation
from mnote.search.cards import cards_html
from tests.app_requests import post
from tests.lightrag_fakes import QUERY

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def writes(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(WRITES)]


@pytest.fixture
def lightrag_answers(fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    return fake_lightrag


def search_page(client):
    return client.get("/search/", {"q": QUERY, "mode": "library"}, HTTP_HX_REQUEST="true")


def card_link(client) -> str:
    """The one card's link, as the page gives it (its Copy link button)."""
    [url] = re.findall(r'class="small copy-link" data-url="([^"]*)"', search_page(client).content.decode())
    return html.unescape(url)


def card_citation(client):
    """The citation the search page's first card shows."""
    seen = []

    def spy(citations, query):
        seen.extend(citations)
        return cards_html(citations, query)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_views, "cards_html", spy)
        search_page(client)
    return seen[0]


def test_a_search_writes_no_rows(member_client, lightrag_answers, gamma):
    card_link(member_client)  # warm-up: the first search of a process reads LightRAG's health
    with CaptureQueriesContext(connection) as page_queries:
        page = member_client.get("/search/", {"q": QUERY, "mode": "library"}, HTTP_HX_REQUEST="true")
    with CaptureQueriesContext(connection) as api_queries:
        api = post(member_client, "/api/search", {"query": QUERY})
    assert page.status_code == api.status_code == 200
    assert len(page.context["cards"]) == len(api.json()["results"]) == 1
    assert writes(page_queries.captured_queries) == [] and writes(api_queries.captured_queries) == []
    assert Citation.objects.count() == 0


def test_opening_a_card_link_makes_its_permalink_once(member_client, lightrag_answers, gamma):
    link = card_link(member_client)
    assert link.startswith("/c/r/")
    first = member_client.get(link)
    assert first.status_code == 302 and first["Location"].startswith("/c/")
    [row] = Citation.objects.all()
    assert first["Location"] == row.get_absolute_url()
    assert member_client.get(link)["Location"] == row.get_absolute_url()
    assert Citation.objects.count() == 1
    # The row says what the card said.
    card = card_citation(member_client)
    assert (row.display_quote, row.block_id, row.locator) == (card.display_quote, card.block_id, card.locator)
    page = member_client.get(row.get_absolute_url())
    assert page.status_code == 200 and card.display_quote[:40] in page.content.decode()


def badge(page_html: str) -> str:
    [words] = re.findall(r'<span class="badge precision-[a-z]+">([^<]*)</span>', page_html)
    return words


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_citation_page_shows_the_precision_badge_its_card_showed(member_client, lightrag_answers, gamma, language):
    member_client.cookies["django_language"] = language
    card_badge = badge(search_page(member_client).content.decode())
    page = member_client.get(member_client.get(card_link(member_client))["Location"])
    assert badge(page.content.decode()) == card_badge
    assert card_badge == {"en": "paragraph", "zh-hans": "段落"}[language]


def test_a_forged_or_hidden_link_opens_nothing(member_client, admin_user, lightrag_answers, gamma):
    link = card_link(member_client)
    tampered = link[:-3] + ("AAA" if not link.endswith("AAA") else "BBB")
    assert member_client.get(tampered).status_code == 404
    gamma.root.visible_to_all = False
    gamma.root.save()
    hidden = member_client.get(link)
    assert hidden.status_code == 404 and "cannot be opened" in hidden.content.decode()
    assert Citation.objects.count() == 0
    admin = Client()
    admin.force_login(admin_user)
    assert admin.get(link).status_code == 302


def test_a_link_to_a_file_changed_before_its_first_open_says_so(member_client, lightrag_answers, gamma):
    link = card_link(member_client)
    gamma.sha256 = "b" * 64
    gamma.save()
    page = member_client.get(link)
    assert page.status_code == 200 and "has changed since this link was made" in page.content.decode()
    assert Citation.objects.count() == 0


def test_a_link_opened_before_the_file_changed_keeps_what_was_cited(member_client, lightrag_answers, gamma):
    link = card_link(member_client)
    row_url = member_client.get(link)["Location"]
    # What a sync does to an edited file: new hash, stale, LightRAG's document deleted.
    gamma.sha256, gamma.stale, gamma.lightrag_doc_id = "b" * 64, True, ""
    gamma.save()
    assert member_client.get(link)["Location"] == row_url
    assert "The source has changed" in member_client.get(row_url).content.decode()


def test_without_lightrags_chunk_store_the_link_still_opens_the_same_quote(member_client, lightrag_answers, gamma, lightrag_dirs):
    _, storage = lightrag_dirs
    (storage / "kv_store_text_chunks.json").unlink()  # another storage back-end
    link = card_link(member_client)
    card = card_citation(member_client)
    assert member_client.get(link).status_code == 302
    [row] = Citation.objects.all()
    assert row.display_quote == card.display_quote and row.block_id == card.block_id


def test_the_api_opens_a_search_link_as_a_permalink(member_client, lightrag_answers, gamma):
    [result] = post(member_client, "/api/search", {"query": QUERY}).json()["results"]
    opened = post(member_client, "/api/open-reference", {"citationUrl": result["citationUrl"]})
    assert opened.status_code == 200, opened.content
    [row] = Citation.objects.all()
    assert opened.json()["token"] == row.token and opened.json()["citationUrl"] == f"http://testserver/c/{row.token}"
    assert opened.json()["displayQuote"] == result["displayQuote"]


def test_saving_an_answer_makes_its_permalinks(member_client, fake_lightrag, gamma):
    from tests.lightrag_fakes import recorded

    _, health = recorded("health.json")
    health = {**health, "configuration": {**health["configuration"], "llm_binding": None, "llm_model": None}}
    fake_lightrag.on("GET", "/health", (200, health))
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    response = member_client.post("/ask/", {"q": QUERY})
    assert response.status_code == 302
    [row] = Citation.objects.all()
    from mnote.search.models import Turn

    [saved] = Turn.objects.get().citations
    assert saved["citationUrl"] == row.get_absolute_url()
    assert json.dumps(saved["locator"]) == json.dumps(row.locator)


def test_a_new_question_is_remembered_without_a_database_write(member_client, lightrag_answers, gamma):
    """Issue 17: the recent questions are a signed cookie, not a session row,
    so even a question never asked before writes nothing; the home page still
    offers it, and another login (or a forged cookie) does not read it."""
    from mnote.search.recent import COOKIE

    member_client.get("/search/", {"q": "warm-up", "mode": "workspace"})
    for query in (QUERY, "mirror coating"):
        with CaptureQueriesContext(connection) as queries:
            page = member_client.get("/search/", {"q": query, "mode": "library"}, HTTP_HX_REQUEST="true")
        assert page.status_code == 200 and writes(queries.captured_queries) == []
        assert COOKIE in page.cookies
    home = member_client.get("/").content.decode()
    assert home.index("mirror coating") < home.index(QUERY) and "warm-up" in home
    # Tampered: not read.
    member_client.cookies[COOKIE] = member_client.cookies[COOKIE].value[:-2] + "xx"
    assert "mirror coating" not in member_client.get("/").content.decode()


def test_logging_out_forgets_the_recent_questions(member_client, member, lightrag_answers, gamma):
    from mnote.search.recent import COOKIE

    member_client.get("/search/", {"q": "mirror coating", "mode": "library"}, HTTP_HX_REQUEST="true")
    stolen = member_client.cookies[COOKIE].value
    logout = member_client.post("/accounts/logout/")
    assert logout.cookies[COOKIE].value == ""  # the browser is told to drop it
    member_client.force_login(member)  # a new login: a new session
    member_client.cookies[COOKIE] = stolen
    assert "mirror coating" not in member_client.get("/").content.decode()
