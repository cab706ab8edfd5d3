"""Job claims and the leader lease: what lets several workers, in several
processes or on several machines, share one job ledger.

* A job is claimed before it is carried out: ``SELECT … FOR UPDATE SKIP
  LOCKED`` on PostgreSQL picks a due job no other worker is claiming at that
  moment, and a lease on the row keeps the others off it while it runs (the
  LightRAG call happens outside any transaction). A worker that dies mid-job
  leaves its lease to run out; then another worker claims the job again.
  Scans and deletes are idempotent against LightRAG (a second scan finds
  nothing new, a second delete of a gone document is a no-op), so a job
  carried out again after a crash still has its effect once.
* One worker at a time is the *leader* (a lease row): it runs what must not
  run twice at once — the file watcher, the periodic full sync, the
  reconcile and the status bridge with its retries. A thread of the leader
  renews the lease a few times per lease while the worker's loop goes
  round; when the leader dies, another worker takes over once it runs out.

On SQLite (one machine, ``make run``) the same code holds: SQLite has no row
locks and ignores FOR UPDATE, but its writers take turns (IMMEDIATE
transactions), so the claim's read-and-mark is atomic there too.
"""

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from mnote.env import env_int
from mnote.library.models import Job, WorkerLease

log = logging.getLogger(__name__)

# Longer than any one job can take (one LightRAG request, bounded by the
# client's timeout), so a live worker never loses a job it is carrying out.
JOB_LEASE = timedelta(seconds=env_int("MNOTE_JOB_LEASE_SECONDS", 300, minimum=1))
# How long a dead leader blocks the singletons before another worker takes
# over; the leader renews it every round (seconds apart).
LEADER_LEASE = timedelta(seconds=env_int("MNOTE_LEADER_LEASE_SECONDS", 30, minimum=1))
LEADER = "leader"


def worker_id() -> str:
    """Who holds a claim: host and process, readable in the admin."""
    return f"{socket.gethostname()}:{os.getpid()}"


def claim_next(worker: str, *, kinds=None, lease: timedelta | None = None) -> Job | None:
    """Claim one due job no live worker holds, or None."""
    now = timezone.now()
    with transaction.atomic():
        jobs = Job.objects.due(now).unclaimed(now)
        if kinds:
            jobs = jobs.filter(kind__in=kinds)
        job = jobs.select_for_update(skip_locked=True).first()
        if job is None:
            return None
        job.claimed_by = worker
        job.lease_until = now + (lease or JOB_LEASE)
        job.save(update_fields=["claimed_by", "lease_until"])
    return job


def release(job: Job, worker: str) -> None:
    """Let go of a claim (the job is done, failed or waits for its retry).
    Only the claim's holder releases it: one whose lease ran out and was
    claimed again by another worker leaves that claim alone. ``claimed_by``
    stays, saying which worker carried the job out last."""
    Job.objects.filter(pk=job.pk, claimed_by=worker).update(lease_until=None)


def claim_due_jobs(worker: str | None = None, *, limit: int | None = None) -> Iterator[Job]:
    """Claim due jobs one at a time, each released when the caller moves on
    to the next (or stops): ``for job in claim_due_jobs(): …``."""
    worker = worker or worker_id()
    count = 0
    while limit is None or count < limit:
        job = claim_next(worker)
        if job is None:
            return
        count += 1
        try:
            yield job
        finally:
            release(job, worker)


# --- the leader ----------------------------------------------------------------


def hold_lease(name: str, holder: str, *, lease: timedelta | None = None) -> bool:
    """Take or renew the named lease for ``holder``; False while another
    holder's lease runs."""
    lease = lease or LEADER_LEASE
    now = timezone.now()
    try:
        with transaction.atomic():
            row, _ = WorkerLease.objects.select_for_update().get_or_create(name=name)
            if row.holder != holder and row.holder and row.expires_at > now:
                return False
            if row.holder != holder:
                log.info("lease %s: %s takes over from %s", name, holder, row.holder or "nobody")
                row.acquired_at = now
            row.holder = holder
            row.expires_at = now + lease
            row.save()
            return True
    except IntegrityError:
        # Two workers created the row at once; the other one won this round.
        return False


def give_up_lease(name: str, holder: str) -> None:
    """A leader stopping cleanly hands over at once instead of after the lease."""
    WorkerLease.objects.filter(name=name, holder=holder).update(holder="", expires_at=timezone.now())


# A main loop that has not finished a round for this long is stuck (a hung
# file system, say): its leadership is let go so another worker can lead.
STUCK_AFTER = timedelta(minutes=10)


class Leadership:
    """Holds the leader lease from a thread of its own, renewing it a few
    times per lease, so a long round of the worker (a full sync of a big
    library) does not let it run out and hand the singletons to a second
    leader meanwhile. The worker's loop calls ``beat()`` every round; when it
    has not for STUCK_AFTER, the lease is no longer renewed."""

    def __init__(self, holder: str, *, name: str = LEADER, lease: timedelta | None = None):
        self.holder, self.name, self.lease = holder, name, lease or LEADER_LEASE
        self.held = False
        self._last_round = time.monotonic()
        self._stop = threading.Event()
        self._first_try = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-lease", daemon=True)

    def start(self) -> "Leadership":
        self._thread.start()
        self._first_try.wait(timeout=30)
        return self

    def beat(self) -> bool:
        """The loop finished a round; returns whether this worker leads now."""
        self._last_round = time.monotonic()
        return self.held

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if time.monotonic() - self._last_round > STUCK_AFTER.total_seconds():
                    if self.held:
                        log.error("worker %s: no round finished for %s; letting the lead go", self.holder, STUCK_AFTER)
                    self.held = False
                else:
                    try:
                        self.held = hold_lease(self.name, self.holder, lease=self.lease)
                    except DatabaseError as e:
                        # A locked SQLite file, a lost connection: try again soon; the
                        # lease outlives a missed renewal or two.
                        log.warning("worker %s: could not renew the %s lease: %s", self.holder, self.name, e)
                self._first_try.set()
                self._stop.wait(self.lease.total_seconds() / 3)
        finally:
            connection.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self.held:
            try:
                give_up_lease(self.name, self.holder)
            except DatabaseError:
                pass  # it runs out on its own
