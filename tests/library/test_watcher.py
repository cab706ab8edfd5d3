import dataclasses
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from mnote.library import watcher as watcher_module
from mnote.library.models import IndexedRoot, Job, Source
from mnote.library.sync import sync_root
from mnote.library.watcher import RootWatcher, SettlingRoots, WatchedRoot, follow_watcher, roots_touched

# Only the watcher's file-system half runs in a thread; the database half runs
# here, as it runs in the worker's main loop.
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

QUIET = 0.3


def make_root(library_dir, name, *, run_on_change=True, **fields):
    folder = library_dir / name
    folder.mkdir()
    (folder / "intro.md").write_text("# Intro\nWelcome.")
    return IndexedRoot.objects.create(name=name, path=name, run_on_change=run_on_change, **fields)


@pytest.fixture
def synced(monkeypatch):
    """The names of the roots the watcher synced, in order, one per sync."""
    names = []

    def counting_sync_root(root, **kwargs):
        names.append(root.name)
        return sync_root(root, **kwargs)

    monkeypatch.setattr(watcher_module, "sync_root", counting_sync_root)
    return names


@pytest.fixture
def watcher(input_dir):
    """A running watcher, told the roots the test made so far and given a
    moment to start watching them. Stopped and joined after the test."""
    stop = threading.Event()
    watcher = RootWatcher(stop, quiet=QUIET)
    yield watcher
    stop.set()
    if watcher.thread:
        watcher.thread.join(timeout=5)
        assert not watcher.thread.is_alive()


def start(watcher):
    watcher.start()
    follow_watcher(watcher)
    time.sleep(0.4)  # the thread picks the roots up within a tick
    return watcher


def follow_until(watcher, condition, timeout=5.0):
    """Run the worker's main-loop half until ``condition()`` holds or time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        follow_watcher(watcher)
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def follow_for(watcher, seconds):
    follow_until(watcher, lambda: False, timeout=seconds)


def touch_later(path: Path, text: str):
    path.write_text(text)
    # A different mtime even on a coarse clock, as a real later edit would have.
    later = time.time() + 5
    os.utime(path, (later, later))


def test_it_requeues_an_edited_file_within_seconds(library_dir, watcher, synced):
    papers = make_root(library_dir, "papers")
    sync_root(papers)
    source = papers.sources.get()
    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXED, lightrag_doc_id="doc-old")
    Job.objects.all().delete()
    start(watcher)

    edited_at = time.monotonic()
    touch_later(library_dir / "papers" / "intro.md", "# Intro\nWelcome, edited.")

    def requeued():
        source.refresh_from_db()
        return source.status == Source.Status.QUEUED and source.stale

    assert follow_until(watcher, requeued, timeout=5)
    assert time.monotonic() - edited_at < 3
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-old"]}
    assert synced == ["papers"]


def test_it_syncs_a_burst_of_new_files_once(library_dir, watcher, synced):
    papers = make_root(library_dir, "papers")
    sync_root(papers)
    start(watcher)

    batch = library_dir / "papers" / "batch"
    batch.mkdir()
    for i in range(200):
        (batch / f"note-{i:03}.md").write_text(f"Note {i}.")

    assert follow_until(watcher, lambda: papers.sources.count() == 201)
    follow_for(watcher, QUIET * 3)  # a straggling second sync would come now
    assert synced == ["papers"]


def test_it_does_not_watch_a_root_that_is_not_run_on_change(library_dir, watcher, synced):
    manual = make_root(library_dir, "manual", run_on_change=False)
    make_root(library_dir, "live")
    start(watcher)

    (library_dir / "manual" / "new.md").write_text("Waits for an admin.")
    (library_dir / "live" / "new.md").write_text("Synced by the watcher.")

    assert follow_until(watcher, lambda: synced == ["live"])
    follow_for(watcher, QUIET * 3)
    assert synced == ["live"]
    assert not manual.sources.exists()


def test_it_ignores_changes_inside_skipped_folders(library_dir, watcher, synced):
    make_root(library_dir, "repo")
    make_root(library_dir, "notes")
    (library_dir / "repo" / ".git" / "objects").mkdir(parents=True)
    (library_dir / "repo" / "node_modules").mkdir()
    start(watcher)

    (library_dir / "repo" / ".git" / "objects" / "ab12").write_text("blob")
    (library_dir / "repo" / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (library_dir / "repo" / "node_modules" / "index.js").write_text("module.exports = 1")
    (library_dir / "notes" / "new.md").write_text("A real change.")

    assert follow_until(watcher, lambda: synced == ["notes"])
    follow_for(watcher, QUIET * 3)
    assert synced == ["notes"]


def test_it_never_follows_changes_into_lightrag_input_folder(library_dir, watcher, synced, settings):
    # The input folder inside a watched root: our own links landing there
    # must not set off another sync.
    settings.MNOTE_LIGHTRAG = dataclasses.replace(settings.MNOTE_LIGHTRAG, input_dir=library_dir / "papers" / "inputs")
    make_root(library_dir, "papers")
    (library_dir / "papers" / "inputs").mkdir()
    start(watcher)

    (library_dir / "papers" / "inputs" / "abc-intro.md").write_text("A link LightRAG will scan.")
    follow_for(watcher, QUIET * 4)
    assert synced == []


def test_it_stops_within_a_second_of_the_stop_event(library_dir, watcher):
    make_root(library_dir, "papers")
    start(watcher)

    stopped_at = time.monotonic()
    watcher.stop.set()
    watcher.thread.join(timeout=2)
    assert not watcher.thread.is_alive()
    assert time.monotonic() - stopped_at < 1.0


def test_it_stops_promptly_when_there_is_no_root_to_watch(library_dir, watcher):
    start(watcher)

    stopped_at = time.monotonic()
    watcher.stop.set()
    watcher.thread.join(timeout=2)
    assert time.monotonic() - stopped_at < 1.0


def test_it_picks_up_a_root_added_while_running(library_dir, watcher):
    start(watcher)
    later = make_root(library_dir, "later")
    follow_for(watcher, 0.5)

    (library_dir / "later" / "new.md").write_text("Seen without a restart.")

    assert follow_until(watcher, lambda: later.sources.filter(relative_path="new.md").exists())


def test_it_stops_watching_a_root_an_admin_disabled(library_dir, watcher, synced):
    papers = make_root(library_dir, "papers")
    make_root(library_dir, "notes")
    start(watcher)
    IndexedRoot.objects.filter(pk=papers.pk).update(enabled=False)
    follow_for(watcher, 0.5)

    (library_dir / "papers" / "new.md").write_text("No longer in the library.")
    (library_dir / "notes" / "new.md").write_text("Still watched.")

    assert follow_until(watcher, lambda: synced == ["notes"])
    follow_for(watcher, QUIET * 3)
    assert synced == ["notes"]


def test_it_keeps_watching_a_root_folder_that_disappears_and_comes_back(library_dir, watcher):
    papers = make_root(library_dir, "papers")
    sync_root(papers)
    start(watcher)

    shutil.rmtree(library_dir / "papers")
    assert follow_until(watcher, lambda: papers.sources.get().deleted_at is not None)
    (library_dir / "papers").mkdir()
    (library_dir / "papers" / "back.md").write_text("Back again.")

    assert follow_until(watcher, lambda: papers.sources.filter(relative_path="back.md", deleted_at=None).exists())
    (library_dir / "papers" / "later.md").write_text("Watched again.")
    assert follow_until(watcher, lambda: papers.sources.filter(relative_path="later.md").exists())


def test_it_follows_a_single_file_root_through_editor_saves(library_dir, watcher):
    (library_dir / "notes.md").write_text("First.")
    notes = IndexedRoot.objects.create(name="notes", path="notes.md")
    sync_root(notes)
    start(watcher)

    def save_like_an_editor(text):
        # Write a new file and rename it over the old one: a new inode each time.
        temporary = library_dir / ".notes.md.swp"
        touch_later(temporary, text)
        os.replace(temporary, library_dir / "notes.md")

    for text in ("Second.", "Third, a bit longer."):
        save_like_an_editor(text)
        assert follow_until(watcher, lambda: notes.sources.get().size == len(text))


def test_it_keeps_going_after_a_sync_fails(library_dir, watcher, monkeypatch, caplog):
    papers = make_root(library_dir, "papers")
    calls = []

    def failing_once(root, **kwargs):
        calls.append(root.name)
        if len(calls) == 1:
            raise OSError("disk hiccup")
        return sync_root(root, **kwargs)

    monkeypatch.setattr(watcher_module, "sync_root", failing_once)
    start(watcher)

    (library_dir / "papers" / "first.md").write_text("Lost to the hiccup.")
    assert follow_until(watcher, lambda: calls == ["papers"])
    (library_dir / "papers" / "second.md").write_text("Synced all the same.")

    assert follow_until(watcher, lambda: papers.sources.filter(relative_path="second.md").exists())
    assert "sync of root papers failed" in caplog.text


# --- the pieces, without threads ---------------------------------------------


def test_it_maps_changes_to_every_root_holding_them(tmp_path):
    papers = WatchedRoot(1, tmp_path / "papers", recursive=True)
    reports = WatchedRoot(2, tmp_path / "papers" / "2024", recursive=True)
    flat = WatchedRoot(3, tmp_path / "flat", recursive=False)
    roots = [papers, reports, flat]

    def touched(*paths):
        return roots_touched([str(tmp_path / p) for p in paths], roots, ignored_dir=tmp_path / "inputs")

    assert touched("papers/2024/report.md") == {1, 2}
    assert touched("papers/intro.md") == {1}
    assert touched("flat/top.md") == {3}
    assert touched("flat/sub/deep.md") == set()
    assert touched("papers/.git/index", "papers/a/node_modules/x.js", "papers/__parsed__/x.md") == set()
    assert touched("elsewhere/x.md", "inputs/abc-x.md") == set()
    assert touched("papers") == {1}  # the root folder itself went away


def test_it_holds_a_root_until_its_changes_settle():
    settling = SettlingRoots(quiet=1.0, longest_wait=30.0)
    for tick in range(20):  # changes every 0.1 s for 2 s: still busy
        settling.touch({7}, now=tick / 10)
        assert settling.take_settled(now=tick / 10) == set()
    assert settling.take_settled(now=2.5) == set()
    assert settling.take_settled(now=2.9) == {7}
    assert settling.take_settled(now=10.0) == set()  # and taken once only


def test_it_syncs_a_root_that_never_goes_quiet_after_the_longest_wait():
    settling = SettlingRoots(quiet=1.0, longest_wait=5.0)
    settled_at = []
    for tick in range(100):
        now = tick / 10
        settling.touch({7}, now)
        if settling.take_settled(now):
            settled_at.append(now)
    assert settled_at == [5.0]
