"""Workspace search: a quick lookup of titles, paths and Markdown/text bodies
inside the roots — MNote's own light index, no LightRAG, no OCR — so it
keeps working when LightRAG is down."""

import io
import json
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.db.models import Exists, OuterRef, Q

from mnote.text import evidence_window, mark_terms, query_terms
from mnote.kinds import WORKSPACE_TEXT_SUFFIXES, kind_of
from mnote.library.models import IndexedRoot, Source
from mnote.library.source_files import SourceUnavailable, open_source_file
from mnote.library.sync_rows import insert_rows
from mnote.preview.text_render import TextRejected, read_text
from mnote.search.models import WorkspaceText

# The light index keeps the first part of a file; enough for a quick lookup.
MAX_INDEXED_CHARS = 200_000
_GONE = (Source.Status.REMOVED, Source.Status.DELETE_SUBMITTED)


def refresh_workspace_index(root: IndexedRoot) -> int:
    """Read the text files of a root whose content changed since last time.

    One query finds them — rows whose hash the index does not hold — so a
    sync of 10,000 unchanged files costs that query and nothing per file.
    """
    indexed = WorkspaceText.objects.filter(source_id=OuterRef("pk"))
    # Only the kinds the index keeps: a root's PDFs and Word files never get
    # a row here, and must not be loaded again by every sync.
    text_kinds = Q()
    for suffix in WORKSPACE_TEXT_SUFFIXES:
        text_kinds |= Q(relative_path__iendswith=suffix) | Q(relative_path="", absolute_path__iendswith=suffix)
    rows = (
        root.sources.filter(text_kinds)
        .exclude(status__in=_GONE)
        .filter(deleted_at__isnull=True)
        .exclude(sha256="")
        .exclude(Exists(indexed.filter(sha256=OuterRef("sha256"))))
        .annotate(has_text=Exists(indexed))
        .only("pk", "root", "relative_path", "absolute_path", "sha256", "status", "deleted_at")
        .order_by()
    )
    fresh, changed = [], []
    for source in rows:
        pk, sha256 = source.pk, source.sha256
        name = PurePosixPath(source.relative_path or source.absolute_path).name
        if not kind_of(name).workspace_text:
            continue
        source.root = root
        try:
            with open_source_file(source) as handle:
                text, _ = read_text(handle)
        except (TextRejected, SourceUnavailable, OSError):
            continue
        entry = WorkspaceText(source_id=pk, sha256=sha256, body=text[:MAX_INDEXED_CHARS])
        (changed if source.has_text else fresh).append(entry)
    # Two syncs of one root may refresh at once (outside the root's lock): the later row wins.
    WorkspaceText.objects.bulk_create(
        fresh, batch_size=500, update_conflicts=True, unique_fields=["source"], update_fields=["sha256", "body"]
    )
    for entry in changed:
        WorkspaceText.objects.filter(source_id=entry.source_id).update(sha256=entry.sha256, body=entry.body)
    return len(fresh) + len(changed)


def store_texts(texts) -> int:
    """Index bodies a sync has already read: (source id, sha256, bytes) each,
    decoded as a preview decodes them, written with one INSERT (a row that is
    there already takes the new body)."""
    rows = []
    for source_id, sha256, data in texts:
        try:
            text, _ = read_text(io.BytesIO(data))
        except TextRejected:
            continue
        # PostgreSQL's text holds no NUL; read_text only looks for one at the start.
        rows.append((source_id, sha256, text[:MAX_INDEXED_CHARS].replace("\0", "")))
    insert_rows(WorkspaceText, ["source_id", "sha256", "body"], rows, upsert_on="source", update=("sha256", "body"))
    return len(rows)


def refresh_after_sync(sender, *, root: IndexedRoot, texts=(), **kwargs) -> None:
    """Receiver of ``library.signals.root_files_changed``: the bodies the sync
    read, then whatever else the index lacks (bigger files, files the sync did
    not read, a refresh cut short earlier)."""
    store_texts(texts)
    refresh_workspace_index(root)


@dataclass
class WorkspaceHit:
    source: Source
    snippet: str
    marked: list[tuple[str, bool]]
    in_path: bool

    @property
    def locator_json(self) -> str:
        return json.dumps(self.locator, ensure_ascii=False)

    @property
    def locator(self) -> dict:
        """Enough for the preview to find the snippet; honest about precision."""
        return {
            "precision": "file",
            "degraded": True,
            "sourceId": self.source.pk,
            "sourcePath": self.source.library_path,
            "headingPath": [],
            "evidenceText": self.snippet,
            "searchQuery": "",
            "displayQuote": self.snippet,
        }


def workspace_search(user, query: str, *, scope: list[str] | None = None, limit: int = 30) -> list[WorkspaceHit]:
    terms = [t for t in query_terms(query) if len(t) >= 2] or [query.strip().lower()]
    rows = Source.objects.visible_to(user).within(scope).filter(deleted_at__isnull=True).exclude(status__in=_GONE)
    for term in terms[:8]:
        rows = rows.filter(Q(relative_path__icontains=term) | Q(root__path__icontains=term) | Q(workspace_text__body__icontains=term))
    hits = []
    for source in rows.select_related("root", "workspace_text")[: limit * 3]:
        path = source.library_path.lower()
        in_path = any(t in path for t in terms)
        body = getattr(getattr(source, "workspace_text", None), "body", "")
        snippet = evidence_window(body, query, width=240) if body else ""
        hits.append(WorkspaceHit(source, snippet, mark_terms(snippet, query) if snippet else [], in_path))
        if len(hits) >= limit:
            break
    # Names first: a workspace search is mostly "where is that file".
    hits.sort(key=lambda h: (not h.in_path, h.source.library_path))
    return hits
