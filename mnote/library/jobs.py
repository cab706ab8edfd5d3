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
  reconcile and the status bridge with its retries. It renews the lease
  every round; when it dies, another worker takes over once it runs out.

On SQLite (one machine, ``make run``) the same code holds: SQLite has no row
locks and ignores FOR UPDATE, but its writers take turns (IMMEDIATE
transactions), so the claim's read-and-mark is atomic there too.
"""

import logging
import os
import socket
from collections.abc import Iterator
from datetime import timedelta

from django.db import IntegrityError, transaction
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


def lease_holder(name: str = LEADER) -> str:
    """The live holder of the named lease, or ""."""
    row = WorkerLease.objects.filter(name=name, expires_at__gt=timezone.now()).first()
    return row.holder if row else ""
