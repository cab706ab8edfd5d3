"""The library's management commands: add, list, remove and sync roots,
reindex one source, clear stale records, and the library status.

    nice .venv/bin/python -m pytest tests/library/test_library_commands.py
"""

import io
import os

import httpx
import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from mnote.library.models import IndexedRoot, Job, Source
from tests.files import write_files

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def papers_dir(library_dir, input_dir):
    return write_files(library_dir / "papers", {
        "intro.md": "# Intro\nWelcome.",
        "2024/report.txt": "Quarterly report.",
        "drafts/idea.md": "Not yet.",
        "photo.heic": b"\x00",
    })  # fmt: skip


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def statuses(root):
    return dict(root.sources.values_list("relative_path", "status"))


def mark_indexed(source, doc_id):
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXED, lightrag_doc_id=doc_id, stale=False)


# --- add_root ---------------------------------------------------------------


@pytest.fixture
def escape_link(library_dir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, library_dir / "escape")


@pytest.mark.parametrize(
    "path, message",
    [
        ("../x", "contains “..”"),
        ("/etc", "is absolute"),
        ("escape", "leads outside the library base directory"),
        ("nowhere", "does not exist in the library base directory"),
    ],
)
def test_it_refuses_a_root_outside_the_base_directory(library_dir, escape_link, path, message):
    with pytest.raises(CommandError, match=message):
        run("add_root", path)
    assert not IndexedRoot.objects.exists()


def test_it_adds_a_root_and_registers_exactly_its_files(papers_dir, input_dir):
    output = run("add_root", "papers/", "--name", "Papers", "--exclude", "**/drafts/**")

    root = IndexedRoot.objects.get()
    assert (root.name, root.path, root.exclude_patterns) == ("Papers", "papers", ["**/drafts/**"])
    assert "Added root “Papers” (papers)" in output
    assert "Papers: 2 new, 0 changed, 0 missing, 0 unchanged, 1 excluded, 2 queued" in output
    assert statuses(root) == {"intro.md": "queued", "2024/report.txt": "queued", "drafts/idea.md": "excluded"}
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).count() == 1
    assert list(input_dir.iterdir()) == []  # linked by the worker, right before its scan
    assert (papers_dir / "intro.md").read_text() == "# Intro\nWelcome."


def test_it_adds_a_root_without_syncing_when_asked(papers_dir):
    output = run("add_root", "papers", "--no-sync", "--no-recursive", "--no-run-on-change", "--disabled")
    root = IndexedRoot.objects.get()
    assert (root.name, root.recursive, root.run_on_change, root.enabled) == ("papers", False, False, False)
    assert "Not synced yet" in output
    assert not root.sources.exists()


def test_it_limits_a_root_to_the_groups_given(papers_dir):
    chemists = Group.objects.create(name="chemists")
    run("add_root", "papers", "--group", "chemists", "--no-sync")
    root = IndexedRoot.objects.get()
    assert not root.visible_to_all
    assert list(root.visible_to_groups.all()) == [chemists]


def test_it_refuses_an_unknown_group(papers_dir):
    with pytest.raises(CommandError, match="No group named “physicists”"):
        run("add_root", "papers", "--group", "physicists")
    assert not IndexedRoot.objects.exists()


def test_it_refuses_a_second_root_with_the_same_name_or_folder(papers_dir):
    run("add_root", "papers", "--no-sync")
    with pytest.raises(CommandError, match="Another root already has this name"):
        run("add_root", "papers/2024", "--name", "papers")
    with pytest.raises(CommandError, match="This folder is already a root"):
        run("add_root", "./papers", "--name", "Again")


# --- list_roots / remove_root ------------------------------------------------


def test_it_lists_roots_with_their_sources_per_status(papers_dir):
    assert "No roots yet" in run("list_roots")
    run("add_root", "papers", "--name", "Papers", "--exclude", "**/drafts/**")
    output = run("list_roots")
    assert "Papers: papers — enabled; recursive; run on change; visible to all; excludes **/drafts/**" in output
    assert "3 sources (1 excluded, 2 queued)" in output


def test_it_removes_a_root_and_its_lightrag_documents_but_not_its_files(papers_dir, input_dir):
    run("add_root", "papers", "--name", "Papers")
    root = IndexedRoot.objects.get()
    mark_indexed(root.sources.get(relative_path="intro.md"), "doc-intro")

    output = run("remove_root", "Papers", "--yes")

    assert "Removed root “Papers” and its 3 registry rows" in output
    assert "LightRAG documents of 3 files are being removed" in output
    assert not IndexedRoot.objects.exists() and not Source.objects.exists()
    delete = Job.objects.get(kind=Job.Kind.DELETE)
    assert delete.payload == {"doc_ids": ["doc-intro"]} and delete.state == Job.State.PENDING
    assert list(input_dir.iterdir()) == []  # our links go, the user's files stay
    assert (papers_dir / "intro.md").exists() and (papers_dir / "2024" / "report.txt").exists()


def test_it_asks_before_removing_a_root(papers_dir, monkeypatch):
    run("add_root", "papers", "--no-sync")
    monkeypatch.setattr("builtins.input", lambda question: "n")
    with pytest.raises(CommandError, match="Not removed"):
        run("remove_root", "papers")
    monkeypatch.setattr("builtins.input", lambda question: "y")
    root_id = IndexedRoot.objects.get().pk
    assert "Removed root “papers”" in run("remove_root", str(root_id))


def test_it_says_which_roots_exist_when_removing_an_unknown_one(papers_dir):
    run("add_root", "papers", "--no-sync")
    with pytest.raises(CommandError, match=r"No root named or numbered “books” \(roots: papers\)"):
        run("remove_root", "books", "--yes")


# --- sync_library / reindex ----------------------------------------------------


def documents_listing(*documents):
    """A /documents/paginated body in the shape LightRAG 1.5.7 answers."""
    items = [
        {"id": doc_id, "file_path": name, "status": status, "chunks_count": 2, "content_summary": "", "metadata": {}}
        for doc_id, name, status in documents
    ]
    pagination = {"page": 1, "page_size": 200, "total_count": len(items), "total_pages": 1, "has_next": False}
    return 200, {"documents": items, "pagination": pagination, "status_counts": {}}


def test_it_syncs_every_root_and_reports_each(papers_dir, library_dir):
    (library_dir / "books").mkdir()
    (library_dir / "books" / "a.md").write_text("A")
    run("add_root", "papers", "--no-sync")
    run("add_root", "books", "--no-sync")
    output = run("sync_library")
    assert output.splitlines() == [
        "books: 1 new, 0 changed, 0 missing, 0 unchanged, 0 excluded, 1 queued",
        "papers: 3 new, 0 changed, 0 missing, 0 unchanged, 0 excluded, 3 queued",
    ]
    assert "0 new" in run("sync_library", "books")
    with pytest.raises(CommandError, match="No root named or numbered “films”"):
        run("sync_library", "films")


def test_it_waits_until_lightrag_has_indexed_the_synced_files(library_dir, input_dir, fake_lightrag):
    (library_dir / "notes").mkdir()
    (library_dir / "notes" / "a.md").write_text("A")
    run("add_root", "notes", "--no-sync")
    # The name LightRAG will report is the one sync gives the file's link.
    run("sync_library")
    name = Source.objects.get().lightrag_name
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    fake_lightrag.on("POST", "/documents/paginated", documents_listing(("doc-a", name, "processed")))

    output = run("sync_library", "--wait", "5")

    assert "Settled: nothing in progress." in output
    source = Source.objects.get()
    assert (source.status, source.lightrag_doc_id, source.chunk_count) == ("indexed", "doc-a", 2)


def test_it_says_what_is_still_in_progress_when_lightrag_is_down(library_dir, input_dir, fake_lightrag, monkeypatch):
    monkeypatch.setattr("mnote.library.worker.time.sleep", lambda seconds: None)
    (library_dir / "notes").mkdir()
    (library_dir / "notes" / "a.md").write_text("A")
    run("add_root", "notes", "--no-sync")
    fake_lightrag.on("POST", "/documents/scan", httpx.ConnectError("connection refused"))
    fake_lightrag.on("POST", "/documents/paginated", httpx.ConnectError("connection refused"))

    output = run("sync_library", "--wait", "0")

    assert "Not settled after 0 s: 1 queued, 1 jobs owed to LightRAG, last error: Cannot reach LightRAG" in output


def test_it_reindexes_a_source_named_by_its_library_path(papers_dir, input_dir):
    run("add_root", "papers")
    source = Source.objects.get(relative_path="2024/report.txt")
    mark_indexed(source, "doc-report")

    assert run("reindex", "papers/2024/report.txt").strip() == "papers/2024/report.txt: queued for reindexing."
    source.refresh_from_db()
    assert source.status == Source.Status.QUEUED and source.generation == 1
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-report"]}


def test_it_reindexes_a_source_by_id_and_notices_a_missing_file(papers_dir, input_dir):
    run("add_root", "papers")
    source = Source.objects.get(relative_path="intro.md")
    (papers_dir / "intro.md").unlink()
    assert "the file is gone" in run("reindex", "--id", str(source.pk))
    source.refresh_from_db()
    assert source.stale and source.deleted_at is not None


def test_it_suggests_library_paths_for_an_unknown_source(papers_dir, input_dir):
    run("add_root", "papers")
    with pytest.raises(CommandError, match="Did you mean: papers/2024/report.txt"):
        run("reindex", "2024/report.txt")
    with pytest.raises(CommandError, match="by its library path or by --id"):
        run("reindex")
    with pytest.raises(CommandError, match="No source with id 999"):
        run("reindex", "--id", "999")


# --- prune_registry / library_status -------------------------------------------


def test_it_clears_stale_records_but_keeps_deletes_in_flight(library_dir):
    (library_dir / "papers").mkdir()
    root = IndexedRoot.objects.create(name="Papers", path="papers")
    rows = [("gone.md", "removed"), ("bad.md", "failed"), ("in-flight.md", "delete_submitted"), ("ok.md", "indexed")]
    for name, status in rows:
        Source.objects.create(root=root, relative_path=name, absolute_path="/x", status=status)

    assert run("prune_registry").startswith("Cleared 2 stale records")
    assert set(root.sources.values_list("relative_path", flat=True)) == {"in-flight.md", "ok.md"}


def test_it_reports_lightrag_documents_no_source_maps_to(library_dir, fake_lightrag):
    (library_dir / "papers").mkdir()
    root = IndexedRoot.objects.create(name="Papers", path="papers")
    # Mapped by doc id, so LightRAG's beta.md is not "unmapped".
    beta_id = "doc-8f0e7ea1689dd00378a7866c4934ca47"
    Source.objects.create(
        root=root, relative_path="beta.md", absolute_path="/x", status="indexed", lightrag_doc_id=beta_id
    )
    Source.objects.create(root=root, relative_path="new.md", absolute_path="/y", status="queued")
    fake_lightrag.on("POST", "/documents/paginated", "documents_paginated_after_delete.json")

    output = run("library_status")

    assert "Registered in MNote: 2 sources\n  queued: 1\n  indexed: 1\n" in output
    assert "In LightRAG: 5 documents (2 failed, 3 processed)" in output
    assert "LightRAG unmapped: 4" in output
    assert "  doc-5357e62ab9232359af10ae9de24d6fec  delta_note.txt  processed" in output
    assert "beta.md" not in output


def test_it_reports_lightrag_unavailable_and_still_succeeds(library_dir, fake_lightrag):
    fake_lightrag.on("POST", "/documents/paginated", httpx.ConnectError("connection refused"))

    output = run("library_status")

    assert "Registered in MNote: 0 sources" in output
    assert "LightRAG unavailable: Cannot reach LightRAG at" in output
    assert "LightRAG unmapped" not in output
