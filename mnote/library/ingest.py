"""Ingest without copies, and the work owed to LightRAG.

A sync (or a reindex, a retry) queues a source and owes LightRAG a scan in the
job ledger; the worker's scan job then links the oldest queued sources, a
batch at a time, into LightRAG's input directory (a symlink to the user's
file, never a copy) right before it asks LightRAG to scan. A bounded status bridge
(:mod:`mnote.library.status_bridge`) follows LightRAG's document list until
each source is indexed or failed; failures are told apart and retried by
:mod:`mnote.library.failures`. Deletes of derived documents go through the
same ledger. ``worker.work_once`` is one round of the worker over all of it.
"""

import hashlib
import logging
import os
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from mnote.library.derived_text import (
    DerivedTextLater,
    NoDerivedText,
    preview_refusal,
    wants_mnote_text,
    write_derived_text,
)
from mnote.library.jobs import claim_due_jobs
from mnote.library.models import Job, Source
from mnote.library.source_files import SourceUnavailable, open_source_file, source_real_path
from mnote.library.text_size import PACKAGES, package_text_bytes
from mnote.lightrag import LightRAGBusy, LightRAGClient, LightRAGError, LightRAGRejected, LightRAGUnavailable

log = logging.getLogger(__name__)

HASH_BLOCK = 1024 * 1024

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
    "generation", "retry_at", "progress", "failure_kind", "parser_hint",
]


def mark_queued(source: Source, now=None) -> None:
    """Set a source's queued state in memory (the caller saves it).
    ``now``: the time of a whole batch (one clock read, not one per file)."""
    if wants_mnote_text(source):
        source.parser_hint = Source.MNOTE_TEXT
    source.lightrag_name = source.unique_lightrag_name()
    source.status = Source.Status.QUEUED
    source.last_error = ""
    source.failure_kind = ""
    source.retry_at = None
    source.progress = ""
    source.excluded_by = ""
    source.deleted_at = None
    source.updated_at = now or timezone.now()


def mark_queued_many(sources) -> None:
    """``mark_queued`` for a batch, one timestamp for all."""
    now = timezone.now()
    for source in sources:
        mark_queued(source, now)


def queue_many(sources: list[Source]) -> int:
    """Queue already-saved, fingerprinted sources and owe LightRAG a scan; the
    worker links them into LightRAG's inputs right before that scan
    (:func:`link_for_scan`)."""
    mark_queued_many(sources)
    with transaction.atomic():
        Source.objects.bulk_update(sources, _QUEUED_FIELDS, batch_size=500)
        if sources:
            owe_scan()
    return len(sources)


def queue_for_ingest(source: Source, *, force: bool = False) -> str:
    """Queue the file for LightRAG and owe LightRAG a scan (the worker links it).

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


# The scan of the next batch waits this long after the last one started: a
# scan answered "started" makes LightRAG busy only once its background task
# gets going, and a scan it took before that would pull the next batch's
# links into this batch. Then "busy" answers hold it until LightRAG is done.
NEXT_BATCH_AFTER = timedelta(seconds=5)


def owe_scan(*, after: timedelta | None = None) -> Job:
    """One pending scan covers every queued file (the worker links them,
    a batch per scan); ``after``: not due before then."""
    # Not one a worker has claimed: it may have picked the sources it links already.
    job = Job.objects.unclaimed().filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).first()
    return job or Job.objects.create(kind=Job.Kind.SCAN, next_attempt_at=timezone.now() + (after or timedelta(0)))


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


_LINK_FIELDS = (
    "size", "root_id", "relative_path", "absolute_path", "sha256", "generation", "lightrag_name", "parser_hint", "status", "deleted_at",
)


def link_for_scan(limit: int | None = None) -> tuple[dict[int, str], bool]:
    """The scan job's first step: link the oldest queued sources, at most
    ``limit`` (``MNOTE_SCAN_BATCH``), into LightRAG's inputs. Returns the
    link name of each source linked, and whether more wait for another scan.

    Here, not in the sync: a first sync of 10,000 files would otherwise wait
    on 10,000 symlinks (ext4 kernel time, more than hashing the files), and
    LightRAG follows a link only when it scans, maybe long after the sync.
    So each source's real path is checked right before its link is made: a
    file swapped meanwhile for a symlink out of its root (another root's file,
    /etc/passwd) is never linked (the next sync sees the symlink and refuses
    it). In batches: LightRAG takes one scan's files as one batch through its
    pipeline, so a 10,000-file root in one scan would hold every later change
    (a file edited, a reindex) behind all of them, and searches and the status
    would show nothing done until LightRAG had worked through the lot.

    A link left by a worker that died before its scan is found again by the
    next attempt (the same sources are still the oldest queued): the same name
    is the same link."""
    batch, more = _scan_batch(limit or settings.MNOTE_SCAN_BATCH)
    if not batch:
        return {}, False
    linked, later = _link_into_inputs(batch)
    return linked, more or later


def _scan_batch(limit: int) -> tuple[list[Source], bool]:
    """The queued sources the next scan takes, and whether more wait."""
    queued = Source.objects.filter(status=Source.Status.QUEUED).select_related("root")
    # The columns the checks and the name read: a batch's other columns
    # (a dozen dates among them) cost more to convert than the link to make.
    queued = queued.only(*_LINK_FIELDS, "root__path")
    # Small files first, in order of queueing; large ones (hundreds of chunks
    # each) in batches of their own once no small file waits: LightRAG works
    # through a batch before its next scan, one document at a time, so a large
    # file in a batch of small ones would hold all of them (and every later one).
    # Large by the file's size, or by its text for a package (a 200 KB EPUB can
    # hold 200 chunks): the package's directory is read for the oldest only.
    alone = settings.MNOTE_SCAN_ALONE_KB * 1024
    small = Q(size__lte=alone) | Q(size__isnull=True)
    window = list(queued.filter(small).order_by("updated_at", "pk")[: limit + 1])
    large_wait = len(window) > limit or queued.exclude(small).exists()
    window = window[:limit]
    text_large = [source for source in window if _large_package(source, alone)]
    batch = [source for source in window if source not in text_large]
    if batch:
        large_wait |= bool(text_large)
    elif text_large:
        batch = text_large
    else:
        batch = list(queued.exclude(small).order_by("updated_at", "pk")[: limit + 1])
        large_wait = len(batch) > limit
    return batch[:limit], large_wait


def _link_into_inputs(batch: list[Source]) -> tuple[dict[int, str], bool]:
    """Link each source of ``batch`` whose real path checks out into
    LightRAG's inputs. Returns the link name of each source linked, and
    whether one stays queued for a later scan (its text is not made yet)."""

    input_dir = settings.MNOTE_LIGHTRAG.input_dir
    input_dir.mkdir(parents=True, exist_ok=True)
    # A descriptor of the folder: each link one symlink(2) relative to it.
    folder = os.open(input_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    linked, roots, later = {}, {}, False
    try:
        for source in batch:
            if source.lightrag_name != source.unique_lightrag_name():
                # Queued by a content change past a sync's batch limit: a
                # name of its own, never the old version's (being deleted).
                source.lightrag_name = source.unique_lightrag_name()
                source.save(update_fields=["lightrag_name", "updated_at"])
            try:
                real = source_real_path(source, roots=roots)
                if source.parser_hint == Source.MNOTE_TEXT:
                    # LightRAG reads MNote's text of the file, from MNote's data folder.
                    real = write_derived_text(source, real)
                elif refusal := preview_refusal(source):
                    # LightRAG might read it, but a citation of it would open
                    # the preview's refusal: not searchable, and it says why.
                    fail_without_text(source, refusal)
                    continue
            except SourceUnavailable as e:
                unlink_from_inputs(source)  # one an earlier attempt made
                source.status = Source.Status.NOT_INDEXED
                source.last_error = f"Not sent to LightRAG: {e.message}"
                source.save(update_fields=["status", "last_error", "updated_at"])
                continue
            except NoDerivedText as e:
                fail_without_text(source, str(e))
                continue
            except DerivedTextLater:
                later = True  # still queued: the next scan takes it
                continue
            name = source.link_name  # ours: one path component, never a "/"
            try:
                # To the real path just checked: a swap after the check
                # cannot lead the link elsewhere. symlink(2) makes the entry
                # whole in one step, so a scan never sees a half-made one.
                os.symlink(real, name, dir_fd=folder)
            except FileExistsError:
                pass  # made by an attempt whose scan did not happen: the same name is the same link
            linked[source.pk] = name
    finally:
        os.close(folder)
    return linked, later


def _large_package(source: Source, limit: int) -> bool:
    """Whether a package file (DOCX, EPUB …) holds more than ``limit`` bytes of
    XML/HTML text, read from its ZIP directory (False when that cannot be told)."""
    if os.path.splitext(source.file_name)[1].lower() not in PACKAGES:
        return False
    try:
        with open_source_file(source) as handle:
            return (package_text_bytes(handle) or 0) > limit
    except SourceUnavailable:
        return False


# The start of a failure MNote itself found (no LightRAG message behind it):
# the reader of the file refused it, or found no text in it.
NO_TEXT_FOUND = "MNote's reader of the file found no text in it."
READER_REFUSED = "MNote's reader of the file refused it: "


def fail_without_text(source: Source, refusal: str) -> None:
    """A file MNote's reader refused, or found no text in when LightRAG was
    to be given MNote's text of it: failed for good, never sent, with the
    reader's own words when it refused the file."""
    unlink_from_inputs(source)
    source.status = Source.Status.FAILED
    source.failure_kind = Source.Failure.PERMANENT
    source.retry_at = None
    source.last_error = f"{READER_REFUSED}{refusal}" if refusal else NO_TEXT_FOUND
    source.save(update_fields=["status", "failure_kind", "retry_at", "last_error", "updated_at"])


def _mark_scanned(linked: dict[int, str]) -> None:
    """The sources linked for a scan LightRAG started become "indexing" --
    unless a sync changed one meanwhile (its name is not the one linked)."""
    ids = list(linked)
    with transaction.atomic():
        for start in range(0, len(ids), 500):
            rows = Source.objects.filter(pk__in=ids[start : start + 500], status=Source.Status.QUEUED)
            rows = rows.select_for_update().only("pk", "lightrag_name", "parser_hint")
            scanned = [row.pk for row in rows if row.link_name == linked[row.pk]]
            Source.objects.filter(pk__in=scanned).update(status=Source.Status.INDEXING, updated_at=timezone.now())


def _another_scan_under_way(job: Job) -> bool:
    """A scan job another live worker holds (owe_scan adds a new one while a
    claimed one runs)."""
    held = Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING, lease_until__gte=timezone.now())
    return held.exclude(pk=job.pk).exists()


def run_due_jobs(client: LightRAGClient) -> int:
    """Carry out the ledger's due jobs once; transient failures wait with backoff.
    Each job is claimed first, so several workers never carry out one job twice."""
    done = 0
    for job in claim_due_jobs():
        try:
            if job.kind == Job.Kind.SCAN:
                if _another_scan_under_way(job):
                    # Two workers would link the same oldest files and ask
                    # LightRAG twice; this one waits for the other's scan.
                    job.retry_later("another worker is linking files for its scan", give_up=False)
                    continue
                linked, more = link_for_scan()
                result = client.scan()
                job.finish(track_id=result.track_id)
                _mark_scanned(linked)
                if more:
                    owe_scan(after=NEXT_BATCH_AFTER)  # the next batch, once LightRAG has taken this one
            elif job.kind == Job.Kind.DELETE:
                if not _carry_out_delete(client, job):
                    job.retry_later("LightRAG does not list the document yet")
                    continue
                job.finish()
            else:
                job.finish()
        except LightRAGBusy as e:
            job.retry_later(f"LightRAG busy: {e}", give_up=False)
            wait_with(job)
            break  # the other jobs would only hear "busy" too
        except LightRAGRejected as e:
            # "not_allowed" while a document is still being processed is transient too.
            job.retry_later(f"LightRAG refused: {e}")
            continue
        except LightRAGUnavailable as e:
            # No answer at all (killed, restarting, unreachable): the work is
            # owed until LightRAG is back, however long that takes. An answer
            # that is an error (a 5xx) counts towards giving up.
            job.retry_later(str(e), give_up=e.status_code is not None)
            continue
        except LightRAGError as e:
            job.retry_later(str(e))
            continue
        except OSError as e:
            # LightRAG's input directory missing or not writable: the files
            # stay queued and the ledger says why, the worker goes on.
            job.retry_later(f"Could not link files into LightRAG's input directory: {e}")
            continue
        done += 1
    return done


def wait_with(busy_job: Job) -> int:
    """LightRAG answered "busy": every other job due before this one's next
    try waits for it, so one job asks LightRAG whether it is free again (its
    backoff growing, to a cap) instead of each of them asking every round.
    Returns how many jobs were moved."""
    others = Job.objects.filter(state=Job.State.PENDING, next_attempt_at__lt=busy_job.next_attempt_at).exclude(pk=busy_job.pk)
    return others.update(next_attempt_at=busy_job.next_attempt_at)


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
