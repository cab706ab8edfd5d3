"""Adding files from the browser into a root opened for uploads: the sync's
rules (kinds, patterns, text-size limit), never an overwrite, never through
a symlink, then queued for indexing by the sync.

    .venv/bin/python -m pytest -q tests/library/test_uploads.py
"""

import os

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from mnote.library.models import IndexedRoot, Source
from mnote.library.progress import file_stage, root_progress

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def inbox(library_dir, lightrag_dirs):
    (library_dir / "inbox").mkdir()
    (library_dir / "inbox" / "report.md").write_text("# Already here\n")
    return IndexedRoot.objects.create(name="Inbox", path="inbox", uploads_open=True)


def send(client, root, name, body=b"# Notes\n\nSome text.\n", path=None):
    data = {"file": SimpleUploadedFile(name, body)}
    if path is not None:
        data["path"] = path
    return client.post(f"/library/roots/{root.pk}/upload/", data)


def test_a_member_uploads_a_file_and_it_is_queued(member_client, inbox, library_dir):
    page = member_client.get(f"/library/roots/{inbox.pk}/upload/")
    assert page.status_code == 200 and b"data-upload-url" in page.content
    answer = send(member_client, inbox, "notes.md")
    assert answer.status_code == 201, answer.content
    assert answer.json()["path"] == "notes.md" and answer.json()["stage"] == "queued"
    assert (library_dir / "inbox" / "notes.md").read_bytes() == b"# Notes\n\nSome text.\n"
    source = Source.objects.get(root=inbox, relative_path="notes.md")
    assert file_stage(source) == "queued"
    assert root_progress(inbox).counts["queued"] == 2  # with the file already there


def test_a_taken_name_gets_a_number_and_nothing_is_overwritten(member_client, inbox, library_dir):
    answer = send(member_client, inbox, "report.md", b"# New\n")
    assert answer.json()["path"] == "report (2).md" and answer.json()["renamed"]
    assert (library_dir / "inbox" / "report.md").read_text() == "# Already here\n"
    assert send(member_client, inbox, "report.md", b"# Newer\n").json()["path"] == "report (3).md"


def test_a_folder_upload_keeps_its_folders(member_client, inbox, library_dir):
    answer = send(member_client, inbox, "b.md", path="minutes/2024/b.md")
    assert answer.status_code == 201
    assert (library_dir / "inbox" / "minutes" / "2024" / "b.md").exists()


@pytest.mark.parametrize(
    "name, path",
    [
        ("x.md", "../escape.md"),
        ("x.md", "a/../../escape.md"),
        ("x.md", ".git/config.md"),
        ("photo.tiff", None),
        ("run.exe", None),
        ("x.md", "bad\nname.md"),
    ],
)
def test_paths_and_kinds_the_sync_would_not_take_are_refused(member_client, inbox, library_dir, name, path):
    answer = send(member_client, inbox, name, path=path)
    assert answer.status_code == 400 and answer.json()["error"]
    assert not (library_dir / "escape.md").exists()
    assert sorted(p.name for p in (library_dir / "inbox").iterdir()) == ["report.md"]


def test_a_symlinked_folder_is_never_followed(member_client, inbox, library_dir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, library_dir / "inbox" / "linked")
    answer = send(member_client, inbox, "x.md", path="linked/x.md")
    assert answer.status_code == 400
    assert list(outside.iterdir()) == []


def test_the_roots_patterns_and_size_limits_hold(member_client, inbox, settings):
    inbox.exclude_patterns = ["**/drafts/**"]
    inbox.save()
    assert send(member_client, inbox, "x.md", path="drafts/x.md").status_code == 400
    settings.MNOTE_UPLOAD_MAX_MB = 1
    big = send(member_client, inbox, "big.txt", b"a" * (2 * 1024 * 1024))
    assert big.status_code == 413
    settings.MNOTE_UPLOAD_MAX_MB = 10
    settings.MNOTE_MAX_TEXT_MB = 1
    held = send(member_client, inbox, "long.txt", b"a" * (1024 * 1024 + 10))
    assert held.status_code == 400 and "MNOTE_MAX_TEXT_MB" in held.json()["error"]
    assert not (inbox.absolute_path / "long.txt").exists()


def test_only_roots_open_for_uploads_and_visible_to_the_member_take_files(member, inbox, library_dir):
    client = Client()
    client.force_login(member)
    inbox.uploads_open = False
    inbox.save()
    assert send(client, inbox, "x.md").status_code == 403
    assert client.get(f"/library/roots/{inbox.pk}/upload/").status_code == 403
    inbox.uploads_open, inbox.visible_to_all = True, False
    inbox.save()
    inbox.visible_to_groups.add(Group.objects.create(name="board"))
    assert send(client, inbox, "x.md").status_code == 404
    assert not (library_dir / "inbox" / "x.md").exists()


def test_the_home_page_links_to_uploads_and_shows_progress(member_client, inbox):
    send(member_client, inbox, "notes.md")
    page = member_client.get("/").content.decode()
    assert f"/library/roots/{inbox.pk}/upload/" in page
    assert 'id="progress"' in page and "0 of 2 files done" in page and "queued" in page
    partial = member_client.get(f"/library/progress/?root={inbox.pk}", headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith("<section") and 'hx-trigger="every 3s"' in partial
