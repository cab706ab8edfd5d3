"""One round of the worker over the work owed to LightRAG: the due jobs
(``ingest``), the status bridge, recovery of stuck sources, then a wave of
due retries (``failures``); and a loop of rounds until all is settled."""

import logging
import time

from mnote.library.failures import advance_retries
from mnote.library.ingest import run_due_jobs
from mnote.library.models import Job, Source
from mnote.library.place_indexes import write_place_indexes
from mnote.library.status_bridge import bridge_statuses, rescan_stuck
from mnote.lightrag import LightRAGClient, LightRAGError

log = logging.getLogger(__name__)

# deletes moved up -> files sent -> their scan (see work_once).
RETRY_STEPS_PER_ROUND = 3


def work_once(client: LightRAGClient) -> None:
    """One round of the worker: jobs, the status bridge, recovery of stuck
    sources, then a wave of due retries."""
    run_due_jobs(client)
    bridge_statuses(client)
    rescan_stuck(client)
    # Where each newly indexed file's words are, for the citations' badges
    # (a few files a round; the rest next round).
    write_place_indexes()
    # A wave of retries owes LightRAG its steps in order -- the failed
    # records' deletes (moved up once LightRAG is idle), then the files sent
    # again, then their scan. Each step taken in this round rather than one
    # worker interval after the last: a file the native parser found empty
    # reaches the legacy parser seconds sooner, and LightRAG does not sit idle
    # meanwhile. Bounded: a step that cannot go yet waits for the next round.
    for _ in range(RETRY_STEPS_PER_ROUND):
        sent, deletes_moved_up = advance_retries(client)
        if not (sent or deletes_moved_up) or not run_due_jobs(client):
            break


def wait_until_settled(client: LightRAGClient, *, timeout: float, interval: float = 1.0) -> bool:
    """Work until nothing is in progress; bounded by ``timeout``. Returns
    whether everything settled."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            work_once(client)
        except LightRAGError as e:
            log.warning("LightRAG: %s", e)
        if not Source.objects.in_progress().exists() and not Job.objects.filter(state=Job.State.PENDING).exists():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
