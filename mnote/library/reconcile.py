"""Keep the registry in step with LightRAG's whole document list.

The status bridge follows only sources in progress; this pass reads every
document LightRAG has (every status, all pages) and repairs what drifted: a
document LightRAG processed after MNote gave up on it, an indexed file
LightRAG lost, documents under MNote's naming scheme that no registry row
maps, deletes that never went through. It is idempotent: a second pass right
after the first changes nothing. The worker runs it periodically and at start.
"""

import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, timedelta

from django.db import transaction
from django.utils import timezone

from mnote.library.derived_text import clean_derived_texts
from mnote.library.ingest import mark_indexed, owe_delete, queue_many, refresh_fingerprint
from mnote.library.models import Job, Source
from mnote.lightrag import LightRAGClient

log = logging.getLogger(__name__)

# mnote-<hash16>-<name>: Source.unique_lightrag_name
MNOTE_NAME = re.compile(r"^mnote-[0-9a-f]{16}-")
# A document this young may belong to a sync whose transaction is still open.
ORPHAN_GRACE = timedelta(minutes=2)
_SETTLED = {"processed", "failed"}


@dataclass
class ReconcileReport:
    indexed: list[str] = field(default_factory=list)  # registry rows brought to "indexed"
    updated: list[str] = field(default_factory=list)  # doc id / chunk count corrected
    resent: list[str] = field(default_factory=list)  # indexed rows LightRAG no longer lists
    adopted: list[str] = field(default_factory=list)  # documents a row turned out to own
    deleted: list[tuple[str, str]] = field(default_factory=list)  # (document, why)
    deletes_reissued: list[str] = field(default_factory=list)
    derived_texts_removed: int = 0  # MNote's texts of files no row refers to any more

    @property
    def changed(self) -> bool:
        return any((self.indexed, self.updated, self.resent, self.adopted, self.deleted, self.deletes_reissued,
                    self.derived_texts_removed))

    def lines(self) -> list[str]:
        out = [f"indexed (LightRAG had processed it): {name}" for name in self.indexed]
        out += [f"doc id / chunk count corrected: {name}" for name in self.updated]
        out += [f"sent again (LightRAG no longer listed it): {name}" for name in self.resent]
        out += [f"adopted (the document of a registry row under a name it had lost): {name}" for name in self.adopted]
        out += [f"deleted {name}: {why}" for name, why in self.deleted]
        out += [f"delete asked again (the earlier one never went through): {name}" for name in self.deletes_reissued]
        if self.derived_texts_removed:
            out.append(f"MNote's texts of files no longer in the library removed: {self.derived_texts_removed}")
        return out


def reconcile(client: LightRAGClient) -> ReconcileReport:
    report = ReconcileReport()
    documents = list(client.iter_documents())  # raises rather than return a partial list
    by_name: dict[str, object] = {}
    for document in documents:
        # A "dup-" record only says a name was seen twice; the "doc-" record carries the state.
        if document.file_path not in by_name or by_name[document.file_path].id.startswith("dup-"):
            by_name[document.file_path] = document
    listed_ids = {d.id for d in documents}
    pending_deletes = Job.objects.filter(kind=Job.Kind.DELETE, state=Job.State.PENDING)
    owed_ids = {doc_id for job in pending_deletes for doc_id in job.payload.get("doc_ids") or []}
    owed_names = {name for job in pending_deletes for name in job.payload.get("lightrag_names") or []}

    with transaction.atomic():
        mapped_names, mapped_ids = set(), set()
        for source in Source.objects.select_for_update().exclude(lightrag_name=""):
            mapped_names.add(source.lightrag_name)
            mapped_ids.add(source.lightrag_doc_id)
            _reconcile_source(source, by_name.get(source.lightrag_name), listed_ids, owed_ids, report)

        orphans = [
            d for d in documents
            if MNOTE_NAME.match(d.file_path)
            and d.file_path not in mapped_names
            and d.id not in mapped_ids
            and d.id not in owed_ids
            and d.file_path not in owed_names
        ]
        if orphans:
            _adopt_or_delete(orphans, report)
    # After the rows are settled: a text left by a crash between a change
    # and its clean, or by an earlier version that never cleaned, goes now.
    report.derived_texts_removed = clean_derived_texts()
    for line in report.lines():
        log.info("reconcile: %s", line)
    return report


def _reconcile_source(source: Source, document, listed_ids, owed_ids, report: ReconcileReport) -> None:
    current = source.deleted_at is None and not source.stale
    status = source.status
    if status == Source.Status.DELETE_SUBMITTED:
        if document is not None and document.status in _SETTLED and document.id not in owed_ids:
            if not source.jobs.filter(kind=Job.Kind.DELETE, state=Job.State.PENDING).exists():
                owe_delete(source, document.id)
                report.deletes_reissued.append(source.lightrag_name)
        return
    if document is not None and document.status == "processed" and document.id not in owed_ids:
        if status in (Source.Status.FAILED, Source.Status.INDEXING, Source.Status.QUEUED, Source.Status.RETRYING) and current:
            mark_indexed(source, document)
            source.save()
            report.indexed.append(source.lightrag_name)
            return
        if status == Source.Status.INDEXED and (
            source.lightrag_doc_id != document.id or source.chunk_count != document.chunks_count
        ):
            source.lightrag_doc_id, source.chunk_count = document.id, document.chunks_count
            source.save(update_fields=["lightrag_doc_id", "chunk_count", "updated_at"])
            report.updated.append(source.lightrag_name)
        return
    if status == Source.Status.INDEXED and current and document is None and source.lightrag_doc_id not in listed_ids:
        # LightRAG lost it (its storage was reset or the document deleted by hand): not citable; send it again.
        try:
            refresh_fingerprint(source)
        except OSError:
            return  # gone from its folder: the next sync takes it out
        source.lightrag_doc_id = ""
        source.generation += 1
        source.save(update_fields=["lightrag_doc_id", "generation", "sha256", "size", "mtime", "updated_at"])
        queue_many([source])
        report.resent.append(source.library_path)
        return


def _adopt_or_delete(orphans, report: ReconcileReport) -> None:
    """A document under our naming scheme that no row maps: adopted when a row
    computes that very name (its link was made, the row's save was lost), else
    deleted — an older version of a file, a removed root or a reindexed file
    whose delete was lost. Documents LightRAG still works on wait."""
    unmapped_rows = {
        source.unique_lightrag_name(): source
        for source in Source.objects.exclude(status__in=[Source.Status.INDEXED, Source.Status.REMOVED]).exclude(
            sha256=""
        )
    }
    young = timezone.now() - ORPHAN_GRACE
    for document in orphans:
        if document.status not in _SETTLED:
            continue
        source = unmapped_rows.get(document.file_path)
        if source is not None and document.status == "processed" and source.deleted_at is None:
            source.lightrag_name = document.file_path
            mark_indexed(source, document)
            source.save()
            report.adopted.append(document.file_path)
            continue
        updated = document.updated_at
        if updated is not None and timezone.is_naive(updated):
            updated = updated.replace(tzinfo=UTC)
        if updated is not None and updated > young:
            continue
        why = (
            "no registry row maps it: an older version of a file, a file of a removed root, "
            "or a reindexed file whose delete was lost"
        )
        owe_delete(None, document.id)
        report.deleted.append((document.file_path, why))
