"""Failures classified and retried, stuck sources recovered — against a fake
LightRAG at the transport (document lists shaped as LightRAG 1.5.7 answers
/documents/paginated). The registry reconciled with LightRAG's whole document
list is in test_reconcile.py."""

from datetime import timedelta

import pytest
from django.utils import timezone

from mnote.library.failures import (
    MAX_AUTO_RETRIES, NO_TEXT_AT_ALL, RETRY_WAVE, advance_retries, classify_failure, retry_failed,
)
from mnote.library.ingest import run_due_jobs
from mnote.library.status_bridge import MAX_UNLISTED_SCANS, bridge_statuses, rescan_stuck
from mnote.library.models import IndexedRoot, Job, Source
from mnote.lightrag.provider import lightrag_client
from tests.factories import indexing_source
from tests.lightrag_fakes import document, HEALTH_BUSY, HEALTH_IDLE, listing

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

EMBEDDING_TIMEOUT = (
    "Cancelled by internal error: NanoVectorDBStorage[chunks]: Embedding func: "
    "Worker execution timeout after 60s"
)


@pytest.mark.parametrize(
    "message, kind",
    [
        (EMBEDDING_TIMEOUT, "transient"),
        ("Pipeline halted on internal storage error: vector upsert failed", "transient"),
        ("Connection error.", "transient"),
        (
            "NanoVectorDBStorage[chunks] index flush failed: RetryError[<Future at 0x7efed2c4aa10 "
            "state=finished raised InternalServerError>]",
            "transient",
        ),
        ("Document processing was interrupted by a server restart", "transient"),
        ("DOCX parser returned empty content for mnote-0123456789abcdef-x.docx", "legacy"),
        ("File is encrypted or password protected", "permanent"),
        ("File is not a zip file", "permanent"),
    ],
)
def test_it_tells_transient_failures_from_permanent_ones(message, kind):
    assert classify_failure(message) == kind


def test_it_schedules_a_retry_for_a_transient_failure_and_drops_lightrags_failed_record(root, input_dir, fake_lightrag):
    source = indexing_source(root, "a.docx")
    (input_dir / source.lightrag_name).symlink_to(source.absolute_path)
    fake_lightrag.on("POST", "/documents/paginated", listing(document(source.lightrag_name, "failed", error=EMBEDDING_TIMEOUT)))

    with lightrag_client() as client:
        bridge_statuses(client)

    source.refresh_from_db()
    assert source.status == Source.Status.RETRYING and source.attempts == 1
    assert source.retry_at > timezone.now()
    assert source.last_error == EMBEDDING_TIMEOUT  # the whole message, never cut
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": [f"doc-{source.lightrag_name}"]}
    # Unlinked, or every later scan would make LightRAG retry it together with the others.
    assert not (input_dir / source.lightrag_name).is_symlink()


def test_it_gives_up_after_the_last_automatic_retry_and_says_so(root, fake_lightrag):
    source = indexing_source(root, "a.docx", attempts=MAX_AUTO_RETRIES)
    fake_lightrag.on("POST", "/documents/paginated", listing(document(source.lightrag_name, "failed", error=EMBEDDING_TIMEOUT)))
    with lightrag_client() as client:
        bridge_statuses(client)
    source.refresh_from_db()
    assert source.status == Source.Status.FAILED and source.failure_kind == "transient"
    assert source.last_error == f"Gave up after {MAX_AUTO_RETRIES + 1} attempts. {EMBEDDING_TIMEOUT}"


def test_it_keeps_a_permanent_failure_failed_with_its_whole_message(root, fake_lightrag):
    source = indexing_source(root, "c.md")
    message = "File is encrypted or password protected; " + "detail " * 40
    fake_lightrag.on("POST", "/documents/paginated", listing(document(source.lightrag_name, "failed", error=message)))
    with lightrag_client() as client:
        bridge_statuses(client)
    source.refresh_from_db()
    assert (source.status, source.failure_kind, source.last_error) == ("failed", "permanent", message)
    assert source.lightrag_doc_id == f"doc-{source.lightrag_name}"
    assert not Job.objects.filter(kind=Job.Kind.DELETE).exists()


def test_it_sends_a_docx_the_native_parser_found_empty_through_the_legacy_parser(root, input_dir, fake_lightrag):
    source = indexing_source(root, "a.docx")
    old_name = source.lightrag_name
    error = f"DOCX parser returned empty content for {old_name}"
    fake_lightrag.on("POST", "/documents/paginated", listing(document(old_name, "failed", error=error)))
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    with lightrag_client() as client:
        bridge_statuses(client)
        source.refresh_from_db()
        assert source.status == Source.Status.RETRYING and source.parser_hint == "legacy"
        assert source.attempts == 0  # a different parser is not a retry of the same thing
        # The failed record goes first; the file is sent again once LightRAG no longer lists it.
        fake_lightrag.on("DELETE", "/documents/delete_document", "delete_document.json")
        assert run_due_jobs(client) == 1
        fake_lightrag.on("POST", "/documents/paginated", listing())
        assert advance_retries(client)[0] == 1

    source.refresh_from_db()
    assert source.status == Source.Status.QUEUED and source.lightrag_name != old_name
    # The worker links it, with the parser hint, right before the scan.
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    stem = source.lightrag_name.removesuffix(".docx")
    assert (input_dir / f"{stem}.[legacy].docx").is_symlink()
    assert not (input_dir / source.lightrag_name).exists()


def test_one_worker_round_takes_a_legacy_resend_from_its_delete_to_the_scan(root, input_dir, fake_lightrag, settings):
    """Once LightRAG is idle, the failed record's delete, the file sent again
    and its scan all go in one round of the worker, not one worker interval
    apart each (the ingest's tail: LightRAG would sit idle meanwhile)."""
    import httpx

    from mnote.library.worker import work_once

    source = indexing_source(root, "a.docx")
    old_name = source.lightrag_name
    failed = document(old_name, "failed", error=f"DOCX parser returned empty content for {old_name}")
    fake_lightrag.on("POST", "/documents/paginated", listing(failed))
    fake_lightrag.on("GET", "/health", HEALTH_BUSY)
    fake_lightrag.on("DELETE", "/documents/delete_document", "delete_document_while_busy.json")
    with lightrag_client() as client:
        work_once(client)  # the failure seen: the record's delete is owed
        work_once(client)  # LightRAG busy: the delete waits, so does the file
    source.refresh_from_db()
    assert source.status == Source.Status.RETRYING and source.parser_hint == "legacy"
    assert Job.objects.get(kind=Job.Kind.DELETE).last_error.startswith("LightRAG busy")

    # LightRAG went idle; a delete it accepts no longer lists the record.
    def handler(request):
        response = fake_lightrag.handler(request)
        if request.method == "DELETE":
            fake_lightrag.on("POST", "/documents/paginated", listing())
        return response

    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(handler)
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("DELETE", "/documents/delete_document", "delete_document.json")
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        work_once(client)
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXING and source.lightrag_name != old_name
    assert [(r.method, r.url.path) for r in fake_lightrag.requests].count(("POST", "/documents/scan")) == 1
    assert not Job.objects.filter(state=Job.State.PENDING).exists()


W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def write_docx(path, body: str, **parts: str) -> None:
    """A minimal WordprocessingML package: ``body`` inside w:body, other
    word/ parts by name (header1="..." -> word/header1.xml)."""
    import zipfile

    with zipfile.ZipFile(path, "w") as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        package.writestr("word/document.xml", f"<w:document {W_NS}><w:body>{body}</w:body></w:document>")
        for name, xml in parts.items():
            package.writestr(f"word/{name}.xml", xml)


def native_found_nothing(fake_lightrag, source):
    error = f"DOCX parser returned empty content for {source.lightrag_name}"
    fake_lightrag.on("POST", "/documents/paginated", listing(document(source.lightrag_name, "failed", error=error)))
    with lightrag_client() as client:
        bridge_statuses(client)
    source.refresh_from_db()
    return error


def test_a_docx_with_no_text_anywhere_fails_at_once_instead_of_a_second_parse(root, fake_lightrag):
    """Nothing for the legacy parser either (an empty table, a tab, a picture):
    failed for good with both reasons, no delete owed, nothing sent again."""
    write_docx(root.absolute_path / "a.docx", '<w:p><w:r><w:tab/><w:t xml:space="preserve">  </w:t></w:r></w:p>'
               "<w:tbl><w:tr><w:tc><w:p/></w:tc></w:tr></w:tbl>", header1=f"<w:hdr {W_NS}><w:p/></w:hdr>")
    source = indexing_source(root, "a.docx")
    error = native_found_nothing(fake_lightrag, source)
    assert (source.status, source.failure_kind) == (Source.Status.FAILED, Source.Failure.PERMANENT)
    assert source.last_error == f"{error} {NO_TEXT_AT_ALL}"
    assert source.parser_hint != "legacy" and source.retry_at is None
    assert not Job.objects.filter(state=Job.State.PENDING).exists()


@pytest.mark.parametrize("body, parts, reader", [
    ("<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Only in a table cell</w:t></w:r></w:p></w:tc></w:tr></w:tbl>", {}, "legacy"),
    # The legacy parser reads the body only: text in a footer alone goes as MNote's text at once.
    ("<w:p/>", {"footer1": f'<w:ftr {W_NS}><w:p><w:r><w:t xml:space="preserve"> page </w:t></w:r></w:p></w:ftr>'}, "mnote"),
])
def test_a_docx_holding_text_the_native_parser_missed_goes_to_the_legacy_parser(root, fake_lightrag, body, parts, reader):
    write_docx(root.absolute_path / "a.docx", body, **parts)
    source = indexing_source(root, "a.docx")
    native_found_nothing(fake_lightrag, source)
    assert (source.status, source.parser_hint) == (Source.Status.RETRYING, reader)


def test_a_docx_that_cannot_be_read_as_a_package_goes_to_the_legacy_parser(root, fake_lightrag):
    """Whether it holds text cannot be told: LightRAG's legacy parser decides."""
    (root.absolute_path / "a.docx").write_bytes(b"PK\x03\x04 not really a zip")
    source = indexing_source(root, "a.docx")
    native_found_nothing(fake_lightrag, source)
    assert (source.status, source.parser_hint) == (Source.Status.RETRYING, "legacy")


def test_it_marks_a_legacy_parsed_docx_as_citable_at_file_level(root, fake_lightrag, admin_client):
    source = indexing_source(root, "a.docx", parser_hint="legacy")
    processed = document(source.lightrag_name)
    processed["metadata"]["parse_engine"] = "legacy"
    fake_lightrag.on("POST", "/documents/paginated", listing(processed))
    with lightrag_client() as client:
        bridge_statuses(client)
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXED and source.file_level_citations
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    page = admin_client.get("/?filter=indexed").content.decode()
    assert "file-level citations" in page


def test_it_resends_due_retries_in_small_waves_and_only_while_lightrag_is_idle(root, input_dir, fake_lightrag):
    (root.absolute_path / "f.md").write_text("f")
    names = ["a.docx", "b.docx", "c.md", "d.md", "e.md", "f.md"]
    for name in names:
        indexing_source(root, name, status=Source.Status.RETRYING, retry_at=timezone.now() - timedelta(seconds=1))
    fake_lightrag.on("GET", "/health", HEALTH_BUSY)
    fake_lightrag.on("POST", "/documents/paginated", listing())
    with lightrag_client() as client:
        assert advance_retries(client)[0] == 0
        fake_lightrag.on("GET", "/health", HEALTH_IDLE)
        assert advance_retries(client)[0] == RETRY_WAVE
        # The wave must settle before the next one goes.
        assert advance_retries(client)[0] == 0
    assert Source.objects.filter(status=Source.Status.QUEUED).count() == RETRY_WAVE
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).count() == 1


def test_files_going_to_the_legacy_parser_go_together_beside_a_wave_of_retries(root, input_dir, fake_lightrag):
    (root.absolute_path / "f.docx").write_text("f")
    (root.absolute_path / "g.docx").write_text("g")
    (root.absolute_path / "h.md").write_text("h")
    due = timezone.now() - timedelta(seconds=1)
    empty = "DOCX parser returned empty content for x.docx"
    for name in ("a.docx", "b.docx", "f.docx", "g.docx"):
        indexing_source(root, name, status=Source.Status.RETRYING, retry_at=due, parser_hint="legacy", last_error=empty)
    for name in ("c.md", "d.md", "e.md", "h.md"):
        indexing_source(root, name, status=Source.Status.RETRYING, retry_at=due, attempts=1, last_error=EMBEDDING_TIMEOUT)
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing())
    with lightrag_client() as client:
        assert advance_retries(client)[0] == 4 + RETRY_WAVE
    assert Source.objects.filter(status=Source.Status.QUEUED, parser_hint="legacy").count() == 4
    assert Source.objects.filter(status=Source.Status.RETRYING).count() == 4 - RETRY_WAVE


def test_a_retry_waits_until_lightrag_has_let_go_of_the_failed_record(root, input_dir, fake_lightrag):
    """Each scan makes LightRAG process its failed records again: a file sent
    under a new name while its old record is analysed would be filed as a
    duplicate of it. So the retry waits for the delete, and for LightRAG to
    stop listing the old record."""
    source = indexing_source(root, "a.docx")
    failed = document(source.lightrag_name, "failed", error=EMBEDDING_TIMEOUT)
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing(failed))
    with lightrag_client() as client:
        bridge_statuses(client)
        Source.objects.filter(pk=source.pk).update(retry_at=timezone.now() - timedelta(seconds=1))
        delete = Job.objects.get(kind=Job.Kind.DELETE, source=source)

        # The delete is still owed: no retry yet.
        assert advance_retries(client)[0] == 0
        # Answered "busy" while LightRAG worked: LightRAG is idle now, so it is asked at once.
        delete.retry_later("LightRAG busy: Pipeline is busy", give_up=False)
        assert delete.next_attempt_at > timezone.now()
        assert advance_retries(client)[0] == 0
        delete.refresh_from_db()
        assert delete.next_attempt_at <= timezone.now() and delete.state == Job.State.PENDING
        # Accepted, but LightRAG still lists the record (as "analyzing" after another scan).
        delete.finish()
        fake_lightrag.on("POST", "/documents/paginated", listing({**failed, "status": "analyzing"}))
        assert advance_retries(client)[0] == 0
        source.refresh_from_db()
        assert source.status == Source.Status.RETRYING

        # Gone from LightRAG's list: now it goes, under a new name.
        fake_lightrag.on("POST", "/documents/paginated", listing())
        assert advance_retries(client)[0] == 1
    source.refresh_from_db()
    assert source.status == Source.Status.QUEUED and source.generation == 1
    assert source.lightrag_name != failed["file_path"]


def test_a_failed_record_lightrag_itself_processed_meanwhile_makes_the_file_indexed(root, fake_lightrag):
    """LightRAG processes its failed records again with each later scan: the
    one a retry waits to see deleted may end processed instead."""
    source = indexing_source(root, "a.docx", status=Source.Status.RETRYING, retry_at=timezone.now() - timedelta(seconds=1))
    Job.objects.create(kind=Job.Kind.DELETE, source=source, payload={"doc_ids": ["doc-old"]})
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing(document(source.lightrag_name, doc_id="doc-old", chunks=4)))
    with lightrag_client() as client:
        assert advance_retries(client)[0] == 0
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXED and source.lightrag_doc_id == "doc-old" and source.chunk_count == 4
    assert not Job.objects.filter(state=Job.State.PENDING).exists()  # its delete called off


def test_a_delete_that_went_through_but_left_the_record_is_asked_again(root, fake_lightrag):
    source = indexing_source(root, "a.docx", status=Source.Status.RETRYING, retry_at=timezone.now() - timedelta(seconds=1))
    job = Job.objects.create(kind=Job.Kind.DELETE, source=source, payload={"doc_ids": ["doc-old"]})
    job.finish()
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing(document("old-name", "failed", doc_id="doc-old")))
    with lightrag_client() as client:
        assert advance_retries(client)[0] == 0
        assert not Job.objects.filter(state=Job.State.PENDING).exists()  # LightRAG may still be deleting it
        Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(minutes=5))
        assert advance_retries(client)[0] == 0
    again = Job.objects.get(kind=Job.Kind.DELETE, state=Job.State.PENDING)
    assert again.payload == {"doc_ids": ["doc-old"]} and again.source == source


def test_retry_failed_sends_back_failed_files_of_one_root_only(root, library_dir, input_dir):
    other_folder = library_dir / "other"
    other_folder.mkdir()
    (other_folder / "x.md").write_text("x")
    other = IndexedRoot.objects.create(name="Other", path="other")
    mine = indexing_source(root, "a.docx", status=Source.Status.FAILED, lightrag_doc_id="doc-a", attempts=5)
    theirs = indexing_source(other, "x.md", status=Source.Status.FAILED, lightrag_doc_id="doc-x")
    indexing_source(root, "c.md", status=Source.Status.DUPLICATE, lightrag_doc_id="doc-c")

    assert retry_failed(root.sources.all()) == 1

    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.status == Source.Status.RETRYING and mine.attempts == 0 and mine.lightrag_doc_id == ""
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-a"]}
    assert theirs.status == Source.Status.FAILED


def test_the_retry_failed_buttons_are_for_admins(root, admin_client, member_client, fake_lightrag):
    indexing_source(root, "a.docx", status=Source.Status.FAILED, lightrag_doc_id="doc-a")
    indexing_source(root, "c.md", status=Source.Status.FAILED, lightrag_doc_id="doc-c")
    assert member_client.post("/library/sources/retry-failed/").status_code == 403
    assert member_client.post(f"/library/roots/{root.pk}/retry-failed/").status_code == 403
    assert Source.objects.filter(status=Source.Status.FAILED).count() == 2

    roots_page = admin_client.get("/library/roots/").content.decode()
    assert f"/library/roots/{root.pk}/retry-failed/" in roots_page and "Retry 2 failed" in roots_page
    response = admin_client.post(f"/library/roots/{root.pk}/retry-failed/", follow=True)
    assert "2 failed files of the root “Books” will be sent to LightRAG again" in response.content.decode()
    assert Source.objects.filter(status=Source.Status.RETRYING).count() == 2

    Source.objects.update(status=Source.Status.FAILED)
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing())
    assert "Retry 2 failed files" in admin_client.get("/").content.decode()
    admin_client.post("/library/sources/retry-failed/")
    assert Source.objects.filter(status=Source.Status.RETRYING).count() == 2


def test_admins_retry_failed_files_through_the_json_api(root, library_dir, admin_client, member_client):
    other_folder = library_dir / "other"
    other_folder.mkdir()
    (other_folder / "x.md").write_text("x")
    other = IndexedRoot.objects.create(name="Other", path="other")
    indexing_source(root, "a.docx", status=Source.Status.FAILED, lightrag_doc_id="doc-a", attempts=5)
    indexing_source(other, "x.md", status=Source.Status.FAILED, lightrag_doc_id="doc-x")

    def post(client, body):
        return client.post("/api/admin/retry-failed", body, content_type="application/json")

    assert post(member_client, {"rootId": root.pk}).status_code == 403
    assert post(admin_client, {"rootId": 99999}).status_code == 404
    assert post(admin_client, {"rootId": "1"}).status_code == 400
    assert post(admin_client, {"sourceId": 1}).status_code == 400
    assert Source.objects.filter(status=Source.Status.FAILED).count() == 2

    body = post(admin_client, {"rootId": root.pk}).json()
    assert body["rootId"] == root.pk and body["root"] == "Books" and body["retried"] == 1
    assert set(Source.objects.values_list("relative_path", "status")) == {("a.docx", "retrying"), ("x.md", "failed")}
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-a"]}

    body = post(admin_client, {}).json()  # the whole library
    assert body == {
        "rootId": None,
        "root": None,
        "retried": 1,
        "notRetried": 0,
        "message": "1 failed file(s) of the library will be sent to LightRAG again, a few at a time.",
    }
    assert not Source.objects.filter(status=Source.Status.FAILED).exists()
    assert post(admin_client, {}).json()["retried"] == 0


def test_it_names_a_file_with_a_newline_so_lightrag_accepts_it(root):
    source = Source(root=root, relative_path="two\nlines.md", sha256="0" * 64)
    name = source.unique_lightrag_name()
    assert "\n" not in name and name.endswith("-two_lines.md")


def test_a_file_lightrag_never_lists_ends_failed_instead_of_indexing_forever(root, fake_lightrag):
    source = indexing_source(root, "c.md")
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing())
    with lightrag_client() as client:
        for _ in range(MAX_UNLISTED_SCANS):
            Source.objects.filter(pk=source.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
            Job.objects.filter(kind=Job.Kind.SCAN).update(state=Job.State.DONE)
            rescan_stuck(client)
    source.refresh_from_db()
    assert source.status == Source.Status.FAILED and source.failure_kind == "permanent"
    assert "did not take this file in" in source.last_error


def test_a_delete_answered_busy_is_owed_until_lightrag_is_free(db):
    job = Job.objects.create(kind=Job.Kind.DELETE, payload={"doc_ids": ["doc-a"]}, attempts=Job.MAX_ATTEMPTS + 3)
    job.retry_later("LightRAG busy", give_up=False)
    assert job.state == Job.State.PENDING


def test_the_worker_rescans_sources_a_killed_lightrag_left_indexing(root, fake_lightrag):
    from mnote.library.management.commands.run_worker import Command

    source = indexing_source(root, "c.md", progress="processing · 3 chunks")
    Source.objects.filter(pk=source.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing(document(source.lightrag_name, "processing")))

    Command().carry_out_jobs()

    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).count() == 1
    source.refresh_from_db()
    assert source.status == Source.Status.INDEXING and source.attempts == 0  # listed: not counted against it


def test_work_answered_busy_is_asked_for_again_soon_after_a_long_batch(db):
    job = Job.objects.create(kind=Job.Kind.DELETE, payload={"doc_ids": ["doc-a"]}, attempts=20)
    job.retry_later("LightRAG busy", give_up=False)
    assert job.next_attempt_at <= timezone.now() + Job.BUSY_BACKOFF_MAX
