import logging
import signal
import threading

from django.core.management.base import BaseCommand

from mnote.library.ingest import bridge_statuses, run_due_jobs
from mnote.library.models import Job, Source
from mnote.library.provider import lightrag_client
from mnote.lightrag import LightRAGError

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Carry out the job ledger (scans, deletes) and follow LightRAG until sources settle."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=2.0)

    def handle(self, *args, interval, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(interval):
            # Only talk to LightRAG while something is owed or in progress.
            if not (Job.objects.due().exists() or Source.objects.in_progress().exists()):
                continue
            try:
                with lightrag_client() as client:
                    run_due_jobs(client)
                    bridge_statuses(client)
            except LightRAGError as e:
                log.warning("worker: %s", e)
