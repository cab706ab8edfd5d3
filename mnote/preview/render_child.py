"""Every preview renderer runs here, in a child process with the limits of
``sandbox.py`` (CPU time, wall clock, address space): one entry for every
kind of the one table (``mnote.kinds``), dispatched by the kind's name. The
web process hands the child the opened file (``/dev/fd/N``) and never parses
a user's file itself: a file that makes a reader hang, balloon or crash costs
one child, and its refusal is cached per file version (``render_cache``).

    pages = render_pages(kind, handle, ctx, language="zh-hans")  # JSON of each page, page 1 first
    image = load_asset(kind, handle, "word/media/image1.png")
    page = page_of(kind, handle, ctx, "evidence text")

A paged kind (a sheet) renders every page in that one child run; the caller
keeps each page, so another page is never a second read of the file.

No Django in the parent's side of this module beyond gettext; the child
imports it under ``python -I`` and sets Django's translation up only when a
renderer uses it (the DOCX renderer does not, and starts faster).
"""

import json
import logging
import sys
from pathlib import Path
from typing import BinaryIO

if __name__ == "__main__":  # the child process: find the mnote package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mnote.preview import sandbox  # noqa: E402
from mnote.preview.docx.limits import PreviewRejected  # noqa: E402

log = logging.getLogger(__name__)

# What one render may cost. A preview that needs more is refused with a
# message, and the refusal is kept for the file's version (or, when too
# slow, for a while: perhaps only the machine was busy).
TIMEOUT_S = 4.0  # plus the reader's start and the answer: within 5 s in all
CHILD_MEMORY_BYTES = 300 * 1024 * 1024  # address space: Python, lxml and the render itself
MAX_OUTPUT_BYTES = 48 * 1024 * 1024  # every page's JSON together
TOO_SLOW_REMEMBERED_S = 600
BUSY_REMEMBERED_S = 60


class RenderFailed(PreviewRejected):
    """The child gave no render; the message says why, for users.
    ``transient``: never cached (the preview was busy); ``remember_s``: how long it holds."""

    def __init__(self, message: str, *, transient: bool = False, remember_s: float | None = None):
        super().__init__(message)
        self.transient = transient
        self.remember_s = remember_s


# --- the web process's side ---------------------------------------------------


def render_pages(kind, handle: BinaryIO, ctx, *, language: str = "", locale_paths=()) -> list[bytes]:
    """The render of the opened file as JSON, one line a page (page 1 first;
    one line for a kind that is not paged), each with its text map."""
    params = {
        "kind": kind.name,
        "name": ctx.path.name if ctx.path else "",
        "asset_base": ctx.asset_base,
        "options": ctx.options,
        "language": language,
        "locale_paths": [str(p) for p in locale_paths],
    }
    out = _run("render", handle, params)
    return out.splitlines()


def load_asset(kind, handle: BinaryIO, part: str):
    """A picture from inside the file, checked to be what its name says (``renderers.Image``)."""
    from mnote.preview.renderers import Image

    out = _run("asset", handle, {"kind": kind.name, "part": part})
    content_type, _newline, data = out.partition(b"\n")
    return Image(content_type.decode(), data)


def page_of(kind, handle: BinaryIO, ctx, evidence: str) -> int | None:
    """The page of a paged kind a cited passage is on, or None."""
    params = {"kind": kind.name, "name": ctx.path.name if ctx.path else "", "evidence": evidence}
    return json.loads(_run("page_of", handle, params))["page"]


def _run(op: str, handle: BinaryIO, params: dict) -> bytes:
    from django.utils.translation import gettext as _

    path = f"{sandbox.FD_PATH}{handle.fileno()}"
    try:
        return sandbox.run_child(__file__, op, path, params, timeout=TIMEOUT_S, memory=CHILD_MEMORY_BYTES, log=log)
    except sandbox.ChildRejected as e:
        raise RenderFailed(str(e), remember_s=e.remember_s) from e
    except sandbox.ChildFailed as e:
        if e.reason in ("busy", "start"):
            raise RenderFailed(_("The preview is busy; try again in a moment."), transient=True) from e
        if e.reason == "timeout" and e.cpu_s is not None and e.cpu_s < TIMEOUT_S / 2:
            # Stopped by the clock with little CPU used: the machine was busy, perhaps
            # not the file's fault; said as such, and remembered a minute only (long
            # enough that a hostile file still costs one child a minute, no more).
            raise RenderFailed(
                _("This file takes too long to preview while the server is busy; try again in a minute."),
                remember_s=BUSY_REMEMBERED_S,
            ) from e
        if e.reason == "timeout":
            raise RenderFailed(
                _("This file takes too long to preview (more than %(seconds)s s).") % {"seconds": f"{TIMEOUT_S:g}"},
                remember_s=TOO_SLOW_REMEMBERED_S,
            ) from e
        if e.reason == "memory":
            raise RenderFailed(
                _("This file needs more memory than the preview allows (%(mb)s MB).")
                % {"mb": CHILD_MEMORY_BYTES // 2**20}
            ) from e
        raise RenderFailed(_("The preview failed on this file; it may be damaged. Download the original instead.")) from e


# --- the child's side -----------------------------------------------------------


def _kind(name: str):
    from mnote.kinds import KINDS

    return KINDS[name]


def _translations(language: str, locale_paths: list[str]) -> None:
    """Django's gettext in the reader's language, when a renderer uses it:
    settings from the parent, and no app but the project's catalogues."""
    if "django.utils.translation" not in sys.modules:
        return
    from django.apps import apps
    from django.conf import settings
    from django.utils import translation

    settings.configure(USE_I18N=True, LANGUAGE_CODE="en", LOCALE_PATHS=locale_paths, INSTALLED_APPS=[])
    apps.populate([])
    translation.activate(language or "en")


def _context(params: dict):
    from urllib.parse import quote

    from mnote.preview.renderers import PreviewContext

    base = params.get("asset_base", "")
    return PreviewContext(
        # Part names may hold spaces, "#", "?" or any script (an EPUB's 夏目漱石.jpg).
        asset_url=lambda part: base + quote(part.lstrip("/"), safe="/"),
        asset_base=base,
        path=Path(params["name"]) if params.get("name") else None,
        options=params.get("options") or {},
    )


def _child_render(path: str, kind: str, name: str, asset_base: str, options: dict, language: str, locale_paths: list) -> bytes:
    from mnote.preview.renderers import pages_renderer_for, renderer_for

    the_kind = _kind(kind)
    render_all, render_one = pages_renderer_for(the_kind), renderer_for(the_kind)  # imports the renderer
    _translations(language, locale_paths)
    from mnote.preview.text_map import build_text_map

    ctx = _context({"name": name, "asset_base": asset_base, "options": options})
    with open(path, "rb") as fp:
        pages = render_all(fp, ctx) if render_all else [render_one(fp, ctx)]
        empty = fp.seek(0, 2) == 0
    lines, size = [], 0
    for number, page in enumerate(pages, start=1):
        if page.get("html"):
            # The text map is built here too: parsing a big preview's HTML again
            # would cost the web worker as much as rendering it.
            page["textMap"] = build_text_map(page["html"]).compact()
        if number == 1:
            _check_not_blank(page, empty)
        line = json.dumps(page).encode()
        size += len(line) + 1
        if size > MAX_OUTPUT_BYTES:
            if number == 1:
                raise PreviewRejected(_gettext("This file is too large to preview (its preview would pass %(mb)s MB).") % {"mb": MAX_OUTPUT_BYTES // 2**20})
            break  # later pages say "not in the preview" when asked for
        lines.append(line)
    return b"\n".join(lines)


def _check_not_blank(page: dict, empty: bool) -> None:
    """A render with no text and no picture is a refusal that says why, never a blank page."""
    import lxml.html

    html = page.get("html") or ""
    if page.get("pages") or "<img" in html:
        return
    # Blocks are what a reader reads (and a citation lands on); the renderer's
    # own words around them (a sheet's name, "Slide 1") are not content.
    if page.get("blocks") and lxml.html.fragment_fromstring(html, create_parent="div").text_content().strip():
        return
    if empty:
        raise PreviewRejected(_gettext("This file is empty."))
    raise PreviewRejected(
        _gettext(
            "The preview found nothing to show in this file: it has no text, or its text is nested deeper "
            "than the preview reads (a few hundred levels)."
        )
    )


def _gettext(message: str) -> str:
    if "django.conf" in sys.modules and sys.modules["django.conf"].settings.configured:
        from django.utils.translation import gettext

        return gettext(message)
    return message


def _child_asset(path: str, kind: str, part: str) -> bytes:
    from mnote.preview.renderers import asset_loader_for

    load = asset_loader_for(_kind(kind))
    if load is None:
        raise PreviewRejected("This kind of file has no pictures to show.")
    with open(path, "rb") as fp:
        content_type, data = load(fp, part)
    return content_type.encode() + b"\n" + data


def _child_page_of(path: str, kind: str, name: str, evidence: str) -> bytes:
    from mnote.preview.renderers import page_finder_for

    find = page_finder_for(_kind(kind))
    with open(path, "rb") as fp:
        page = find(fp, _context({"name": name}), evidence) if find else None
    return json.dumps({"page": page}).encode()


def _refusing(work):
    """``work`` with a text reader's refusal (``TextRejected``, whose module
    imports Django: not imported unless a renderer needs it) as a refusal."""

    def run(*args, **kwargs):
        try:
            return work(*args, **kwargs)
        except ValueError as e:
            text_rejected = getattr(sys.modules.get("mnote.preview.text_render"), "TextRejected", None)
            if text_rejected is not None and isinstance(e, text_rejected):
                raise PreviewRejected(str(e)) from e
            raise

    return run


def _child_main(argv: list[str]) -> int:
    work = {"render": _child_render, "asset": _child_asset, "page_of": _child_page_of}
    # KeyError: an asset loader's "no such part".
    return sandbox.child_main(argv, {op: _refusing(w) for op, w in work.items()}, (PreviewRejected, KeyError))


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv))
