"""Sync against the real embedded LightRAG: what LightRAG can cite is exactly
what is in the roots, as the files are now."""

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from mnote.library.ingest import run_due_jobs
from mnote.library.worker import wait_until_settled
from mnote.library.models import IndexedRoot, Job, Source
from mnote.lightrag.provider import lightrag_client
from mnote.library.sync import sync_root
from tests.paths import DEMO_LIBRARY

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

DEMO = DEMO_LIBRARY


def fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def found_files(client, query: str) -> dict[str, str]:
    """LightRAG file name → chunk text, for the chunks a naive query returns."""
    result = client.query_data(query, mode="naive", enable_rerank=False)
    return {c["file_path"]: c["content"] for c in result["data"].get("chunks", [])}


def settle(client, timeout=240):
    assert wait_until_settled(client, timeout=timeout, interval=0.5), list(
        Source.objects.in_progress().values_list("relative_path", "status")
    )


def test_it_indexes_exactly_the_right_files_of_a_root(live_lightrag, library_dir, tmp_path):
    folder = library_dir / "team"
    (folder / "notes" / "deep").mkdir(parents=True)
    (folder / "draft-private").mkdir()
    (folder / "notes" / "kickoff.md").write_text("# Kickoff\nThe observatory kickoff meeting chose the Atacama site.")
    (folder / "notes" / "deep" / "budget.txt").write_text("The instrument budget is forty thousand euros.")
    (folder / "draft-private" / "salaries.md").write_text("Private salary table, never indexed.")
    (folder / "diagram.vsdx").write_bytes(b"binary drawing")
    outside = tmp_path / "outside.md"
    outside.write_text("A file outside the library base directory.")
    os.symlink(outside, folder / "notes" / "linked-outside.md")
    root = IndexedRoot.objects.create(name="Team", path="team", exclude_patterns=["**/draft-private/**"])

    summary = sync_root(root)
    assert summary.refused == ["notes/linked-outside.md"]
    with lightrag_client() as client:
        settle(client)
        indexed = dict(root.sources.filter(status="indexed").values_list("relative_path", "lightrag_name"))
        assert set(indexed) == {"notes/kickoff.md", "notes/deep/budget.txt"}
        assert root.sources.get(relative_path="draft-private/salaries.md").status == "excluded"
        listed = {d.file_path for d in client.iter_documents()}
        assert set(indexed.values()) <= listed
        assert not any("salaries" in name or "linked-outside" in name for name in listed)


def test_it_follows_edits_and_deletions_and_never_touches_the_files(live_lightrag, library_dir):
    folder = library_dir / "lab"
    folder.mkdir()
    (folder / "keep.md").write_text("# Keep\nThe spectrograph slit is fifty microns wide.")
    (folder / "edit.md").write_text("# Procedure\nThe calibration lamp uses argon gas.")
    (folder / "gone.md").write_text("# Obsolete\nThe obsolete cryostat used liquid helium.")
    shutil.copy(DEMO / "en" / "glossary.txt", folder / "glossary.txt")
    root = IndexedRoot.objects.create(name="Lab", path="lab")
    sync_root(root)
    with lightrag_client() as client:
        settle(client)
        edit = root.sources.get(relative_path="edit.md")
        old_name = edit.lightrag_name
        assert old_name in found_files(client, "calibration lamp argon gas")

        (folder / "edit.md").write_text("# Procedure\nThe calibration lamp now uses neon gas instead.")
        (folder / "gone.md").unlink()
        before = fingerprint(folder)
        summary = sync_root(root)
        assert (summary.changed, summary.missing) == (1, 1)
        edit.refresh_from_db()
        assert edit.stale and edit not in Source.objects.citable()
        settle(client)

        edit.refresh_from_db()
        assert edit.status == "indexed" and not edit.stale
        assert edit.lightrag_name != old_name
        hits = found_files(client, "calibration lamp gas")
        assert edit.lightrag_name in hits and "neon" in hits[edit.lightrag_name]
        assert old_name not in hits
        listed = {d.file_path for d in client.iter_documents()}
        assert old_name not in listed

        gone = root.sources.get(relative_path="gone.md")
        assert gone.status == "removed" and gone.deleted_at is not None
        assert gone.lightrag_name not in listed
        assert gone.lightrag_name not in found_files(client, "obsolete cryostat liquid helium")
    assert fingerprint(folder) == before


def test_it_loses_no_job_when_lightrag_is_busy_killed_and_restarted(live_lightrag, library_dir, monkeypatch):
    """Twenty files indexing when LightRAG dies by SIGKILL (no shutdown, its
    documents left "processing"), the worker going on while it is down: once
    it is back, every one ends indexed, each once, with no one pressing anything."""
    folder = library_dir / "bulk"
    folder.mkdir()
    # A page of the glossary each: one chunk a file keeps the test short.
    glossary = (DEMO / "en" / "glossary.txt").read_text()[:800]
    for i in range(19):
        # Distinct content, or LightRAG files them as duplicates of the first.
        (folder / f"glossary-copy-{i}.txt").write_text(f"{glossary}\nCopy number {i} of the glossary.\n")
    root = IndexedRoot.objects.create(name="Bulk", path="bulk")
    sync_root(root)
    with lightrag_client() as client:
        run_due_jobs(client)
        # A twentieth file while the pipeline works: its scan is answered busy.
        (folder / "late.md").write_text("# Late\nA late file about the telescope dome shutter motor.")
        sync_root(root)
        run_due_jobs(client)
        scan_jobs = Job.objects.filter(kind=Job.Kind.SCAN)
        assert scan_jobs.filter(state=Job.State.PENDING, last_error__contains="busy").exists()
        states = {d.file_path: d.status for d in client.iter_documents()}
    ours = list(root.sources.values_list("lightrag_name", flat=True))
    assert len(ours) == 20
    assert any(states.get(name) != "processed" for name in ours), "LightRAG finished before it was killed"

    live_lightrag.lightrag.kill()
    # The worker goes on while LightRAG is down, for longer than the ledger's
    # patience with a job that fails (made short here): owed work is kept.
    monkeypatch.setattr(Job, "MAX_ATTEMPTS", 1)
    with lightrag_client() as client:
        assert not wait_until_settled(client, timeout=4, interval=0.5)
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING, attempts__gte=2).exists()
    live_lightrag.restart_lightrag()

    # A new client and no in-memory state: what an app restart leaves.
    with lightrag_client() as client:
        settle(client, timeout=300)
        assert set(root.sources.values_list("status", flat=True)) == {"indexed"}
        names = [d.file_path for d in client.iter_documents() if d.file_path.startswith("mnote-")]
        assert sorted(n for n in names if n in ours) == sorted(ours)  # each once: none lost, none duplicated
    assert not Job.objects.filter(state=Job.State.FAILED).exists()
