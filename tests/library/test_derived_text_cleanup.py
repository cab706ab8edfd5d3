"""MNote's text of a file (handed to LightRAG where it cannot read the kind)
lives in MNote's data folder only while a file of the library refers to it:
a file gone, changed, taken out or of a removed root leaves no text behind,
and a reconcile sweeps what a crash left. The user's folder is never touched."""

import os
import time

import pytest

from mnote.library.actions import delete_index, remove_root
from mnote.library.derived_text import derived_text_dir, derived_text_path
from mnote.library.ingest import link_for_scan
from mnote.library.models import IndexedRoot, Source
from mnote.library.reconcile import reconcile
from mnote.library.sync import sync_root
from mnote.lightrag.provider import lightrag_client
from tests.lightrag_fakes import listing

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

PAGE = "<html><body><h1>Mirror care</h1><p>Re-aluminise the primary mirror every {n} years.</p></body></html>"


@pytest.fixture
def data_dir(tmp_path, settings):
    settings.DATA_DIR = tmp_path / "data"
    return settings.DATA_DIR


@pytest.fixture
def shelf(library_dir, input_dir, data_dir):
    folder = library_dir / "shelf"
    folder.mkdir()
    (folder / "mirror.html").write_text(PAGE.format(n="two"))
    (folder / "dome.html").write_text(PAGE.format(n="five"))
    root = IndexedRoot.objects.create(name="Shelf", path="shelf")
    sync_root(root)
    link_for_scan()  # the worker writes MNote's text right before LightRAG's scan
    return root


def texts() -> set[str]:
    return {path.name for path in derived_text_dir().iterdir()}


def text_of(root: IndexedRoot, name: str) -> str:
    return derived_text_path(root.sources.get(relative_path=name).sha256).name


def user_files(library_dir) -> dict[str, str]:
    return {path.name: path.read_text() for path in (library_dir / "shelf").iterdir()}


def test_a_changed_file_leaves_no_text_of_its_old_content_behind(shelf, library_dir):
    old = text_of(shelf, "mirror.html")
    assert texts() == {old, text_of(shelf, "dome.html")}
    (library_dir / "shelf" / "mirror.html").write_text(PAGE.format(n="three"))
    sync_root(shelf)
    assert old not in texts() and text_of(shelf, "dome.html") in texts()
    link_for_scan()  # the new content's text, for the new version's scan
    assert text_of(shelf, "mirror.html") in texts()
    assert "three" in derived_text_path(shelf.sources.get(relative_path="mirror.html").sha256).read_text()


def test_a_deleted_file_or_a_dropped_index_leaves_no_text_the_file_still_in_the_folder_keeps_its_own(shelf, library_dir):
    dome, mirror = text_of(shelf, "dome.html"), text_of(shelf, "mirror.html")
    (library_dir / "shelf" / "dome.html").unlink()
    sync_root(shelf)
    assert texts() == {mirror}
    delete_index(shelf.sources.get(relative_path="mirror.html"))
    assert texts() == set()
    assert set(user_files(library_dir)) == {"mirror.html"}
    assert dome != mirror


def test_a_text_two_files_share_stays_until_neither_refers_to_it(shelf, library_dir):
    (library_dir / "shelf" / "copy.html").write_text(PAGE.format(n="two"))
    sync_root(shelf)
    shared = text_of(shelf, "mirror.html")
    assert text_of(shelf, "copy.html") == shared
    (library_dir / "shelf" / "mirror.html").unlink()
    sync_root(shelf)
    assert shared in texts()  # the copy still refers to it
    (library_dir / "shelf" / "copy.html").unlink()
    sync_root(shelf)
    assert shared not in texts()


def test_removing_a_root_removes_its_texts_never_its_files(shelf, library_dir):
    before = user_files(library_dir)
    remove_root(shelf)
    assert texts() == set()
    assert user_files(library_dir) == before


def test_reconcile_sweeps_texts_nothing_refers_to_and_keeps_the_rest(shelf, fake_lightrag):
    kept = texts()
    folder = derived_text_dir()
    left_by_a_crash = folder / f"{'ab' * 32}.txt"
    left_by_a_crash.write_text("text of a version no row knows")
    dead_write = folder / "tmpdeadwrite.part"
    dead_write.write_text("half")
    an_hour_ago = time.time() - 2 * 3600
    os.utime(dead_write, (an_hour_ago, an_hour_ago))
    live_write = folder / "tmplivewrite.part"
    live_write.write_text("being written")
    not_ours = folder / "notes.md"
    not_ours.write_text("not a name MNote writes")
    # Indexed rows keep theirs: LightRAG's record links to it, a reindex reads it again.
    Source.objects.update(status=Source.Status.INDEXED)
    fake_lightrag.on("POST", "/documents/paginated", listing())
    with lightrag_client() as client:
        report = reconcile(client)
        assert report.derived_texts_removed == 2
        assert texts() == kept | {"tmplivewrite.part", "notes.md"}
        assert not reconcile(client).changed  # idempotent
