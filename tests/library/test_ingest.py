import hashlib
import os
from datetime import timedelta

import pytest
from django.utils import timezone

from mnote.library.ingest import queue_for_ingest, run_due_jobs
from mnote.library.status_bridge import bridge_statuses
from mnote.library.models import IndexedRoot, Job, Source
from mnote.lightrag.provider import lightrag_client

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def root(library_dir):
    (library_dir / "papers" / "private").mkdir(parents=True)
    (library_dir / "papers" / "alpha.md").write_text("# Alpha\nThe alpha paper.")
    (library_dir / "papers" / "private" / "draft.md").write_text("secret draft")
    return IndexedRoot.objects.create(name="Papers", path="papers", exclude_patterns=["**/private/**"])


def test_it_queues_the_file_and_the_worker_links_it_right_before_the_scan(root, input_dir, library_dir, fake_lightrag):
    source = Source.objects.create(root=root, relative_path="alpha.md",
                                   absolute_path=str(root.absolute_path / "alpha.md"))
    assert queue_for_ingest(source) == "queued"
    source.refresh_from_db()
    assert source.lightrag_name.startswith("mnote-") and source.lightrag_name.endswith("-alpha.md")
    assert source.sha256 == hashlib.sha256(b"# Alpha\nThe alpha paper.").hexdigest()
    assert source.status == Source.Status.QUEUED
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).count() == 1
    assert list(input_dir.iterdir()) == []  # nothing linked yet

    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    link = input_dir / source.lightrag_name
    assert link.is_symlink()  # a link, never a copy
    assert os.readlink(link) == str((library_dir / "papers" / "alpha.md").resolve())
    assert [r.url.path for r in fake_lightrag.requests] == ["/documents/scan"]
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXING
    assert not Job.objects.filter(state=Job.State.PENDING).exists()


def many_notes(library_dir, count):
    folder = library_dir / "notes"
    folder.mkdir()
    for i in range(count):
        (folder / f"n{i}.md").write_text(f"note {i}")
    return IndexedRoot.objects.create(name="Notes", path="notes")


def linked_names(input_dir):
    return sorted(p.name.split("-", 2)[2] for p in input_dir.iterdir())


def test_each_scan_takes_a_batch_of_the_oldest_queued_files_and_owes_one_for_the_rest(library_dir, input_dir, fake_lightrag, settings):
    from mnote.library.sync import sync_root

    settings.MNOTE_SCAN_BATCH = 3
    notes = many_notes(library_dir, 5)
    assert sync_root(notes).queued == 5
    # Queued in this order (oldest first): n4, n3, n2, n1, n0.
    for age, name in enumerate(["n0.md", "n1.md", "n2.md", "n3.md", "n4.md"]):
        notes.sources.filter(relative_path=name).update(updated_at=timezone.now() - timedelta(minutes=age))
    fake_lightrag.on("POST", "/documents/scan", "scan.json")

    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    assert linked_names(input_dir) == ["n2.md", "n3.md", "n4.md"]
    assert len(fake_lightrag.requests) == 1
    states = dict(notes.sources.values_list("relative_path", "status"))
    assert states == {"n0.md": "queued", "n1.md": "queued", "n2.md": "indexing", "n3.md": "indexing", "n4.md": "indexing"}
    # Another scan owed, due once LightRAG has had time to start on this batch.
    owed = Job.objects.get(kind=Job.Kind.SCAN, state=Job.State.PENDING)
    assert owed.next_attempt_at > timezone.now()
    with lightrag_client() as client:
        assert run_due_jobs(client) == 0
    Job.objects.filter(pk=owed.pk).update(next_attempt_at=timezone.now())

    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    assert linked_names(input_dir) == ["n0.md", "n1.md", "n2.md", "n3.md", "n4.md"]
    assert len(fake_lightrag.requests) == 2
    assert set(notes.sources.values_list("status", flat=True)) == {"indexing"}
    assert not Job.objects.filter(state=Job.State.PENDING).exists()  # nothing left: no scan owed


def test_links_made_by_a_worker_that_died_before_its_scan_are_taken_by_the_next_scan(root, input_dir, fake_lightrag):
    from mnote.library.ingest import link_for_scan
    from mnote.library.sync import sync_root

    sync_root(root)
    linked, more = link_for_scan()  # ... and the worker dies here
    assert len(linked) == 1 and not more
    assert linked_names(input_dir) == ["alpha.md"]
    source = root.sources.get(relative_path="alpha.md")
    assert source.status == Source.Status.QUEUED

    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1  # the same link found present: no error
    assert linked_names(input_dir) == ["alpha.md"]
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXING


def test_a_file_changed_while_its_scan_is_asked_stays_queued_under_its_new_name(root, input_dir, library_dir, fake_lightrag, monkeypatch):
    from mnote.library.sync import sync_root
    from mnote.lightrag.client import LightRAGClient

    sync_root(root)
    first_name = root.sources.get(relative_path="alpha.md").lightrag_name
    real_scan = LightRAGClient.scan

    def scan_while_the_file_changes(client):
        (library_dir / "papers" / "alpha.md").write_text("# Alpha\nA second version.")
        sync_root(root)  # its old link goes; queued again under a new name, a new scan owed
        started = real_scan(client)
        fake_lightrag.on("POST", "/documents/scan", "scan_second_immediately.json")  # busy with this one
        return started

    monkeypatch.setattr(LightRAGClient, "scan", scan_while_the_file_changes)
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1  # the sync's scan was answered "busy"
    source = root.sources.get(relative_path="alpha.md")
    assert source.status == Source.Status.QUEUED and source.lightrag_name != first_name
    assert first_name not in {p.name for p in input_dir.iterdir()}
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).count() == 1

    monkeypatch.setattr(LightRAGClient, "scan", real_scan)
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    Job.objects.filter(state=Job.State.PENDING).update(next_attempt_at=timezone.now())
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    assert [p.name for p in input_dir.iterdir()] == [source.lightrag_name]
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXING


def test_a_link_the_worker_made_goes_when_its_file_is_removed(root, input_dir, library_dir, fake_lightrag):
    from mnote.library.sync import sync_root

    sync_root(root)
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        run_due_jobs(client)
    assert linked_names(input_dir) == ["alpha.md"]
    (library_dir / "papers" / "alpha.md").unlink()
    assert sync_root(root).missing == 1
    assert list(input_dir.iterdir()) == []
    assert (library_dir / "papers" / "private" / "draft.md").exists()


def test_it_owes_one_scan_for_many_files(root, input_dir, library_dir):
    (library_dir / "papers" / "beta.md").write_text("beta")
    for name in ("alpha.md", "beta.md"):
        queue_for_ingest(Source.objects.create(root=root, relative_path=name, absolute_path=str(root.absolute_path / name)))
    assert Job.objects.filter(kind=Job.Kind.SCAN).count() == 1


def test_it_retries_a_scan_answered_busy_with_backoff(root, input_dir, fake_lightrag):
    source = Source.objects.create(root=root, relative_path="alpha.md",
                                   absolute_path=str(root.absolute_path / "alpha.md"))
    queue_for_ingest(source)
    fake_lightrag.on("POST", "/documents/scan", "scan_second_immediately.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 0
    job = Job.objects.get()
    assert job.state == Job.State.PENDING and job.attempts == 1
    assert "busy" in job.last_error
    assert job.next_attempt_at > timezone.now()
    source.refresh_from_db()
    assert source.status == Source.Status.QUEUED
    assert (input_dir / source.lightrag_name).is_symlink()  # linked; the next attempt finds it there

    # Not due yet: nothing is sent.
    with lightrag_client() as client:
        assert run_due_jobs(client) == 0
    assert len(fake_lightrag.requests) == 1

    Job.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    job.refresh_from_db()
    assert job.state == Job.State.DONE and job.track_id.startswith("scan_")
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXING


def test_it_gives_up_on_a_job_after_its_last_attempt(db):
    job = Job.objects.create(kind=Job.Kind.SCAN, attempts=Job.MAX_ATTEMPTS - 1)
    job.retry_later("LightRAG unavailable")
    assert job.state == Job.State.FAILED


def test_it_bridges_lightrag_statuses_to_the_registry(root, fake_lightrag):
    indexed = Source.objects.create(root=root, relative_path="g.docx", absolute_path="/x/g.docx",
                                    lightrag_name="gamma.docx", status=Source.Status.INDEXING)
    duplicate = Source.objects.create(root=root, relative_path="e2.docx", absolute_path="/x/e2.docx",
                                      lightrag_name="epsilon.docx", status=Source.Status.INDEXING)
    fake_lightrag.on("POST", "/documents/paginated", "documents_paginated_after_delete.json")
    with lightrag_client() as client:
        bridge_statuses(client)
    indexed.refresh_from_db()
    assert indexed.status == Source.Status.INDEXED
    assert indexed.lightrag_doc_id == "doc-b7cf006581394ea318c700a870cecd9f"
    assert indexed.chunk_count == 1 and indexed.parse_engine == "native"
    duplicate.refresh_from_db()
    assert duplicate.status == Source.Status.DUPLICATE
    # LightRAG found the same content already indexed as gamma.docx.
    assert duplicate.duplicate_of == indexed
    assert "Identical content already exists" in duplicate.last_error


def test_it_reports_already_registered_for_the_same_content(root, input_dir):
    source = Source.objects.create(root=root, relative_path="alpha.md",
                                   absolute_path=str(root.absolute_path / "alpha.md"))
    queue_for_ingest(source)
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXED)
    source.refresh_from_db()
    assert queue_for_ingest(source) == "already_registered"
    assert queue_for_ingest(source, force=True) == "queued"


def test_an_input_directory_it_cannot_link_into_leaves_the_files_queued_and_says_why(root, tmp_path, settings, fake_lightrag):
    import dataclasses

    from mnote.library.sync import sync_root

    not_a_folder = tmp_path / "inputs-file"
    not_a_folder.write_text("")
    settings.MNOTE_LIGHTRAG = dataclasses.replace(settings.MNOTE_LIGHTRAG, input_dir=not_a_folder)
    sync_root(root)
    with lightrag_client() as client:
        assert run_due_jobs(client) == 0  # no exception out of the worker's round
    assert fake_lightrag.requests == []  # no scan asked for files not linked
    job = Job.objects.get(kind=Job.Kind.SCAN)
    assert job.state == Job.State.PENDING and "LightRAG's input directory" in job.last_error
    assert root.sources.get(relative_path="alpha.md").status == Source.Status.QUEUED


def test_a_scan_job_waits_while_another_worker_links_for_its_own(root, input_dir, fake_lightrag):
    from mnote.library.sync import sync_root

    sync_root(root)
    # Another worker claimed the owed scan and is linking; a sync meanwhile owed a second one.
    Job.objects.update(claimed_by="other:1", lease_until=timezone.now() + timedelta(minutes=5))
    waiting = Job.objects.create(kind=Job.Kind.SCAN)
    with lightrag_client() as client:
        assert run_due_jobs(client) == 0
    assert fake_lightrag.requests == [] and list(input_dir.iterdir()) == []
    waiting.refresh_from_db()
    assert waiting.state == Job.State.PENDING and "another worker" in waiting.last_error

    # The other worker died: once its lease ran out, its job is this worker's to carry out.
    Job.objects.update(lease_until=timezone.now() - timedelta(seconds=1), next_attempt_at=timezone.now())
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) >= 1
    assert linked_names(input_dir) == ["alpha.md"]
    assert root.sources.get(relative_path="alpha.md").status == Source.Status.INDEXING


def test_a_job_is_owed_while_lightrag_cannot_be_reached_however_long(db, fake_lightrag, settings):
    """Killed or restarting, LightRAG gives no answer: the scan stays owed
    past the ledger's last attempt. An answer that is an error still counts."""
    import httpx

    job = Job.objects.create(kind=Job.Kind.SCAN, attempts=Job.MAX_ATTEMPTS + 3)
    fake_lightrag.on("POST", "/documents/scan", httpx.ConnectError("connection refused"))
    with lightrag_client() as client:
        run_due_jobs(client)
    job.refresh_from_db()
    assert job.state == Job.State.PENDING and "Cannot reach LightRAG" in job.last_error
    assert job.next_attempt_at <= timezone.now() + Job.BUSY_BACKOFF_MAX

    Job.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    fake_lightrag.on("POST", "/documents/scan", (500, {"detail": "internal error"}))
    with lightrag_client() as client:
        run_due_jobs(client)
    job.refresh_from_db()
    assert job.state == Job.State.FAILED
