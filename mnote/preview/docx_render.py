"""DOCX → a safe HTML fragment for the preview.

    rendered = render_docx(path, image_url=lambda part: f"/preview/7/image?part={part}")
    rendered.html          # <article class="docx">…</article>, all text escaped
    rendered.images[part]  # Image(content_type, data), read from the file on access

Every rendered block (paragraph, heading, list item, table cell, footnote,
text-box paragraph) carries ``data-block-index`` (0-based, document order)
and, when the DOCX has one, ``data-para-id`` (``w14:paraId``); headings carry
``data-heading-level``. Block text stays close to what LightRAG puts into its
chunks — list labels as text, equations as the same linear text citations
show — so the browser can match evidence text against it.

Hostile and malformed files raise ``DocxRejected`` with a message for users;
see ``docx/limits.py`` for the limits. ``render_docx`` is pure: the
caller caches by the file's sha256.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import lxml.html

from .docx.body_html import BodyRenderer
from .docx.namespaces import DC, W
from .docx.numbering import Numbering
from .docx.limits import DEFAULT_LIMITS, Deadline, DocxRejected, Limits, invalid
from .docx.safe_package import DocxPackage
from .docx.styles import Styles
from .renderers import Image, PreviewContext, browser_image, checked_image

__all__ = [
    "DEFAULT_LIMITS",
    "DocxRejected",
    "Image",
    "Limits",
    "RenderedDocx",
    "load_docx_image",
    "render_docx",
]

class DocxImages(Mapping[str, Image]):
    """The images a rendered document shows, by part name; each is read from
    the file (with the same limits) when it is asked for."""

    def __init__(self, path: Path, content_types: dict[str, str], limits: Limits):
        self._path = path
        self._types = dict(content_types)
        self._limits = limits

    def __getitem__(self, part: str) -> Image:
        if part not in self._types:
            raise KeyError(part)
        return load_docx_image(self._path, part, limits=self._limits)

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def content_type(self, part: str) -> str:
        return self._types[part]


@dataclass(frozen=True)
class RenderedDocx:
    html: str
    title: str
    block_count: int
    images: Mapping[str, Image]
    warnings: list[str]
    # Counts of what was rendered: equations, footnotes, endnotes, text_boxes, tables, images.
    stats: dict[str, int] = field(default_factory=dict)


def render_docx(
    path: Path | str | BinaryIO,
    image_url: Callable[[str], str] | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> RenderedDocx:
    """Render a DOCX file as an HTML fragment.

    ``image_url(part_name)`` gives the URL the preview serves a package image
    under (``word/media/image1.png``); without it images become placeholders.
    Raises ``DocxRejected`` for files that are not valid Word documents, too
    large, or too slow to render.
    """
    path = path if hasattr(path, "read") else Path(path)
    deadline = Deadline(limits.time_budget_s)
    with DocxPackage(path, limits) as package:
        main = package.main_part()
        document = package.xml(main)
        if document is None or document.tag != f"{{{W}}}document":
            raise invalid("its main part is not a Word document body (is it a spreadsheet or a presentation?)")
        deadline.check()
        styles_part = package.related_part(main, "styles")
        styles = Styles.from_package(package, styles_part)
        numbering_part = package.related_part(main, "numbering")
        numbering = Numbering(package.xml(numbering_part) if numbering_part else None, styles)
        renderer = BodyRenderer(package, main, styles, numbering, image_url, deadline, limits)
        article = renderer.render(document)
        title = _core_title(package) or renderer.first_heading or ""
        html = lxml.html.tostring(article, encoding="unicode")
    warnings = [f"{message} ({count}×)" if count > 1 else message for message, count in renderer.warnings.items()]
    if numbering.unsupported:
        formats = ", ".join(sorted(numbering.unsupported))
        warnings.append(f"List numbers in unsupported formats ({formats}) are shown as plain numbers.")
    return RenderedDocx(
        html=html,
        title=title[:300],
        block_count=renderer.block_count,
        images=DocxImages(path, renderer.images, limits),
        warnings=warnings,
        stats=dict(renderer.stats),
    )


def load_docx_image(path, part: str, *, limits: Limits = DEFAULT_LIMITS) -> Image:
    """One image of the package (``path`` or an open file), checked to be what its name says it is."""
    if not browser_image(part):
        raise DocxRejected("This image is in a format the preview cannot show.")
    with DocxPackage(path, limits) as package:
        data = package.read(part)
    return checked_image(part, data)


def preview_docx(fp, ctx: PreviewContext) -> dict:
    """Called in the preview's child process (``render_child``), like every
    renderer: a document that passes every size check yet needs hundreds of
    MB to render costs the child, not the web worker."""
    rendered = render_docx(fp, image_url=ctx.asset_url)
    return {"html": rendered.html, "blocks": rendered.block_count, "title": rendered.title, "warnings": rendered.warnings}


def load_asset(fp, part: str) -> Image:
    return load_docx_image(fp, part)


def _core_title(package: DocxPackage) -> str:
    part = package.related_part("", "core-properties")
    root = package.xml(part) if part else None
    if root is None:
        return ""
    title = root.find(f"{{{DC}}}title")
    return " ".join((title.text or "").split()) if title is not None else ""
