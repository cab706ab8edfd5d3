"""Symlinks and swaps: a file is in a root only when its real path is inside
that root's real path, and every open of a user's file re-checks that at open
time (issue 9, findings 1 and 2), on the real app.

    nice .venv/bin/python -m pytest tests/library/test_source_files.py -q
"""

import os

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from mnote.library import source_files
from mnote.library.models import IndexedRoot, Source
from mnote.library.source_files import SourceUnavailable, open_source_file
from mnote.library.sync import sync_root
from mnote.workspace.models import WorkspaceText

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

SECRET = "Restricted yield: 82 percent"
PASSWD = "root:x:0:0:root:/root:/bin/bash"


@pytest.fixture
def two_roots(library_dir, input_dir, tmp_path):
    """An open root and a restricted one; a fake system file outside the library."""
    (library_dir / "open").mkdir()
    (library_dir / "restricted").mkdir()
    (library_dir / "open" / "a.txt").write_text("Open notes about telescopes.")
    (library_dir / "restricted" / "secret.md").write_text(f"# Lab\n{SECRET}.")
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "passwd").write_text(PASSWD + "\n")
    chemists = Group.objects.create(name="chemists")
    open_root = IndexedRoot.objects.create(name="Open", path="open")
    restricted = IndexedRoot.objects.create(name="Restricted", path="restricted", visible_to_all=False)
    restricted.visible_to_groups.add(chemists)
    return open_root, restricted, outside / "passwd"


def indexed(source: Source) -> Source:
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXED, stale=False, lightrag_doc_id="doc-x")
    return Source.objects.select_related("root").get(pk=source.pk)


def swap_for_symlink(path, target):
    path.unlink()
    os.symlink(target, path)


def test_a_symlink_to_another_roots_file_is_refused_and_named_to_admins(two_roots, library_dir, member_client):
    open_root, restricted, _ = two_roots
    os.symlink(library_dir / "restricted" / "secret.md", library_dir / "open" / "link.md")

    summary = sync_root(open_root)
    assert summary.refused == ["link.md"]
    assert "symlinks refused (their target is outside this root): link.md" in summary.line()
    assert list(open_root.sources.values_list("relative_path", flat=True)) == ["a.txt"]
    sync_root(restricted)
    assert list(Source.objects.filter(relative_path__endswith="secret.md").values_list("root__name", flat=True)) == [
        "Restricted"
    ]
    # The member never meets the secret: not in the workspace index of the open root, not by search.
    assert not WorkspaceText.objects.filter(source__root=open_root, body__contains="Restricted yield").exists()
    page = member_client.get("/search/", {"q": "Restricted yield", "mode": "workspace"})
    assert SECRET.encode() not in page.content


def test_a_symlink_to_a_file_of_the_same_root_still_counts(two_roots, library_dir):
    open_root, _, _ = two_roots
    (library_dir / "open" / "sub").mkdir()
    (library_dir / "open" / "sub" / "b.md").write_text("Same root.")
    os.symlink(library_dir / "open" / "sub" / "b.md", library_dir / "open" / "alias.md")
    summary = sync_root(open_root)
    assert summary.refused == []
    assert set(open_root.sources.values_list("relative_path", flat=True)) == {"a.txt", "alias.md", "sub/b.md"}


@pytest.mark.parametrize("system_file", ["/etc/passwd", "fake"])
def test_a_file_swapped_for_a_symlink_to_a_system_file_is_never_served(two_roots, library_dir, member_client, system_file):
    open_root, _, passwd = two_roots
    passwd = passwd if system_file == "fake" or not os.path.exists(system_file) else system_file
    sync_root(open_root)
    source = indexed(open_root.sources.get(relative_path="a.txt"))
    assert member_client.get(f"/preview/{source.pk}/original").status_code == 200

    swap_for_symlink(library_dir / "open" / "a.txt", passwd)
    for url in (f"/preview/{source.pk}/original", f"/preview/{source.pk}/"):
        response = member_client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert response.status_code == 410, url
        assert b"root:x:0:0" not in body
        assert b"no longer in the library" in body

    # After a sync notices it, the row is removed and still refused.
    summary = sync_root(open_root)
    assert summary.refused == ["a.txt"] and summary.missing == 1
    response = member_client.get(f"/preview/{source.pk}/original")
    assert response.status_code == 410 and b"root:x" not in response.content


def test_a_file_swapped_for_a_link_into_a_restricted_root_is_refused(two_roots, library_dir, member_client):
    open_root, _, _ = two_roots
    sync_root(open_root)
    source = indexed(open_root.sources.get(relative_path="a.txt"))
    swap_for_symlink(library_dir / "open" / "a.txt", library_dir / "restricted" / "secret.md")
    response = member_client.get(f"/preview/{source.pk}/")
    assert response.status_code == 410
    assert SECRET.encode() not in response.content


def test_a_folder_swapped_for_a_symlink_leading_out_is_refused(two_roots, library_dir, tmp_path, member_client):
    open_root, _, _ = two_roots
    (library_dir / "open" / "deep").mkdir()
    (library_dir / "open" / "deep" / "c.txt").write_text("inside")
    sync_root(open_root)
    source = indexed(open_root.sources.get(relative_path="deep/c.txt"))
    (library_dir / "open" / "deep" / "c.txt").unlink()
    (library_dir / "open" / "deep").rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "c.txt").write_text(PASSWD)
    os.symlink(elsewhere, library_dir / "open" / "deep")
    response = member_client.get(f"/preview/{source.pk}/original")
    assert response.status_code == 410 and b"root:x" not in response.content


def test_a_swap_between_the_check_and_the_open_is_caught(two_roots, library_dir, monkeypatch):
    open_root, _, passwd = two_roots
    sync_root(open_root)
    source = indexed(open_root.sources.get(relative_path="a.txt"))
    checked = source_files.source_real_path(source)
    # The check has passed; the file is swapped before the open.
    swap_for_symlink(library_dir / "open" / "a.txt", passwd)
    monkeypatch.setattr(source_files, "source_real_path", lambda s: checked)
    with pytest.raises(SourceUnavailable):
        open_source_file(source)


def test_rows_out_of_the_library_are_refused_even_with_the_file_present(two_roots, admin_user, client):
    open_root, _, _ = two_roots
    sync_root(open_root)
    source = indexed(open_root.sources.get(relative_path="a.txt"))
    client.force_login(admin_user)
    for change in ({"deleted_at": timezone.now()}, {"status": Source.Status.REMOVED}, {"status": Source.Status.EXCLUDED}):
        Source.objects.filter(pk=source.pk).update(deleted_at=None, status=Source.Status.INDEXED)
        Source.objects.filter(pk=source.pk).update(**change)
        assert client.get(f"/preview/{source.pk}/original").status_code == 410, change
    Source.objects.filter(pk=source.pk).update(deleted_at=None, status=Source.Status.INDEXED)
    (open_root.absolute_path / "a.txt").unlink()
    response = client.get(f"/preview/{source.pk}/original")
    assert response.status_code == 404 and b"missing" in response.content


def test_the_workspace_index_never_reads_a_swapped_file(two_roots, library_dir):
    open_root, _, passwd = two_roots
    (library_dir / "open" / "b.md").write_text("first version")
    sync_root(open_root)
    source = open_root.sources.get(relative_path="b.md")
    swap_for_symlink(library_dir / "open" / "b.md", passwd)
    # The registry still believes in an older version: the index re-reads it through the checked open.
    Source.objects.filter(pk=source.pk).update(sha256="0" * 64)
    from mnote.workspace.index import refresh_workspace_index

    refresh_workspace_index(open_root)
    assert not WorkspaceText.objects.filter(body__contains="root:x").exists()


def test_a_file_swapped_before_lightrag_scans_is_never_linked(two_roots, library_dir, input_dir, fake_lightrag):
    from mnote.library.ingest import run_due_jobs
    from mnote.lightrag.provider import lightrag_client

    open_root, _, passwd = two_roots
    (library_dir / "open" / "b.md").write_text("second file")
    sync_root(open_root)
    assert dict(open_root.sources.values_list("relative_path", "status")) == {"a.txt": "queued", "b.md": "queued"}
    # Between the sync and the worker's round, a.txt becomes a symlink to /etc/passwd.
    swap_for_symlink(library_dir / "open" / "a.txt", passwd)
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        run_due_jobs(client)
    assert [p.name.split("-", 2)[2] for p in input_dir.iterdir()] == ["b.md"]
    assert [r.url.path for r in fake_lightrag.requests] == ["/documents/scan"]
    swapped = open_root.sources.get(relative_path="a.txt")
    assert swapped.status == "not_indexed" and swapped.last_error.startswith("Not sent to LightRAG")
    assert open_root.sources.get(relative_path="b.md").status == "indexing"


def test_a_link_whose_file_was_swapped_before_a_retried_scan_goes(two_roots, library_dir, input_dir, fake_lightrag):
    """Linked for a scan LightRAG answered "busy"; swapped before the scan is
    asked again: the next attempt checks again and takes the link away."""
    from datetime import timedelta

    from django.utils import timezone

    from mnote.library.ingest import run_due_jobs
    from mnote.library.models import Job
    from mnote.lightrag.provider import lightrag_client

    open_root, _, passwd = two_roots
    sync_root(open_root)
    fake_lightrag.on("POST", "/documents/scan", "scan_second_immediately.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 0
    assert len(list(input_dir.iterdir())) == 1
    swap_for_symlink(library_dir / "open" / "a.txt", passwd)
    Job.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    fake_lightrag.on("POST", "/documents/scan", "scan.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    assert list(input_dir.iterdir()) == []
    assert open_root.sources.get(relative_path="a.txt").status == "not_indexed"
