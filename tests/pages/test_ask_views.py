"""The ask page and conversations with LightRAG faked at the transport:
streamed events, follow-ups, saved per user, reopened, deleted, and a
citation that opens without its conversation."""

import json

import pytest
from django.test import Client

from mnote.search.models import Conversation
from tests.app_requests import events_of
from tests.factories import add_gamma, restricted_root
from tests.lightrag_fakes import no_llm_health, QUERY

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_it_defaults_to_naive_and_says_why_without_an_llm(member_client, without_llm):
    page = member_client.get("/ask/").content.decode()
    assert '<option value="naive" selected>' in page and "no knowledge graph" in page


def test_it_defaults_to_mix_with_an_llm(member_client, with_llm):
    page = member_client.get("/ask/").content.decode()
    assert '<option value="mix" selected>' in page


def test_it_streams_cards_before_words_and_saves_the_turn(member_client, member, with_llm, gamma):
    response = member_client.post("/ask/", {"q": QUERY}, HTTP_ACCEPT="text/event-stream")
    events = events_of(response)
    assert [name for name, _ in events][0] == "context" and events[-1][0] == "done"
    assert "source-card" in events[0][1]["html"] and "Stub answer" not in events[0][1]["html"]
    assert any("Stub answer" in data["html"] for name, data in events if name == "text")
    [retrieval] = [json.loads(r.content) for r in with_llm.requests if r.url.path == "/query/data"]
    [sent] = [json.loads(r.content) for r in with_llm.requests if r.url.path == "/query/stream"]
    assert retrieval["mode"] == "mix" and sent["mode"] == "bypass" and "conversation_history" not in sent
    conversation = Conversation.objects.get(user=member)
    assert events[-1][1]["url"] == conversation.get_absolute_url()

    # A follow-up carries the earlier turn.
    events_of(member_client.post("/ask/", {"q": "And how long?", "conversation": conversation.pk}, HTTP_ACCEPT="text/event-stream"))
    follow_up = json.loads([r for r in with_llm.requests if r.url.path == "/query/stream"][-1].content)
    assert follow_up["conversation_history"][0] == {"role": "user", "content": QUERY}
    assert follow_up["conversation_history"][1]["role"] == "assistant"
    assert conversation.turns.count() == 2


def test_conversations_are_listed_reopened_and_deleted_by_their_owner_only(
    member_client, member, django_user_model, without_llm, gamma
):
    response = member_client.post("/ask/", {"q": "How often is the mirror re-aluminised?"})
    conversation = Conversation.objects.get(user=member)
    assert response.status_code == 302 and response["Location"] == conversation.get_absolute_url()
    page = member_client.get(conversation.get_absolute_url()).content.decode()
    assert "extractive answer, no LLM configured" in page and 'name="conversation" value="%d"' % conversation.pk in page
    assert conversation.title in member_client.get("/ask/").content.decode()

    citation_url = conversation.turns.get().citations[0]["citationUrl"]
    colleague = Client()
    colleague.force_login(django_user_model.objects.create_user("noor"))
    assert colleague.get(conversation.get_absolute_url()).status_code == 404
    assert colleague.post(f"/ask/c/{conversation.pk}/delete").status_code == 404
    assert colleague.get(citation_url).status_code == 200  # a shared citation opens without the conversation

    assert member_client.post(f"/ask/c/{conversation.pk}/delete").status_code == 302
    assert not Conversation.objects.exists()
    assert member_client.get(citation_url).status_code == 200


def test_it_refuses_a_follow_up_to_someone_elses_conversation(member_client, django_user_model, without_llm):
    other = Conversation.objects.create(user=django_user_model.objects.create_user("noor"), title="theirs")
    response = member_client.post("/ask/", {"q": "What else?", "conversation": other.pk})
    assert response.status_code == 404


# --- the view as a user meets it: bad parameters, htmx, restricted roots, nothing found


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": ""}, "This field is required."),
        ({"q": "x" * 1001}, "Ensure this value has at most 1000 characters (it has 1001)."),
        ({"q": "Mirror?", "retrieval": "graph"}, "Select a valid choice. graph is not one of the available choices."),
        ({"q": "Mirror?", "scope": "manuals/../hr"}, "A scope path cannot contain “..”."),
        ({"q": "Mirror?", "conversation": "first"}, "Enter a whole number."),
        ({"q": "Mirror?", "conversation": "0"}, "Ensure this value is greater than or equal to 1."),
    ],
)
def test_a_malformed_question_is_a_400_with_its_message_and_asks_lightrag_nothing(member_client, without_llm, params, message):
    for response in (member_client.get("/ask/", params), member_client.post("/ask/", params)):
        assert response.status_code == 400
        assert message in response.content.decode()
    assert not [r for r in without_llm.requests if r.url.path.startswith("/query")]


def test_a_misspelt_scope_is_said_and_asks_lightrag_nothing(member_client, without_llm, gamma):
    page = member_client.get("/ask/", {"q": "How often is the mirror re-aluminised?", "scope": "manual"}).content.decode()
    assert "Nothing in the library you can see is called “manual”" in page
    assert not [r for r in without_llm.requests if r.url.path.startswith("/query")]


def test_htmx_gets_only_the_answer_and_a_link_the_whole_page(member_client, without_llm, gamma):
    params = {"q": "How often is the mirror re-aluminised?"}
    partial = member_client.get("/ask/", params, HTTP_HX_REQUEST="true")
    assert "<html" not in partial.content.decode() and "<textarea" not in partial.content.decode()
    assert "extractive answer, no LLM configured" in partial.content.decode() and "source-card" in partial.content.decode()
    assert "HX-Request" in partial["Vary"]
    whole = member_client.get("/ask/", params).content.decode()
    assert "<html" in whole and "<textarea" in whole and "extractive answer, no LLM configured" in whole


@pytest.fixture
def hidden_gamma(db, lightrag_dirs):
    root = restricted_root("HR", "hr", group="hr")
    return add_gamma(root, lightrag_dirs)


def test_an_answer_never_cites_a_file_of_a_root_the_asker_may_not_see(member_client, django_user_model, without_llm, hidden_gamma):
    question = {"q": "How often is the mirror re-aluminised?"}
    page = member_client.get("/ask/", question).content.decode()
    assert "source-card" not in page and "gamma.docx" not in page and "re-aluminised every" not in page

    colleague = Client()
    member_of_hr = django_user_model.objects.create_user("hana")
    member_of_hr.groups.add(hidden_gamma.root.visible_to_groups.get())
    colleague.force_login(member_of_hr)
    theirs = colleague.get("/ask/", question).content.decode()
    assert "source-card" in theirs and "hr/gamma.docx" in theirs


def test_an_answer_with_nothing_found_says_so(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", no_llm_health())
    fake_lightrag.on("POST", "/query/data", (200, {"status": "success", "data": {"chunks": [], "references": []}}))
    response = member_client.get("/ask/", {"q": "Who painted the dome?"})
    page = response.content.decode()
    assert response.status_code == 200 and "source-card" not in page
    assert "LightRAG found nothing citable for this question." in page
    assert "listed below" not in page  # nothing is
