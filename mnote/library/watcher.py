"""Continuous sync for run-on-change roots: watch their folders and sync a
root once its files have been quiet for a moment.

Two halves: ``RootWatcher`` runs in a thread and only watches files;
``follow_watcher``, called from the worker's main loop, reads the roots and
syncs them. The watcher decides *which* roots to sync and *when*; what a sync
does is ``sync_root``'s business. It works per root, not per file: a folder
moved into a root arrives as a single event, and a sync walks the whole root.
"""

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import watchfiles
from django.conf import settings
from watchfiles._rust_notify import WatchfilesRustInternalError

from mnote.library.expansion import SKIPPED_DIRS, PathRefused, resolve_inside
from mnote.library.models import IndexedRoot
from mnote.library.sync import SyncSummary, sync_root

log = logging.getLogger(__name__)

# An editor's save is a handful of events within milliseconds; a large copy is
# a stream of them. A root is synced once it has been quiet this long…
QUIET_SECONDS = 1.0
# …or once it has waited this long, so a never-ending stream still gets synced.
LONGEST_WAIT_SECONDS = 30.0
# How often the watch hands control back even when nothing changes, to see
# whether the roots to watch changed.
TICK_MILLISECONDS = 200
# After the watch itself failed (e.g. the inotify watch limit).
RETRY_SECONDS = 10.0


@dataclass(frozen=True)
class WatchedRoot:
    pk: int
    path: Path  # resolved
    recursive: bool


def watched_roots() -> dict[int, WatchedRoot]:
    """Enabled run-on-change roots whose folder (or file) is there now, by pk.

    A root that is missing is left out until it comes back; sync_root deals
    with its files going missing.
    """
    inputs = settings.MNOTE_LIGHTRAG.input_dir.resolve()
    watched = {}
    for root in IndexedRoot.objects.filter(enabled=True, run_on_change=True):
        try:
            path = resolve_inside(settings.MNOTE_LIBRARY_BASE_DIR, root.path)
        except PathRefused:
            continue
        # Our own links land in LightRAG's input folder: watching it would
        # answer every sync with another one.
        if path.is_relative_to(inputs):
            continue
        watched[root.pk] = WatchedRoot(root.pk, path, root.recursive)
    return watched


def roots_touched(changed_paths: Iterable[str], roots: Iterable[WatchedRoot], *, ignored_dir: Path) -> set[int]:
    """The pks of the roots whose content the changed paths may belong to.

    Changes inside skipped folders (``.git``, ``node_modules``…) and inside
    ``ignored_dir`` (LightRAG's input folder) touch no root.
    """
    roots = list(roots)
    touched = set()
    for changed in changed_paths:
        path = Path(changed)
        if path.is_relative_to(ignored_dir):
            continue
        for root in roots:
            if root.pk in touched or not path.is_relative_to(root.path):
                continue
            inside = path.relative_to(root.path).parts
            if any(part in SKIPPED_DIRS for part in inside):
                continue
            if not root.recursive and len(inside) > 1:
                continue
            touched.add(root.pk)
    return touched


class SettlingRoots:
    """Roots with unsynced changes, each held back until it has been quiet
    for ``quiet`` seconds or has waited ``longest_wait`` seconds."""

    def __init__(self, *, quiet: float = QUIET_SECONDS, longest_wait: float = LONGEST_WAIT_SECONDS):
        self.quiet = quiet
        self.longest_wait = longest_wait
        self._first_change: dict[int, float] = {}
        self._last_change: dict[int, float] = {}

    def touch(self, pks: Iterable[int], now: float) -> None:
        for pk in pks:
            self._first_change.setdefault(pk, now)
            self._last_change[pk] = now

    def take_settled(self, now: float) -> set[int]:
        settled = {
            pk
            for pk, first in self._first_change.items()
            if now - self._last_change[pk] >= self.quiet or now - first >= self.longest_wait
        }
        for pk in settled:
            del self._first_change[pk], self._last_change[pk]
        return settled


def sync_roots_logging_errors(roots: Iterable[IndexedRoot]) -> list[SyncSummary]:
    """Sync each root; a root whose sync fails is logged and the others go on."""
    summaries = []
    for root in roots:
        try:
            summary = sync_root(root)
        # Whatever breaks one root's sync (a locked database, an unreadable
        # folder) must not stop the worker or the other roots; the next change
        # or the periodic full sync tries again.
        except Exception:
            log.exception("sync of root %s failed", root)
            continue
        summaries.append(summary)
        log.info("synced %s", summary.line())
    return summaries


def sync_changed_roots(pks: Iterable[int]) -> list[SyncSummary]:
    """Sync the roots the watcher saw change, if they still want it: an admin
    may have disabled the root or turned off run-on-change since."""
    pks = set(pks)
    if not pks:
        return []
    return sync_roots_logging_errors(IndexedRoot.objects.filter(pk__in=pks, enabled=True, run_on_change=True))


def follow_watcher(watcher: "RootWatcher") -> list[SyncSummary]:
    """The database half of watching, for the worker's main thread: tell the
    watcher which roots to watch as they are now (so roots admins add or
    disable are picked up without a restart), and sync the roots whose
    changes have settled."""
    watcher.watch_roots(watched_roots())
    return sync_changed_roots(watcher.take_settled())


class RootWatcher:
    """The file-system half of watching, for a thread of its own: watches the
    roots it is given and remembers which of them changed, until ``stop`` is
    set. It never touches the database, so the worker's writes stay in one
    thread (SQLite prefers that) and tests can drive the database half."""

    def __init__(
        self, stop: threading.Event, *, quiet: float = QUIET_SECONDS, longest_wait: float = LONGEST_WAIT_SECONDS
    ):
        self.stop = stop
        self._lock = threading.Lock()
        self._settling = SettlingRoots(quiet=quiet, longest_wait=longest_wait)
        self._wanted: dict[int, WatchedRoot] | None = None  # None: not told yet
        self.thread: threading.Thread | None = None

    def start(self) -> "RootWatcher":
        """Run in a daemon thread, so a hung file system cannot keep the
        worker from exiting."""
        self.thread = threading.Thread(target=self.run, name="root-watcher", daemon=True)
        self.thread.start()
        return self

    def watch_roots(self, roots: dict[int, WatchedRoot]) -> None:
        with self._lock:
            self._wanted = dict(roots)

    def take_settled(self) -> set[int]:
        """Roots whose changes have settled since the last call."""
        with self._lock:
            return self._settling.take_settled(time.monotonic())

    def run(self) -> None:
        watched = None  # None: nothing yet; the worker's start-up full sync covers the first roots
        while not self.stop.is_set():
            with self._lock:
                wanted = self._wanted
            if wanted is None:
                self.stop.wait(TICK_MILLISECONDS / 1000)
                continue
            present = {pk: root for pk, root in wanted.items() if root.path.exists()}
            if watched is not None:
                # Roots new to the watch (added, moved back, made again) may
                # have changed while no one watched them.
                self._touch(pk for pk, root in present.items() if watched.get(pk) != root)
            watched = present
            self._watch(present, wanted)

    def _touch(self, pks: Iterable[int]) -> None:
        with self._lock:
            self._settling.touch(pks, time.monotonic())

    def _watch(self, roots: dict[int, WatchedRoot], wanted: dict[int, WatchedRoot]) -> None:
        """Watch ``roots`` until stopped, until a root's own folder (or file)
        goes or is replaced, until a missing root of ``wanted`` is back, or
        until the roots wanted change."""
        if not roots:
            self.stop.wait(TICK_MILLISECONDS / 1000)
            return
        ignored_dir = settings.MNOTE_LIGHTRAG.input_dir.resolve()
        root_paths = {str(root.path) for root in roots.values()}
        missing = [root.path for pk, root in wanted.items() if pk not in roots]
        try:
            for changes in watchfiles.watch(
                *root_paths,
                watch_filter=None,  # roots_touched decides, with SKIPPED_DIRS
                debounce=TICK_MILLISECONDS,
                rust_timeout=TICK_MILLISECONDS,
                yield_on_timeout=True,
                stop_event=self.stop,
                raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                changed_paths = {path for _, path in changes}
                self._touch(roots_touched(changed_paths, roots.values(), ignored_dir=ignored_dir))
                # The watch on a folder removed or renamed (or a file replaced
                # by an editor's save) is gone with it: watch the path anew.
                if changed_paths & root_paths:
                    return
                if any(path.exists() for path in missing):
                    return
                with self._lock:
                    if self._wanted != wanted:
                        return
        # A root vanishing between the check and the watch, or the inotify
        # watch limit: log, wait, and start over from the roots wanted then.
        except (OSError, WatchfilesRustInternalError) as e:
            log.warning("watching the roots failed (%s); retrying in %.0f s", e, RETRY_SECONDS)
            self.stop.wait(RETRY_SECONDS)
