"""The roots form: the base directory shown, a folder picker under it,
include and exclude patterns, and a preview of the files a root would hold
before anything is saved."""

import re

import pytest

from mnote.library.models import IndexedRoot, Source
from mnote.library.sync import sync_root

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def papers_dir(library_dir):
    folder = library_dir / "papers"
    (folder / "drafts").mkdir(parents=True)
    (folder / "2026").mkdir()
    (folder / "intro.md").write_text("# Intro")
    (folder / "report.docx").write_bytes(b"not really a docx")
    (folder / "2026" / "plan.docx").write_bytes(b"x")
    (folder / "drafts" / "wip.docx").write_bytes(b"x")
    (library_dir / "other" / "deep").mkdir(parents=True)
    return folder


def form(**fields):
    data = {"name": "Papers", "path": "papers", "recursive": "on", "include_patterns": "", "exclude_patterns": "",
            "run_on_change": "on", "enabled": "on", "visible_to_all": "on"}
    data.update(fields)
    return data


def test_it_shows_the_base_directory_and_offers_its_folders(admin_client, papers_dir, library_dir):
    page = admin_client.get("/library/roots/add/").content.decode()
    assert f"<code>{library_dir}/</code>" in page
    assert '<option value="papers/2026">' in page and '<option value="other/deep">' in page
    assert 'list="base-folders"' in page


def test_picking_a_folder_fills_the_path_and_saves_nothing(admin_client, papers_dir):
    response = admin_client.post("/library/roots/add/", form(path="", pick="papers/2026", name="Plans"))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'value="papers/2026"' in page and 'value="Plans"' in page
    assert "field-error" not in page
    assert not IndexedRoot.objects.exists()


def test_it_previews_which_files_match_before_saving(admin_client, papers_dir, input_dir):
    response = admin_client.post(
        "/library/roots/add/", form(include_patterns="**/*.docx", exclude_patterns="**/drafts/**", preview="1")
    )
    page = response.content.decode()
    preview = page.split('id="root-preview"')[1].split("</section>")[0]
    assert "2 files would be indexed · 1 excluded · 1 left out by the include patterns" in preview
    assert "2026/plan.docx" in preview and "report.docx" in preview
    assert "drafts/wip.docx — excluded by **/drafts/**" in preview
    assert "intro.md" not in preview
    assert not IndexedRoot.objects.exists() and not Source.objects.exists()


def test_a_preview_of_a_bad_path_says_so_without_saving(admin_client, papers_dir):
    page = admin_client.post("/library/roots/add/", form(path="../etc", preview="1")).content.decode()
    assert "contains “..”" in page
    assert not IndexedRoot.objects.exists()


def test_include_patterns_are_saved_and_limit_what_sync_takes_in(admin_client, papers_dir, input_dir):
    admin_client.post("/library/roots/add/", form(include_patterns="**/*.docx\n*.docx"), follow=True)
    root = IndexedRoot.objects.get()
    assert root.include_patterns == ["**/*.docx", "*.docx"]
    assert set(root.sources.values_list("relative_path", flat=True)) == {"report.docx", "2026/plan.docx", "drafts/wip.docx"}

    root.include_patterns = ["intro.md"]
    root.save()
    sync_root(root)
    # Files no longer included leave the library like missing ones.
    indexed = set(root.sources.exclude(status__in=["delete_submitted", "removed"]).exclude(stale=True).values_list("relative_path", flat=True))
    assert indexed == {"intro.md"}


def test_a_removed_row_shows_no_old_error_or_chunk_count(admin_client, library_dir, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", "documents_paginated_after_delete.json")
    root = IndexedRoot.objects.create(name="Old", path="old")
    Source.objects.create(root=root, relative_path="gone.md", absolute_path="/l/old/gone.md", status="removed",
                          chunk_count=42, last_error="Worker execution timeout after 60s")
    page = admin_client.get("/?filter=removed").content.decode()
    row = page.split('<tr id="source-')[1].split("</tr>")[0]
    row = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", row)  # a random token may hold "42"
    assert "old/gone.md" in row and "42" not in row and "timeout" not in row


def test_the_preview_says_which_files_it_leaves_out_and_why(admin_client, library_dir):
    folder = library_dir / "scans"
    folder.mkdir()
    (folder / "page.tiff").write_bytes(b"II*\x00")
    (folder / "lock.tmp").write_text("x")
    (folder / "notes.md").write_text("# Notes\n")
    response = admin_client.post(
        "/library/roots/add/", {"name": "Scans", "path": "scans", "recursive": "on", "preview": "1"}
    )
    page = response.content.decode()
    assert "2 files left out for their kind" in page
    assert "page.tiff — pictures are not indexed" in page
    assert "lock.tmp — .tmp is not a kind of file the library indexes" in page


def test_the_picker_names_the_root_and_leaves_out_folders_that_are_roots(admin_client, library_dir):
    from mnote.library.models import IndexedRoot

    (library_dir / "annual-reports").mkdir()
    (library_dir / "papers").mkdir()
    IndexedRoot.objects.create(name="Papers", path="papers")
    page = admin_client.get("/library/roots/add/").content.decode()
    assert 'data-pick="annual-reports"' in page and 'data-pick="papers"' not in page
    picked = admin_client.post("/library/roots/add/", {"name": "", "path": "", "pick": "annual-reports"}).content.decode()
    assert 'value="Annual reports"' in picked
