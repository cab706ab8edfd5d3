"""Keep the registry — and through it LightRAG — equal to the files in the
roots as they are now. Used by the ``sync_library`` command, after every
admin action, by the file watcher, and by the pages and the JSON API.
"""

import dataclasses
import logging
import os
from collections import namedtuple
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from mnote.library import sync_rows
from mnote.library.derived_text import clean_derived_texts
from mnote.library.expansion import PathRefused, expand_root, included
from mnote.library.ingest import (
    mark_queued_many,
    owe_delete,
    owe_scan,
    queue_many,
    set_fingerprint,
    stored_inode,
    submit_delete,
    unlink_from_inputs,
)
from mnote.library.models import IndexedRoot, Source
from mnote.library.signals import root_files_changed
from mnote.library.sync_rows import KEPT_TEXT_BYTES, NewFile, ids_by_path, insert_new, root_marks, root_rows, wants_text
from mnote.library.text_size import held_back_reason

log = logging.getLogger(__name__)

# Set on the rows of a disabled root; enabling it again sends them back.
ROOT_DISABLED = "root disabled"
# States from which a present, unchanged file is (re)sent to LightRAG by a sync.
_TO_SEND = (Source.Status.NOT_INDEXED,)


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
    difference.

    The walk, one query of the root's rows and the reading of new and changed
    files (their hash, their text size) happen first, without a lock:
    unchanged files are recognised by size + mtime_ns + inode and cost no read
    and no write. Then the root's row is locked, so two syncs of one root
    write one after the other; rows written by another sync since the look are
    read again under the lock, and a file that changed meanwhile is read
    after the lock is let go, never while it is held.
    """
    with sync_rows.no_collection_rounds():
        return _sync_root(root, batch_limit)


def _sync_root(root: IndexedRoot, batch_limit: int | None) -> SyncSummary:
    limit = batch_limit or settings.MNOTE_BATCH_LIMIT
    summary = SyncSummary(root=root.name)
    look = wanted = None
    texts = []
    disabled = False
    for attempt in range(_ATTEMPTS):
        last = attempt == _ATTEMPTS - 1
        if not last:
            current = IndexedRoot.objects.get(pk=root.pk)
            if current.enabled and (look is None or look.walked != _walk_settings(current)):
                look = _look(current)
            elif wanted:
                _read(look, wanted)
        with transaction.atomic():
            root = IndexedRoot.objects.select_for_update().get(pk=root.pk)
            if not root.enabled:
                _take_out(root, summary)
                disabled = True
                break
            if look is None or look.walked != _walk_settings(root):
                if not last:
                    continue  # enabled or edited since the look: look again
                look = _look(root)  # still changing after several looks: look under the lock
            wanted = _apply(root, look, limit, summary, read_now=last, texts=texts)
            if not wanted:
                break
    if summary.missing or summary.changed or summary.disabled or summary.held or summary.excluded:
        # A file gone, changed or taken out: MNote's text of its old content
        # (if LightRAG was given one) goes once nothing else refers to it.
        clean_derived_texts()
    if disabled:
        return summary
    # Outside the lock: receivers read file bodies. ``texts``: the bodies
    # this sync read anyway, so the workspace index need not read them again.
    root_files_changed.send(sender=IndexedRoot, root=root, texts=texts)
    return summary


# Row fields a sync compares, fetched for the whole root in one query.
_ROW_FIELDS = (
    "id", "relative_path", "absolute_path", "status", "sha256", "size", "mtime", "mtime_ns", "inode",
    "deleted_at", "excluded_by", "allow_large_text",
)
_Row = namedtuple("_Row", _ROW_FIELDS)
_GONE = (Source.Status.REMOVED, Source.Status.DELETE_SUBMITTED)
# What a sync may change on an existing row; written in bulk at the end.
_SYNC_FIELDS = [
    "absolute_path", "status", "stale", "deleted_at", "excluded_by", "lightrag_doc_id",
    "sha256", "size", "mtime", "mtime_ns", "inode", "updated_at",
]
# Looks before a sync reads what changed under the lock after all (a root
# that keeps changing while it is synced).
_ATTEMPTS = 3
_CHUNK = 500


@dataclass
class _Look:
    """A root as found without holding its lock."""

    walked: tuple  # the root's fields the walk depended on
    candidates: list = field(default_factory=list)
    refused: list = field(default_factory=list)
    error: str = ""
    rows: dict = field(default_factory=dict)  # relative path -> _Row
    settled: set = field(default_factory=set)  # relative paths of files whose row needs nothing
    hashes: dict = field(default_factory=dict)  # _key -> sha256, None when the file could not be read
    held: dict = field(default_factory=dict)  # _key -> held_back_reason
    texts: dict = field(default_factory=dict)  # _key -> the bytes hashed, for the workspace index
    kept: int = 0  # bytes in ``texts``


def _walk_settings(root: IndexedRoot) -> tuple:
    return (root.path, root.recursive, tuple(root.exclude_patterns or ()), tuple(root.include_patterns or ()))


def _key(candidate) -> tuple:
    stat = candidate.stat
    return (candidate.path, stat.st_size, stat.st_mtime_ns, stat.st_ino)


def _same_content(row, stat) -> bool:
    """The row's hash still holds for the file at this stat, without reading it."""
    if not row.sha256 or row.size != stat.st_size:
        return False
    if row.mtime_ns is None:  # fingerprinted before mtime_ns and the inode were kept
        return row.mtime == stat.st_mtime
    return row.mtime_ns == stat.st_mtime_ns and (row.inode == stat.st_ino or row.inode == stored_inode(stat))


def _comes_back(row) -> bool:
    """A row out of the library whose file, being here, comes back in."""
    return row.deleted_at is not None or row.status == Source.Status.EXCLUDED or row.excluded_by == ROOT_DISABLED


def _settled(row, candidate) -> bool:
    """Nothing to do: the row knows this file as it is and where it is, and owes LightRAG nothing."""
    if candidate.excluded_by:
        return row.status == Source.Status.EXCLUDED
    return (
        row.mtime_ns is not None
        and row.absolute_path == candidate.path
        and row.status not in _TO_SEND
        and not _comes_back(row)
        and _same_content(row, candidate.stat)
    )


def _needs(row, candidate) -> tuple[bool, bool]:
    """Whether the file's hash and its text-size verdict must be read."""
    if candidate.excluded_by or (row is not None and _settled(row, candidate)):
        return False, False
    return row is None or not _same_content(row, candidate.stat), row is None or not row.allow_large_text


def _look(root: IndexedRoot) -> _Look:
    """Walk the root, read its rows, and read the files the rows do not know as they are."""
    look = _Look(_walk_settings(root))
    try:
        candidates, look.refused = expand_root(
            settings.MNOTE_LIBRARY_BASE_DIR,
            root.path,
            recursive=root.recursive,
            exclude_patterns=root.exclude_patterns,
            skip_folders=(settings.MNOTE_LIGHTRAG.input_dir, settings.MNOTE_LIGHTRAG.working_dir),
        )
        look.candidates = included(candidates, root.include_patterns)
    except PathRefused as e:
        # The root itself is gone or unreachable: its files are missing.
        look.error = str(e)
    # Six short columns of every row first: enough to know unchanged files.
    marks = root_marks(root, gone=_GONE, to_send=_TO_SEND, disabled=ROOT_DISABLED)
    unsettled, clean = [], sync_rows.CLEAN
    for candidate in look.candidates:
        path = candidate.relative_path
        mark = marks.get(path)
        if mark is not None:
            stat = candidate.stat
            if candidate.excluded_by:
                if mark[0] == sync_rows.EXCLUDED:
                    look.settled.add(path)
                    continue
            elif (
                mark[0] == clean and mark[1] == candidate.path
                and mark[2] == stat.st_size and mark[3] == stat.st_mtime_ns
                and (mark[4] == stat.st_ino or mark[4] == stored_inode(stat))
            ):
                look.settled.add(path)
                continue
        unsettled.append(candidate)
    # Whole rows only when a known file changed or a row lost its file.
    seen = {c.relative_path for c in look.candidates}
    if any(c.relative_path in marks for c in unsettled) or any(
        mark[0] != sync_rows.GONE and path not in seen for path, mark in marks.items()
    ):
        look.rows = {row.relative_path: row for row in map(_Row._make, root_rows(root, _ROW_FIELDS))}
    _read(look, [(c, look.rows.get(c.relative_path)) for c in unsettled])
    return look


def _read(look: _Look, pairs) -> None:
    """Hash (and weigh the text of) the files of ``pairs`` that need it."""
    hashes, held, texts = look.hashes, look.held, look.texts
    limit_mb = settings.MNOTE_MAX_TEXT_MB  # once, not once per file
    for candidate, row in pairs:
        need_hash, need_held = _needs(row, candidate)
        if not (need_hash or need_held):
            continue
        key = _key(candidate)
        if need_hash and key not in hashes:
            text = look.kept < KEPT_TEXT_BYTES and wants_text(candidate.relative_path, candidate.path)
            try:
                hashes[key], data = sync_rows.read_file(candidate.path, candidate.stat, text=text)
            except OSError:
                hashes[key] = None  # vanished while we walked; the next sync sees it gone
            else:
                if data is not None:
                    texts[key] = data
                    look.kept += len(data)
        if need_held and key not in held:
            held[key] = held_back_reason(candidate.path, candidate.stat.st_size, limit_mb=limit_mb)


def _as_now(look: _Look, source, candidate) -> tuple[object, tuple, bool]:
    """The candidate to write from, its ``_key``, and whether everything it
    needs is read. ``source``: the row as it is now, or None."""
    for attempt in (0, 1):
        need_hash, need_held = _needs(source, candidate)
        key = _key(candidate)
        if (not need_hash or key in look.hashes) and (not need_held or key in look.held):
            return candidate, key, True
        if attempt == 0:
            # The row changed since the look (another sync, an admin): the
            # file may have too; its stat says whether a read is needed.
            try:
                candidate = dataclasses.replace(candidate, stat=os.stat(candidate.path))
            except OSError:
                return candidate, key, True  # gone: the next sync sees it
    return candidate, key, False


def _load(queryset, name: str, values) -> dict:
    found = {}
    values = list(values)
    for start in range(0, len(values), _CHUNK):
        for source in queryset.filter(**{f"{name}__in": values[start : start + _CHUNK]}):
            found[source.relative_path] = source
    return found


def _apply(root: IndexedRoot, look: _Look, limit: int, summary: SyncSummary, *, read_now: bool, texts: list) -> list:
    """Under the root's lock: write what the look found. Returns the files
    still to be read (nothing written then) unless ``read_now``. Adds to
    ``texts`` (source id, sha256, bytes) the bodies read of rows written."""
    rows = look.rows
    # Settled at the look: whatever another writer did to those rows since,
    # this sync has nothing to write there.
    settled = set(look.settled)
    pending = [(c, rows.get(c.relative_path)) for c in look.candidates if c.relative_path not in settled]
    seen = {c.relative_path for c in look.candidates}
    gone = [row for path, row in rows.items() if path not in seen and row.status not in _GONE]
    current = _rows_now(root, pending, gone)

    work, wanted = [], []
    for candidate, _row in pending:
        source = current.get(candidate.relative_path)
        if source is not None and _settled(source, candidate):
            settled.add(candidate.relative_path)
            continue
        candidate, key, complete = _as_now(look, source, candidate)
        if not complete:
            wanted.append((candidate, source))
        work.append((candidate, source, key))
    if wanted:
        if not read_now:
            return wanted
        _read(look, wanted)  # the last attempt: read under the lock rather than never finish

    summary.error = look.error
    summary.refused = look.refused
    excluded = sum(1 for c in look.candidates if c.excluded_by and c.relative_path in settled)
    summary.excluded += excluded
    summary.unchanged += len(settled) - excluded

    writes = _decide(root, look, work, summary)
    # Not taken out (or pruned) since the look.
    missing = [source for row in gone if (source := current.get(row.relative_path)) is not None and source.status not in _GONE]
    _write(root, writes, missing, limit, summary, texts)
    return []


def _rows_now(root: IndexedRoot, pending: list, gone: list) -> dict:
    """The rows as they are now (by relative path) of every file that needs a
    write; a file new at the look may have been registered by another sync
    since."""
    sources = root.sources.order_by()
    current = _load(sources, "pk", [row.id for _, row in pending if row is not None] + [row.id for row in gone])
    if any(row is None for _, row in pending):
        known = set(sources.values_list("relative_path", flat=True))
        current |= _load(sources, "relative_path", [c.relative_path for c, row in pending if row is None and c.relative_path in known])
    return current


@dataclass
class _Writes:
    """What a sync writes for the files it found: rows to insert, rows changed,
    rows to queue for LightRAG, and the bodies read (relative path → (sha256,
    bytes)) of rows written."""

    new: list[NewFile] = field(default_factory=list)
    dirty: list[Source] = field(default_factory=list)
    to_queue: list[Source] = field(default_factory=list)
    read: dict = field(default_factory=dict)


def _decide(root: IndexedRoot, look: _Look, work: list, summary: SyncSummary) -> _Writes:
    """Each present file's fate, counted in ``summary``: excluded, new, held
    back for its size, changed, or unchanged (and sent again when due)."""
    writes = _Writes()
    new, dirty, to_queue = writes.new, writes.dirty, writes.to_queue
    for candidate, source, key in work:
        if candidate.excluded_by:
            summary.excluded += 1
            if source is None:
                new.append(_new_source(root, candidate, status=Source.Status.EXCLUDED))
            elif source.status != Source.Status.EXCLUDED:
                _exclude(source, candidate.excluded_by)
                dirty.append(source)
            continue
        if look.hashes.get(key, "") is None:
            continue  # vanished while we walked; the next sync sees it gone
        if key in look.texts:
            writes.read[candidate.relative_path] = (look.hashes[key], look.texts[key])
        if source is None:
            held = look.held[key]
            if held:
                new.append(_new_source(root, candidate, look.hashes[key], status=Source.Status.EXCLUDED, excluded_by=held))
                summary.held += 1
            else:
                new.append(_new_source(root, candidate, look.hashes[key]))
            summary.new += 1
            continue
        same = _same_content(source, candidate.stat)
        source.absolute_path = candidate.path
        if _comes_back(source):
            source.deleted_at = None
            source.excluded_by = ""
            source.status = Source.Status.NOT_INDEXED
        changed = set_fingerprint(source, candidate.stat, source.sha256 if same else look.hashes[key])
        dirty.append(source)
        if (changed or source.status in _TO_SEND) and not source.allow_large_text:
            held = look.held[key]
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
    return writes


def _write(root: IndexedRoot, writes: _Writes, missing: list, limit: int, summary: SyncSummary, texts: list) -> None:
    """Insert the new rows, save the changed ones, take the ``missing`` files'
    rows out of LightRAG and queue up to ``limit`` files for it; the bodies
    read of rows written go to ``texts``."""
    # New rows are created already queued: one INSERT for all, no UPDATE after.
    fresh = [s for s in writes.new if s.status == Source.Status.NOT_INDEXED]
    queue_known = writes.to_queue[:limit]
    queue_fresh = fresh[: max(limit - len(queue_known), 0)]
    mark_queued_many(queue_fresh)
    insert_new(writes.new)
    read = writes.read
    ids = ids_by_path(root, [f.relative_path for f in writes.new if f.relative_path in read])
    for source in [*writes.new, *writes.dirty]:
        sha256, data = read.get(source.relative_path, ("", None))
        if data is not None and source.sha256 == sha256:
            texts.append((ids[source.relative_path] if isinstance(source, NewFile) else source.pk, sha256, data))
    for source in missing:
        summary.missing += 1
        submit_delete(source, missing=True, save=False)
    _save([*writes.dirty, *missing])
    queue_many(queue_known)
    if queue_fresh:
        owe_scan()  # the worker links the queued files right before LightRAG's scan
    summary.queued = len(queue_known) + len(queue_fresh)
    summary.capped = len(writes.to_queue) + len(fresh) - summary.queued


def _save(sources: list[Source]) -> None:
    now = timezone.now()
    for source in sources:
        source.updated_at = now
    Source.objects.bulk_update(sources, _SYNC_FIELDS, batch_size=_CHUNK)


def _take_out(root: IndexedRoot, summary: SyncSummary) -> None:
    """A disabled root: its files leave LightRAG (the files are not touched)."""
    summary.disabled = 0
    taken = []
    for source in root.sources.order_by().exclude(status__in=[*_GONE, Source.Status.EXCLUDED]):
        # Marked so that enabling the root again sends them back.
        source.excluded_by = ROOT_DISABLED
        submit_delete(source, missing=False, save=False)
        taken.append(source)
    _save(taken)
    summary.disabled = len(taken)


def _new_source(
    root: IndexedRoot, candidate, sha256: str = "", *, status=Source.Status.NOT_INDEXED, excluded_by: str = ""
) -> NewFile:
    source = NewFile(root, candidate.relative_path, candidate.path, status, excluded_by or candidate.excluded_by)
    if status != Source.Status.EXCLUDED or excluded_by:
        set_fingerprint(source, candidate.stat, sha256)
    return source


def _hold_back(source: Source, reason: str) -> None:
    """Too much text for LightRAG: not sent (its old document, if any, is
    already on its way out) until an admin reindexes it. The caller saves."""
    if source.lightrag_doc_id or source.status in Source.IN_PROGRESS:
        submit_delete(source, missing=False, save=False)
    unlink_from_inputs(source)
    source.status = Source.Status.EXCLUDED
    source.excluded_by = reason


def _exclude(source: Source, pattern: str) -> None:
    """The caller saves."""
    if source.lightrag_doc_id or source.status in Source.IN_PROGRESS:
        submit_delete(source, missing=False, save=False)
    source.status = Source.Status.EXCLUDED
    source.excluded_by = pattern


def _content_changed(source: Source, root: IndexedRoot) -> None:
    """A new version of the file: the old LightRAG document goes; the new
    content is sent when the root is run-on-change, else the row waits as
    stale. The caller saves."""
    source.stale = True
    unlink_from_inputs(source)
    if source.lightrag_doc_id:
        owe_delete(source, source.lightrag_doc_id)
        source.lightrag_doc_id = ""
    source.status = Source.Status.QUEUED if root.run_on_change else Source.Status.STALE


def sync_library(roots=None) -> list[SyncSummary]:
    roots = roots if roots is not None else IndexedRoot.objects.all()
    return [sync_root(root) for root in roots]
