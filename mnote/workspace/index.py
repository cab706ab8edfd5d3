"""Workspace search: a quick lookup of titles, paths and Markdown/text bodies
inside the roots — MNote's own light index, no LightRAG, no OCR — so it
keeps working when LightRAG is down."""

import json
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.db import connection
from django.db.models import Q

from mnote.text import evidence_window, mark_terms, query_terms
from mnote.kinds import kind_of
from mnote.library.models import IndexedRoot, Source
from mnote.library.source_files import SourceUnavailable, open_source_file
from mnote.library.sync_rows import insert_rows
from mnote.preview.text_render import TextRejected, decode_text, read_text
from mnote.workspace.models import WorkspaceText

# The light index keeps the first part of a file; enough for a quick lookup.
MAX_INDEXED_CHARS = 200_000
_GONE = (Source.Status.REMOVED, Source.Status.DELETE_SUBMITTED)
_CHUNK = 500


def refresh_workspace_index(root: IndexedRoot) -> int:
    """Read the text files of a root whose content changed since last time.

    One query finds them — rows whose hash the index does not hold — so a
    sync of 10,000 unchanged files costs that query and nothing per file.
    A file with nothing to index (another kind, or not text after all) gets
    an empty body for its hash, so that no later sync asks again.
    """
    entries, to_read = [], []
    for pk, sha256, path in _unindexed(root):
        if kind_of(PurePosixPath(path).name).workspace_text:
            to_read.append(pk)
        else:
            entries.append((pk, sha256, ""))
    for start in range(0, len(to_read), _CHUNK):
        chunk = Source.objects.filter(pk__in=to_read[start : start + _CHUNK]).order_by()
        for source in chunk.only("pk", "root", "relative_path", "absolute_path", "sha256", "status", "deleted_at"):
            source.root = root
            try:
                with open_source_file(source) as handle:
                    text, _ = read_text(handle)
            except TextRejected:
                text = ""
            except (SourceUnavailable, OSError):
                continue  # asked again after the next sync
            entries.append((source.pk, source.sha256, _body(text)))
    # Two syncs of one root may refresh at once (outside the root's lock): the later row wins.
    _store(entries)
    return len(entries)


def _body(text: str) -> str:
    # PostgreSQL's text holds no NUL; read_text only looks for one at the start.
    return text[:MAX_INDEXED_CHARS].replace("\0", "")


def _store(entries: list[tuple]) -> None:
    """(source id, sha256, body) each, one INSERT; a row already there takes the new values."""
    insert_rows(WorkspaceText, ["source_id", "sha256", "body"], entries, upsert_on="source", update=("sha256", "body"))


def _unindexed(root: IndexedRoot) -> list[tuple]:
    """(id, sha256, path) of the root's rows whose hash the index does not
    hold (``path``: the relative path, or the file's for a one-file root).
    Plain SQL, one join: it runs after every sync, and for a root of 10,000
    unchanged files the ORM's two correlated EXISTS and its compiling cost
    more than the walk of the root itself."""
    quote = connection.ops.quote_name
    col = {name: "s." + quote(Source._meta.get_field(name).column) for name in (
        "id", "root", "relative_path", "absolute_path", "sha256", "status", "deleted_at",
    )}
    text_sha256 = "w." + quote(WorkspaceText._meta.get_field("sha256").column)
    sql = (
        f"SELECT {col['id']}, {col['sha256']},"
        f" CASE WHEN {col['relative_path']} = '' THEN {col['absolute_path']} ELSE {col['relative_path']} END"
        f" FROM {quote(Source._meta.db_table)} s LEFT JOIN {quote(WorkspaceText._meta.db_table)} w"
        f" ON w.{quote(WorkspaceText._meta.get_field('source').column)} = {col['id']}"
        f" WHERE {col['root']} = %s AND {col['deleted_at']} IS NULL AND {col['sha256']} <> ''"
        f" AND {col['status']} NOT IN (%s, %s) AND ({text_sha256} IS NULL OR {text_sha256} <> {col['sha256']})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [root.pk, *_GONE])
        return cursor.fetchall()


def store_texts(texts) -> int:
    """Index bodies a sync has already read: (source id, sha256, bytes) each,
    decoded as a preview decodes them."""
    entries = []
    for source_id, sha256, data in texts:
        try:
            text, _ = decode_text(data)
        except TextRejected:
            text = ""  # not text after all: nothing to index for this version
        entries.append((source_id, sha256, _body(text)))
    _store(entries)
    return len(entries)


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
