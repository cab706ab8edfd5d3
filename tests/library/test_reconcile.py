"""The registry reconciled with LightRAG's whole document list (mnote.library.reconcile):
what LightRAG finished after MNote gave up, orphans of our naming scheme,
documents a row lost the name of, files LightRAG lost, deletes that never
went through — against a fake LightRAG at the transport."""

import pytest
from django.utils import timezone

from mnote.library.ingest import run_due_jobs
from mnote.library.models import Job, Source
from mnote.library.reconcile import reconcile
from mnote.lightrag.provider import lightrag_client
from tests.factories import indexing_source
from tests.lightrag_fakes import document, listing

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_reconcile_indexes_what_lightrag_processed_after_mnote_gave_up(root, fake_lightrag):
    failed = indexing_source(root, "a.docx", status=Source.Status.FAILED, lightrag_doc_id="doc-old")
    fake_lightrag.on("POST", "/documents/paginated", listing(document(failed.lightrag_name, chunks=7)))
    with lightrag_client() as client:
        report = reconcile(client)
        assert report.indexed == [failed.lightrag_name]
        failed.refresh_from_db()
        assert failed.status == Source.Status.INDEXED
        assert (failed.lightrag_doc_id, failed.chunk_count) == (f"doc-{failed.lightrag_name}", 7)
        assert failed in Source.objects.citable()
        assert not reconcile(client).changed  # idempotent


def test_reconcile_deletes_an_orphan_of_our_naming_scheme_and_leaves_foreign_documents_alone(root, fake_lightrag):
    orphan = "mnote-0123456789abcdef-old-version.md"
    fake_lightrag.on("POST", "/documents/paginated", listing(document(orphan), document("uploaded-by-hand.pdf")))
    with lightrag_client() as client:
        report = reconcile(client)
        assert [name for name, _why in report.deleted] == [orphan]
        assert "no registry row maps it" in report.deleted[0][1]
        assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": [f"doc-{orphan}"]}
        assert not reconcile(client).changed  # the delete is owed once


def test_reconcile_leaves_a_young_or_working_orphan_alone(root, fake_lightrag):
    now = timezone.now().isoformat()
    fake_lightrag.on(
        "POST",
        "/documents/paginated",
        listing(
            document("mnote-0123456789abcdef-new.md", updated=now),
            document("mnote-fedcba9876543210-busy.md", "processing"),
        ),
    )
    with lightrag_client() as client:
        assert not reconcile(client).changed
    assert not Job.objects.exists()


def test_reconcile_adopts_a_document_a_row_owns_under_a_name_it_lost(root, fake_lightrag):
    source = indexing_source(root, "c.md", status=Source.Status.NOT_INDEXED)
    name = source.unique_lightrag_name()
    Source.objects.filter(pk=source.pk).update(lightrag_name="")
    fake_lightrag.on("POST", "/documents/paginated", listing(document(name)))
    with lightrag_client() as client:
        assert reconcile(client).adopted == [name]
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXED and source.lightrag_name == name


def test_reconcile_sends_again_an_indexed_file_lightrag_lost(root, input_dir, fake_lightrag):
    source = indexing_source(root, "c.md", status=Source.Status.INDEXED, lightrag_doc_id="doc-gone")
    fake_lightrag.on("POST", "/documents/paginated", listing())
    with lightrag_client() as client:
        assert reconcile(client).resent == ["books/c.md"]
    source.refresh_from_db()
    assert source.status == Source.Status.QUEUED and source not in Source.objects.citable()
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    assert (input_dir / source.lightrag_name).is_symlink()
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXING


def test_reconcile_asks_again_for_a_delete_that_never_went_through(root, fake_lightrag):
    source = indexing_source(root, "c.md", status=Source.Status.DELETE_SUBMITTED)
    Job.objects.create(kind=Job.Kind.DELETE, source=source, payload={"doc_ids": ["doc-x"]}, state=Job.State.FAILED)
    fake_lightrag.on("POST", "/documents/paginated", listing(document(source.lightrag_name)))
    with lightrag_client() as client:
        assert reconcile(client).deletes_reissued == [source.lightrag_name]
    assert Job.objects.filter(kind=Job.Kind.DELETE, state=Job.State.PENDING).count() == 1


def test_the_worker_reconciles_even_when_nothing_is_in_progress(root, fake_lightrag):
    from mnote.library.management.commands.run_worker import Command

    failed = indexing_source(root, "a.docx", status=Source.Status.FAILED, lightrag_doc_id="doc-old")
    fake_lightrag.on("POST", "/documents/paginated", listing(document(failed.lightrag_name)))
    Command().reconcile()
    failed.refresh_from_db()
    assert failed.status == Source.Status.INDEXED
