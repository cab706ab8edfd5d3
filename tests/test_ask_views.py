"""The ask page and conversations with LightRAG faked at the transport:
streamed events, follow-ups, saved per user, reopened, deleted, and a
citation that opens without its conversation."""

import json

import pytest
from django.test import Client

from mnote.search.models import Conversation
from tests.conftest import recorded
from tests.test_api import QUERY, add_gamma, query_stream_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def gamma(db, lightrag_dirs):
    from mnote.library.models import IndexedRoot

    return add_gamma(IndexedRoot.objects.create(name="Manuals", path="manuals"), lightrag_dirs)


def no_llm_health():
    _, health = recorded("health.json")
    return 200, {**health, "configuration": {**health["configuration"], "llm_binding": None, "llm_model": None}}


@pytest.fixture
def with_llm(fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/stream", (200, query_stream_lines()))
    return fake_lightrag


@pytest.fixture
def without_llm(fake_lightrag):
    fake_lightrag.on("GET", "/health", no_llm_health())
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    return fake_lightrag


def events_of(response) -> list[tuple[str, dict]]:
    events = []
    for block in b"".join(response.streaming_content).decode().split("\n\n"):
        if block.strip():
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


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
    [sent] = [json.loads(r.content) for r in with_llm.requests if r.url.path == "/query/stream"]
    assert sent["mode"] == "mix" and "conversation_history" not in sent
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
