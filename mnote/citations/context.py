"""A cited chunk with its neighbours, for the JSON API and the preview's
context panel.

LightRAG's JSON chunk storage, when readable, gives the source's chunks in
order (by ``chunk_order_index``) and the sidecar blocks each one came from.
Without it, the sidecar's blocks stand in for chunks, so the panel still
shows the passages around the cited one.
"""

from dataclasses import dataclass, field

from mnote.text import clean_display_text
from mnote.citations.sidecar import Block, DocIndex, Sidecar, doc_index
from mnote.library.models import Source

MAX_CONTEXT = 10


class ChunkNotFound(LookupError):
    """The source has no chunk (or block) with that index, or none is readable."""


@dataclass(frozen=True)
class ContextChunk:
    chunk_index: int
    text: str
    heading_path: list[str]
    is_target: bool
    page: int | None = None
    block_ids: tuple[str, ...] = ()

    def as_json(self) -> dict:
        item = {
            "chunkIndex": self.chunk_index,
            "text": self.text,
            "headingPath": self.heading_path,
            "isTarget": self.is_target,
            "blockIds": list(self.block_ids),
        }
        if self.page is not None:
            item["page"] = self.page
        return item


@dataclass(frozen=True)
class ChunkContext:
    source_id: int
    # "lightrag_chunks" (LightRAG's chunk store) or "sidecar_blocks" (the fallback).
    unit: str
    chunks: list[ContextChunk] = field(default_factory=list)


def _page_of(blocks: list[Block]) -> int | None:
    """The page of the first block that has a real bbox position; never guessed."""
    for block in blocks:
        for position in block.positions:
            anchor = str(position.get("anchor") or "")
            if position.get("type") == "bbox" and anchor.isdigit():
                return int(anchor)
    return None


def _window(items: list, target: int, context: int) -> range:
    return range(max(target - context, 0), min(target + context + 1, len(items)))


def _from_chunk_store(source: Source, chunk_index: int, context: int, index: DocIndex) -> ChunkContext | None:
    sidecar = index.sidecar
    chunks = index.chunks_in_order(with_text=True)
    if not chunks:
        return None
    position = next((i for i, c in enumerate(chunks) if c.order_index == chunk_index), None)
    if position is None:
        raise ChunkNotFound(f"The source has no chunk {chunk_index} (it has {len(chunks)}).")
    items = []
    for i in _window(chunks, position, context):
        stored = chunks[i]
        blocks = [sidecar.by_id[b] for b in stored.block_ids if b in sidecar.by_id] if sidecar else []
        items.append(
            ContextChunk(
                chunk_index=stored.order_index,
                text=clean_display_text(stored.content),
                # Where the chunk starts: its first block's headings.
                heading_path=blocks[0].heading_path if blocks else [],
                is_target=i == position,
                page=_page_of(blocks),
                block_ids=tuple(b.block_id for b in blocks),
            )
        )
    return ChunkContext(source.pk, "lightrag_chunks", items)


def _from_sidecar(source: Source, index: int, context: int, sidecar: Sidecar | None, block_id: str) -> ChunkContext:
    if sidecar is None or not sidecar.blocks:
        raise ChunkNotFound("Neither LightRAG's chunk store nor the source's sidecar is readable.")
    if block_id:
        if block_id not in sidecar.by_id:
            raise ChunkNotFound(f"The source's sidecar has no block {block_id}.")
        index = sidecar.by_id[block_id].index
    elif not 0 <= index < len(sidecar.blocks):
        raise ChunkNotFound(f"The source's sidecar has no block {index} (it has {len(sidecar.blocks)}).")
    items = [
        ContextChunk(
            chunk_index=block.index,
            text=clean_display_text(block.content),
            heading_path=block.heading_path,
            is_target=block.index == index,
            page=_page_of([block]),
            block_ids=(block.block_id,),
        )
        for block in (sidecar.blocks[i] for i in _window(sidecar.blocks, index, context))
    ]
    return ChunkContext(source.pk, "sidecar_blocks", items)


def chunk_context(source: Source, chunk_index: int, *, context: int = 2, block_id: str = "") -> ChunkContext:
    """The chunk ``chunk_index`` of ``source`` with ``context`` neighbours on each side.

    From LightRAG's chunk store when it holds the source's chunks; else the
    sidecar blocks around ``block_id`` (when given) or around block number
    ``chunk_index``. Raises ChunkNotFound when there is no such chunk.
    The caller checks that the user may see the source and that it is citable.
    """
    context = max(0, min(context, MAX_CONTEXT))
    index = doc_index(source)
    found = _from_chunk_store(source, chunk_index, context, index)
    if found is not None:
        return found
    return _from_sidecar(source, chunk_index, context, index.sidecar, block_id)
