"""Read what LightRAG wrote beside a parsed file (the sidecar blocks) and,
when its JSON chunk storage is readable, the exact chunk → block links.

Both are LightRAG's derived files: read only, cached by path + mtime + size,
and never trusted to exist (other storage back-ends have no JSON store).
Readers use :func:`doc_index`: one compact index per document version,
written once to disk and shared by every web process.
"""

import hashlib
import json
import logging
import marshal
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from mnote.private_files import write_private_file
from mnote.text import clean_display_text, is_real_heading

log = logging.getLogger(__name__)

# A sidecar bigger than this is not read in a request (a hostile or broken file).
MAX_SIDECAR_BYTES = 64 * 1024 * 1024


class Block(NamedTuple):
    # A tuple, not a dataclass: a document index makes thousands at once.
    index: int  # 0-based order in the sidecar
    block_id: str
    content: str
    heading: str
    parent_headings: tuple[str, ...]
    positions: tuple[dict, ...]

    @property
    def heading_path(self) -> list[str]:
        path = [h for h in self.parent_headings if is_real_heading(h)]
        if is_real_heading(self.heading):
            path.append(self.heading)
        return path


@dataclass(frozen=True)
class Sidecar:
    path: Path
    meta: dict
    blocks: Sequence[Block]  # a tuple, or the index file's blocks decoded when first used
    by_id: Mapping[str, Block] = field(repr=False)

    def display_text(self, block: Block) -> tuple[str, str]:
        """(the block's display text, that text cleaned once more): what the
        mapper scores and quotes. An index file holds them from when it was
        written; a sidecar read now cleans each block when first asked."""
        known = getattr(self.blocks, "display_text", None)
        found = known(block.index) if known else None
        return found if found is not None else _display_texts(block.content)

    @cached_property
    def normalised_contents(self) -> tuple[str, ...]:
        """Each block's content with whitespace collapsed, computed once per
        sidecar (text matching compares every chunk against every block)."""
        return tuple(" ".join(b.content.split()) for b in self.blocks)

    @property
    def bbox_max(self) -> float:
        attributes = self.meta.get("bbox_attributes") or {}
        try:
            return float(attributes.get("max", 1000)) or 1000.0
        except (TypeError, ValueError):
            return 1000.0


def _clean_twice(content: str) -> tuple[str, str]:
    # Cleaning clean text changes nothing but rare entity-kept tags; the
    # evidence window cleans its text again, so both are kept.
    once = clean_display_text(content)
    return once, clean_display_text(once)


# Blocks of a sidecar read now (no index file yet), as searches ask for them.
_display_texts = lru_cache(maxsize=4096)(_clean_twice)


def forget_display_texts() -> None:
    """This process's memo of blocks' display texts (a cold start, for benchmarks)."""
    _display_texts.cache_clear()


def sidecar_path(input_dir: Path, lightrag_name: str) -> Path:
    stem = PurePosixPath(lightrag_name).stem
    return input_dir / "__parsed__" / f"{lightrag_name}.parsed" / f"{stem}.blocks.jsonl"


def load_sidecar(input_dir: Path, lightrag_name: str) -> Sidecar | None:
    if not lightrag_name:
        return None
    path = sidecar_path(input_dir, lightrag_name)
    try:
        stat = path.stat()
    except OSError:
        return None
    if stat.st_size > MAX_SIDECAR_BYTES:
        log.warning("sidecar %s is too large to read (%d bytes)", path, stat.st_size)
        return None
    return _read_sidecar(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _read_sidecar(path: str, _mtime_ns: int, _size: int) -> Sidecar | None:
    meta: dict = {}
    blocks: list[Block] = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # one broken row must not hide the others
                if not isinstance(row, dict):
                    continue
                if row.get("type") == "meta":
                    meta = row
                elif row.get("type") == "content" and row.get("blockid"):
                    blocks.append(
                        Block(
                            index=len(blocks),
                            block_id=str(row["blockid"]),
                            content=str(row.get("content") or ""),
                            heading=str(row.get("heading") or ""),
                            parent_headings=tuple(str(h) for h in row.get("parent_headings") or () if h),
                            positions=tuple(p for p in row.get("positions") or () if isinstance(p, dict)),
                        )
                    )
    except (OSError, UnicodeDecodeError) as e:
        log.warning("cannot read sidecar %s: %s", path, e)
        return None
    return Sidecar(Path(path), meta, tuple(blocks), {b.block_id: b for b in blocks})


@dataclass(frozen=True)
class StoredChunk:
    chunk_id: str
    doc_id: str
    order_index: int | None
    block_ids: tuple[str, ...]
    content: str


def load_chunk_store(working_dir: Path) -> dict[str, StoredChunk] | None:
    """LightRAG's JsonKVStorage of chunks, or None when it is not readable
    (another storage back-end, or not written yet)."""
    path = working_dir / "kv_store_text_chunks.json"
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read_chunk_store(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=2)
def _read_chunk_store(path: str, _mtime_ns: int, _size: int) -> dict[str, StoredChunk] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        # LightRAG rewrites it while indexing; a half-written file is normal.
        log.info("chunk store %s not readable now: %s", path, e)
        return None
    chunks = {}
    for chunk_id, record in data.items():
        if not isinstance(record, dict):
            continue
        sidecar = record.get("sidecar") or {}
        refs = tuple(
            str(ref["id"]) for ref in sidecar.get("refs") or () if isinstance(ref, dict) and ref.get("type") == "block" and ref.get("id")
        )
        order = record.get("chunk_order_index")
        chunks[chunk_id] = StoredChunk(
            chunk_id=chunk_id,
            doc_id=str(record.get("full_doc_id") or ""),
            order_index=order if isinstance(order, int) else None,
            block_ids=refs,
            content=str(record.get("content") or ""),
        )
    return chunks


def doc_id_of_chunk(chunk_id: str) -> str:
    """LightRAG's chunk ids are ``<doc id>-chunk-NNN``."""
    head, sep, _ = chunk_id.rpartition("-chunk-")
    return head if sep else ""


def chunk_index_of(chunk_id: str) -> int | None:
    _, sep, tail = chunk_id.rpartition("-chunk-")
    return int(tail) if sep and tail.isdigit() else None



# --- one compact index per document version -----------------------------------
#
# Parsing a sidecar (2.5 MB of JSONL for a 2,000-block document) and the whole
# chunk store costs tens of milliseconds, once per web process per version.
# The blocks and this document's chunk → block links are written once, in
# marshal's format, next to the render cache; any process then reads them in
# a few milliseconds. The chunks' own texts (for the context panel and the
# preview, not for mapping) sit in a second file, read when first asked for.
# The file name carries the source's content hash; the sidecar's size and
# mtime, the time MNote saw it indexed and whether the chunk store existed
# are checked on each read.

INDEX_FORMAT = 4
_INDEXES: "OrderedDict[str, tuple[tuple, DocIndex]]" = OrderedDict()
_INDEXES_KEPT = 64
# The web process's threads share _INDEXES: a look-up and its move to the end
# (or an eviction) by one thread between another's get() and move_to_end()
# raised KeyError. Held only around the dictionary, never while an index is
# read or built.
_INDEXES_LOCK = threading.Lock()


class DocIndex:
    """A document version's sidecar blocks and its chunks (with their block
    links and, on demand, their texts), or what of them is readable."""

    def __init__(self, sidecar: Sidecar | None, refs: dict[str, tuple], *, store_seen: bool, doc_id: str,
                 texts: dict[str, str] | None = None, texts_path: Path | None = None):
        self.sidecar = sidecar
        self._refs = refs  # chunk id → (order index, block ids)
        self.store_seen = store_seen
        """Whether LightRAG's JSON chunk store existed when this was built."""
        self.doc_id = doc_id
        self._texts = texts
        self._texts_path = texts_path
        self.text_matches: dict[str, tuple] = {}
        """The mapper's text matching of chunks to blocks (chunk text → its
        blocks), kept with this version: a new version is a new index."""

    def chunk(self, chunk_id: str, *, with_text: bool = False) -> StoredChunk | None:
        """The chunk's order and block links; its text too when asked (read then)."""
        ref = self._refs.get(chunk_id)
        if ref is None:
            return None
        text = self._chunk_texts().get(chunk_id, "") if with_text else ""
        return StoredChunk(chunk_id=chunk_id, doc_id=self.doc_id, order_index=ref[0], block_ids=tuple(ref[1]), content=text)

    def chunks_in_order(self, *, with_text: bool = False) -> list[StoredChunk]:
        ordered = sorted((ref[0], chunk_id) for chunk_id, ref in self._refs.items() if ref[0] is not None)
        return [self.chunk(chunk_id, with_text=with_text) for _, chunk_id in ordered]

    def _chunk_texts(self) -> dict[str, str]:
        if self._texts is None:
            try:
                self._texts = marshal.loads(self._texts_path.read_bytes()) if self._texts_path else {}
            except (OSError, EOFError, ValueError, TypeError):
                self._texts = {}
        return self._texts


def index_path(data_dir: Path, sha256: str, lightrag_name: str) -> Path:
    name = hashlib.sha256(lightrag_name.encode()).hexdigest()[:16]
    return data_dir / "cache" / "index" / f"{sha256[:64]}-{name}-v{INDEX_FORMAT}.marshal"


def load_doc_index(
    *, input_dir: Path, working_dir: Path, data_dir: Path, lightrag_name: str, doc_id: str, sha256: str, indexed_at: str = ""
) -> DocIndex:
    """The index of one document version: from this process's memory, else
    from disk, else built from the sidecar and the chunk store (and written)."""
    sidecar_file, store_file, path, key = _places(input_dir, working_dir, data_dir, lightrag_name, doc_id, sha256)
    try:
        stat = os.stat(sidecar_file) if sidecar_file else None
    except OSError:
        stat = None
    store_exists = os.path.exists(store_file)
    sidecar_key = (stat.st_size, stat.st_mtime_ns) if stat else None
    # Deleted and indexed again (new chunk settings), a version gets new chunks.
    validity = (sidecar_key, doc_id, indexed_at)
    with _INDEXES_LOCK:
        held = _INDEXES.get(key)
        if held and held[0] == validity and (held[1].store_seen or not store_exists):
            _INDEXES.move_to_end(key)
            return held[1]
    index = _read_index(path, validity, store_exists)
    if index is None:
        index, complete = _build_index(input_dir, working_dir, lightrag_name, doc_id, store_exists)
        if complete and sha256:
            _write_index(path, validity, index)
    with _INDEXES_LOCK:
        _INDEXES[key] = (validity, index)
        while len(_INDEXES) > _INDEXES_KEPT:
            _INDEXES.popitem(last=False)
    return index


@lru_cache(maxsize=1024)
def _places(input_dir: Path, working_dir: Path, data_dir: Path, lightrag_name: str, doc_id: str, sha256: str) -> tuple:
    """(sidecar file, chunk store file, index file, its key in memory): the
    paths a search checks for each cited document, built once (pathlib's
    joins cost more than the stat calls themselves)."""
    sidecar_file = str(sidecar_path(input_dir, lightrag_name)) if lightrag_name else ""
    path = index_path(data_dir, sha256 or "none", f"{lightrag_name}\0{doc_id}")
    return sidecar_file, str(working_dir / "kv_store_text_chunks.json"), path, str(path)


def doc_index(source) -> DocIndex:
    """The index of a registry row's indexed version (the mapper, the context
    panel and the preview read the sidecar and chunks through this)."""
    from django.conf import settings

    config = settings.MNOTE_LIGHTRAG
    return load_doc_index(
        input_dir=config.input_dir,
        working_dir=config.working_dir,
        data_dir=settings.DATA_DIR,
        lightrag_name=source.lightrag_name,
        doc_id=source.lightrag_doc_id,
        sha256=source.sha256,
        indexed_at=source.indexed_at.isoformat() if source.indexed_at else "",
    )


def cited_chunk_text(source, chunk_id: str, index: DocIndex | None = None) -> str:
    """The cited chunk's own text (one of this source's chunks), cleaned for
    display, when LightRAG's chunk store is readable; "" otherwise."""
    if not chunk_id or source is None:
        return ""
    stored = (index or doc_index(source)).chunk(chunk_id, with_text=True)
    return clean_display_text(stored.content) if stored else ""


def forget_doc_indexes() -> None:
    """This process's copies (the files on disk stay): a cold start, for tests and benchmarks."""
    with _INDEXES_LOCK:
        _INDEXES.clear()


def _build_index(input_dir: Path, working_dir: Path, lightrag_name: str, doc_id: str, store_exists: bool) -> tuple[DocIndex, bool]:
    sidecar = load_sidecar(input_dir, lightrag_name)
    store = load_chunk_store(working_dir) if store_exists else None
    mine = [c for c in (store or {}).values() if doc_id and c.doc_id == doc_id]
    refs = {c.chunk_id: (c.order_index, c.block_ids) for c in mine}
    texts = {c.chunk_id: c.content for c in mine}
    # Kept only when nothing was half-read: a store being rewritten, or one
    # without this document's chunks yet, is read again next time.
    complete = (not store_exists or bool(mine)) and (sidecar is not None or not _sidecar_exists(input_dir, lightrag_name))
    return DocIndex(sidecar, refs, store_seen=store is not None, doc_id=doc_id, texts=texts), complete


def _sidecar_exists(input_dir: Path, lightrag_name: str) -> bool:
    return bool(lightrag_name) and sidecar_path(input_dir, lightrag_name).exists()


# The file: a 12-byte head (magic, header length), the header (marshal: the
# validity, block ids → order, each block's end offset, the chunk links), then
# each block marshalled on its own, with its display text (cleaned when the
# file is written: cleaning markup-heavy blocks was much of a new process's
# first searches). A search uses a few dozen of a document's thousands of
# blocks, so a new process decodes only those (reading every block's text
# was most of the mapping of a web process's first searches).
_MAGIC = b"MNIX"


class _StoredBlocks(Sequence):
    """The blocks of an index file, each decoded when first used."""

    def __init__(self, data, base: int, ends: list[int]):
        self._data = data  # the file's bytes (memory-mapped: shared by the processes that read it)
        self._base = base
        self._ends = ends
        self._decoded: list[Block | None] = [None] * len(ends)
        self._display: list[tuple[str, str] | None] = [None] * len(ends)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        block = self._decoded[i]
        if block is None:
            start = self._base + (self._ends[i - 1] if i else 0)
            row = marshal.loads(self._data[start : self._base + self._ends[i]])
            block = self._decoded[i] = Block._make((i, *row[:5]))
            once, twice = row[5], row[6]
            self._display[i] = (once, once if twice is None else twice)
        return block

    def display_text(self, i: int) -> tuple[str, str]:
        self[i]
        return self._display[i]


class _BlocksById(Mapping):
    def __init__(self, blocks: _StoredBlocks, where: dict[str, int]):
        self._blocks = blocks
        self._where = where

    def __getitem__(self, block_id: str) -> Block:
        return self._blocks[self._where[block_id]]

    def __contains__(self, block_id) -> bool:
        return block_id in self._where

    def __iter__(self):
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


def _write_index(path: Path, validity: tuple, index: DocIndex) -> None:
    sidecar = index.sidecar
    rows: list[bytes] = []
    header_sidecar = None
    if sidecar is not None:
        rows = []
        for b in sidecar.blocks:
            once, twice = _clean_twice(b.content)  # not through the memo: all of a document's blocks
            row = (b.block_id, b.content, b.heading, b.parent_headings, b.positions, once, None if twice == once else twice)
            rows.append(marshal.dumps(row))
        ends, end = [], 0
        for row in rows:
            end += len(row)
            ends.append(end)
        header_sidecar = (str(sidecar.path), sidecar.meta, {b.block_id: b.index for b in sidecar.blocks}, ends)
    header = marshal.dumps(
        {
            "format": INDEX_FORMAT,
            "validity": validity,
            "store_seen": index.store_seen,
            "sidecar": header_sidecar,
            "chunks": index._refs,
        }
    )
    try:
        # The texts first: an index on disk always has its texts beside it.
        write_private_file(path.with_suffix(".texts"), marshal.dumps(index._chunk_texts()))
        write_private_file(path, b"".join([_MAGIC, len(header).to_bytes(8, "little"), header, *rows]))
    except (OSError, ValueError) as e:
        log.warning("cannot write the document index %s: %s", path, e)


def _map_file(path: Path):
    with open(path, "rb") as f:
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return b""


def _read_index(path: Path, validity: tuple, store_exists: bool) -> DocIndex | None:
    try:
        data = _map_file(path)
        if data[:4] != _MAGIC:
            return None
        length = int.from_bytes(data[4:12], "little")
        payload = marshal.loads(data[12 : 12 + length])
    except (OSError, EOFError, ValueError, TypeError):
        return None
    try:
        if payload["format"] != INDEX_FORMAT or tuple(payload["validity"]) != validity:
            return None
        if store_exists and not payload["store_seen"]:
            return None  # built before the chunk store existed: its block links are missing
        sidecar = None
        if payload["sidecar"] is not None:
            sidecar_name, meta, where, ends = payload["sidecar"]
            if not isinstance(where, dict) or (ends and 12 + length + ends[-1] != len(data)):
                raise ValueError("blocks")
            blocks = _StoredBlocks(data, 12 + length, ends)
            sidecar = Sidecar(Path(sidecar_name), meta, blocks, _BlocksById(blocks, where))
        refs = payload["chunks"]
        if not isinstance(refs, dict):
            raise TypeError("chunks")
    except (KeyError, TypeError, ValueError, IndexError) as e:
        log.info("document index %s unreadable, rebuilt: %s", path, e)
        return None
    return DocIndex(sidecar, refs, store_seen=payload["store_seen"], doc_id=validity[1], texts_path=path.with_suffix(".texts"))
