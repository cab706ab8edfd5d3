import logging
import signal
import threading
import time

from django.core.management.base import BaseCommand

from mnote.library.ingest import run_due_jobs
from mnote.library.place_indexes import write_place_indexes
from mnote.library.worker import work_once
from mnote.library.jobs import Leadership, worker_id
from mnote.library.models import IndexedRoot, Job, Source
from mnote.lightrag.provider import lightrag_client
from mnote.library.reconcile import reconcile
from mnote.library.watcher import RootWatcher, follow_watcher, sync_roots_logging_errors
from mnote.lightrag import LightRAGError

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Carry out the job ledger (scans, deletes) and follow LightRAG until sources settle; "
        "watch run-on-change roots and sync them when their files change."
    )

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=2.0)
        parser.add_argument("--no-watch", action="store_true", help="Do not watch run-on-change roots for changes.")
        parser.add_argument(
            "--reconcile-every",
            type=float,
            default=60.0,
            metavar="SECONDS",
            help="Compare the registry with LightRAG's whole document list this often, and once at start. Default 60.",
        )
        parser.add_argument(
            "--full-sync-every",
            type=float,
            default=15.0,
            metavar="MINUTES",
            help="Sync every root this often, and once at start (0: never). Default 15.",
        )

    def handle(self, *args, interval, no_watch, full_sync_every, reconcile_every, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        me = worker_id()
        # Every worker carries out claimed jobs; only the leader (one worker at
        # a time, mnote/library/jobs.py) watches, syncs, reconciles and follows
        # LightRAG's statuses. A worker that becomes leader starts with a full
        # sync and a reconcile: the one before it may have died halfway.
        leadership = Leadership(me).start()
        leading = False
        watcher = watch_stop = None
        next_full_sync = next_reconcile = 0.0
        while not stop.is_set():
            was_leading, leading = leading, leadership.beat()
            if leading and not was_leading:
                log.info("worker %s leads: watcher, full sync, reconcile", me)
                # Watchers miss events: network file systems send none, inotify has a
                # watch limit, and nothing is watched while no worker runs. A full
                # sync now and then (and at start) catches what they missed.
                next_full_sync = time.monotonic() if full_sync_every > 0 else None
                # Nothing kept in memory matters: the ledger and the registry are in the
                # database, and a reconcile at start repairs what a crash left behind.
                next_reconcile = time.monotonic()
                if not no_watch:
                    watch_stop = threading.Event()
                    watcher = RootWatcher(watch_stop).start()
            elif was_leading and not leading:
                log.warning("worker %s lost the lead (its lease ran out); another worker leads", me)
                if watcher:
                    watch_stop.set()
                    watcher = None
            if leading:
                if watcher:
                    follow_watcher(watcher)
                if next_full_sync is not None and time.monotonic() >= next_full_sync:
                    sync_roots_logging_errors(IndexedRoot.objects.all())
                    next_full_sync = time.monotonic() + full_sync_every * 60
            self.carry_out_jobs(leading=leading)
            if leading:
                # The place indexes a round of jobs left for later (a few per round).
                write_place_indexes()
            if leading and time.monotonic() >= next_reconcile:
                self.reconcile()
                next_reconcile = time.monotonic() + reconcile_every
            stop.wait(interval)
        if watcher:
            watch_stop.set()
            watcher.thread.join(timeout=5)
        leadership.stop()

    def carry_out_jobs(self, *, leading: bool = True):
        # Only talk to LightRAG while something is owed or in progress.
        in_progress = leading and Source.objects.in_progress().exists()
        if not (Job.objects.due().unclaimed().exists() or in_progress):
            return
        try:
            with lightrag_client() as client:
                if leading:
                    # Jobs, status bridge, recovery of sources stuck "indexing", due retries.
                    work_once(client)
                else:
                    run_due_jobs(client)
        except LightRAGError as e:
            log.warning("worker: %s", e)

    def reconcile(self):
        try:
            with lightrag_client() as client:
                reconcile(client)
        except LightRAGError as e:
            log.warning("worker: reconcile postponed: %s", e)
