"""What an admin does to registry rows outside a sync — send a file again,
drop its index, clear stale records, take a root out — and the library's
status summary (registry counts beside LightRAG's own)."""

import os
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Q
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from mnote.library.derived_text import clean_derived_texts
from mnote.library.ingest import owe_delete, queue_for_ingest, submit_delete
from mnote.library.models import IndexedRoot, Job, Source
from mnote.library.text_size import is_held_back
from mnote.lightrag import LightRAGClient, LightRAGError

# Rows "clear stale records" may drop; never DELETE_SUBMITTED.
_PRUNABLE = Q(status__in=[Source.Status.REMOVED, Source.Status.FAILED, Source.Status.STALE]) | Q(
    stale=True, status__in=[Source.Status.NOT_INDEXED, Source.Status.EXCLUDED, Source.Status.DUPLICATE]
)


def allow_large_text(source: Source) -> None:
    """An admin's word that a held-back file may go to LightRAG after all."""
    source.allow_large_text = True
    source.status = Source.Status.NOT_INDEXED
    source.excluded_by = ""
    source.save(update_fields=["allow_large_text", "status", "excluded_by", "updated_at"])


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
    clean_derived_texts()


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
    clean_derived_texts()
    return deleted


def pruned_message(count: int) -> str:
    """What the page and the admin say after :func:`prune_registry`."""
    return ngettext(
        "Cleared %(n)d stale record (removed, failed or stale); rows whose delete is still submitted stay.",
        "Cleared %(n)d stale records (removed, failed or stale); rows whose delete is still submitted stay.",
        count,
    ) % {"n": count}


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
                submit_delete(source, missing=False)
                deleting += 1
        root.delete()
    clean_derived_texts()  # MNote's texts of the root's files, once the transaction has let the rows go
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

