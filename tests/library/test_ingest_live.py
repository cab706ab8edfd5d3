"""Ingest on the real embedded stack when things go wrong: a slowed embedder,
an embedder that fails for a while, a parser hint, a file name LightRAG
would refuse. Every parseable file ends indexed, none twice, no job lost."""

import shutil
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from mnote.library.ingest import run_due_jobs
from mnote.library.worker import wait_until_settled
from mnote.library.models import IndexedRoot, Job, Source
from mnote.lightrag.provider import lightrag_client
from mnote.library.sync import sync_root
from mnote.lightrag import make_client
from tests.paths import DEMO_LIBRARY

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

DEMO = DEMO_LIBRARY


def distinct_copies(folder: Path, count: int, prefix: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        text = (DEMO / "en" / "glossary.txt").read_text()
        # Distinct content, or LightRAG files them as duplicates of the first.
        (folder / f"{prefix}-{i}.txt").write_text(f"{text}\nCopy {i} of {prefix}, kept for the ingest test.\n")


def settle(client, timeout):
    assert wait_until_settled(client, timeout=timeout, interval=0.5), list(
        Source.objects.in_progress().values_list("relative_path", "status", "last_error")
    )


def assert_each_indexed_once(client, root):
    rows = list(root.sources.values_list("relative_path", "status", "last_error"))
    assert {status for _, status, _ in rows} == {"indexed"}, rows
    ours = set(root.sources.values_list("lightrag_name", flat=True))
    listed = [d.file_path for d in client.iter_documents() if d.file_path in ours and d.status == "processed"]
    assert sorted(listed) == sorted(ours)  # each once: none lost, none duplicated
    assert not Job.objects.filter(state=Job.State.FAILED).exists()


def test_a_slowed_embedder_fails_no_file_and_searches_still_answer(live_lightrag, library_dir):
    folder = library_dir / "slow"
    # A few files are enough: LightRAG takes one document at a time, so each
    # embedding request waits behind one document's pieces, not the root's.
    distinct_copies(folder, 2, "glossary")
    shutil.copy(DEMO / "en" / "gamma-telescope-manual.docx", folder / "manual.docx")
    root = IndexedRoot.objects.create(name="Slow", path="slow")
    # Every ingest piece 1.5 s slower: a machine far busier than when measured.
    live_lightrag.set_test_knobs(ingest_delay=1.5)
    sync_root(root)
    answered = 0
    with lightrag_client() as client:
        run_due_jobs(client)
        deadline = time.monotonic() + 90
        while answered < 2 and time.monotonic() < deadline:
            if client.health().pipeline_busy:
                # Answers, though it may wait for the document being written
                # (LightRAG's vector store embeds a flush under the lock a search needs).
                with make_client(settings.MNOTE_LIGHTRAG, timeout=httpx.Timeout(300, connect=3)) as patient:
                    patient.query_data("telescope mirror alignment", mode="naive", enable_rerank=False)
                answered += 1
            time.sleep(0.5)
        assert answered, "LightRAG never worked on the root while the test watched"
        settle(client, timeout=900)
        assert_each_indexed_once(client, root)
    # Sized limits: nothing timed out, so nothing had to be retried.
    assert not root.sources.filter(generation__gt=0).exists()


# In the PostgreSQL pass, to even the two passes out (its own stack, ~35 s).
@pytest.mark.postgres_only
def test_files_failed_by_a_failing_embedder_are_retried_until_indexed(live_lightrag, library_dir, monkeypatch):
    from mnote.library import failures

    # A short first wait, so a retry comes while LightRAG may still hold the
    # failed record (the race this test guards: a file sent again while its
    # old record is analysed is filed as a duplicate of it).
    monkeypatch.setattr(failures, "RETRY_BASE", timedelta(seconds=2))
    folder = library_dir / "flaky"
    distinct_copies(folder, 3, "notes")
    root = IndexedRoot.objects.create(name="Flaky", path="flaky")
    # Enough failures to exhaust LightRAG's own three attempts at an embedding
    # call: the flush fails, the pipeline halts and every document of the
    # batch fails (measured: a wave of retries fails again about once in two).
    live_lightrag.set_test_knobs(fail_ingest=6)
    sync_root(root)
    with lightrag_client() as client:
        settle(client, timeout=900)
        assert_each_indexed_once(client, root)
    # Proof the failure happened and was retried under a new name.
    assert root.sources.filter(generation__gt=0).exists()
    assert Job.objects.filter(kind=Job.Kind.DELETE, state=Job.State.DONE).exists()


def test_a_docx_sent_through_the_legacy_parser_is_indexed_and_cited_at_file_level(live_lightrag, library_dir):
    folder = library_dir / "legacy"
    folder.mkdir()
    shutil.copy(DEMO / "en" / "gamma-telescope-manual.docx", folder / "manual.docx")
    root = IndexedRoot.objects.create(name="Legacy", path="legacy")
    sync_root(root)
    source = root.sources.get()
    # As after "DOCX parser returned empty content": the next name carries the hint.
    Source.objects.filter(pk=source.pk).update(parser_hint="legacy")
    source.refresh_from_db()
    from mnote.library.ingest import queue_for_ingest

    queue_for_ingest(source, force=True)  # before the worker linked the sync's name
    source.refresh_from_db()
    assert ".[legacy].docx" in source.link_name
    inputs = live_lightrag.config.input_dir
    with lightrag_client() as client:
        run_due_jobs(client)  # the worker links it, hint and all, right before the scan
        # (LightRAG moves a link it took to __parsed__.)
        places = [inputs / source.link_name, inputs / "__parsed__" / source.link_name, inputs / "__parsed__" / source.lightrag_name]
        assert any(place.is_symlink() for place in places)
        settle(client, timeout=300)
        source.refresh_from_db()
        assert source.status == Source.Status.INDEXED and source.parse_engine == "legacy"
        assert source.file_level_citations and source.chunk_count
        listed = {d.file_path for d in client.iter_documents()}
        assert source.lightrag_name in listed  # LightRAG strips the hint from its name


def test_a_file_whose_name_holds_a_newline_is_indexed_not_stuck(live_lightrag, library_dir):
    folder = library_dir / "odd"
    folder.mkdir()
    (folder / "two\nlines.md").write_text("# Odd name\nThe cryostat uses liquid nitrogen at 77 kelvin.")
    root = IndexedRoot.objects.create(name="Odd", path="odd")
    sync_root(root)
    with lightrag_client() as client:
        settle(client, timeout=240)
        assert_each_indexed_once(client, root)


def test_reconcile_brings_a_drifted_registry_back_in_step_with_lightrag(live_lightrag, library_dir, monkeypatch):
    """The registry fell out of step (issue 11): a file MNote called failed that
    LightRAG processed after all, and a document of MNote's naming scheme no
    row maps. A reconcile against LightRAG's whole list repairs both, and a
    second one changes nothing."""
    from mnote.library import reconcile as reconcile_module
    from mnote.library.reconcile import reconcile

    monkeypatch.setattr(reconcile_module, "ORPHAN_GRACE", timedelta(0))
    folder = library_dir / "drift"
    distinct_copies(folder, 2, "drift")
    root = IndexedRoot.objects.create(name="Drift", path="drift")
    sync_root(root)
    with lightrag_client() as client:
        settle(client, timeout=600)
        gave_up, forgotten = root.sources.order_by("relative_path")
        Source.objects.filter(pk=gave_up.pk).update(
            status=Source.Status.FAILED, failure_kind=Source.Failure.TRANSIENT, last_error="Gave up after 5 attempts."
        )
        orphan = forgotten.lightrag_name
        forgotten.delete()

        report = reconcile(client)
        assert report.indexed == [gave_up.lightrag_name]
        assert [name for name, _why in report.deleted] == [orphan]
        gave_up.refresh_from_db()
        assert gave_up.status == Source.Status.INDEXED and gave_up in Source.objects.citable()
        # The delete it owes goes through on the real LightRAG.
        settle(client, timeout=300)
        deadline = time.monotonic() + 120
        while orphan in {d.file_path for d in client.iter_documents()} and time.monotonic() < deadline:
            time.sleep(1)
        assert orphan not in {d.file_path for d in client.iter_documents()}
        assert not reconcile(client).changed
