"""A sync's reads and writes for many files at once, without per-object ORM
work: one read of a new or changed file gives its hash and, for a text file,
the bytes the workspace index keeps (handed over with ``root_files_changed``);
a root's new rows go in with one ``executemany`` INSERT (the same SQL on
SQLite and PostgreSQL).

A first sync of 10,000 files spent most of its time building, validating and
compiling 10,000 model instances, then re-opening every file for its text.
"""

import contextlib
import gc
import hashlib
import os
import stat

from django.db import connection, transaction
from django.utils import timezone

from mnote.kinds import WORKSPACE_TEXT_SUFFIXES
from mnote.library.models import Source

# A file up to this size is read in one go (hash and text from the same
# bytes); a bigger one is hashed in blocks and its text left to the index's
# own pass.
ONE_READ_BYTES = 1024 * 1024
# Bodies a look keeps for the workspace index at most, all files together;
# the rest is read by the index after the sync (mnote.workspace.index).
KEPT_TEXT_BYTES = 64 * 1024 * 1024
_HASH_BLOCK = 1024 * 1024


def wants_text(relative_path: str, path: str) -> bool:
    """Whether the workspace index keeps this file's body (mnote/kinds.py)."""
    name = (relative_path or path).rpartition("/")[2]
    dot = name.rfind(".")  # os.path.splitext's suffix, at a fraction of its cost per file
    return dot > 0 and name[dot:].lower() in WORKSPACE_TEXT_SUFFIXES and name[:dot].strip(".") != ""


def read_file(path: str, walked: os.stat_result, *, text: bool) -> tuple[str, bytes | None]:
    """The file's sha256 and, when ``text`` and the file is small, the bytes
    that were hashed (None for a bigger file). ``walked``: the file's stat
    from the walk, which checked that it is inside its root; a file swapped
    since (another inode, a symlink in its place) is not read: OSError, as
    for a file gone."""
    # os.read on the descriptor, not a file object: 10,000 small files are
    # the usual case, and a file object costs an allocation and an fstat of
    # its own per file.
    # O_NONBLOCK: a file swapped for a FIFO since the walk must not hang the
    # sync in open() before the inode check refuses it (no effect on files).
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        opened = os.fstat(fd)
        # Not a regular file: a freed inode number is soon given again, so
        # the number alone does not tell a FIFO or device made in its place.
        if (opened.st_ino, opened.st_dev) != (walked.st_ino, walked.st_dev) or not stat.S_ISREG(opened.st_mode):
            raise OSError(f"{path} changed since the walk")
        size = opened.st_size
        if size > ONE_READ_BYTES:
            with open(fd, "rb", buffering=0, closefd=False) as f:
                return hashlib.file_digest(f, "sha256").hexdigest(), None
        # One byte more than the stat said, not a fixed large buffer: a read
        # allocates what it asks for.
        data = os.read(fd, size + 1)
        if len(data) > size:  # grew since the stat: hash it all, no text
            digest = hashlib.sha256(data)
            while block := os.read(fd, _HASH_BLOCK):
                digest.update(block)
            return digest.hexdigest(), None
    finally:
        os.close(fd)
    return hashlib.sha256(data).hexdigest(), data if text else None


@contextlib.contextmanager
def no_collection_rounds():
    """Python's cyclic garbage collector paused while a sync runs. A first
    sync of 10,000 files makes some 100,000 objects that live until it ends
    (walk entries, stats, rows, keys): each 700 of them start a collection
    round that finds nothing to free, about a tenth of the sync's CPU time.
    Reference counting frees the sync's objects as before; a cycle (an
    exception's traceback) waits for the first collection after the sync.
    The switch is the process's: a sync in another thread meanwhile runs
    paused too, or not, and is correct either way."""
    if not gc.isenabled():
        yield  # paused already (an outer sync, the caller's own choice)
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class NewFile:
    """A root's new row before it exists: what the queueing code reads and
    sets on a ``Source`` (``mark_queued``, ``set_fingerprint``, the link into
    LightRAG's inputs), without a model instance per file."""

    link_name = Source.link_name
    unique_lightrag_name = Source.unique_lightrag_name

    def __init__(self, root, relative_path: str, absolute_path: str, status: str, excluded_by: str):
        self.root, self.root_id = root, root.pk
        self.relative_path, self.absolute_path = relative_path, absolute_path
        self.status, self.excluded_by = status, excluded_by
        self.sha256, self.size, self.mtime, self.mtime_ns, self.inode = "", None, None, None, None
        self.lightrag_name = self.parser_hint = ""
        self.generation = 0

    @property
    def file_name(self) -> str:
        # Source.file_name without a PurePosixPath per file: a path in a root never ends in "/".
        return self.relative_path.rpartition("/")[2] if self.relative_path else Source.file_name.fget(self)


# What differs between a root's new rows; every other column takes its default.
_NEW_FIELDS = (
    "root_id", "relative_path", "absolute_path", "sha256", "size", "mtime", "mtime_ns", "inode",
    "lightrag_name", "status", "excluded_by", "parser_hint",
)


def insert_new(files: list[NewFile]) -> None:
    """Insert the rows of ``files`` (no two with one path in a root)."""
    if not files:
        return
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    names, constants, stamps = list(_NEW_FIELDS), {}, []
    for f in Source._meta.concrete_fields:
        if f.primary_key or f.attname in _NEW_FIELDS:
            continue
        if f.attname in ("created_at", "updated_at"):
            stamps.append(f.attname)
            continue
        constants[f.attname] = f.get_db_prep_save(f.get_default(), connection)
    names += stamps
    stamp = (now,) * len(stamps)
    rows = (
        (f.root_id, f.relative_path, f.absolute_path, f.sha256, f.size, f.mtime, f.mtime_ns, f.inode,
         f.lightrag_name, f.status, f.excluded_by, f.parser_hint) + stamp
        for f in files
    )
    insert_rows(Source, names, rows, constants=constants)


def _literal(value) -> str | None:
    """The SQL literal of a value every row takes, when it is one of the few
    kinds written safely into SQL text on SQLite and PostgreSQL alike."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(int(value))
    if value == "":
        return "''"
    return None


def insert_rows(
    model, names: list[str], rows, *, constants: dict | None = None, upsert_on: str = "", update: tuple[str, ...] = ()
) -> None:
    """One INSERT of ``rows`` (tuples of database-ready values for the fields
    ``names``), run by the driver for every row; with ``upsert_on``, a row
    whose ``upsert_on`` value exists updates that row's ``update`` fields
    instead (``ON CONFLICT``: SQLite >= 3.24 and PostgreSQL alike).

    ``constants``: field -> the value of every row (None, a bool, an int or
    ""), written into the statement instead of bound per row: a first sync's
    new rows take the defaults of 15 columns, and binding them 10,000 times
    cost a third of the INSERT."""
    rows = list(rows)
    if not rows:
        return
    constants = constants or {}
    quote = connection.ops.quote_name
    columns = [model._meta.get_field(name).column for name in [*names, *constants]]
    values = ["%s"] * len(names) + [_literal(value) for value in constants.values()]
    if None in values:
        raise ValueError(f"no SQL literal for one of {constants!r}")
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        quote(model._meta.db_table), ", ".join(map(quote, columns)), ", ".join(values)
    )
    if upsert_on:
        target = quote(model._meta.get_field(upsert_on).column)
        updates = ", ".join(f"{c} = excluded.{c}" for c in (quote(model._meta.get_field(n).column) for n in update))
        sql += f" ON CONFLICT ({target}) DO UPDATE SET {updates}"
    # In a transaction: outside one, SQLite would commit after every row.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def ids_by_path(root, paths) -> dict[str, int]:
    """The ids of the root's rows at ``paths``, in one query for many."""
    wanted = set(paths)
    if not wanted:
        return {}
    quote = connection.ops.quote_name
    sql = "SELECT {}, {} FROM {} WHERE {} = %s".format(
        quote("relative_path"), quote("id"), quote(Source._meta.db_table), quote(Source._meta.get_field("root").column)
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [root.pk])
        return {path: pk for path, pk in cursor.fetchall() if path in wanted}


def root_rows(root, fields: tuple[str, ...]) -> list[tuple]:
    """The root's rows as plain tuples of ``fields``, in one query.

    The cursor directly, not ``values_list``: Django's per-value converters
    cost more than the walk for 10,000 rows, and a sync's comparison needs
    none (a datetime is only tested for None, a boolean for truth).
    """
    quote = connection.ops.quote_name
    columns = ", ".join(quote(Source._meta.get_field(name).column) for name in fields)
    root_column = quote(Source._meta.get_field("root").column)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {quote(Source._meta.db_table)} WHERE {root_column} = %s", [root.pk])
        return cursor.fetchall()


# What a re-sync needs of each row to know its file unchanged, as the
# database can say it: an unchanged file's row is "clean" (hashed, fingerprinted
# with mtime_ns, in the library, owing LightRAG nothing) and its stat matches.
CLEAN, EXCLUDED, GONE, OTHER = 1, 2, 3, 0


def root_marks(root, *, gone: tuple[str, ...], to_send: tuple[str, ...], disabled: str) -> dict[str, tuple]:
    """The root's rows as ``relative path -> (mark, absolute_path, size,
    mtime_ns, inode)``, in one query of six short columns: 10,000 unchanged
    files cost little more than the walk. ``mark``: CLEAN, EXCLUDED (the row
    is), GONE (removed or on its way out) or OTHER."""
    quote = connection.ops.quote_name
    column = {name: quote(Source._meta.get_field(name).column) for name in (
        "relative_path", "absolute_path", "size", "mtime_ns", "inode",
        "status", "sha256", "deleted_at", "excluded_by", "root",
    )}
    status = column["status"]
    sql = (
        f"SELECT {column['relative_path']}, CASE WHEN {status} = %s THEN {EXCLUDED}"
        f" WHEN {status} IN ({', '.join(['%s'] * len(gone))}) THEN {GONE}"
        f" WHEN {column['sha256']} <> '' AND {column['mtime_ns']} IS NOT NULL AND {column['deleted_at']} IS NULL"
        f" AND {status} NOT IN ({', '.join(['%s'] * len(to_send))}) AND {column['excluded_by']} <> %s THEN {CLEAN}"
        f" ELSE {OTHER} END, {column['absolute_path']}, {column['size']}, {column['mtime_ns']}, {column['inode']}"
        f" FROM {quote(Source._meta.db_table)} WHERE {column['root']} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [Source.Status.EXCLUDED, *gone, *to_send, disabled, root.pk])
        return {row[0]: row[1:] for row in cursor.fetchall()}
