"""Ingest without copies: a symlink in LightRAG's input directory points at
the user's file, a scan is owed to LightRAG in the job ledger, and a bounded
status bridge follows LightRAG's document list until each source is indexed
or failed.
"""

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from mnote.library.expansion import expand_root
from mnote.library.models import IndexedRoot, Job, Source
from mnote.lightrag import LightRAGBusy, LightRAGClient, LightRAGError

log = logging.getLogger(__name__)

HASH_BLOCK = 1024 * 1024


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class RegisterSummary:
    new: int = 0
    known: int = 0
    excluded: int = 0
    refused: tuple[str, ...] = ()


def register_root(root: IndexedRoot) -> RegisterSummary:
    """Create a registry row for each file the root holds that has none yet."""
    candidates, refused = expand_root(
        settings.MNOTE_LIBRARY_BASE_DIR, root.path, recursive=root.recursive, exclude_patterns=root.exclude_patterns
    )
    summary = RegisterSummary(refused=tuple(refused))
    known = set(root.sources.values_list("relative_path", flat=True))
    for candidate in candidates:
        if candidate.relative_path in known:
            summary.known += 1
            continue
        Source.objects.create(
            root=root,
            relative_path=candidate.relative_path,
            absolute_path=str(candidate.absolute_path),
            status=Source.Status.EXCLUDED if candidate.excluded_by else Source.Status.NOT_INDEXED,
            excluded_by=candidate.excluded_by,
        )
        if candidate.excluded_by:
            summary.excluded += 1
        else:
            summary.new += 1
    return summary


def _link_into_inputs(source: Source) -> None:
    input_dir = settings.MNOTE_LIGHTRAG.input_dir
    input_dir.mkdir(parents=True, exist_ok=True)
    link = input_dir / source.lightrag_name
    if link.is_symlink() or link.exists():
        return
    # Link under a temporary name first so a scan never sees a half-made entry.
    tmp = input_dir / f".{source.lightrag_name}.tmp"
    if tmp.is_symlink():
        tmp.unlink()
    os.symlink(source.absolute_path, tmp)
    os.replace(tmp, link)


def queue_for_ingest(source: Source, *, force: bool = False) -> str:
    """Hash the file, link it into LightRAG's inputs and owe LightRAG a scan.

    Returns "queued", or "already_registered" when the same path with the same
    content is already indexed (unless forced).
    """
    path = Path(source.absolute_path)
    stat = path.stat()
    sha256 = file_sha256(path)
    if not force and source.status == Source.Status.INDEXED and source.sha256 == sha256 and not source.stale:
        return "already_registered"
    with transaction.atomic():
        source.sha256 = sha256
        source.size = stat.st_size
        source.mtime = stat.st_mtime
        source.lightrag_name = source.unique_lightrag_name()
        source.status = Source.Status.QUEUED
        source.last_error = ""
        source.save()
        owe_scan()
    _link_into_inputs(source)
    return "queued"


def owe_scan() -> Job:
    """One pending scan covers every file waiting in the input directory."""
    job = Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).first()
    return job or Job.objects.create(kind=Job.Kind.SCAN)


def run_due_jobs(client: LightRAGClient) -> int:
    """Carry out the ledger's due jobs once; transient failures wait with backoff."""
    done = 0
    for job in Job.objects.due():
        if job.kind == Job.Kind.SCAN:
            try:
                result = client.scan()
            except LightRAGBusy as e:
                job.retry_later(f"LightRAG busy: {e}")
                continue
            except LightRAGError as e:
                job.retry_later(str(e))
                continue
            job.finish(track_id=result.track_id)
            Source.objects.filter(status=Source.Status.QUEUED).update(
                status=Source.Status.INDEXING, updated_at=timezone.now()
            )
            done += 1
    return done


def bridge_statuses(client: LightRAGClient) -> int:
    """Move sources in progress to indexed / failed / duplicate from
    LightRAG's document list. Returns how many changed."""
    waiting = {
        s.lightrag_name: s for s in Source.objects.filter(status__in=[Source.Status.INDEXING, Source.Status.QUEUED])
    }
    if not waiting:
        return 0
    documents = {}
    for document in client.iter_documents():
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
            source.status = Source.Status.INDEXED
            source.indexed_at = timezone.now()
            source.lightrag_doc_id = document.id
            source.chunk_count = document.chunks_count
            source.parse_engine = document.parse_engine or ""
            source.last_error = ""
        elif document.status == "failed":
            source.status = Source.Status.DUPLICATE if document.is_duplicate else Source.Status.FAILED
            source.last_error = document.error_msg or "LightRAG reported the document failed."
        elif source.status == Source.Status.QUEUED:
            source.status = Source.Status.INDEXING
        else:
            continue
        source.save()
        changed.append((source, document))
    # After the saves, so an original indexed in this same pass is found.
    for source, document in changed:
        if source.status == Source.Status.DUPLICATE and document.original_doc_id:
            source.duplicate_of = Source.objects.filter(lightrag_doc_id=document.original_doc_id).first()
            source.save(update_fields=["duplicate_of"])
    return len(changed)


def wait_until_settled(client: LightRAGClient, *, timeout: float, interval: float = 1.0) -> bool:
    """Run jobs and the status bridge until nothing is in progress; bounded by
    ``timeout``. Returns whether everything settled."""
    deadline = time.monotonic() + timeout
    while True:
        run_due_jobs(client)
        try:
            bridge_statuses(client)
        except LightRAGError as e:
            log.warning("status bridge: %s", e)
        if not Source.objects.filter(status__in=[Source.Status.QUEUED, Source.Status.INDEXING]).exists():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
