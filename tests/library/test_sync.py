import os
import time

import pytest

from mnote.library.ingest import file_sha256
from mnote.library.models import IndexedRoot, Job, Source
from mnote.library.actions import delete_index, prune_registry, reindex_source
from mnote.library.sync import sync_root
from tests.files import write_files

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def papers(library_dir, input_dir):
    write_files(library_dir / "papers", {
        "intro.md": "# Intro\nWelcome.",
        "2024/report.txt": "Quarterly report.",
        "private/draft.md": "Not for the library.",
        "photo.heic": b"\x00",
    })  # fmt: skip
    return IndexedRoot.objects.create(name="Papers", path="papers", exclude_patterns=["**/private/**"])


def statuses(root):
    return dict(root.sources.values_list("relative_path", "status"))


def mark_indexed(source, doc_id):
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXED, lightrag_doc_id=doc_id, stale=False)
    Job.objects.all().delete()


def test_it_registers_and_queues_exactly_the_root_files(papers, input_dir):
    summary = sync_root(papers)
    assert (summary.new, summary.excluded, summary.queued) == (2, 1, 2)
    assert statuses(papers) == {"intro.md": "queued", "2024/report.txt": "queued", "private/draft.md": "excluded"}
    # One scan owed; the worker links the files into LightRAG's inputs right before it, not the sync.
    assert Job.objects.filter(kind=Job.Kind.SCAN).count() == 1
    assert list(input_dir.iterdir()) == []


def test_it_recognises_unchanged_files_without_hashing_them(papers, monkeypatch):
    sync_root(papers)
    monkeypatch.setattr("mnote.library.sync_rows.read_file", lambda path, *a, **k: pytest.fail(f"re-hashed {path}"))
    summary = sync_root(papers)
    assert (summary.new, summary.changed, summary.unchanged, summary.queued) == (0, 0, 2, 0)


def test_it_marks_an_edited_file_stale_and_replaces_its_document(papers, library_dir):
    sync_root(papers)
    source = papers.sources.get(relative_path="intro.md")
    mark_indexed(source, "doc-old")
    old_name = Source.objects.get(pk=source.pk).lightrag_name
    path = library_dir / "papers" / "intro.md"
    path.write_text("# Intro\nWelcome, edited.")
    os.utime(path, (time.time() + 5, time.time() + 5))

    summary = sync_root(papers)
    assert summary.changed == 1 and summary.queued == 1
    source.refresh_from_db()
    assert source.stale and source.status == Source.Status.QUEUED
    assert source.lightrag_doc_id == "" and source.lightrag_name != old_name
    assert source.sha256 == file_sha256(path)
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-old"]}
    assert not source in Source.objects.citable()


def test_it_waits_as_stale_when_the_root_is_not_run_on_change(papers, library_dir):
    papers.run_on_change = False
    papers.save()
    sync_root(papers)
    mark_indexed(papers.sources.get(relative_path="intro.md"), "doc-old")
    path = library_dir / "papers" / "intro.md"
    path.write_text("changed")
    os.utime(path, (time.time() + 5, time.time() + 5))
    assert sync_root(papers).queued == 0
    assert statuses(papers)["intro.md"] == "stale"


def test_it_submits_a_delete_for_a_file_that_is_gone(papers, library_dir):
    sync_root(papers)
    source = papers.sources.get(relative_path="2024/report.txt")
    mark_indexed(source, "doc-report")
    (library_dir / "papers" / "2024" / "report.txt").unlink()

    assert sync_root(papers).missing == 1
    source.refresh_from_db()
    assert source.status == Source.Status.DELETE_SUBMITTED
    assert source.stale and source.deleted_at is not None and source.lightrag_doc_id == ""
    assert Job.objects.get(kind=Job.Kind.DELETE, source=source).payload == {"doc_ids": ["doc-report"]}


def test_it_brings_back_a_file_that_returns(papers, library_dir):
    sync_root(papers)
    path = library_dir / "papers" / "intro.md"
    content = path.read_bytes()
    path.unlink()
    sync_root(papers)
    assert statuses(papers)["intro.md"] == "removed"
    path.write_bytes(content)
    assert sync_root(papers).queued == 1
    source = papers.sources.get(relative_path="intro.md")
    assert source.status == Source.Status.QUEUED and source.deleted_at is None


def test_it_caps_one_batch_and_sends_the_rest_next_time(papers, library_dir, settings):
    for i in range(5):
        (library_dir / "papers" / f"note-{i}.txt").write_text(f"note {i}")
    summary = sync_root(papers, batch_limit=3)
    assert (summary.new, summary.queued, summary.capped) == (7, 3, 4)
    assert sync_root(papers, batch_limit=3).queued == 3
    assert sync_root(papers, batch_limit=3).queued == 1


def test_it_refuses_a_symlink_pointing_outside_the_base(papers, library_dir, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    os.symlink(outside, library_dir / "papers" / "escape.md")
    summary = sync_root(papers)
    assert summary.refused == ["escape.md"]
    assert "escape.md" not in statuses(papers)


def test_it_takes_a_disabled_root_out_of_lightrag_and_brings_it_back(papers):
    sync_root(papers)
    mark_indexed(papers.sources.get(relative_path="intro.md"), "doc-intro")
    papers.enabled = False
    papers.save()
    summary = sync_root(papers)
    assert summary.disabled == 2 and "root disabled" in summary.line()
    assert statuses(papers)["intro.md"] == "delete_submitted"
    Source.objects.filter(relative_path="intro.md").update(status=Source.Status.REMOVED)

    papers.enabled = True
    papers.save()
    assert sync_root(papers).queued == 2
    assert statuses(papers)["intro.md"] == "queued"


def test_it_reindexes_under_a_new_name_and_deletes_the_old_document(papers):
    sync_root(papers)
    source = papers.sources.get(relative_path="intro.md")
    mark_indexed(source, "doc-intro")
    source.refresh_from_db()
    old_name = source.lightrag_name
    assert reindex_source(source) == "queued"
    source.refresh_from_db()
    assert source.lightrag_name != old_name and source.status == Source.Status.QUEUED
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-intro"]}


def test_it_deletes_the_index_but_keeps_the_file(papers, library_dir):
    sync_root(papers)
    source = papers.sources.get(relative_path="intro.md")
    mark_indexed(source, "doc-intro")
    source.refresh_from_db()
    delete_index(source)
    assert source.status == Source.Status.DELETE_SUBMITTED
    assert (library_dir / "papers" / "intro.md").read_text() == "# Intro\nWelcome."
    # A later sync does not send it back on its own.
    Source.objects.filter(pk=source.pk).update(status=Source.Status.REMOVED)
    assert sync_root(papers).queued == 0


def test_it_prunes_stale_records_but_never_a_delete_in_flight(papers):
    root = papers
    make = lambda name, status, **kw: Source.objects.create(root=root, relative_path=name, absolute_path="/x", status=status, **kw)
    make("removed.md", "removed")
    make("failed.md", "failed")
    make("stale.md", "stale", stale=True)
    make("in-flight.md", "delete_submitted", stale=True)
    make("fine.md", "indexed")
    assert prune_registry() == 3
    assert set(root.sources.values_list("relative_path", flat=True)) == {"in-flight.md", "fine.md"}


# --- the cost of a sync (issue 17): what it reads, when, and how it asks the database ---


@pytest.fixture
def reads(monkeypatch):
    """Every read of a file's bytes by a sync, with whether a transaction of
    the sync's own (nested in the test's) was open at the time."""
    from django.db import connection

    from mnote.library import sync, sync_rows
    from mnote.workspace import index as workspace

    seen = []

    def spy(name, real):
        def wrapper(*args, **kwargs):
            seen.append((name, bool(connection.savepoint_ids)))
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(sync_rows, "read_file", spy("hash", sync_rows.read_file))
    monkeypatch.setattr(sync, "held_back_reason", spy("text size", sync.held_back_reason))
    monkeypatch.setattr(workspace, "open_source_file", spy("workspace", workspace.open_source_file))
    return seen


def test_it_reads_no_file_while_the_root_is_locked(papers, library_dir, reads):
    sync_root(papers)
    reads.clear()
    path = library_dir / "papers" / "intro.md"
    path.write_text("# Intro\nWelcome, edited.")
    os.utime(path, (time.time() + 5, time.time() + 5))
    (library_dir / "papers" / "2024" / "new.txt").write_text("A new file.")
    sync_root(papers)
    # One read per new or changed file: the workspace index takes the body the hash was read from.
    assert sorted(name for name, _ in reads) == ["hash", "hash", "text size", "text size"]
    assert [name for name, locked in reads if locked] == []


def test_it_asks_the_database_the_same_few_questions_however_many_files_are_unchanged(
    papers, library_dir, django_assert_max_num_queries
):
    for i in range(60):
        (library_dir / "papers" / "2024" / f"note-{i:02d}.md").write_text(f"note {i}")
    sync_root(papers)
    # The root, its rows, the lock, the workspace index's one question (and savepoints).
    with django_assert_max_num_queries(8):
        summary = sync_root(papers)
    assert (summary.new, summary.changed, summary.unchanged, summary.queued) == (0, 0, 62, 0)


def test_it_sees_a_file_replaced_with_the_same_size_and_time(papers, library_dir):
    """An editor's save-by-rename, or a copy that keeps the time: same size,
    same mtime, another inode — the content is read again."""
    sync_root(papers)
    mark_indexed(papers.sources.get(relative_path="intro.md"), "doc-old")
    path = library_dir / "papers" / "intro.md"
    before = path.stat()
    replacement = library_dir / "papers" / ".intro.md.swp"
    replacement.write_text("# Intro\nWelcomE.")  # same length
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, path)
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns

    summary = sync_root(papers)
    assert summary.changed == 1 and summary.queued == 1
    source = papers.sources.get(relative_path="intro.md")
    assert source.sha256 == file_sha256(path) and source.stale
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-old"]}


def test_rows_fingerprinted_before_the_inode_was_kept_are_not_read_again(papers, monkeypatch):
    sync_root(papers)
    Source.objects.update(mtime_ns=None, inode=None)
    monkeypatch.setattr("mnote.library.sync_rows.read_file", lambda path, *a, **k: pytest.fail(f"re-hashed {path}"))
    summary = sync_root(papers)
    assert (summary.changed, summary.unchanged, summary.queued) == (0, 2, 0)
    assert not Source.objects.filter(status="queued", inode__isnull=True).exists()
    # Filled in once; the next sync recognises them without a write.
    assert sync_root(papers).unchanged == 2


def test_a_sync_that_finds_its_new_files_registered_meanwhile_adds_no_second_row(papers, monkeypatch, input_dir):
    """Another sync of the root ran between this one's look and its lock."""
    from mnote.library import sync

    real_look = sync._look
    other = []

    def look_then_let_another_sync_run(root):
        found = real_look(root)
        if not other:
            other.append(None)
            other[0] = sync_root(papers)
        return found

    monkeypatch.setattr(sync, "_look", look_then_let_another_sync_run)
    summary = sync_root(papers)
    assert other[0].queued == 2
    assert (summary.new, summary.unchanged, summary.queued) == (0, 2, 0)
    assert papers.sources.count() == 3  # two files and the excluded draft, once each
    assert papers.sources.filter(status="queued").count() == 2
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).count() == 1


def test_new_rows_written_in_one_insert_read_back_as_the_orm_would_have_written_them(papers, library_dir, input_dir):
    from django.utils import timezone

    before = timezone.now()
    sync_root(papers)
    source = papers.sources.get(relative_path="2024/report.txt")
    path = library_dir / "papers" / "2024" / "report.txt"
    stat = path.stat()
    assert source.absolute_path == str(path) and source.sha256 == file_sha256(path)
    assert (source.size, source.mtime_ns, source.mtime) == (stat.st_size, stat.st_mtime_ns, stat.st_mtime)
    assert source.lightrag_name == source.unique_lightrag_name()
    assert (source.stale, source.generation, source.attempts, source.lightrag_doc_id, source.deleted_at) == (False, 0, 0, "", None)
    # Every column the sync does not set holds the model's default (written as SQL literals, not bound per row).
    set_by_sync = {"id", "root_id", "relative_path", "absolute_path", "sha256", "size", "mtime", "mtime_ns", "inode",
                   "lightrag_name", "status", "excluded_by", "created_at", "updated_at"}
    defaults = {f.attname: f.get_default() for f in Source._meta.concrete_fields if f.attname not in set_by_sync}
    assert len(defaults) == 15
    assert {name: getattr(source, name) for name in defaults} == defaults
    assert before <= source.created_at <= timezone.now() and source.updated_at == source.created_at
    draft = papers.sources.get(relative_path="private/draft.md")
    assert (draft.status, draft.excluded_by, draft.sha256) == ("excluded", "**/private/**", "")
    # The rows are ordinary rows: the ORM saves them as any other.
    source.progress = "parsing"
    source.save()
    assert Source.objects.get(pk=source.pk).progress == "parsing"


def test_a_resync_of_unchanged_files_writes_nothing(papers, library_dir):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for i in range(30):
        (library_dir / "papers" / "2024" / f"note-{i:02d}.md").write_text(f"note {i}")
    sync_root(papers)
    with CaptureQueriesContext(connection) as queries:
        summary = sync_root(papers)
    assert (summary.new, summary.changed, summary.missing, summary.unchanged) == (0, 0, 0, 32)
    writes = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == []


def test_workspace_search_finds_the_words_of_new_and_changed_files(papers, library_dir, member):
    from mnote.workspace.index import workspace_search

    sync_root(papers)
    assert [h.source.relative_path for h in workspace_search(member, "quarterly")] == ["2024/report.txt"]
    (library_dir / "papers" / "2024" / "minutes.md").write_text("# Minutes\nThe telescope dome was resurfaced.")
    path = library_dir / "papers" / "intro.md"
    path.write_text("# Intro\nWelcome to the observatory archive.")
    os.utime(path, (time.time() + 5, time.time() + 5))
    sync_root(papers)
    assert [h.source.relative_path for h in workspace_search(member, "resurfaced")] == ["2024/minutes.md"]
    assert [h.source.relative_path for h in workspace_search(member, "observatory")] == ["intro.md"]
    assert workspace_search(member, "welcome") and workspace_search(member, "Welcome.")[0].snippet.count("observatory") == 1
    # An excluded file's words are never indexed.
    assert workspace_search(member, "library") == []


def test_workspace_search_finds_a_text_file_too_big_for_the_sync_to_keep(papers, library_dir, member, monkeypatch):
    """A bigger file is hashed in blocks by the sync and read by the index itself afterwards."""
    from mnote.library import sync_rows
    from mnote.workspace.index import workspace_search

    monkeypatch.setattr(sync_rows, "ONE_READ_BYTES", 64)
    (library_dir / "papers" / "long.txt").write_text("Filler line.\n" * 40 + "The spectrograph needs a new grating.\n")
    sync_root(papers)
    source = papers.sources.get(relative_path="long.txt")
    assert source.sha256 == file_sha256(library_dir / "papers" / "long.txt")
    assert [h.source.relative_path for h in workspace_search(member, "spectrograph grating")] == ["long.txt"]


def test_a_text_file_that_is_not_text_is_registered_but_not_indexed_for_workspace_search(papers, library_dir, member):
    from mnote.workspace.index import workspace_search

    (library_dir / "papers" / "blob.txt").write_bytes(b"\x00\x01binary quasar\x00" * 10)
    summary = sync_root(papers)
    assert summary.new == 3 and statuses(papers)["blob.txt"] == "queued"
    assert workspace_search(member, "quasar") == []



def test_files_with_nothing_for_the_workspace_index_are_not_opened_again_by_each_sync(papers, library_dir, monkeypatch):
    from mnote.workspace import index as workspace

    (library_dir / "papers" / "blob.txt").write_bytes(b"\x00\x01binary\x00" * 10)
    (library_dir / "papers" / "scan.pdf").write_bytes(b"%PDF-1.4 not really")
    (library_dir / "papers" / "big.md").write_text("# Big\n" + "text " * 100)
    monkeypatch.setattr("mnote.library.sync_rows.ONE_READ_BYTES", 64)  # big.md: read by the index, not the sync
    assert sync_root(papers).new == 5
    monkeypatch.setattr(workspace, "open_source_file", lambda source: pytest.fail(f"opened {source} again"))
    assert sync_root(papers).unchanged == 5


def test_a_file_swapped_for_a_link_out_of_the_root_after_the_walk_is_not_read(papers, library_dir, tmp_path, member, monkeypatch):
    from mnote.library import sync
    from mnote.workspace.index import workspace_search

    secret = tmp_path / "secret.md"
    secret.write_text("The vault combination is plutonium.")
    real_expand = sync.expand_root

    def expand_then_swap(*args, **kwargs):
        found = real_expand(*args, **kwargs)
        intro = library_dir / "papers" / "intro.md"
        intro.unlink()
        os.symlink(secret, intro)
        return found

    monkeypatch.setattr(sync, "expand_root", expand_then_swap)
    summary = sync_root(papers)
    assert summary.new == 1  # report.txt; intro.md was gone as the walk saw it
    assert "intro.md" not in statuses(papers)
    assert workspace_search(member, "plutonium") == []


def test_a_file_swapped_for_a_fifo_after_the_walk_neither_hangs_the_sync_nor_is_registered(papers, library_dir, monkeypatch):
    from mnote.library import sync

    real_expand = sync.expand_root

    def expand_then_swap(*args, **kwargs):
        found = real_expand(*args, **kwargs)
        intro = library_dir / "papers" / "intro.md"
        intro.unlink()
        os.mkfifo(intro)  # nobody writes to it: a blocking open would wait forever
        return found

    monkeypatch.setattr(sync, "expand_root", expand_then_swap)
    summary = sync_root(papers)
    assert summary.new == 1 and "intro.md" not in statuses(papers)
    assert (library_dir / "papers" / "intro.md").is_fifo()  # left as it is


def test_the_workspace_index_decodes_what_the_sync_read_as_the_preview_does(papers, library_dir, member):
    from mnote.preview.text_render import read_text
    from mnote.workspace.models import WorkspaceText
    from mnote.workspace.index import workspace_search

    (library_dir / "papers" / "bom.md").write_bytes("\ufeff# Zebra crossing\nStripes.".encode("utf-8"))
    (library_dir / "papers" / "gbk.txt").write_bytes("截止日期是周五。".encode("gb18030"))
    (library_dir / "papers" / "latin.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    assert sync_root(papers).new == 5
    for name in ("bom.md", "gbk.txt", "latin.txt", "intro.md"):
        body = WorkspaceText.objects.get(source__relative_path=name).body
        assert body == read_text(library_dir / "papers" / name)[0]
    assert WorkspaceText.objects.get(source__relative_path="bom.md").body.startswith("# Zebra")
    assert [h.source.relative_path for h in workspace_search(member, "zebra")] == ["bom.md"]
    assert [h.source.relative_path for h in workspace_search(member, "截止日期")] == ["gbk.txt"]


def test_a_sync_leaves_the_garbage_collector_as_it_found_it(papers, monkeypatch):
    import gc

    from mnote.library import sync

    assert gc.isenabled()
    seen = []
    real_expand = sync.expand_root
    monkeypatch.setattr(sync, "expand_root", lambda *a, **k: (seen.append(gc.isenabled()), real_expand(*a, **k))[1])
    sync_root(papers)
    assert seen == [False] and gc.isenabled()

    monkeypatch.setattr(sync, "expand_root", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        sync_root(papers)
    assert gc.isenabled()

    gc.disable()
    try:
        monkeypatch.setattr(sync, "expand_root", real_expand)
        sync_root(papers)
        assert not gc.isenabled()  # paused by the caller: left paused
    finally:
        gc.enable()
