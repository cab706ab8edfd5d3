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
from .docx.limits import PreviewRejected
from .docx.safe_package import DocxPackage, ZipPackage
from .pptx_render import PptxPackage
from .renderers import PreviewContext, renderer_for
from .sheet_render import XlsxPackage
from .text_map import TextMap, build_text_map

# The packages LightRAG reads itself, by the reader the preview opens them with.
_PACKAGES: dict[str, type[ZipPackage]] = {"docx": DocxPackage, "pptx": PptxPackage, "xlsx": XlsxPackage}


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


def refusal_on_sight(handle, name: str) -> str:
    """Why the preview will refuse this file whatever it renders, seen
    without rendering it (a package's directory and the heads of its XML
    parts: a DTD, a "zip bomb", an encrypted or misnamed part), or "". Only
    for the packages LightRAG reads itself: a file the preview refuses is
    not one a citation could open. A file merely too large to preview is
    not refused here (LightRAG may still read it; the text-size limit has
    its own say)."""
    package_class = _PACKAGES.get(kind_of(name).name)
    if package_class is None:
        return ""
    handle.seek(0)
    if not handle.read(4).startswith(b"PK"):
        # Not a package at all (a legacy or encrypted Office file, a renamed
        # one): LightRAG fails it too, and says which it is.
        handle.seek(0)
        return ""
    try:
        with package_class(handle) as package:
            package.check_declarations()
    except PreviewRejected as e:
        if e.message.startswith("This file is not a valid"):
            return e.message
    finally:
        handle.seek(0)
    return ""
