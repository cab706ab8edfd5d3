"""The preview's side of the one table of kinds (``mnote.kinds``): each kind
names its renderer as ``"module:function"`` under ``mnote.preview``; this
module finds it and gives it what it needs.

A renderer is ``render(fp, ctx) -> dict`` with ``html`` (a safe fragment
whose blocks carry ``data-block-index``), ``blocks``, ``title`` and
``warnings``; the result is cached by the file's sha256. ``fp`` is the
user's file, opened read-only by the preview view (the one place files are
opened); a renderer reads it and never closes it. A renderer module may
also define ``load_asset(fp, part) -> Image`` for the pictures it links to
through ``ctx.asset_url``, and a paged kind ``page_of(fp, ctx, text)`` and
``<function>_pages(fp, ctx) -> list[dict]``: every page from one read.

Every one of these runs in a child process (``render_child.py``), never in
the web process; a renderer module that starts its own limited child (the
PDF reader) says so with ``RUNS_OWN_CHILD = True`` and is called directly.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, NamedTuple

from mnote.kinds import Kind

from .docx.limits import PreviewRejected
from .docx.safe_package import ZipPackage


class Image(NamedTuple):
    """Unpacks as ``content_type, data``."""

    content_type: str
    data: bytes


@dataclass(frozen=True)
class PreviewContext:
    asset_url: Callable[[str], str] = lambda part: ""
    asset_base: str = ""  # what asset_url puts before a part name (for a renderer in a child process)
    path: Path | None = None  # for renderers that hand the file to a subprocess (PDF)
    page: int = 1  # of a paged sheet
    options: dict = field(default_factory=dict)


@lru_cache(maxsize=256)  # a module's function does not change; a search asks once per citation
def _resolve(kind: Kind, name: str | None = None):
    if not kind.renderer:
        return None
    module_name, function = kind.renderer.split(":")
    module = importlib.import_module(f"mnote.preview.{module_name}")
    return getattr(module, name or function, None)


def renderer_for(kind: Kind) -> Callable[[BinaryIO, PreviewContext], dict] | None:
    """The kind's renderer, or None: original only."""
    return _resolve(kind)


def pages_renderer_for(kind: Kind) -> Callable[[BinaryIO, PreviewContext], list[dict]] | None:
    """A paged kind's renderer of every page at once, or None: one page only."""
    if not kind.renderer:
        return None
    return _resolve(kind, kind.renderer.split(":")[1] + "_pages")


def runs_own_child(kind: Kind) -> bool:
    """Whether the kind's reader starts a limited child of its own (then the
    preview calls it directly instead of through ``render_child``)."""
    return bool(_resolve(kind, "RUNS_OWN_CHILD"))


def asset_loader_for(kind: Kind) -> Callable[[BinaryIO, str], Image] | None:
    return _resolve(kind, "load_asset")


def page_finder_for(kind: Kind) -> Callable[[BinaryIO, PreviewContext, str], int | None] | None:
    """A paged kind's ``page_of(fp, ctx, text)``: the page a cited passage is on."""
    return _resolve(kind, "page_of")


def render_cache_key(kind: Kind, ctx: PreviewContext, language: str = "") -> str:
    """Renderers put a few words in the reader's language (tabs, "Speaker notes")."""
    key = kind.name if ctx.page == 1 else f"{kind.name}-p{ctx.page}"
    return f"{key}-{language}" if language else key


# --- images inside packages (DOCX, PPTX, EPUB, ODT) and image files ----------

IMAGE_TYPES = {
    "png": ("image/png", (b"\x89PNG\r\n\x1a\n",)),
    "jpg": ("image/jpeg", (b"\xff\xd8\xff",)),
    "jpeg": ("image/jpeg", (b"\xff\xd8\xff",)),
    "jpe": ("image/jpeg", (b"\xff\xd8\xff",)),
    "gif": ("image/gif", (b"GIF87a", b"GIF89a")),
    "bmp": ("image/bmp", (b"BM",)),
    "webp": ("image/webp", (b"RIFF",)),
}


def browser_image(name: str) -> bool:
    """Whether a browser can show an image of this name (never SVG: it can run scripts)."""
    return name.rsplit(".", 1)[-1].lower() in IMAGE_TYPES


def checked_image(name: str, data: bytes | None) -> Image:
    """``data`` as an image, if it is what its name says it is."""
    kind = IMAGE_TYPES.get(name.rsplit(".", 1)[-1].lower())
    if kind is None:
        raise PreviewRejected("This image is in a format the preview cannot show.")
    if data is None:
        raise PreviewRejected("This image is not in the document.")
    content_type, magics = kind
    if not data.startswith(magics) or (content_type == "image/webp" and data[8:12] != b"WEBP"):
        raise PreviewRejected("This image is damaged or not what its name says.")
    return Image(content_type, data)


def package_image(package_class: type[ZipPackage], fp: BinaryIO, part: str) -> Image:
    with package_class(fp) as package:
        return checked_image(part, package.read(part))
