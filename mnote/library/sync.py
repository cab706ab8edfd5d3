"""Keep the registry — and through it LightRAG — equal to the files in the
roots as they are now. Used by the ``sync_library`` command, after every
admin action, by the file watcher, and by the pages and the JSON API.
"""

import logging
import os
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils.translation import gettext as _

from mnote.library.expansion import PathRefused, expand_root, included
from mnote.library.ingest import (
    mark_queued,
    owe_delete,
    queue_for_ingest,
    queue_many,
    refresh_fingerprint,
    send_to_lightrag,
    submit_delete,
    unlink_from_inputs,
)
from mnote.library.models import IndexedRoot, Job, Source
from mnote.library.signals import root_files_changed
from mnote.library.text_size import held_back_reason, is_held_back
from mnote.lightrag import LightRAGClient, LightRAGError

log = logging.getLogger(__name__)

# Set on the rows of a disabled root; enabling it again sends them back.
ROOT_DISABLED = "root disabled"
# States from which a present, unchanged file is (re)sent to LightRAG by a sync.
_TO_SEND = (Source.Status.NOT_INDEXED,)
# Rows "clear stale records" may drop; never DELETE_SUBMITTED.
_PRUNABLE = Q(status__in=[Source.Status.REMOVED, Source.Status.FAILED, Source.Status.STALE]) | Q(
    stale=True, status__in=[Source.Status.NOT_INDEXED, Source.Status.EXCLUDED, Source.Status.DUPLICATE]
)


@dataclass
class SyncSummary:
    root: str
    new: int = 0
    unchanged: int = 0
    changed: int = 0
    missing: int = 0
    excluded: int = 0
    queued: int = 0
    capped: int = 0
    held: int = 0  # too much text for LightRAG: held back until an admin allows them
    refused: list[str] = field(default_factory=list)
    error: str = ""
    disabled: int | None = None  # set when the root is disabled: files taken out

    def line(self) -> str:
        if self.error:
            return f"{self.root}: {self.error}"
        if self.disabled is not None:
            return _("%(root)s: root disabled; %(n)d files taken out of LightRAG (the files are not touched).") % {
                "root": self.root,
                "n": self.disabled,
            }
        line = _(
            "%(root)s: %(new)d new, %(changed)d changed, %(missing)d missing, %(unchanged)d unchanged, "
            "%(excluded)d excluded, %(queued)d queued"
        ) % {
            "root": self.root,
            "new": self.new,
            "changed": self.changed,
            "missing": self.missing,
            "unchanged": self.unchanged,
            "excluded": self.excluded,
            "queued": self.queued,
        }
        if self.capped:
            line += _("; %(n)d waiting for the next batch (limit %(limit)d)") % {
                "n": self.capped,
                "limit": settings.MNOTE_BATCH_LIMIT,
            }
        if self.held:
            line += _(
                "; %(n)d held back (more text than MNOTE_MAX_TEXT_MB allows; reindex one to send it anyway)"
            ) % {"n": self.held}
        if self.refused:
            line += _("; %(n)d symlinks refused (their target is outside this root): %(paths)s") % {
                "n": len(self.refused),
                "paths": ", ".join(self.refused[:5]),
            }
        return line


def sync_root(root: IndexedRoot, *, batch_limit: int | None = None) -> SyncSummary:
    """Compare the root's files with its registry rows and act on the
    difference. Unchanged files are recognised by size + mtime (no hashing)
    and cost no database write.

    The root's row is locked for the whole sync, so two syncs of one root run
    one after the other and leave a consistent registry.
    """
    limit = batch_limit or settings.MNOTE_BATCH_LIMIT
    summary = SyncSummary(root=root.name)
    with transaction.atomic():
        root = IndexedRoot.objects.select_for_update().get(pk=root.pk)
        existing = {s.relative_path: s for s in root.sources.order_by()}
        if not root.enabled:
            summary.disabled = 0
            for source in existing.values():
                if source.status not in (Source.Status.REMOVED, Source.Status.DELETE_SUBMITTED, Source.Status.EXCLUDED):
                    # Marked so that enabling the root again sends them back.
                    source.excluded_by = ROOT_DISABLED
                    submit_delete(source, missing=False)
                    summary.disabled += 1
            return summary
        try:
            candidates, summary.refused = expand_root(
                settings.MNOTE_LIBRARY_BASE_DIR,
                root.path,
                recursive=root.recursive,
                exclude_patterns=root.exclude_patterns,
                skip_folders=(settings.MNOTE_LIGHTRAG.input_dir, settings.MNOTE_LIGHTRAG.working_dir),
            )
            candidates = included(candidates, root.include_patterns)
        except PathRefused as e:
            # The root itself is gone or unreachable: its files are missing.
            candidates = []
            summary.error = str(e)
        seen = set()
        new: list[Source] = []
        to_queue: list[Source] = []
        for candidate in candidates:
            seen.add(candidate.relative_path)
            source = existing.get(candidate.relative_path)
            if candidate.excluded_by:
                summary.excluded += 1
                if source is None:
                    new.append(_new_source(root, candidate, status=Source.Status.EXCLUDED))
                elif source.status != Source.Status.EXCLUDED:
                    _exclude(source, candidate.excluded_by)
                continue
            if source is None:
                held = held_back_reason(candidate.absolute_path)
                try:
                    if held:
                        new.append(_new_source(root, candidate, status=Source.Status.EXCLUDED, excluded_by=held))
                        summary.held += 1
                    else:
                        new.append(_new_source(root, candidate))
                except OSError:
                    continue  # vanished while we walked; the next sync sees it gone
                summary.new += 1
                continue
            before = (source.absolute_path, source.status, source.sha256, source.size, source.mtime)
            source.absolute_path = str(candidate.absolute_path)
            if source.deleted_at is not None or source.status == Source.Status.EXCLUDED or source.excluded_by == ROOT_DISABLED:
                source.deleted_at = None
                source.excluded_by = ""
                source.status = Source.Status.NOT_INDEXED
            try:
                changed = refresh_fingerprint(source, candidate.stat)
            except OSError:
                continue
            if (changed or source.status in _TO_SEND) and not source.allow_large_text:
                held = held_back_reason(candidate.absolute_path)
                if held:
                    summary.held += 1
                    _hold_back(source, held)
                    continue
            if changed:
                summary.changed += 1
                _content_changed(source, root)
                if root.run_on_change:
                    to_queue.append(source)
                continue
            summary.unchanged += 1
            if source.status in _TO_SEND:
                to_queue.append(source)
            elif before != (source.absolute_path, source.status, source.sha256, source.size, source.mtime):
                source.save()
        # New rows are created already queued: one INSERT each, no UPDATE after.
        fresh = [s for s in new if s.status == Source.Status.NOT_INDEXED]
        queue_known = to_queue[:limit]
        queue_fresh = fresh[: max(limit - len(queue_known), 0)]
        for source in queue_fresh:
            mark_queued(source)
        Source.objects.bulk_create(new, batch_size=500)
        for relative_path, source in existing.items():
            if relative_path in seen or source.status in (Source.Status.REMOVED, Source.Status.DELETE_SUBMITTED):
                continue
            summary.missing += 1
            submit_delete(source, missing=True)

        queue_many(queue_known)
        send_to_lightrag(queue_fresh)
        summary.queued = len(queue_known) + len(queue_fresh)
        summary.capped = len(to_queue) + len(fresh) - summary.queued
    # Outside the lock: receivers read file bodies.
    root_files_changed.send(sender=IndexedRoot, root=root)
    return summary


def _new_source(root: IndexedRoot, candidate, *, status=Source.Status.NOT_INDEXED, excluded_by: str = "") -> Source:
    source = Source(
        root=root,
        relative_path=candidate.relative_path,
        absolute_path=str(candidate.absolute_path),
        status=status,
        excluded_by=excluded_by or candidate.excluded_by,
    )
    if status != Source.Status.EXCLUDED or excluded_by:
        refresh_fingerprint(source, candidate.stat)
    return source


def _hold_back(source: Source, reason: str) -> None:
    """Too much text for LightRAG: not sent (its old document, if any, is
    already on its way out) until an admin reindexes it."""
    if source.lightrag_doc_id or source.status in Source.IN_PROGRESS:
        submit_delete(source, missing=False)
    unlink_from_inputs(source)
    source.status = Source.Status.EXCLUDED
    source.excluded_by = reason
    source.save()


def allow_large_text(source: Source) -> None:
    """An admin's word that a held-back file may go to LightRAG after all."""
    source.allow_large_text = True
    source.status = Source.Status.NOT_INDEXED
    source.excluded_by = ""
    source.save(update_fields=["allow_large_text", "status", "excluded_by", "updated_at"])


def _exclude(source: Source, pattern: str) -> None:
    if source.lightrag_doc_id or source.status in Source.IN_PROGRESS:
        submit_delete(source, missing=False)
    source.status = Source.Status.EXCLUDED
    source.excluded_by = pattern
    source.save()


def _content_changed(source: Source, root: IndexedRoot) -> None:
    """A new version of the file: the old LightRAG document goes; the new
    content is sent when the root is run-on-change, else the row waits as stale."""
    source.stale = True
    unlink_from_inputs(source)
    if source.lightrag_doc_id:
        owe_delete(source, source.lightrag_doc_id)
        source.lightrag_doc_id = ""
    source.status = Source.Status.QUEUED if root.run_on_change else Source.Status.STALE
    source.save()


def sync_library(roots=None) -> list[SyncSummary]:
    roots = roots if roots is not None else IndexedRoot.objects.all()
    return [sync_root(root) for root in roots]


# --- per-source actions ---------------------------------------------------


def reindex_source(source: Source) -> str:
    """Send the file to LightRAG again under a new name, replacing (by delete,
    never silently) the document it had. A file held back for its size is
    sent: an admin asking for it is the allowance."""
    if not os.path.exists(source.absolute_path):
        submit_delete(source, missing=True)
        return "missing"
    if source.status == Source.Status.EXCLUDED and is_held_back(source.excluded_by):
        allow_large_text(source)
    return queue_for_ingest(source, force=True)


def delete_index(source: Source) -> None:
    """Drop what LightRAG derived from this file; the file stays."""
    submit_delete(source, missing=False)


def prune_registry() -> int:
    """Clear stale records: removed, failed and stale rows go; rows whose
    delete is still submitted stay until LightRAG confirms it."""
    prunable = Source.objects.filter(_PRUNABLE).exclude(status=Source.Status.DELETE_SUBMITTED)
    # A failed row may still have a record in LightRAG; it goes too.
    for source in prunable.exclude(lightrag_doc_id=""):
        owe_delete(None, source.lightrag_doc_id)
    # Only registry rows count: the delete also cascades to their index entries.
    _, per_model = prunable.delete()
    deleted = per_model.get(Source._meta.label, 0)
    Job.objects.filter(state__in=[Job.State.DONE, Job.State.FAILED], source__isnull=True).delete()
    return deleted


@dataclass(frozen=True)
class RootRemoval:
    root: str
    sources: int
    deletes_submitted: int

    def line(self) -> str:
        return _(
            "Removed root “%(root)s” and its %(sources)d registry rows. LightRAG documents of %(deletes)d files "
            "are being removed; the files themselves are not touched."
        ) % {"root": self.root, "sources": self.sources, "deletes": self.deletes_submitted}


def remove_root(root: IndexedRoot) -> RootRemoval:
    """Take a root out of the library: ask LightRAG to drop every document
    derived from its files, then forget its registry rows. The delete jobs
    outlive the rows (by doc id or by name), so the worker still sends them."""
    with transaction.atomic():
        sources = list(root.sources.all())
        deleting = 0
        for source in sources:
            if source.lightrag_doc_id or source.status in Source.IN_PROGRESS:
                delete_index(source)
                deleting += 1
        root.delete()
    return RootRemoval(root.name, len(sources), deleting)


# --- status summary ---------------------------------------------------------


@dataclass
class LibraryStatus:
    registry_counts: dict[str, int]
    registry_total: int
    lightrag_counts: dict[str, int] | None = None
    lightrag_total: int | None = None
    unmapped: list = field(default_factory=list)  # LightRAG documents no registry row maps to
    lightrag_error: str = ""


def library_status(client: LightRAGClient | None, *, sources=None) -> LibraryStatus:
    """Counts per user-facing status (of ``sources``, default all), LightRAG's
    own counts, and LightRAG documents that no registry row maps to."""
    sources = Source.objects.all() if sources is None else sources
    counts = dict(sources.order_by().values_list("status").annotate(n=Count("id")))
    registry_counts = {value: counts.get(value, 0) for value, _ in Source.Status.choices}
    status = LibraryStatus(registry_counts, sum(counts.values()))
    if client is None:
        return status
    names = set(Source.objects.exclude(lightrag_name="").values_list("lightrag_name", flat=True))
    doc_ids = set(Source.objects.exclude(lightrag_doc_id="").values_list("lightrag_doc_id", flat=True))
    try:
        lightrag_counts: dict[str, int] = {}
        for document in client.iter_documents():
            lightrag_counts[document.status] = lightrag_counts.get(document.status, 0) + 1
            if document.id not in doc_ids and document.file_path not in names:
                status.unmapped.append(document)
    except LightRAGError as e:
        status.lightrag_error = str(e)
        return status
    status.lightrag_counts = lightrag_counts
    status.lightrag_total = sum(lightrag_counts.values())
    return status

