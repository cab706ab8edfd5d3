"""The status bridge: MNote's registry follows LightRAG's document list.

Sources in progress become indexed, failed (see :mod:`mnote.library.failures`)
or duplicate; sources whose delete went through become removed; sources a
LightRAG killed mid-ingest left "indexing" get another scan.
"""

from datetime import timedelta

from django.utils import timezone

from mnote.library.failures import MAX_AUTO_RETRIES, record_failure, schedule_retry
from mnote.library.ingest import mark_indexed, owe_delete, owe_scan, unlink_from_inputs
from mnote.library.models import Job, Source
from mnote.lightrag import LightRAGClient

# A source still "indexing" this long after its scan, with LightRAG idle and
# not listing it as done, gets another scan (e.g. LightRAG was killed mid-ingest).
RESCAN_AFTER = timedelta(seconds=20)


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
    name_of_id = {}
    for document in client.iter_documents():
        listed_ids.add(document.id)
        name_of_id[document.id] = document.file_path
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
    resent = {}  # the failed record's id of each duplicate sent again in this pass -> its source
    for source, document in changed:
        if source.status == Source.Status.DUPLICATE:
            settle_duplicate(source, document.original_doc_id, resent, name_of_id.get(document.original_doc_id, ""))
    resend_orphaned_duplicates()

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


# An original a duplicate may name: searchable now, or on its way to it.
_ORIGINAL_STATES = (Source.Status.INDEXED, Source.Status.QUEUED, Source.Status.INDEXING, Source.Status.RETRYING)


def settle_duplicate(source: Source, original_doc_id: str, resent: dict | None = None, original_name: str = "") -> None:
    """A duplicate names the source whose document LightRAG kept, and only
    one that is (or is becoming) searchable: never a duplicate itself (two
    files with the same text, each recorded as the other's duplicate, left
    neither searchable), a failed or a removed file. Without such an original
    the file is sent again (its duplicate record deleted first), to be the
    searchable one itself. ``resent``: the duplicates of this pass sent
    again, by their old record's id (the other of a pair names that one);
    ``original_name``: the original's LightRAG name, for one LightRAG is
    still working on (no doc id of it recorded yet)."""
    resent = {} if resent is None else resent
    original = None
    if original_doc_id:
        original = resent.get(original_doc_id)
        original = original or Source.objects.filter(lightrag_doc_id=original_doc_id).exclude(pk=source.pk).first()
    if original is None and original_name:
        original = Source.objects.filter(lightrag_name=original_name).exclude(pk=source.pk).first()
    if original is not None and original.status in _ORIGINAL_STATES and original.duplicate_of_id != source.pk:
        source.duplicate_of = original
        source.save(update_fields=["duplicate_of"])
        return
    doc_id = source.lightrag_doc_id
    if resend_duplicate(source):
        resent[doc_id] = source


def resend_duplicate(source: Source) -> bool:
    """Send a duplicate whose original is not searchable again, a bounded
    number of times (after that it stays a duplicate of what LightRAG says).
    Returns whether it goes."""
    if source.attempts >= MAX_AUTO_RETRIES:
        return False
    doc_id, source.duplicate_of = source.lightrag_doc_id, None
    schedule_retry(source, doc_id, delay=timedelta(0))
    source.save()
    return True


def resend_orphaned_duplicates() -> int:
    """Duplicates of a file that left the searchable library (it failed, was
    removed or became a duplicate itself) go to LightRAG again; of several
    with the same original, one: the others follow it as its duplicates."""
    orphans = Source.objects.filter(status=Source.Status.DUPLICATE, duplicate_of__isnull=False).exclude(
        duplicate_of__status__in=_ORIGINAL_STATES
    )
    sent = 0
    seen = set()
    for source in orphans.order_by("pk"):
        if source.duplicate_of_id in seen:
            continue
        seen.add(source.duplicate_of_id)
        sent += resend_duplicate(source)
    return sent


def document_progress(document) -> str:
    """LightRAG's stage of a document it works on, as the dashboard shows it."""
    stage = document.status or "pending"
    if document.chunks_count:
        return f"{stage} · {document.chunks_count} chunks"
    return stage



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
