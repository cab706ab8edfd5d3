"""The full-library search page: cards worth reading, and a scope that works
(LightRAG asked again for more when its top chunks lie outside the scope; a
misspelt scope refused). LightRAG is faked at the transport."""


import httpx
import pytest

from mnote.library.models import IndexedRoot, Source
from tests.factories import indexed_source
from tests.lightrag_fakes import HANDBOOK, named_chunk, recorded, serve_scripted

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_it_never_shows_a_card_with_an_empty_quote_or_word_field_errors(member_client, settings, library):
    residue = " ".join(["Table 3 Error! Reference source not found."] * 6)
    serve_scripted(
        settings,
        lambda body: [
            named_chunk("theme.docx", 0, '<drawing id="im-1" format="png" path="a.png" src="" />\n\n   '),
            named_chunk("crossrefs.docx", 0, residue),
            named_chunk("handbook.docx", 0, HANDBOOK),
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
        chunks = [named_chunk("minutes.md", i, f"Minutes item {i} about approval of the agenda.") for i in range(20)]
        if k > 20:
            chunks += [named_chunk("handbook.docx", i, f"{HANDBOOK} Rule {i}.") for i in range(5)]
        return chunks[:k]

    fake = serve_scripted(settings, answer)
    response = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": "office/policies"})
    page = response.content.decode()

    assert [a.get("chunk_top_k") for a in fake.asks] == [None, 60]
    assert page.count('class="card source-card') == 5
    assert "office/policies/handbook.docx" in page
    assert "5 in the scope; LightRAG also found 20 results outside it, not shown." in page
    assert "LightRAG found nothing citable" not in page


def test_it_stops_widening_after_a_bounded_number_of_asks(member_client, settings, library):
    fake = serve_scripted(
        settings,
        lambda body: [named_chunk("minutes.md", i, f"Minutes item {i}.") for i in range((body.get("chunk_top_k") or 20))],
    )
    page = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": "office/policies"}).content.decode()

    assert [a.get("chunk_top_k") for a in fake.asks] == [None, 60, 180]
    assert "LightRAG found nothing citable inside this scope." in page
    assert "LightRAG also found 180 results outside it" in page


def test_it_refuses_a_misspelt_scope_with_a_message_and_asks_lightrag_nothing(member_client, settings, library):
    fake = serve_scripted(settings, lambda body: [])
    page = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": "office/polcies"}).content.decode()

    assert "Nothing in the library you can see is called “office/polcies”" in page
    assert fake.asks == []


def test_it_accepts_a_file_a_folder_and_a_root_as_scope(member_client, settings, library):
    fake = serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, HANDBOOK)])
    for scope in ("office", "office/policies", "office/policies/handbook.docx", "/office/minutes/"):
        page = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": scope}).content.decode()
        assert "Nothing in the library you can see" not in page, scope
    assert len(fake.asks) == 4


def test_a_permalink_keeps_the_query_of_the_search_that_made_it(member_client, settings, library):
    import re

    serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, HANDBOOK)])
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

    serve_scripted(settings, lambda body: [named_chunk("minutes.md", 0, "Agenda approval."), named_chunk("handbook.docx", 0, HANDBOOK)])
    first = member_client.get("/search/", {"q": "purchase approval", "mode": "library"}).content.decode()
    serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, HANDBOOK)])
    second = member_client.get("/search/", {"q": "budget holder", "mode": "library"}).content.decode()

    ids = lambda page: re.findall(r'class="cite-id">\[?([0-9a-z]{4})', page)  # noqa: E731
    assert len(ids(first)) == 2 and ids(second) == [ids(first)[1]]


def test_with_a_rerank_provider_it_asks_for_more_candidates_and_shows_the_first_twenty(member_client, settings, library):
    fake = serve_scripted(
        settings,
        lambda body: [named_chunk("minutes.md", i, f"Minutes item {i} about approval.") for i in range(body.get("chunk_top_k") or 20)],
        rerank=True,
    )
    page = member_client.get("/search/", {"q": "approval", "mode": "library"}).content.decode()

    assert [a.get("chunk_top_k") for a in fake.asks] == [60]
    assert page.count('class="card source-card') == 20
    assert "Minutes item 19 " in page and "Minutes item 20 " not in page


# --- the view as a user meets it: bad parameters, htmx, nothing found, restricted roots


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "approval", "scope": "office/../hr"}, "A scope path cannot contain “..”."),
        ({"q": "approval", "mode": "everything"}, "Select a valid choice. everything is not one of the available choices."),
        ({"q": "approval", "retrieval": "graph"}, "Select a valid choice. graph is not one of the available choices."),
        ({"q": "x" * 1001}, "Ensure this value has at most 1000 characters (it has 1001)."),
        ({"q": "   "}, "This field is required."),
    ],
)
def test_a_malformed_search_is_a_400_with_its_message_and_asks_lightrag_nothing(member_client, settings, library, params, message):
    fake = serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, HANDBOOK)])
    response = member_client.get("/search/", params)

    assert response.status_code == 400
    assert message in response.content.decode()
    assert fake.asks == []


def test_htmx_gets_the_message_of_a_malformed_search_in_the_results(member_client, settings, library):
    fake = serve_scripted(settings, lambda body: [])
    response = member_client.get("/search/", {"q": "approval", "scope": "../hr"}, HTTP_HX_REQUEST="true")

    # htmx swaps only a 2xx answer: the refusal is said where the results go.
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" not in page and 'role="alert"' in page and "A scope path cannot contain “..”." in page
    assert fake.asks == []


def test_htmx_gets_only_the_results_and_a_history_restore_the_whole_page(member_client, settings, library):
    serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, HANDBOOK)])
    params = {"q": "purchase approval", "mode": "library"}

    partial = member_client.get("/search/", params, HTTP_HX_REQUEST="true")
    assert "<html" not in partial.content.decode() and "<form" not in partial.content.decode()
    assert "office/policies/handbook.docx" in partial.content.decode()
    assert "HX-Request" in partial["Vary"]
    whole = member_client.get("/search/", params).content.decode()
    assert "<html" in whole and 'class="search-form"' in whole and "office/policies/handbook.docx" in whole
    restored = member_client.get("/search/", params, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in restored.content.decode() and "office/policies/handbook.docx" in restored.content.decode()


def test_the_search_page_without_a_question_shows_the_form_and_asks_nothing(member_client, settings, library):
    fake = serve_scripted(settings, lambda body: [])
    response = member_client.get("/search/")
    page = response.content.decode()
    assert response.status_code == 200 and 'name="q"' in page and 'role="alert"' not in page
    assert "found nothing" not in page and fake.asks == []


def test_it_says_when_nothing_was_found_in_either_mode(member_client, settings, library):
    serve_scripted(settings, lambda body: [])
    library_page = member_client.get("/search/", {"q": "zebra crossing", "mode": "library"}).content.decode()
    assert "LightRAG found nothing citable for this search." in library_page
    assert 'class="card source-card' not in library_page
    workspace_page = member_client.get("/search/", {"q": "zebra crossing", "mode": "workspace"}).content.decode()
    assert "Nothing in the workspace matches." in workspace_page


def test_it_says_lightrag_is_unavailable_and_shows_no_card(member_client, settings, library):
    def refuse(request):
        raise httpx.ConnectError("connection refused", request=request)

    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(refuse)
    response = member_client.get("/search/", {"q": "approval", "mode": "library"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "LightRAG is unavailable, so the full library cannot be searched right now." in page
    assert 'class="card source-card' not in page


@pytest.fixture
def restricted(library, django_user_model):
    """A root only the HR group may see, with a file LightRAG will cite."""
    from django.contrib.auth.models import Group

    hr = IndexedRoot.objects.create(name="HR", path="hr", visible_to_all=False)
    group = Group.objects.create(name="hr")
    hr.visible_to_groups.add(group)
    salaries = indexed_source(hr, "pay/salaries.docx", lightrag_name="salaries.docx")
    colleague = django_user_model.objects.create_user("hana")
    colleague.groups.add(group)
    return salaries, colleague


def test_a_member_never_sees_a_restricted_roots_file_nor_learns_its_scope_exists(
    member_client, client, settings, library, restricted
):
    salaries, colleague = restricted
    chunks = [named_chunk("salaries.docx", 0, "Salary approval table for the budget holder."), named_chunk("handbook.docx", 0, HANDBOOK)]
    fake = serve_scripted(settings, lambda body: chunks)

    page = member_client.get("/search/", {"q": "approval", "mode": "library"}).content.decode()
    assert "office/policies/handbook.docx" in page
    assert "salaries" not in page and "Salary approval" not in page
    scoped = member_client.get("/search/", {"q": "approval", "mode": "library", "scope": "hr"}).content.decode()
    assert "Nothing in the library you can see is called “hr”" in scoped and "Salary approval" not in scoped
    asks = len(fake.asks)

    client.force_login(colleague)
    theirs = client.get("/search/", {"q": "approval", "mode": "library", "scope": "hr"}).content.decode()
    assert "hr/pay/salaries.docx" in theirs and "Salary approval" in theirs
    assert "office/policies/handbook.docx" not in theirs  # outside the scope
    assert len(fake.asks) == asks + 1  # the member's refused scope asked LightRAG nothing


def test_files_matching_by_name_that_lightrag_cannot_cite_are_listed_only_from_roots_the_reader_may_see(
    member_client, client, settings, library, restricted
):
    salaries, colleague = restricted
    queued = indexed_source(library["handbook"].root, "policies/travel-budget.docx", lightrag_name="travel-budget.docx")
    queued.status = Source.Status.QUEUED
    queued.save()
    hidden = indexed_source(salaries.root, "pay/budget-2027.xlsx", lightrag_name="budget-2027.xlsx")
    hidden.status = Source.Status.FAILED
    hidden.save()
    serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, HANDBOOK)])

    page = member_client.get("/search/", {"q": "budget", "mode": "library"}, headers={"HX-Request": "true"}).content.decode()
    assert "office/policies/travel-budget.docx" in page and "indexing (queued)" in page
    assert "budget-2027" not in page and "LightRAG failed to index it" not in page
    # A card's quote still marks the query's words, escaped.
    assert "<mark>budget</mark> holder" in page

    client.force_login(colleague)
    theirs = client.get("/search/", {"q": "budget", "mode": "library"}).content.decode()
    assert "hr/pay/budget-2027.xlsx" in theirs and "LightRAG failed to index it" in theirs


def test_a_quote_is_escaped_around_and_inside_its_marks(member_client, settings, library):
    serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, 'Budget <script>alert("x")</script> & the budget’s holder, < 5 <i>')])

    page = member_client.get("/search/", {"q": "budget", "mode": "library"}, headers={"HX-Request": "true"}).content.decode()
    assert "<script>" not in page and "<i>" not in page
    assert (
        '<blockquote class="quote"><mark>Budget</mark> alert(&quot;x&quot;) &amp; the <mark>budget</mark>’s holder, &lt; 5'
        in page
    )


def test_files_matching_by_name_are_listed_in_the_registrys_order_up_to_the_limit(member, library):
    """Files whose path holds a word of the query, in any case, that LightRAG
    cannot cite (not indexed, or indexed but changed since), by root name and
    path; a citable file is not listed."""
    from mnote.search.answers import not_in_lightrag

    other = IndexedRoot.objects.create(name="Archive", path="archive")  # sorts before "Office"
    rows = [
        (other, "Budget-2025.xlsx", Source.Status.FAILED, False),
        (other, "old/budget_50%.md", Source.Status.NOT_INDEXED, False),
        (other, "old/budget-500.md", Source.Status.QUEUED, False),
        (library["handbook"].root, "a/BUDGET plan.docx", Source.Status.INDEXED, True),  # indexed but stale: listed
        (library["handbook"].root, "a/budget current.docx", Source.Status.INDEXED, False),  # citable: not listed
        (library["handbook"].root, "z/travel.md", Source.Status.EXCLUDED, False),
    ]
    for root, path, status, stale in rows:
        source = indexed_source(root, path, lightrag_name=path.replace("/", "-"))
        Source.objects.filter(pk=source.pk).update(status=status, stale=stale)
    roots = [other.pk, library["handbook"].root.pk]

    def listed(query, limit=10, root_ids=roots):
        return [found["sourcePath"] for found in not_in_lightrag(member, query, limit=limit, root_ids=root_ids)]

    handbook_root = library["handbook"].root.path
    assert listed("budget") == [
        "archive/Budget-2025.xlsx", "archive/old/budget-500.md", "archive/old/budget_50%.md", f"{handbook_root}/a/BUDGET plan.docx"
    ]
    assert listed("budget", limit=2) == ["archive/Budget-2025.xlsx", "archive/old/budget-500.md"]
    assert listed("TRAVEL plan") == [f"{handbook_root}/a/BUDGET plan.docx", f"{handbook_root}/z/travel.md"]
    assert listed("budget", root_ids=[library["handbook"].root.pk]) == [f"{handbook_root}/a/BUDGET plan.docx"]


@pytest.mark.parametrize(("llm", "sent"), [(True, "mix"), (False, "naive")])
def test_without_a_chosen_retrieval_it_uses_the_providers_mode(member_client, settings, library, llm, sent):
    fake = serve_scripted(settings, lambda body: [named_chunk("handbook.docx", 0, HANDBOOK)])

    def provider(request):
        if request.url.path == "/health" and not llm:
            status, body = recorded("health.json")
            body = {**body, "configuration": {**body["configuration"], "llm_binding": None, "llm_model": None}}
            return httpx.Response(status, json=body)
        return fake.handler(request)

    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(provider)
    member_client.get("/search/", {"q": "purchase approval", "mode": "library"})
    member_client.get("/search/", {"q": "purchase approval", "mode": "library", "retrieval": "mix"})
    assert [ask["mode"] for ask in fake.asks] == [sent, "mix"]
@pytest.mark.django_db(transaction=True)  # the threads' own connections see the rows
def test_twenty_threads_searching_at_once_all_get_their_cards(
    client, member, lightrag_dirs, fake_lightrag, monkeypatch
):
    """The web process's threads share its memos (documents' indexes, files'
    facts, text matches, LightRAG's health): each search here cites more
    documents than the process keeps indexes of, so threads evict what
    others are reading. No search may fail for it."""
    import random
    import sys
    import threading
    import time
    from collections import OrderedDict

    from django.test import Client

    from mnote.citations import sidecar

    class YieldingMemo(OrderedDict):
        """The process's memo of documents' indexes, letting other threads
        run right after each look-up, where an unlocked memo is raced."""

        def get(self, key, default=None):
            found = super().get(key, default)
            time.sleep(0)
            return found

    monkeypatch.setattr(sidecar, "_INDEXES", YieldingMemo())
    monkeypatch.setattr(sidecar, "_INDEXES_KEPT", 8)  # a small memo: few documents to cite for evictions

    root = IndexedRoot.objects.create(name="Office", path="office")
    names = [f"memo-{i:03d}.docx" for i in range(12)]
    for name in names:
        indexed_source(root, f"memos/{name}", lightrag_name=name)
    chunks = [named_chunk(name, 0, f"{HANDBOOK} Memo {name}.") for name in names]

    def shuffled(request):  # each search cites them in an order of its own: hits and evictions mix
        mine = random.sample(chunks, len(chunks))
        return 200, {"status": "success", "data": {"chunks": mine, "references": mine}}

    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", shuffled)
    client.force_login(member)
    failures, pages = [], []

    def search():
        reader = Client()
        reader.cookies = client.cookies
        try:
            for _ in range(2):
                response = reader.get("/search/", {"q": "purchase approval signatures", "mode": "library"})
                pages.append((response.status_code, response.content.decode().count("source-card")))
        except Exception as e:  # noqa: BLE001 - any error is the failure this test looks for
            failures.append(repr(e))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads change places as often as they can: races show
    try:
        threads = [threading.Thread(target=search) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert len(pages) == 40 and all(status == 200 and cards >= 1 for status, cards in pages), pages[:5]
