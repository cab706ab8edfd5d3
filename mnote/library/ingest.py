"""Ingest without copies, and the work owed to LightRAG.

A symlink in LightRAG's input directory points at the user's file, a scan is
owed to LightRAG in the job ledger, and a bounded status bridge follows
LightRAG's document list until each source is indexed or failed. Deletes of
derived documents go through the same ledger.
"""

import hashlib
import logging
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from mnote.library.jobs import claim_due_jobs
from mnote.library.models import Job, Source
from mnote.lightrag import LightRAGBusy, LightRAGClient, LightRAGError, LightRAGRejected

log = logging.getLogger(__name__)

HASH_BLOCK = 1024 * 1024
# A source still "indexing" this long after its scan, with LightRAG idle and
# not listing it as done, gets another scan (e.g. LightRAG was killed mid-ingest).
RESCAN_AFTER = timedelta(seconds=20)


def file_sha256(path: Path | BinaryIO) -> str:
    """The sha256 of a file by path, or of an open binary file (from its start)."""
    digest = hashlib.sha256()
    if hasattr(path, "read"):
        path.seek(0)
        while block := path.read(HASH_BLOCK):
            digest.update(block)
        path.seek(0)
        return digest.hexdigest()
    with open(path, "rb") as f:
        while block := f.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def opened_sha256(source: Source, handle: BinaryIO) -> str:
    """The hash of a file opened by ``open_source_file``: the registry's when
    size and mtime still agree, else read from the very file that was opened
    (never from a path that may have been swapped since)."""
    stat = os.fstat(handle.fileno())
    if source.sha256 and source.size == stat.st_size and source.mtime == stat.st_mtime:
        return source.sha256
    return file_sha256(handle)


def current_sha256(source: Source, stat: os.stat_result | None = None) -> str:
    """The file's hash as it is now: the registry's when size and mtime still
    agree (no reading), else computed from the file."""
    stat = stat or os.stat(source.absolute_path)
    if source.sha256 and source.size == stat.st_size and source.mtime == stat.st_mtime:
        return source.sha256
    return file_sha256(Path(source.absolute_path))


def refresh_fingerprint(source: Source, stat: os.stat_result | None = None) -> bool:
    """Bring sha256 / size / mtime up to date. Returns whether the content changed."""
    stat = stat or os.stat(source.absolute_path)
    return set_fingerprint(source, stat, current_sha256(source, stat))


def set_fingerprint(source: Source, stat: os.stat_result, sha256: str) -> bool:
    """Record the file's hash and the stat it was taken at (the caller saves).
    Returns whether the content changed."""
    changed = bool(source.sha256) and sha256 != source.sha256
    source.sha256, source.size, source.mtime = sha256, stat.st_size, stat.st_mtime
    source.mtime_ns, source.inode = stat.st_mtime_ns, stored_inode(stat)
    return changed


def stored_inode(stat: os.stat_result) -> int:
    """The inode as the database's signed 64-bit integer can hold it."""
    return stat.st_ino if stat.st_ino < 2**63 else stat.st_ino - 2**64


def _link_into_inputs(source: Source, input_dir: Path, present: set[str]) -> None:
    name = source.link_name
    if name in present:
        return
    # Link under a temporary name first so a scan never sees a half-made entry.
    tmp = f"{input_dir}/.{name}.tmp"
    if f".{name}.tmp" in present:
        os.unlink(tmp)
    os.symlink(source.absolute_path, tmp)
    os.replace(tmp, f"{input_dir}/{name}")
    present.add(name)


def unlink_from_inputs(source: Source) -> None:
    """Remove our own not-yet-scanned link (never the user's file), so a later
    scan does not pick up a file that left the library."""
    if not source.lightrag_name:
        return
    for name in {source.lightrag_name, source.link_name}:
        link = settings.MNOTE_LIGHTRAG.input_dir / name
        if link.is_symlink():
            link.unlink()


_QUEUED_FIELDS = [
    "sha256", "size", "mtime", "mtime_ns", "inode", "lightrag_name", "status", "last_error", "excluded_by", "deleted_at", "updated_at",
    "generation", "retry_at", "progress", "failure_kind",
]


def mark_queued(source: Source) -> None:
    """Set a source's queued state in memory (the caller saves it)."""
    source.lightrag_name = source.unique_lightrag_name()
    source.status = Source.Status.QUEUED
    source.last_error = ""
    source.failure_kind = ""
    source.retry_at = None
    source.progress = ""
    source.excluded_by = ""
    source.deleted_at = None
    source.updated_at = timezone.now()


def send_to_lightrag(sources: list[Source]) -> None:
    """Link saved, queued sources into LightRAG's inputs; one scan covers them all."""
    if not sources:
        return
    owe_scan()
    input_dir = settings.MNOTE_LIGHTRAG.input_dir
    input_dir.mkdir(parents=True, exist_ok=True)
    # One listing instead of two lookups per link: a first sync links every file.
    present = set(os.listdir(input_dir))
    for source in sources:
        _link_into_inputs(source, input_dir, present)


def queue_many(sources: list[Source]) -> int:
    """Queue already-saved, fingerprinted sources."""
    for source in sources:
        mark_queued(source)
    with transaction.atomic():
        Source.objects.bulk_update(sources, _QUEUED_FIELDS, batch_size=500)
        send_to_lightrag(sources)
    return len(sources)


def queue_for_ingest(source: Source, *, force: bool = False) -> str:
    """Link the file into LightRAG's inputs and owe LightRAG a scan.

    Returns "queued", or "already_registered" when the same path with the same
    content is already indexed (unless forced).
    """
    refresh_fingerprint(source)
    current = source.lightrag_name == source.unique_lightrag_name()
    if not force and source.status == Source.Status.INDEXED and not source.stale and current:
        source.save(update_fields=["sha256", "size", "mtime", "updated_at"])
        return "already_registered"
    with transaction.atomic():
        if force:
            if source.lightrag_doc_id:
                owe_delete(source, source.lightrag_doc_id)
                source.lightrag_doc_id = ""
            source.generation += 1
            source.save(update_fields=["lightrag_doc_id", "generation"])
        queue_many([source])
    return "queued"


def owe_scan() -> Job:
    """One pending scan covers every file waiting in the input directory."""
    # Not one a worker has claimed: its scan may already be under way, before these files were linked.
    job = Job.objects.unclaimed().filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).first()
    return job or Job.objects.create(kind=Job.Kind.SCAN)


def owe_delete(source: Source | None, doc_id: str = "", *, lightrag_name: str = "") -> Job:
    """Ask LightRAG to drop a derived document (never the file): by doc id,
    or by the name we gave it when LightRAG has not reported an id yet."""
    payload = {"doc_ids": [doc_id]} if doc_id else {"doc_ids": [], "lightrag_names": [lightrag_name]}
    return Job.objects.create(kind=Job.Kind.DELETE, source=source, payload=payload)


def submit_delete(source: Source, *, missing: bool, save: bool = True) -> None:
    """Take a source out of what LightRAG can cite: stale at once, its
    document deleted, "delete submitted" until LightRAG no longer lists it.
    ``save=False``: the caller saves (a sync writes a folder's rows at once)."""
    source.stale = True
    if missing:
        source.deleted_at = source.deleted_at or timezone.now()
    if source.status == Source.Status.DELETE_SUBMITTED:
        if save:
            source.save()  # already on its way out; asking twice must not lose the first request
        return
    unlink_from_inputs(source)
    if source.lightrag_doc_id:
        owe_delete(source, source.lightrag_doc_id)
        source.lightrag_doc_id = ""
        source.status = Source.Status.DELETE_SUBMITTED
    elif source.status == Source.Status.INDEXING and source.lightrag_name:
        # LightRAG is working on it and has no id for us yet: delete by name.
        owe_delete(source, lightrag_name=source.lightrag_name)
        source.status = Source.Status.DELETE_SUBMITTED
    else:
        source.status = Source.Status.REMOVED
    if save:
        source.save()


# A delete by name waits this long for LightRAG to list the document.
DELETE_BY_NAME_PATIENCE = timedelta(minutes=30)


def _carry_out_delete(client: LightRAGClient, job: Job) -> bool:
    """Send a delete job; False when it must wait (a name not listed yet)."""
    doc_ids = list(job.payload.get("doc_ids") or [])
    names = job.payload.get("lightrag_names") or []
    if names:
        listed = {d.file_path: d.id for d in client.iter_documents() if d.file_path in names}
        if len(listed) < len(names) and timezone.now() - job.created_at < DELETE_BY_NAME_PATIENCE:
            return False
        doc_ids += [doc_id for doc_id in listed.values() if doc_id not in doc_ids]
        # Remembered so the status bridge can tell when LightRAG has let go.
        job.payload = {"doc_ids": doc_ids}
        job.save(update_fields=["payload"])
    if doc_ids:
        client.delete_documents(doc_ids)
    return True


def _unlink_sources_that_left_their_root() -> None:
    """LightRAG follows our links when it scans, maybe long after the sync
    that made them: a file swapped meanwhile for a symlink out of its root
    (another root's file, /etc/passwd) loses its link before the scan. The
    next sync sees the symlink and refuses it."""
    from mnote.library.source_files import SourceUnavailable, source_real_path

    for source in Source.objects.filter(status=Source.Status.QUEUED).select_related("root"):
        try:
            source_real_path(source)
        except SourceUnavailable as e:
            unlink_from_inputs(source)
            source.status = Source.Status.NOT_INDEXED
            source.last_error = f"Not sent to LightRAG: {e.message}"
            source.save(update_fields=["status", "last_error", "updated_at"])


def run_due_jobs(client: LightRAGClient) -> int:
    """Carry out the ledger's due jobs once; transient failures wait with backoff.
    Each job is claimed first, so several workers never carry out one job twice."""
    done = 0
    for job in claim_due_jobs():
        try:
            if job.kind == Job.Kind.SCAN:
                _unlink_sources_that_left_their_root()
                result = client.scan()
                job.finish(track_id=result.track_id)
                Source.objects.filter(status=Source.Status.QUEUED).update(
                    status=Source.Status.INDEXING, updated_at=timezone.now()
                )
            elif job.kind == Job.Kind.DELETE:
                if not _carry_out_delete(client, job):
                    job.retry_later("LightRAG does not list the document yet")
                    continue
                job.finish()
            else:
                job.finish()
        except LightRAGBusy as e:
            job.retry_later(f"LightRAG busy: {e}", give_up=False)
            continue
        except LightRAGRejected as e:
            # "not_allowed" while a document is still being processed is transient too.
            job.retry_later(f"LightRAG refused: {e}")
            continue
        except LightRAGError as e:
            job.retry_later(str(e))
            continue
        done += 1
    return done


def bridge_statuses(client: LightRAGClient) -> int:
    """Follow LightRAG's document list: sources in progress become indexed /
    failed / duplicate (or wait for a retry), sources whose delete went
    through become removed. Returns how many changed."""
    waiting = {
        s.lightrag_name: s for s in Source.objects.filter(status__in=[Source.Status.INDEXING, Source.Status.QUEUED])
    }
    deleting = list(Source.objects.filter(status=Source.Status.DELETE_SUBMITTED))
    if not waiting and not deleting:
        return 0
    listed_ids = set()
    documents = {}
    by_name = {}
    for document in client.iter_documents():
        listed_ids.add(document.id)
        if by_name.get(document.file_path, "dup-").startswith("dup-"):
            by_name[document.file_path] = document.id
        if document.file_path not in waiting:
            continue
        # A "dup-" record only says a name was seen twice; the "doc-" record
        # of the same file carries its real state.
        if document.file_path in documents and document.id.startswith("dup-"):
            continue
        documents[document.file_path] = document

    changed = []
    for name, document in documents.items():
        source = waiting[name]
        if document.status == "processed":
            mark_indexed(source, document)
        elif document.status == "failed":
            if document.is_duplicate:
                source.status = Source.Status.DUPLICATE
                # Kept (never citable: not indexed) so a reindex or prune deletes LightRAG's failed record.
                source.lightrag_doc_id = document.id
                source.last_error = document.error_msg or "LightRAG reported the document failed."
                source.progress = ""
            else:
                record_failure(source, document)
        else:
            progress = document_progress(document)
            if source.status == Source.Status.INDEXING and progress == source.progress:
                continue
            source.status = Source.Status.INDEXING
            source.progress = progress
        source.save()
        changed.append((source, document))
    # After the saves, so an original indexed in this same pass is found.
    for source, document in changed:
        if source.status == Source.Status.DUPLICATE and document.original_doc_id:
            source.duplicate_of = Source.objects.filter(lightrag_doc_id=document.original_doc_id).first()
            source.save(update_fields=["duplicate_of"])

    removed = 0
    for source in deleting:
        jobs = list(source.jobs.filter(kind=Job.Kind.DELETE))
        if any(job.state == Job.State.PENDING for job in jobs):
            continue
        asked = {doc_id for job in jobs for doc_id in job.payload.get("doc_ids", [])}
        current = by_name.get(source.lightrag_name)
        if current and current not in asked:
            # Submitted while LightRAG was still indexing it: its id is known now.
            owe_delete(source, current)
            continue
        if not current and not asked & listed_ids:
            source.status = Source.Status.REMOVED
            source.save(update_fields=["status", "updated_at"])
            removed += 1
    return len(changed) + removed


def document_progress(document) -> str:
    """LightRAG's stage of a document it works on, as the dashboard shows it."""
    stage = document.status or "pending"
    if document.chunks_count:
        return f"{stage} · {document.chunks_count} chunks"
    return stage


def mark_indexed(source: Source, document) -> None:
    """A document LightRAG processed: the source is indexed and citable (the
    caller saves). A delete we still owe for this very document — a failed
    record LightRAG itself processed again — is called off."""
    source.status = Source.Status.INDEXED
    source.stale = False
    source.indexed_at = source.indexed_at if source.lightrag_doc_id == document.id else timezone.now()
    source.lightrag_doc_id = document.id
    source.chunk_count = document.chunks_count
    source.parse_engine = document.parse_engine or ""
    source.last_error = ""
    source.failure_kind = ""
    source.attempts = 0
    source.retry_at = None
    source.progress = ""
    for job in Job.objects.filter(kind=Job.Kind.DELETE, state=Job.State.PENDING, source=source):
        if job.payload.get("doc_ids") == [document.id]:
            job.state, job.finished_at = Job.State.DONE, timezone.now()
            job.last_error = "called off: LightRAG processed the document after all"
            job.save(update_fields=["state", "finished_at", "last_error", "updated_at"])


# --- failures ------------------------------------------------------------------

# LightRAG's words for failures that another attempt can cure: timeouts, a busy
# or halted pipeline, an unreachable model service, a restart mid-document.
TRANSIENT_MARKERS = (
    "timeout", "timed out", "busy", "halted", "connection", "refused", "cancelled", "canceled",
    "interrupted", "restart", "temporarily", "unavailable", "rate limit", "queue full", "too many requests",
    "internal storage error", "worker execution", "502", "503", "504", "429",
    # The OpenAI binding's exceptions after its own retries, and a vector store
    # flush that failed with them: the model service failed, not the file.
    "retryerror", "internalservererror", "apiconnectionerror", "apitimeouterror", "ratelimiterror",
    "flush failed", "server error",
)
NATIVE_DOCX_EMPTY = "docx parser returned empty content"
MAX_AUTO_RETRIES = 4
RETRY_BASE = timedelta(seconds=20)
RETRY_MAX = timedelta(minutes=10)
# Sources sent again per round, and only while LightRAG is idle: a small wave,
# so one large file cannot time out the others.
RETRY_WAVE = 3


def classify_failure(message: str) -> str:
    """"legacy" (the native DOCX parser found no text: try the plain-text
    parser), "transient" (try again later) or "permanent"."""
    text = (message or "").lower()
    if NATIVE_DOCX_EMPTY in text:
        return "legacy"
    if any(marker in text for marker in TRANSIENT_MARKERS):
        return "transient"
    return "permanent"


def record_failure(source: Source, document) -> None:
    """Decide what a document LightRAG failed becomes (the caller saves)."""
    message = document.error_msg or "LightRAG reported the document failed."
    kind = classify_failure(message)
    source.progress = ""
    if kind == "legacy" and source.parser_hint != "legacy" and source.file_name.lower().endswith(".docx"):
        source.parser_hint = "legacy"
        source.last_error = message
        schedule_retry(source, document.id, delay=timedelta(0), count=False)
        return
    if kind == "transient" and source.attempts < MAX_AUTO_RETRIES:
        source.last_error = message
        schedule_retry(source, document.id)
        return
    source.status = Source.Status.FAILED
    source.failure_kind = Source.Failure.TRANSIENT if kind == "transient" else Source.Failure.PERMANENT
    # Kept (never citable: not indexed) so a retry, reindex or prune deletes LightRAG's failed record.
    source.lightrag_doc_id = document.id
    source.retry_at = None
    if kind == "transient":
        source.last_error = f"Gave up after {source.attempts + 1} attempts. {message}"
    else:
        source.last_error = message


def schedule_retry(source: Source, failed_doc_id: str = "", *, delay: timedelta | None = None, count: bool = True) -> None:
    """Wait, then send the file again under a new name. LightRAG's failed
    record goes first: LightRAG retries every failed document together with
    each later scan, which is how one large file failed the others."""
    if failed_doc_id:
        owe_delete(source, failed_doc_id)
    unlink_from_inputs(source)
    source.lightrag_doc_id = ""
    if count:
        source.attempts += 1
    if delay is None:
        delay = min(RETRY_BASE * 2 ** max(source.attempts - 1, 0), RETRY_MAX)
    source.status = Source.Status.RETRYING
    source.failure_kind = Source.Failure.TRANSIENT
    source.retry_at = timezone.now() + delay


def retry_failed(sources) -> int:
    """Send failed sources of ``sources`` (a queryset) back to LightRAG, in
    the worker's small waves, with a fresh retry budget. Returns how many."""
    count = 0
    with transaction.atomic():
        for source in sources.filter(status=Source.Status.FAILED).select_for_update():
            source.attempts = 0
            schedule_retry(source, source.lightrag_doc_id, delay=timedelta(0), count=False)
            source.save()
            count += 1
    return count


# A delete LightRAG accepted but whose document it still lists this long after
# is asked for again (the background delete was refused or lost).
DELETE_SETTLE = timedelta(seconds=60)
# How a delete answered "busy" or refused while LightRAG worked says so (run_due_jobs).
_WAITING_FOR_LIGHTRAG = ("LightRAG busy", "LightRAG refused")


def _old_records(source: Source, documents: dict) -> tuple[list[Job], list]:
    """The source's delete jobs, and the documents they asked for that LightRAG still lists."""
    deletes = [job for job in source.jobs.all() if job.kind == Job.Kind.DELETE]  # prefetched
    asked = {doc_id for job in deletes for doc_id in job.payload.get("doc_ids") or []}
    return deletes, [documents[doc_id] for doc_id in sorted(asked) if doc_id in documents]


def _ready_to_resend(source: Source, documents: dict) -> bool | None:
    """Whether LightRAG has let go of every failed record of ``source`` we
    asked it to delete: True to send the file again, False to wait, None when
    a delete is still owed and was just moved up (LightRAG is idle now).

    A retry must wait: each scan makes LightRAG process its failed records
    again, and the same content sent under a new name while the old record is
    being analysed is filed as a duplicate of it. A failed record LightRAG
    itself processed meanwhile makes the source indexed; a delete that went
    through but left the record listed is asked for again."""
    deletes, still_listed = _old_records(source, documents)
    processed = [d for d in still_listed if d.status == "processed"]
    if processed and source.deleted_at is None and not source.stale:
        mark_indexed(source, processed[0])
        source.save()
        return False
    pending = [job for job in deletes if job.state == Job.State.PENDING]
    if pending:
        # Answered "busy" while LightRAG worked; it is idle now: ask at once,
        # so the wave that follows takes every file whose record is gone.
        waiting = [job for job in pending if job.last_error.startswith(_WAITING_FOR_LIGHTRAG)]
        if waiting:
            Job.objects.filter(pk__in=[job.pk for job in waiting]).update(next_attempt_at=timezone.now())
            return None
        return False
    if not still_listed:
        return True
    last = max(job.finished_at or job.updated_at for job in deletes)
    if timezone.now() - last >= DELETE_SETTLE:
        for document in still_listed:
            owe_delete(source, document.id)
    return False


def _first_legacy_attempt(source: Source) -> bool:
    return source.parser_hint == "legacy" and classify_failure(source.last_error) == "legacy"


def resend_due_retries(client: LightRAGClient) -> int:
    """Send a small wave of sources whose retry is due, when LightRAG is idle,
    owes us no scan and no longer lists their failed records. Returns how
    many were sent."""
    due = Source.objects.filter(status=Source.Status.RETRYING, retry_at__lte=timezone.now()).order_by("retry_at")
    if not due.exists():
        return 0
    if Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).exists():
        return 0
    if Source.objects.filter(status__in=[Source.Status.QUEUED, Source.Status.INDEXING]).exists():
        return 0
    if client.health().pipeline_busy:
        return 0
    documents = {document.id: document for document in client.iter_documents()}
    ready, deletes_moved_up = [], False
    for source in due.prefetch_related("jobs"):
        verdict = _ready_to_resend(source, documents)
        deletes_moved_up |= verdict is None
        if verdict:
            ready.append(source)
    if deletes_moved_up:
        return 0  # the deletes go next round; the files follow together after them
    # A file going to the legacy parser after the native one found nothing is
    # no retry of a timeout: small, cheap to parse, so all of them go at once.
    legacy = [source for source in ready if _first_legacy_attempt(source)]
    sent = []
    for source in legacy + [source for source in ready if source not in legacy][:RETRY_WAVE]:
        try:
            refresh_fingerprint(source)
        except OSError:
            submit_delete(source, missing=True)  # gone from its folder meanwhile
            continue
        source.generation += 1
        sent.append(source)
    queue_many(sent)
    return len(sent)


# Scans a source may stay unlisted by an idle LightRAG before it is called failed.
MAX_UNLISTED_SCANS = 3


def rescan_stuck(client: LightRAGClient) -> bool:
    """Owe a new scan when sources sit in "indexing" after their scan finished
    and LightRAG is idle — what a LightRAG killed mid-ingest leaves behind.
    A source LightRAG never lists after several scans (a file it refuses to
    take in) ends failed, saying so, instead of "indexing" forever."""
    stuck_before = timezone.now() - RESCAN_AFTER
    stuck = Source.objects.filter(status=Source.Status.INDEXING, updated_at__lt=stuck_before)
    if not stuck.exists():
        return False
    if Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).exists():
        return False
    if client.health().pipeline_busy:
        return False
    listed = {d.file_path for d in client.iter_documents()}
    for source in stuck.exclude(lightrag_name__in=listed):
        source.attempts += 1
        if source.attempts >= MAX_UNLISTED_SCANS:
            source.status = Source.Status.FAILED
            source.failure_kind = Source.Failure.PERMANENT
            source.last_error = (
                f"LightRAG did not take this file in after {source.attempts} scans "
                f"(its log may say why, e.g. a file type or name it refuses)."
            )
            unlink_from_inputs(source)
        source.save(update_fields=["attempts", "status", "failure_kind", "last_error", "updated_at"])
    if not stuck.exists():
        return False
    owe_scan()
    stuck.update(updated_at=timezone.now())
    return True


def work_once(client: LightRAGClient) -> None:
    """One round of the worker: jobs, the status bridge, recovery of stuck
    sources, then a wave of due retries."""
    run_due_jobs(client)
    bridge_statuses(client)
    rescan_stuck(client)
    resend_due_retries(client)


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
