"""MNote against a LightRAG deployed as a team would scale it: its key-value,
document-status and graph storage in PostgreSQL (PGKVStorage,
PGDocStatusStorage, PGTableGraphStorage on the test PostgreSQL; vectors stay
in LightRAG's default store, pgvector is not packaged here), two server
processes under ``lightrag-gunicorn``. Nothing of LightRAG's is then in JSON
files MNote could read: a DOCX is indexed, searched, cited to its paragraphs,
previewed, given as context and answered from all the same.

One LightRAG for this module (it runs in the PostgreSQL pass of ``make test``)."""

import shutil
from pathlib import Path

import pytest
from django.test import Client

from mnote.library.ingest import wait_until_settled
from mnote.library.models import IndexedRoot
from mnote.library.sync import sync_root
from mnote.lightrag.provider import lightrag_client
from mnote.search.answers import answer_question, full_library_search
from mnote.stack.processes import EmbeddedStack, StackConfig, free_port
from tests.conftest import REPO_DIR, _use_lightrag_of, copy_tiktoken_cache

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

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


@pytest.fixture
def manual(postgres_lightrag, settings, library_dir):
    _use_lightrag_of(postgres_lightrag, settings)
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
    api = reader.post("/api/search", {"query": question, "mode": "naive"}, content_type="application/json").json()
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

