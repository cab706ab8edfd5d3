"""The preview's text of a file, block by block, for the library: where
LightRAG's own parsers cannot read a kind (or read its markup as text), the
library hands LightRAG this text instead (``mnote.library.derived_text``),
and a cited chunk is found again in the same text map the preview shows.

The library calls it directly (the renderers sit below the library: they
need only the file's bytes); the file is read in the preview's child process
(``render_child``), under the same limits as a preview, never in the worker.
"""

from __future__ import annotations

import json

from mnote.kinds import kind_of

from . import render_child
from .renderers import PreviewContext, renderer_for
from .text_map import TextMap, build_text_map


def block_texts(text_map: TextMap) -> list[str]:
    """The text map's text cut where its owning block changes: one string a
    block (a block interrupted by another one continues its string)."""
    ends = [run[0] for run in text_map.runs[1:]] + [len(text_map.ink)]
    blocks: dict[int, list[str]] = {}
    for (ink_start, block, _offset), ink_end in zip(text_map.runs, ends):
        if ink_end <= ink_start:
            continue
        start, end = text_map.text_offset(ink_start), text_map.text_offset(ink_end - 1) + 1
        blocks.setdefault(block, []).append(text_map.text[start:end].strip())
    return [" ".join(parts) for parts in blocks.values() if any(parts)]


def rendered_block_texts(handle, name: str, path=None) -> list[str] | None:
    """The text of each block the file's preview renders, in order; None when
    the preview has no renderer for the kind. A refusal is raised as the
    renderer's exception, whose message is for users."""
    render = renderer_for(kind_of(name))
    if render is None:
        return None
    handle.seek(0)
    texts = []
    for page in render_child.render_pages(kind_of(name), handle, PreviewContext(path=path)):
        result = json.loads(page)
        text_map = TextMap.from_compact(result["textMap"]) if "textMap" in result else None
        texts += block_texts(text_map or build_text_map(result.get("html") or ""))
    return texts
