"""MNote against a LightRAG deployed as a team would scale it: every store
(key-value, document status, graph, vectors with pgvector: PGKVStorage,
PGDocStatusStorage, PGTableGraphStorage, PGVectorStorage) in the test
PostgreSQL, two server processes under ``lightrag-gunicorn``. Nothing of
LightRAG's is then in files MNote could read: a DOCX is indexed, searched,
cited to its paragraphs, previewed, given as context and answered from all the
same. And a second lightrag-server with a working folder of its own, standing
in for a second machine, on the same database and input folder (a shared
mount): one library, served by either.

One LightRAG pair for this module (it runs in the PostgreSQL pass of ``make test``)."""

import dataclasses
import shutil
from pathlib import Path

import pytest
from django.test import Client

from mnote.library.worker import wait_until_settled
from mnote.library.models import IndexedRoot
from mnote.library.sync import sync_root
from mnote.lightrag.provider import lightrag_client
from mnote.search.answers import answer_question, full_library_search
from mnote.stack.processes import EmbeddedStack, StackConfig
from mnote.stack.managed import free_port
from tests.live_stack import copy_tiktoken_cache, empty_lightrag, use_lightrag_of
from tests.paths import REPO_DIR

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration, pytest.mark.postgres_only]

MANUAL = REPO_DIR / "mnote" / "demo" / "library" / "en" / "gamma-telescope-manual.docx"
# A ceiling, not a wait: four chunks take seconds on a quiet machine, a minute or more on a loaded one.
INDEX_TIMEOUT = 300


@pytest.fixture(scope="module")
def postgres_lightrag(postgres_server, tmp_path_factory):
    """lightrag-gunicorn --workers 2 on PostgreSQL storage, with its own model endpoint."""
    import psycopg

    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS mnote_lightrag WITH (FORCE)")
        conn.execute("CREATE DATABASE mnote_lightrag")
    data_dir = tmp_path_factory.mktemp("postgres-lightrag")
    copy_tiktoken_cache(data_dir)
    stack = EmbeddedStack(
        StackConfig(
            data_dir=data_dir, lightrag_port=free_port(), model_port=free_port(),
            lightrag_postgres=postgres_server.url.rsplit("/", 1)[0] + "/mnote_lightrag", lightrag_workers=2,
        )
    )  # fmt: skip
    stack.start()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def second_lightrag(postgres_lightrag, tmp_path_factory):
    """A plain lightrag-server standing in for a second machine: its own working
    folder, the first's database, input folder (a shared mount), key and models."""
    first = postgres_lightrag.config
    data_dir = tmp_path_factory.mktemp("second-lightrag")
    shutil.copytree(first.tiktoken_dir, data_dir / "tiktoken")
    stack = EmbeddedStack(
        dataclasses.replace(first, data_dir=data_dir, lightrag_port=free_port(), lightrag_workers=1,
                            shared_input_dir=first.input_dir, api_key=first.resolved_api_key())
    )  # fmt: skip
    stack.prepare()
    stack.start_lightrag()
    yield stack
    stack.stop()


@pytest.fixture
def manual(postgres_lightrag, settings, library_dir):
    use_lightrag_of(postgres_lightrag, settings)
    empty_lightrag(postgres_lightrag, settings.MNOTE_LIGHTRAG)  # an earlier test's documents would be duplicates
    (library_dir / "manuals").mkdir()
    shutil.copy(MANUAL, library_dir / "manuals" / MANUAL.name)
    root = IndexedRoot.objects.create(name="Manuals", path="manuals")
    sync_root(root)
    with lightrag_client() as client:
        assert wait_until_settled(client, timeout=INDEX_TIMEOUT, interval=0.5)
    source = root.sources.get()
    assert source.status == "indexed", source.last_error
    return source


def stored_files(working_dir: Path) -> list[str]:
    """Whatever LightRAG wrote in its working folder (with every store in PostgreSQL: nothing)."""
    return sorted(str(p.relative_to(working_dir)) for p in working_dir.rglob("*") if p.is_file())


def vector_rows(conn, doc_id: str) -> int:
    """The document's chunk vectors in pgvector's table (named after the embedding model)."""
    sql = "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'lightrag_vdb_chunks%'"
    (table,) = conn.execute(sql).fetchone()
    return conn.execute(f'SELECT count(*) FROM "{table}" WHERE full_doc_id = %s', [doc_id]).fetchone()[0]


def test_a_docx_is_searched_cited_previewed_and_answered_with_lightrag_on_postgresql(
    manual, member, settings, postgres_lightrag
):
    import psycopg

    from mnote.citations.sidecar import chunk_index_of

    # LightRAG's chunks, documents and vectors are rows in PostgreSQL, not files MNote could read.
    assert stored_files(settings.MNOTE_LIGHTRAG.working_dir) == []
    with psycopg.connect(postgres_lightrag.config.lightrag_postgres) as conn:
        sql = "SELECT count(*) FROM lightrag_doc_chunks WHERE full_doc_id = %s"
        chunks_count = conn.execute(sql, [manual.lightrag_doc_id]).fetchone()[0]
        assert chunks_count >= 2
        assert vector_rows(conn, manual.lightrag_doc_id) == chunks_count

    # Search: the second section's paragraph, its heading path and Word paragraph ids.
    mapped = full_library_search(member, "Zerodur meniscus primary mirror actuators", mode="naive")
    ours = [c for c in mapped.citations if c.source_id == manual.pk]
    assert ours, mapped.dropped
    best = ours[0]
    assert best.precision == "paragraph" and not best.degraded
    assert best.heading_path[-1] == "2. Optics"
    assert best.locator["paraIds"][0] and best.locator["paraIds"][1]
    assert "Zerodur" in best.display_quote

    reader = Client()
    reader.force_login(member)
    # The search page shows that card; the JSON API gives the same locator.
    question = "Zerodur meniscus primary mirror actuators"
    page = reader.get("/search/", {"q": question, "mode": "library", "retrieval": "naive"})
    assert page.status_code == 200 and b"gamma-telescope-manual.docx" in page.content and b"Zerodur" in page.content
    api = reader.post(
        "/api/search", {"query": question, "mode": "naive", "verbose": True}, content_type="application/json"
    ).json()
    first = next(r for r in api["results"] if r["sourceId"] == manual.pk)
    assert first["locator"]["paraIds"] == best.locator["paraIds"]

    # The preview renders the original with those paragraphs to scroll to.
    preview = reader.get(f"/preview/{manual.pk}/")
    assert preview.status_code == 200
    assert best.locator["paraIds"][0].encode() in preview.content

    # The context panel: the cited passage with its neighbours, from the sidecar's blocks.
    context = reader.get(f"/api/sources/{manual.pk}/chunks",
                         {"chunk_index": chunk_index_of(best.chunk_id), "block_id": best.block_id})  # fmt: skip
    assert context.status_code == 200, context.content
    assert context.json()["unit"] == "sidecar_blocks"
    target = [c for c in context.json()["chunks"] if c["isTarget"]]
    assert target and "Zerodur" in target[0]["text"]

    # An answer (extractive: this LightRAG has no LLM) badged from the cited passages.
    answer = answer_question(member, "What are the Zerodur meniscus primary mirror and its actuators?", mode="naive")
    ids = {c.citation_id for c in answer.mapped.citations}
    assert answer.kind == "extractive" and answer.sentences
    assert all(set(s.citation_ids) <= ids for s in answer.sentences)
    assert any("Zerodur" in s.text for s in answer.sentences)



def cited(member, question: str, source) -> list:
    mapped = full_library_search(member, question, mode="naive")
    return [c for c in mapped.citations if c.source_id == source.pk]


def test_two_lightrag_servers_on_one_postgresql_serve_one_library(
    manual, member, settings, postgres_lightrag, second_lightrag
):
    from mnote.library.reconcile import reconcile
    from mnote.lightrag import make_client

    first = settings.MNOTE_LIGHTRAG
    # Indexed through the first server (the fixture): the second lists it as
    # processed with the same id and chunks, so reconciling against it changes nothing.
    use_lightrag_of(second_lightrag, settings)
    second = settings.MNOTE_LIGHTRAG
    assert second.input_dir == first.input_dir and second.working_dir != first.working_dir
    with lightrag_client() as client:
        assert not reconcile(client).changed
    manual.refresh_from_db()
    assert manual.status == "indexed"

    # Searched, cited to its paragraph and previewed through the second.
    best = cited(member, "Zerodur meniscus primary mirror actuators", manual)[0]
    assert best.precision == "paragraph" and best.heading_path[-1] == "2. Optics"
    reader = Client()
    reader.force_login(member)
    preview = reader.get(f"/preview/{manual.pk}/")
    assert preview.status_code == 200 and best.locator["paraIds"][0].encode() in preview.content

    # MNote's jobs against the second: a new file indexed, then deleted; the first agrees each time.
    folder = Path(settings.MNOTE_LIBRARY_BASE_DIR) / manual.root.path
    (folder / "dome.md").write_text("# Dome\nThe dome shutter motor is serviced every spring by the night crew.\n")
    sync_root(manual.root)
    with lightrag_client() as client:
        assert wait_until_settled(client, timeout=INDEX_TIMEOUT, interval=0.5)
    notes = manual.root.sources.get(relative_path="dome.md")
    assert notes.status == "indexed", notes.last_error
    with make_client(first) as client:
        assert {d.id: d.status for d in client.iter_documents()} == {
            manual.lightrag_doc_id: "processed", notes.lightrag_doc_id: "processed"
        }
    settings.MNOTE_LIGHTRAG = first
    assert cited(member, "dome shutter motor serviced", notes)

    settings.MNOTE_LIGHTRAG = second
    (folder / "dome.md").unlink()
    sync_root(manual.root)
    with lightrag_client() as client:
        assert wait_until_settled(client, timeout=INDEX_TIMEOUT, interval=0.5)
    notes.refresh_from_db()
    assert notes.status == "removed"
    with make_client(first) as client:
        assert [d.id for d in client.iter_documents()] == [manual.lightrag_doc_id]
    settings.MNOTE_LIGHTRAG = first
    assert not cited(member, "dome shutter motor serviced", notes)
    with lightrag_client() as client:
        assert not reconcile(client).changed

    # Both in MNOTE_LIGHTRAG_URL: searches take turns, each server cites the manual.
    both = dataclasses.replace(first, query_urls=(first.base_url, second.base_url))
    settings.MNOTE_LIGHTRAG = both
    assert lightrag_client().query_urls == [first.base_url, second.base_url]
    for _ in range(2):
        # The same paragraphs (the quote's window may differ once the preview has been rendered).
        [card, *_rest] = cited(member, "Zerodur meniscus primary mirror actuators", manual)
        assert card.locator["paraIds"] == best.locator["paraIds"]

    # No store of either server is a file on its machine.
    assert stored_files(first.working_dir) == stored_files(second.working_dir) == []
