import shutil
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from mnote.library.ingest import wait_until_settled
from mnote.library.sync import sync_root
from mnote.library.models import IndexedRoot
from mnote.lightrag.provider import lightrag_client
from mnote.lightrag import LightRAGError

DEMO_FILES = Path(__file__).resolve().parent.parent.parent / "library"
DEMO_ROOT_PATH = "demo"


class Command(BaseCommand):
    help = "Put the demo library (our own sample documents) in the library and index it."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for LightRAG to index it")

    def handle(self, *args, timeout, **options):
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
        self.stdout.write(f"Demo library: {copied} files copied; {summary.line()}")
        if not root.sources.in_progress().exists():
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
