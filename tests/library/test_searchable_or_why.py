"""Every file the library takes in becomes searchable, or says plainly why not:
MNote's own text for the kinds LightRAG cannot read, duplicates only of
something searchable, one vocabulary of reasons, a worker that backs off
while LightRAG is busy, small files not held behind a large one. Against a
fake LightRAG at the transport (responses shaped as LightRAG 1.5.7 answers)."""

import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from django.utils.translation import override

from mnote.library.failures import MAX_AUTO_RETRIES, retry_failed
from mnote.library.reasons import plain_reason, reason_code
from mnote.library.ingest import link_for_scan, run_due_jobs
from mnote.library.models import IndexedRoot, Job, Source
from mnote.library.status_bridge import bridge_statuses
from mnote.library.sync import sync_root
from mnote.lightrag.provider import lightrag_client
from tests.docx_factory import make_docx, para, text_box
from tests.lightrag_fakes import document, HEALTH_IDLE, listing
from tests.paths import FIXTURES

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

EPUB = FIXTURES / "previews" / "futurepress__alice_without_cover.epub"
PAGE = """<!doctype html><html><head><title>Mirror care</title>
<style>.x { color: red }</style><script>var tracking = "analytics";</script></head>
<body><nav>Home</nav><h1>Mirror care</h1><p>Re-aluminise the primary mirror every two years.</p></body></html>"""
# LightRAG 1.5.7's banner for an OLE2 file saved as .docx (what a password-protected DOCX is).
LEGACY_DOC_BANNER = (
    "==========\nDOCX parse error\n==========\nThe file at '/data/inputs/mnote-0123456789abcdef-a.docx' is a legacy "
    "Word 97-2003 (.doc) document saved with a .docx extension. The .doc binary format is not a ZIP/OOXML package "
    "and cannot be parsed by the native engine.\n  1. Open it in Word\n  2. Save As .docx\n=========="
)


@pytest.fixture
def data_dir(tmp_path, settings):
    settings.DATA_DIR = tmp_path / "data"
    return settings.DATA_DIR


@pytest.fixture
def shelf(library_dir, input_dir, data_dir):
    (library_dir / "shelf").mkdir()
    return IndexedRoot.objects.create(name="Shelf", path="shelf")


def linked_text(input_dir: Path, source: Source) -> str:
    link = input_dir / source.link_name
    assert link.is_symlink()
    return link.read_text(encoding="utf-8")


# --- MNote's text where LightRAG cannot read the kind ------------------------


def test_an_epub_and_a_web_page_go_to_lightrag_as_the_text_their_preview_shows(shelf, library_dir, input_dir, data_dir):
    shutil.copy(EPUB, library_dir / "shelf" / "alice.epub")
    (library_dir / "shelf" / "mirror.html").write_text(PAGE)
    sync_root(shelf)
    linked, _ = link_for_scan()
    assert len(linked) == 2
    book = shelf.sources.get(relative_path="alice.epub")
    page = shelf.sources.get(relative_path="mirror.html")
    # Under the file's own LightRAG name (its documents map back to this row), read as text.
    assert book.lightrag_name.endswith("-alice.epub.txt") and book.link_name == book.lightrag_name
    assert "Alice" in linked_text(input_dir, book)
    text = linked_text(input_dir, page)
    assert "Re-aluminise the primary mirror every two years." in text
    assert "analytics" not in text and "<p>" not in text and "color" not in text
    # The text is MNote's, in its data folder; the user's folder holds only their files.
    assert Path(os.path.realpath(input_dir / page.link_name)).parent == data_dir / "derived-text"
    assert sorted(p.name for p in (library_dir / "shelf").iterdir()) == ["alice.epub", "mirror.html"]


def test_a_docx_no_lightrag_parser_reads_is_sent_again_as_mnotes_text(shelf, library_dir, input_dir, fake_lightrag):
    """Text only in a text box: the native parser found nothing, the legacy
    one neither; the preview shows it, so LightRAG gets MNote's text of it."""
    make_docx(library_dir / "shelf" / "memo.docx", [text_box(para("Observatory night log"))])
    sync_root(shelf)
    source = shelf.sources.get()
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXING, parser_hint="legacy")
    source.refresh_from_db()
    source.lightrag_name = source.unique_lightrag_name()
    source.save()
    failed = document(source.lightrag_name, "failed", error=f"extracted no usable text from {source.lightrag_name}")
    fake_lightrag.on("POST", "/documents/paginated", listing(failed))
    with lightrag_client() as client:
        bridge_statuses(client)
    source.refresh_from_db()
    assert (source.status, source.parser_hint) == (Source.Status.RETRYING, Source.MNOTE_TEXT)
    # Its failed record goes first, then it is sent as text.
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": [failed["id"]]}
    source.generation += 1
    source.status = Source.Status.QUEUED
    source.lightrag_name = source.unique_lightrag_name()
    source.save()
    link_for_scan()
    source.refresh_from_db()
    assert source.status == Source.Status.QUEUED, source.last_error
    assert "Observatory night log" in linked_text(input_dir, source)
    assert not source.file_level_citations  # cited at its words, through the preview's own text map


def test_a_file_mnotes_reader_finds_no_text_in_fails_saying_so(shelf, library_dir, input_dir):
    (library_dir / "shelf" / "blank.html").write_text("<html><body><script>var x = 1;</script></body></html>")
    sync_root(shelf)
    linked, _ = link_for_scan()
    source = shelf.sources.get()
    assert linked == {} and (source.status, source.failure_kind) == (Source.Status.FAILED, Source.Failure.PERMANENT)
    assert plain_reason(source) == "No text: the file holds no words to search."
    assert not list(input_dir.iterdir())


# --- plain reasons --------------------------------------------------------------


@pytest.mark.parametrize("message, code", [
    ("DOCX parser returned empty content for mnote-0123456789abcdef-a.docx", "no_text"),
    ("LegacyExtractionError: extracted no usable text from mnote-0123456789abcdef-a.docx (doc_id=doc-1)", "no_text"),
    ("KeyError: \"no relationship of type 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
     "officeDocument' in collection\"", "unsupported_variant"),
    ("PDF is encrypted but no password provided", "encrypted"),
    ("File is not a zip file", "damaged"),
    ("ZIP decompression budget exceeded for mnote-0123456789abcdef-a.docx", "too_large"),
    ("Gave up after 5 attempts. Worker execution timeout after 60s", "gave_up"),
    # A file's name says nothing of why it failed.
    ("extracted no usable text from mnote-0123456789abcdef-encrypted-password-notes.pdf (doc_id=doc-1)", "no_text"),
])
def test_lightrags_messages_come_down_to_one_vocabulary(message, code):
    assert reason_code(message) == code


def test_a_password_protected_docx_is_called_encrypted_not_a_legacy_doc(shelf, library_dir):
    # What Word writes for a password: an OLE2 compound file holding an EncryptedPackage stream.
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504 + "EncryptedPackage".encode("utf-16-le") + b"\0" * 64
    (library_dir / "shelf" / "secret.docx").write_bytes(ole)
    (library_dir / "shelf" / "old.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600)
    sync_root(shelf)
    for name in ("secret.docx", "old.docx"):
        shelf.sources.filter(relative_path=name).update(
            status=Source.Status.FAILED, failure_kind=Source.Failure.PERMANENT, last_error=LEGACY_DOC_BANNER)
    secret, old = shelf.sources.get(relative_path="secret.docx"), shelf.sources.get(relative_path="old.docx")
    assert plain_reason(secret) == "Encrypted: the file is password-protected."
    assert plain_reason(old).startswith("Unsupported variant")
    with override("zh-hans"):
        assert "加密" in plain_reason(secret)
    for reason in (plain_reason(secret), plain_reason(old)):
        assert "=====" not in reason and "mnote-" not in reason and "/data/" not in reason


def test_the_dashboard_and_the_tree_say_the_plain_reason(shelf, library_dir, admin_client, fake_lightrag):
    (library_dir / "shelf" / "a.md").write_text("a")
    sync_root(shelf)
    shelf.sources.update(status=Source.Status.FAILED, failure_kind=Source.Failure.PERMANENT, last_error=LEGACY_DOC_BANNER)
    fake_lightrag.on("GET", "/health", HEALTH_IDLE)
    fake_lightrag.on("POST", "/documents/paginated", listing())
    home = admin_client.get("/").content.decode()
    assert "Unsupported variant: this version of the format cannot be read." in home
    tree = admin_client.get(f"/library/tree/?root={shelf.pk}").content.decode()
    assert '<span class="tree-reason">Unsupported variant' in tree
    source = shelf.sources.get()
    preview = admin_client.get(f"/preview/{source.pk}/").content.decode()
    assert "Not searchable: Unsupported variant" in preview
    registry = admin_client.get("/admin/library/source/").content.decode()
    assert "Unsupported variant: this version of the format cannot be read." in registry
    api = admin_client.get(f"/api/sources/{source.pk}/chunks", {"chunk_index": 0}).json()
    assert api["error"]["sourceReason"].startswith("Unsupported variant")
    for page in (home, tree, preview, registry):
        assert "=====" not in page and "mnote-0123456789abcdef" not in page and "/data/inputs" not in page
    # LightRAG's own words stay one click away for admins, naming the file by its library path.
    assert "shelf/a.md&#x27; is a legacy Word 97-2003 (.doc) document" in home


def test_retry_failed_sends_again_only_what_a_retry_can_cure_and_says_so(shelf, library_dir, admin_client):
    for name in ("gave-up.md", "damaged.md"):
        (library_dir / "shelf" / name).write_text(name)
    sync_root(shelf)
    shelf.sources.update(status=Source.Status.FAILED)
    shelf.sources.filter(relative_path="gave-up.md").update(failure_kind=Source.Failure.TRANSIENT, last_error="Gave up after 5 attempts.")
    shelf.sources.filter(relative_path="damaged.md").update(failure_kind=Source.Failure.PERMANENT, last_error="File is not a zip file")
    response = admin_client.post("/library/sources/retry-failed/", follow=True).content.decode()
    assert dict(shelf.sources.values_list("relative_path", "status")) == {"gave-up.md": "retrying", "damaged.md": "failed"}
    assert "1 failed file of the library will be sent to LightRAG again" in response
    assert "1 failed file of the library stays failed" in response
    assert retry_failed(shelf.sources.all()) == 0


# --- duplicates -------------------------------------------------------------------


def test_two_files_with_the_same_text_are_never_each_others_duplicate(shelf, library_dir, fake_lightrag):
    for name in ("a.md", "b.md"):
        (library_dir / "shelf" / name).write_text("the same words")
    sync_root(shelf)
    a, b = shelf.sources.get(relative_path="a.md"), shelf.sources.get(relative_path="b.md")
    Source.objects.update(status=Source.Status.INDEXING)
    Source.objects.filter(pk=a.pk).update(lightrag_doc_id="doc-a")
    Source.objects.filter(pk=b.pk).update(lightrag_doc_id="doc-b")
    # LightRAG lists each as the duplicate of the other.
    dup_a = document(a.lightrag_name, "failed", doc_id="doc-a", error="duplicate")
    dup_a["metadata"] = {"is_duplicate": True, "original_doc_id": "doc-b"}
    dup_b = document(b.lightrag_name, "failed", doc_id="doc-b", error="duplicate")
    dup_b["metadata"] = {"is_duplicate": True, "original_doc_id": "doc-a"}
    fake_lightrag.on("POST", "/documents/paginated", listing(dup_a, dup_b))
    with lightrag_client() as client:
        bridge_statuses(client)
    a.refresh_from_db()
    b.refresh_from_db()
    # One is sent again to be the searchable one; the other names it, by its path.
    states = {a.status, b.status}
    assert states == {Source.Status.RETRYING, Source.Status.DUPLICATE}
    duplicate, original = (a, b) if a.status == Source.Status.DUPLICATE else (b, a)
    assert duplicate.duplicate_of == original and original.duplicate_of is None
    assert plain_reason(duplicate) == "Duplicate of shelf/%s." % original.relative_path


def test_a_duplicate_of_a_file_lightrag_is_still_parsing_names_it(shelf, library_dir, fake_lightrag):
    for name in ("a.md", "b.md"):
        (library_dir / "shelf" / name).write_text("the same words")
    sync_root(shelf)
    Source.objects.update(status=Source.Status.INDEXING)
    a, b = shelf.sources.get(relative_path="a.md"), shelf.sources.get(relative_path="b.md")
    parsing = document(a.lightrag_name, "parsing", doc_id="doc-a")
    dup = document(b.lightrag_name, "failed", doc_id="doc-b", error="Identical content already exists under another "
                   "filename. Original doc_id: doc-a, Status: DocStatus.PARSING")
    dup["metadata"] = {"is_duplicate": True, "original_doc_id": "doc-a"}
    fake_lightrag.on("POST", "/documents/paginated", listing(parsing, dup))
    with lightrag_client() as client:
        bridge_statuses(client)
    b.refresh_from_db()
    assert (b.status, b.duplicate_of) == (Source.Status.DUPLICATE, a)
    assert not Job.objects.filter(kind=Job.Kind.DELETE).exists()  # nothing sent again


def test_duplicates_of_a_file_that_failed_are_sent_again(shelf, library_dir, fake_lightrag):
    for name in ("a.md", "b.md", "c.md"):
        (library_dir / "shelf" / name).write_text("the same words")
    sync_root(shelf)
    a = shelf.sources.get(relative_path="a.md")
    shelf.sources.exclude(pk=a.pk).update(status=Source.Status.DUPLICATE, duplicate_of=a)
    # The original times out once more than its retries allow: LightRAG gave up on it.
    Source.objects.filter(pk=a.pk).update(status=Source.Status.INDEXING, attempts=MAX_AUTO_RETRIES)
    timeout = document(a.lightrag_name, "failed", error="Worker execution timeout after 60s")
    fake_lightrag.on("POST", "/documents/paginated", listing(timeout))
    with lightrag_client() as client:
        bridge_statuses(client)
    assert shelf.sources.get(pk=a.pk).status == Source.Status.FAILED
    # One of the two goes again, to be the searchable one; the other follows it as its duplicate.
    assert sorted(shelf.sources.exclude(pk=a.pk).values_list("status", flat=True)) == ["duplicate", "retrying"]


# --- the worker backs off while LightRAG is busy -------------------------------------


def test_while_lightrag_is_busy_one_job_asks_with_growing_backoff_not_each_every_round(shelf, fake_lightrag):
    for i in range(16):
        Job.objects.create(kind=Job.Kind.DELETE, payload={"doc_ids": [f"doc-{i}"]})
    fake_lightrag.on("DELETE", "/documents/delete_document", "delete_document_while_busy.json")
    waits = []
    with lightrag_client() as client:
        for _ in range(6):  # six rounds, each once the jobs are due again
            Job.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
            before = timezone.now()
            run_due_jobs(client)
            waits.append(round((Job.objects.order_by("next_attempt_at").first().next_attempt_at - before).total_seconds()))
    calls = [r for r in fake_lightrag.requests if r.method == "DELETE"]
    assert len(calls) == 6  # one a round, not sixteen
    # Every job waits with the one that asked, its wait doubling up to the cap.
    assert waits == [2, 4, 8, 16, 30, 30]
    assert Job.objects.filter(state=Job.State.PENDING).count() == 16  # nothing given up


# --- a large file does not hold the small ones ----------------------------------------


def test_small_files_are_scanned_before_a_large_one_queued_first(shelf, library_dir, input_dir, settings):
    settings.MNOTE_SCAN_ALONE_KB = 1
    (library_dir / "shelf" / "big.md").write_text("long text " * 400)
    sync_root(shelf)
    for i in range(3):
        (library_dir / "shelf" / f"small-{i}.md").write_text(f"small note {i}")
    sync_root(shelf)
    linked, more = link_for_scan()
    assert sorted(Source.objects.get(pk=pk).relative_path for pk in linked) == ["small-0.md", "small-1.md", "small-2.md"]
    assert more  # the large one waits for a scan of its own
    shelf.sources.filter(pk__in=linked).update(status=Source.Status.INDEXING)
    linked, more = link_for_scan()
    assert [Source.objects.get(pk=pk).relative_path for pk in linked] == ["big.md"] and not more


# --- on the real embedded stack -------------------------------------------------------


@pytest.fixture(scope="module")
def kinds_shelf(embedded_stack, tmp_path_factory):
    """An EPUB, a web page and an RTF letter: kinds LightRAG 1.5.7 cannot read itself."""
    from tests import preview_files
    from tests.live_stack import make_shelf

    def fill(folder):
        shutil.copy(EPUB, folder / "alice.epub")
        (folder / "mirror.html").write_text(PAGE)
        preview_files.make_rtf(folder / "menu.rtf")

    return make_shelf(embedded_stack, tmp_path_factory, "Kinds", "kinds", fill)


@pytest.mark.integration
def test_kinds_lightrag_cannot_read_are_searchable_and_cited_at_their_words(kinds_shelf, settings, member, client):
    from mnote.search.answers import full_library_search
    from tests.live_stack import use_shelf

    root = use_shelf(kinds_shelf, settings)
    assert set(root.sources.values_list("status", flat=True)) == {"indexed"}
    page = root.sources.get(relative_path="mirror.html")
    mapped = full_library_search(member, "re-aluminise the primary mirror every two years", mode="naive")
    cited = next(c for c in mapped.citations if c.source_id == page.pk)
    assert "Re-aluminise the primary mirror" in cited.display_quote
    assert "analytics" not in cited.display_quote and "<" not in cited.display_quote
    # Its preview finds the cited words in the original, exactly.
    client.force_login(member)
    found = client.get(f"/preview/{page.pk}/anchor", {"evidence": cited.evidence_text, "chunk_id": cited.locator.get("chunkId", "")}).json()
    assert found["anchor"]["status"] == "exact", found
    book = root.sources.get(relative_path="alice.epub")
    mapped = full_library_search(member, "Alice down the rabbit hole", mode="naive")
    assert any(c.source_id == book.pk for c in mapped.citations), mapped.dropped


def test_a_package_small_on_disk_but_long_in_text_is_scanned_after_the_small_files(shelf, library_dir, input_dir, settings):
    import zipfile

    settings.MNOTE_SCAN_ALONE_KB = 100
    # 300 KB of chapter text that compresses to a few KB: many chunks, a small file.
    with zipfile.ZipFile(library_dir / "shelf" / "book.epub", "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("OEBPS/chapter.xhtml", "<p>the mirror was cleaned again</p>" * 9000)
    assert (library_dir / "shelf" / "book.epub").stat().st_size < 100 * 1024
    sync_root(shelf)
    (library_dir / "shelf" / "note.md").write_text("a small note")
    sync_root(shelf)
    linked, more = link_for_scan()
    assert [Source.objects.get(pk=pk).relative_path for pk in linked] == ["note.md"] and more
