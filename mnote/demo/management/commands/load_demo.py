import shutil
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from mnote.library.worker import wait_until_settled
from mnote.library.sync import sync_root
from mnote.library.models import IndexedRoot, Job
from mnote.library.progress import root_progress
from mnote.lightrag.provider import lightrag_client
from mnote.lightrag import LightRAGError

DEMO_FILES = Path(__file__).resolve().parent.parent.parent / "library"
DEMO_ROOT_PATH = "demo"
FOLLOW_INTERVAL = 5


class Command(BaseCommand):
    help = "Put the demo library (our own sample documents) in the library and index it."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for LightRAG to index it")
        parser.add_argument(
            "--follow",
            action="store_true",
            help="leave the work to the running worker and only report the demo's progress every few seconds "
            "(make run starts it so, in the background)",
        )
        parser.add_argument(
            "--queue-only",
            action="store_true",
            help="copy and queue the files, and return (make run does this before LightRAG is up)",
        )

    def handle(self, *args, timeout, follow, queue_only, **options):
        target = settings.MNOTE_LIBRARY_BASE_DIR / DEMO_ROOT_PATH
        copied = 0
        # Demo files are ours; a file already there is left exactly as it is.
        for path in sorted(DEMO_FILES.rglob("*")):
            destination = target / path.relative_to(DEMO_FILES)
            if path.is_file() and not destination.exists():
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, destination)
                copied += 1
        root, _created = IndexedRoot.objects.get_or_create(
            path=DEMO_ROOT_PATH, defaults={"name": "Demo library", "recursive": True}
        )
        summary = sync_root(root)
        if not follow or copied or summary.new or summary.changed:
            self.stdout.write(f"Demo library: {copied} files copied; {summary.line()}")
        if queue_only or not root.sources.in_progress().exists():
            return
        if follow:
            self._follow(root, timeout)
            return
        try:
            with lightrag_client() as client:
                settled = wait_until_settled(client, timeout=timeout)
        except LightRAGError as e:
            raise CommandError(f"LightRAG did not take the demo library: {e}") from e
        counts = {s: root.sources.filter(status=s).count() for s in ("indexed", "failed", "duplicate")}
        self.stdout.write(
            f"Demo library: {counts['indexed']} indexed, {counts['failed']} failed, {counts['duplicate']} duplicate"
            + ("" if settled else " (still indexing; the dashboard follows it)")
        )

    def _follow(self, root: IndexedRoot, timeout: float) -> None:
        """Say how far the worker got with the demo, every few seconds and
        whenever it changed, until nothing of it is in progress."""
        # LightRAG has just come up: the scan owed since the files were queued
        # need not wait out the backoff of the tries made while it started.
        Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).update(next_attempt_at=timezone.now())
        deadline = time.monotonic() + timeout
        said = None
        while time.monotonic() < deadline:
            progress = root_progress(root)
            line = progress.log_line()
            if line != said:
                self.stdout.write(f"Demo library: {line}")
                said = line
            if not progress.in_progress:
                return
            time.sleep(FOLLOW_INTERVAL)
        self.stdout.write("Demo library: still indexing; the dashboard follows it.")
