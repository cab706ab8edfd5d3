"""The full-library search page: cards worth reading, and a scope that works
(LightRAG asked again for more when its top chunks lie outside the scope; a
misspelt scope refused). LightRAG is faked at the transport."""

import json

import httpx
import pytest

from mnote.library.models import IndexedRoot, Source
from tests.conftest import recorded

pytestmark = pytest.mark.django_db

HANDBOOK = "Purchase approval needs two signatures from the budget holder before any order is placed."


def _source(root, relative_path, name) -> Source:
    return Source.objects.create(
        root=root,
        relative_path=relative_path,
        absolute_path=f"/library/{root.path}/{relative_path}",
        sha256="b" * 64,
        lightrag_name=name,
        lightrag_doc_id=f"doc-{name}",
        status=Source.Status.INDEXED,
    )


def _chunk(name: str, n: int, content: str) -> dict:
    return {"reference_id": name, "content": content, "file_path": name, "chunk_id": f"doc-{name}-chunk-{n:03d}"}


class ScriptedLightRAG:
    """Answers /query/data from a function of the request body; records each ask."""

    def __init__(self, answer, *, rerank: bool = False):
        self.answer = answer
        self.rerank = rerank
        self.asks: list[dict] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health":
            status, body = recorded("health.json")
            if self.rerank:
                config = {**body["configuration"], "enable_rerank": True, "rerank_binding": "cohere", "rerank_model": "m"}
                body = {**body, "configuration": config}
            return httpx.Response(status, json=body)
        if request.url.path == "/query/data":
            body = json.loads(request.content)
            self.asks.append(body)
            chunks = self.answer(body)
            refs = [{"reference_id": c["reference_id"], "file_path": c["file_path"]} for c in chunks]
            unique = list({r["file_path"]: r for r in refs}.values())
            return httpx.Response(200, json={"status": "success", "data": {"chunks": chunks, "references": unique}})
        raise AssertionError(f"unexpected request {request.url.path}")


@pytest.fixture
def library(db, lightrag_dirs):
    root = IndexedRoot.objects.create(name="Office", path="office")
    return {
        "handbook": _source(root, "policies/handbook.docx", "handbook.docx"),
        "tables": _source(root, "reports/crossrefs.docx", "crossrefs.docx"),
        "theme": _source(root, "reports/theme.docx", "theme.docx"),
        "minutes": _source(root, "minutes/2026-10.md", "minutes.md"),
    }


def _serve(settings, answer, **kwargs) -> ScriptedLightRAG:
    fake = ScriptedLightRAG(answer, **kwargs)
    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(fake.handler)
    return fake


def test_it_never_shows_a_card_with_an_empty_quote_or_word_field_errors(member_client, settings, library):
    residue = " ".join(["Table 3 Error! Reference source not found."] * 6)
    _serve(
        settings,
        lambda body: [
            _chunk("theme.docx", 0, '<drawing id="im-1" format="png" path="a.png" src="" />\n\n   '),
            _chunk("crossrefs.docx", 0, residue),
            _chunk("handbook.docx", 0, HANDBOOK),
        ],
    )
    page = member_client.get("/search/", {"q": "purchase approval", "mode": "library"}).content.decode()

    assert "Reference source not found" not in page
    assert "theme.docx" not in page and "crossrefs.docx" not in page
    assert "office/policies/handbook.docx" in page


def test_it_asks_lightrag_for_more_until_the_scope_has_results_and_says_how_many_were_outside(
    member_client, settings, library
):
    def answer(body):
        k = body.get("chunk_top_k") or 20
        # Twenty chunks of the minutes outrank the handbook; it only comes with a wider ask.
        chunks = [_chunk("minutes.md", i, f"Minutes item {i} about approval of the agenda.") for i in range(20)]
        if k > 20:
            chunks += [_chunk("handbook.docx", i, f"{HANDBOOK} Rule {i}.") for i in range(5)]
        return chunks[:k]

    fake = _serve(settings, answer)
    response = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": "office/policies"})
    page = response.content.decode()

    assert [a.get("chunk_top_k") for a in fake.asks] == [None, 60]
    assert page.count('class="card source-card') == 5
    assert "office/policies/handbook.docx" in page
    assert "5 in the scope; LightRAG also found 20 results outside it, not shown." in page
    assert "LightRAG found nothing citable" not in page


def test_it_stops_widening_after_a_bounded_number_of_asks(member_client, settings, library):
    fake = _serve(
        settings,
        lambda body: [_chunk("minutes.md", i, f"Minutes item {i}.") for i in range((body.get("chunk_top_k") or 20))],
    )
    page = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": "office/policies"}).content.decode()

    assert [a.get("chunk_top_k") for a in fake.asks] == [None, 60, 180]
    assert "LightRAG found nothing citable inside this scope." in page
    assert "LightRAG also found 180 results outside it" in page


def test_it_refuses_a_misspelt_scope_with_a_message_and_asks_lightrag_nothing(member_client, settings, library):
    fake = _serve(settings, lambda body: [])
    page = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": "office/polcies"}).content.decode()

    assert "Nothing in the library you can see is called “office/polcies”" in page
    assert fake.asks == []


def test_it_accepts_a_file_a_folder_and_a_root_as_scope(member_client, settings, library):
    fake = _serve(settings, lambda body: [_chunk("handbook.docx", 0, HANDBOOK)])
    for scope in ("office", "office/policies", "office/policies/handbook.docx", "/office/minutes/"):
        page = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": scope}).content.decode()
        assert "Nothing in the library you can see" not in page, scope
    assert len(fake.asks) == 4


def test_a_permalink_keeps_the_query_of_the_search_that_made_it(member_client, settings, library):
    import re

    _serve(settings, lambda body: [_chunk("handbook.docx", 0, HANDBOOK)])
    links = {}
    for query in ("purchase approval", "budget holder signatures"):
        page = member_client.get("/search/", {"q": query, "mode": "library"}).content.decode()
        links[query] = re.search(r'href="(/c/[^"]+)"', page).group(1)

    assert links["purchase approval"] != links["budget holder signatures"]
    for query, link in links.items():
        cited = member_client.get(link, follow=True).content.decode()
        assert f"“{query}”" in cited


def test_the_same_passage_keeps_its_citation_id_across_searches(member_client, settings, library):
    import re

    _serve(settings, lambda body: [_chunk("minutes.md", 0, "Agenda approval."), _chunk("handbook.docx", 0, HANDBOOK)])
    first = member_client.get("/search/", {"q": "purchase approval", "mode": "library"}).content.decode()
    _serve(settings, lambda body: [_chunk("handbook.docx", 0, HANDBOOK)])
    second = member_client.get("/search/", {"q": "budget holder", "mode": "library"}).content.decode()

    ids = lambda page: re.findall(r'class="cite-id">\[?([0-9a-z]{4})', page)  # noqa: E731
    assert len(ids(first)) == 2 and ids(second) == [ids(first)[1]]


def test_with_a_rerank_provider_it_asks_for_more_candidates_and_shows_the_first_twenty(member_client, settings, library):
    fake = _serve(
        settings,
        lambda body: [_chunk("minutes.md", i, f"Minutes item {i} about approval.") for i in range(body.get("chunk_top_k") or 20)],
        rerank=True,
    )
    page = member_client.get("/search/", {"q": "approval", "mode": "library"}).content.decode()

    assert [a.get("chunk_top_k") for a in fake.asks] == [60]
    assert page.count('class="card source-card') == 20
    assert "Minutes item 19 " in page and "Minutes item 20 " not in page
