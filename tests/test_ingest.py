import hashlib
import os
from datetime import timedelta

import pytest
from django.utils import timezone

from mnote.library.ingest import queue_for_ingest, run_due_jobs
from mnote.library.status_bridge import bridge_statuses
from mnote.library.models import IndexedRoot, Job, Source
from mnote.lightrag.provider import lightrag_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(library_dir):
    (library_dir / "papers" / "private").mkdir(parents=True)
    (library_dir / "papers" / "alpha.md").write_text("# Alpha\nThe alpha paper.")
    (library_dir / "papers" / "private" / "draft.md").write_text("secret draft")
    return IndexedRoot.objects.create(name="Papers", path="papers", exclude_patterns=["**/private/**"])


def test_it_links_the_file_into_lightrags_inputs_without_copying(root, input_dir, library_dir):
    source = Source.objects.create(root=root, relative_path="alpha.md",
                                   absolute_path=str(root.absolute_path / "alpha.md"))
    assert queue_for_ingest(source) == "queued"
    source.refresh_from_db()
    link = input_dir / source.lightrag_name
    assert link.is_symlink()
    assert os.readlink(link) == str((library_dir / "papers" / "alpha.md").resolve())
    assert source.lightrag_name.startswith("mnote-") and source.lightrag_name.endswith("-alpha.md")
    assert source.sha256 == hashlib.sha256(b"# Alpha\nThe alpha paper.").hexdigest()
    assert source.status == Source.Status.QUEUED
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).count() == 1


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
