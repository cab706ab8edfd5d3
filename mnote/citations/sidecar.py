"""Read what LightRAG wrote beside a parsed file (the sidecar blocks) and,
when its JSON chunk storage is readable, the exact chunk → block links.

Both are LightRAG's derived files: read only, cached by path + mtime + size,
and never trusted to exist (other storage back-ends have no JSON store).
"""

import json
import logging
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path, PurePosixPath

from mnote.text import is_real_heading

log = logging.getLogger(__name__)

# A sidecar bigger than this is not read in a request (a hostile or broken file).
MAX_SIDECAR_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Block:
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
    blocks: tuple[Block, ...]
    by_id: dict[str, Block] = field(repr=False)

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

