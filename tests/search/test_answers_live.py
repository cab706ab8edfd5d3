"""Answers through the real LightRAG with the deterministic test answering
model (and a knowledge graph its stand-in extraction builds): the search's
retrieval, then the LLM asked with MNote's own context, streamed, badged from
that context, stopped on request, followed up with the earlier turn, and never
drawing on a root the asker may not see, in any mode."""

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from django.test import Client

from mnote.search.answers import answer_stream
from mnote.lightrag.provider import lightrag_client
from mnote.search.models import Conversation
from tests.factories import restricted_root
from tests.live_stack import GAMMA, index, make_shelf, model_endpoint, use_shelf

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

SECRET = """# Gamma vault

The Gamma vault combination is 4471-ZETA and the facilities team changes it every spring.
"""


class RecordingTransport(httpx.HTTPTransport):
    """The real network, with the path of every request MNote sent to LightRAG."""

    def __init__(self):
        super().__init__()
        self.paths: list[str] = []

    def handle_request(self, request):
        self.paths.append(request.url.path)
        return super().handle_request(request)


@pytest.fixture(scope="module")
def manuals_shelf(answering_stack, tmp_path_factory):
    """The Gamma notes, indexed once for this module (again after a test that adds to them)."""
    return make_shelf(answering_stack, tmp_path_factory, "Manuals", "manuals", lambda folder: (folder / "gamma.md").write_text(GAMMA))


@pytest.fixture
def manuals(manuals_shelf, settings):
    return use_shelf(manuals_shelf, settings)


@pytest.fixture
def vault(manuals, settings):
    folder = Path(settings.MNOTE_LIBRARY_BASE_DIR) / "vault"
    folder.mkdir(exist_ok=True)
    (folder / "secret.md").write_text(SECRET)
    root = restricted_root("Vault", "vault", group="facilities")
    index(root)
    return root


@pytest.fixture
def answering_model(embedded_stack):
    model_endpoint(embedded_stack, "POST", {"reset": True})
    yield lambda method="GET", body=None: model_endpoint(embedded_stack, method, body)
    model_endpoint(embedded_stack, "POST", {"pace": 0.02})


def test_an_answer_streams_from_one_retrieval_badged_from_its_own_context(manuals, member, settings, answering_model):
    recording = RecordingTransport()
    settings.MNOTE_LIGHTRAG_TRANSPORT = recording
    events = list(answer_stream(member, "How often is the Gamma mirror re-aluminised?", mode="naive"))

    assert events[0].kind == "context" and events[-1].kind == "done"
    context = {c.citation_id for c in events[0].answer.mapped.citations}
    assert context, events[0].answer.mapped.dropped
    answer = events[-1].answer
    assert answer.kind == "llm"
    assert "three years" in answer.text and "[1]" not in answer.text and "References" not in answer.text
    badged = [s for s in answer.sentences if s.citation_ids]
    assert badged and all(set(s.citation_ids) <= context for s in answer.sentences)
    # Streamed: sentences arrive over several events, with text pending between them.
    texts = [e for e in events if e.kind == "text"]
    assert len(texts) >= 3 and any(e.pending for e in texts)
    # The search's retrieval, then the LLM through LightRAG's bypass mode: no second retrieval.
    assert recording.paths.count("/query/data") == 1 and "/query" not in recording.paths
    assert recording.paths.count("/query/stream") == 1
    assert answering_model()["streamed"] == 1


def test_stop_closes_the_answer_at_lightrag(manuals, member, answering_model):
    answering_model("POST", {"pace": 0.4})
    events = answer_stream(member, "How often is the Gamma mirror re-aluminised?", mode="naive")
    assert next(events).kind == "context"
    assert next(events).kind == "text"
    events.close()  # what the Stop button does to the page's request
    deadline = time.monotonic() + 30
    while answering_model()["cancelled"] < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    stats = answering_model()
    assert stats["cancelled"] == 1 and stats["streamed"] == 0


def test_a_follow_up_is_answered_with_the_earlier_turn(manuals, member, answering_model):
    client = Client()
    client.force_login(member)
    first = client.post("/ask/", {"q": "Tell me about the Gamma dome", "retrieval": "naive"})
    conversation = Conversation.objects.get(user=member)
    assert first.status_code == 302 and first["Location"] == f"/ask/c/{conversation.pk}/"
    follow_up = client.post("/ask/", {"q": "And what humidity is required?", "conversation": conversation.pk})
    assert follow_up.status_code == 302
    assert answering_model()["histories"] == [0, 2]  # the second request carried the first turn
    page = client.get(f"/ask/c/{conversation.pk}/").content.decode()
    assert page.count('<article class="turn') == 2 and "below 85 percent" in page


def test_the_page_streams_cards_first_then_badged_sentences(manuals, member, answering_model):
    (manuals.absolute_path / "dome.md").write_text("# Dome\n\nThe Gamma dome is painted white to keep it cool at dusk.\n")
    index(manuals)
    client = Client()
    client.force_login(member)
    response = client.post("/ask/", {"q": "When does the Gamma dome open?"}, HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")
    events = []
    for block in b"".join(response.streaming_content).decode().split("\n\n"):
        if block.strip():
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    names = [name for name, _ in events]
    assert names[0] == "context" and names[-1] == "done" and "text" in names
    assert "source-card" in events[0][1]["html"] and "badge-link" not in events[0][1]["html"]
    # Every card (both files') before any word.
    early = set(re.findall(r'id="cite-(\w+)"', events[0][1]["html"]))
    assert early and early == set(re.findall(r'id="cite-(\w+)"', events[-1][1]["html"]))
    sentences = "".join(data["html"] for name, data in events if name == "text")
    assert "thirty minutes after sunset" in sentences and "badge-link" in sentences
    done = events[-1][1]
    conversation = Conversation.objects.get(user=member)
    assert done["url"] == f"/ask/c/{conversation.pk}/"
    assert "context-rest" in done["html"] or "Cited" in done["html"]


@pytest.mark.parametrize("mode", ["naive", "local", "global", "hybrid"])
def test_a_members_answer_never_repeats_a_restricted_root_in_any_mode(vault, member, admin_user, answering_model, mode):
    # LightRAG's graph holds the vault: its entity "Gamma" merges what both
    # files say of it, and graph retrieval hands it to anyone who asks.
    with lightrag_client() as client:
        graph = client.query_data("Gamma vault combination", mode="local")["data"]
    assert any("4471" in e.get("description", "") for e in graph.get("entities", []))

    for question in ("What is the Gamma vault combination?", "Tell me about the Gamma telescope mirror"):
        answer = list(answer_stream(member, question, mode=mode))[-1].answer
        assert answer.kind == "llm"
        assert "4471" not in answer.text and "spring" not in answer.text
        assert all("4471" not in c.display_quote for c in answer.mapped.citations)
    assert "Zerodur" in answer.text  # the member is answered from what they may see

    # The same question from someone who may see the vault gets it.
    admitted = list(answer_stream(admin_user, "What is the Gamma vault combination?", mode=mode))[-1].answer
    assert admitted.kind == "llm" and "4471-ZETA" in admitted.text


def test_a_members_answer_page_and_api_never_repeat_a_restricted_root(vault, member, answering_model):
    question = "What is the Gamma vault combination?"
    client = Client()
    client.force_login(member)
    streamed = b"".join(client.post("/ask/", {"q": question}, HTTP_ACCEPT="text/event-stream").streaming_content)
    assert b"4471" not in streamed and b"secret.md" not in streamed
    api = client.post("/api/query", json.dumps({"query": question, "mode": "hybrid"}), content_type="application/json")
    assert api.status_code == 200 and "4471" not in api.content.decode()
