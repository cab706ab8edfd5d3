"""The relevance floor: a search nothing in the library answers says so and
folds its weak cards away; the API and MCP carry ``lowConfidence``. LightRAG
and the embedded rerank it names are faked at the transport; the rerank
answers with the cards' match confidence."""

import json

import httpx
import pytest

from mnote.search import confidence
from mnote.stack.rerank import RERANK_MODEL
from mnote.text.relevance import content_key
from tests.app_requests import post
from tests.factories import indexed_source
from tests.lightrag_fakes import named_chunk, recorded

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

RERANK_URL = "http://model.test/v1/rerank"
SIMILARITIES_URL = RERANK_URL + "/similarities"
NEAR = "Purchase approval needs two signatures from the budget holder before any order is placed."
FAR = "The canteen opens at eight and closes after lunch."


class LightRAGWithEmbeddedRerank:
    """/query/data answers ``chunks``, reranked as LightRAG does with the
    embedded rerank (the last first) unless asked not to; the rerank's
    similarities route gives each passage, named by its key, its cosine
    from ``cosines``."""

    def __init__(self, chunks, cosines):
        self.chunks = chunks
        self.cosines = {content_key(c["content"]).hex(): cos for c, cos in zip(chunks, cosines)}
        self.similarity_asks: list[dict] = []
        self.query_asks: list[dict] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health":
            status, body = recorded("health.json")
            config = {**body["configuration"], "enable_rerank": True, "rerank_binding": "cohere",
                      "rerank_model": RERANK_MODEL, "rerank_binding_host": RERANK_URL}
            return httpx.Response(status, json={**body, "configuration": config})
        if request.url.path == "/query/data":
            asked = json.loads(request.content)
            self.query_asks.append(asked)
            chunks = self.chunks if asked.get("enable_rerank") is False else self.chunks[::-1]
            refs = list({c["file_path"]: {"reference_id": c["reference_id"], "file_path": c["file_path"]}
                         for c in chunks}.values())
            return httpx.Response(200, json={"status": "success", "data": {"chunks": chunks, "references": refs}})
        if str(request.url) == SIMILARITIES_URL:
            body = json.loads(request.content)
            self.similarity_asks.append(body)
            return httpx.Response(200, json={"model": RERANK_MODEL,
                                             "similarities": [self.cosines.get(k) for k in body["keys"]]})
        raise AssertionError(f"unexpected request {request.url}")


@pytest.fixture
def library(db, lightrag_dirs):
    from mnote.library.models import IndexedRoot

    root = IndexedRoot.objects.create(name="Office", path="office")
    return {"handbook": indexed_source(root, "policies/handbook.docx", lightrag_name="handbook.docx"),
            "minutes": indexed_source(root, "minutes/2026-10.md", lightrag_name="minutes.md")}


# A flat field (both passages as near) is a weak match; one passage standing
# out is not (match_confidence: the best cosine above the median, plus a tenth
# of the query's words the passages hold).
FLAT = (0.80, 0.80)
STANDS_OUT = (0.90, 0.70)


def serve_scripted(settings, cosines) -> LightRAGWithEmbeddedRerank:
    chunks = [named_chunk("handbook.docx", 0, NEAR), named_chunk("minutes.md", 1, FAR)]
    fake = LightRAGWithEmbeddedRerank(chunks, cosines)
    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(fake.handler)
    return fake


def _below():
    return FLAT


def _above():
    return STANDS_OUT


def test_a_search_nothing_matches_well_says_so_and_folds_its_cards_one_click_away(member_client, settings, library):
    fake = serve_scripted(settings, _below())
    page = member_client.get("/search/", {"q": "canteen vegetarian menu", "mode": "library"}).content.decode()

    assert "Nothing in the library matches this search well." in page
    start = page.index('<details class="weak-cards">')
    folded = page[start:page.index("</details>", start)]
    assert "Show the 2 weak matches anyway" in folded
    assert folded.count('class="card source-card') == 2
    # LightRAG reranks; the floor then asks the rerank for the cards' cosines
    # by key, in the page's order, without sending their text again.
    assert fake.query_asks[-1].get("enable_rerank") is not False
    assert [ask["keys"] for ask in fake.similarity_asks] == [[content_key(FAR).hex(), content_key(NEAR).hex()]]


def test_the_results_come_in_the_reranks_order(member_client, settings, library):
    serve_scripted(settings, _above())
    result = post(member_client, "/api/search", {"query": "who approves a purchase"}).json()

    assert [r["fileName"] for r in result["results"]] == ["2026-10.md", "handbook.docx"]


def test_htmx_gets_the_same_note_and_folded_cards_in_the_results_partial(member_client, settings, library):
    serve_scripted(settings, _below())
    response = member_client.get("/search/", {"q": "canteen vegetarian menu", "mode": "library"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()

    assert "<html" not in page
    assert "Nothing in the library matches this search well." in page
    assert '<details class="weak-cards">' in page and page.count('class="card source-card') == 2


def test_a_search_with_one_passage_above_the_floor_shows_its_cards_open(member_client, settings, library):
    serve_scripted(settings, _above())
    page = member_client.get("/search/", {"q": "who approves a purchase", "mode": "library"}).content.decode()

    assert "Nothing in the library matches this search well." not in page
    assert "weak-cards" not in page
    assert page.count('class="card source-card') == 2


def test_the_note_is_in_chinese_for_a_chinese_reader(member_client, settings, library):
    serve_scripted(settings, _below())
    page = member_client.get("/search/", {"q": "食堂菜单"}, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    assert "文档库中没有与此搜索匹配良好的内容。" in page
    assert "仍然显示这 2 个弱匹配" in page


def test_the_api_says_low_confidence_below_the_floor_and_not_above_it(member_client, settings, library):
    serve_scripted(settings, _below())
    weak = post(member_client, "/api/search", {"query": "canteen vegetarian menu"}).json()
    serve_scripted(settings, _above())
    strong = post(member_client, "/api/search", {"query": "who approves a purchase"}).json()

    assert weak["lowConfidence"] is True and len(weak["results"]) == 2
    assert strong["lowConfidence"] is False


def test_an_answer_is_not_built_on_cards_below_the_floor(member_client, settings, library):
    serve_scripted(settings, _below())
    # The LLM (LightRAG's /query/stream) is never asked: the fake fails any request it does not expect.
    weak = post(member_client, "/api/query", {"query": "canteen vegetarian menu"}).json()["answer"]

    assert weak["sentences"] == [] and weak["notes"] == [
        "Nothing in the library matches this question well, so no answer was written from it."
    ]


def test_the_floor_knows_the_embedded_rerank_by_the_name_it_answers_with():
    assert confidence.RERANK_MODEL == RERANK_MODEL


def test_without_the_embedded_rerank_no_floor_is_applied(member_client, settings, library):
    fake = serve_scripted(settings, _below())
    status, body = recorded("health.json")  # LightRAG without a rerank provider
    original = fake.handler
    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(
        lambda request: httpx.Response(status, json=body) if request.url.path == "/health" else original(request)
    )
    page = member_client.get("/search/", {"q": "canteen vegetarian menu", "mode": "library"}).content.decode()
    result = post(member_client, "/api/search", {"query": "canteen vegetarian menu"}).json()

    assert "Nothing in the library matches this search well." not in page
    assert result["lowConfidence"] is False
    assert fake.similarity_asks == []


def test_a_rerank_that_gives_no_similarities_leaves_no_floor(member_client, settings, library):
    fake = serve_scripted(settings, _below())
    original = fake.handler
    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(
        lambda request: httpx.Response(503) if str(request.url) == SIMILARITIES_URL else original(request)
    )
    result = post(member_client, "/api/search", {"query": "canteen vegetarian menu"}).json()

    assert [r["fileName"] for r in result["results"]] == ["2026-10.md", "handbook.docx"]
    assert result["lowConfidence"] is False
