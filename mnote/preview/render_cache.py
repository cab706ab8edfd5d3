"""Rendered previews cached by the file's sha256 (and the renderer's
version), so a big document is rendered once per content, not per click."""

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from mnote.private_files import write_private_file

log = logging.getLogger(__name__)

# Bump when a renderer's output changes, so old cache entries are not served.
# 2: one renderer per kind; DOCX headings, drop caps, headers and footers.
# 3: every render of HTML carries its text map (anchoring.py).
# 4: text maps know the renderer's own text (list labels, placeholders) as soft.
# 5: HTML through nh3; sheets wide, formatted and merged; ODT numbered lists; PPTX footers and charts; RTF hidden text.
# 6: every kind rendered in a child; a sheet's pages all from one render; blank renders refused.
# 7: sheets' row numbers and corner are presentation; a code block is focusable (it scrolls).
# 8: an HTML/EPUB block holding other blocks is a block too when it has words of its own beside them.
RENDERER_VERSION = "8"


class RenderRefused(Exception):
    """A refusal remembered from an earlier render of the same content; ``str(e)`` is for users."""


def cached(
    kind: str, sha256: str, render: Callable[[], dict], *, refusals: tuple[type[Exception], ...] = ()
) -> dict:
    """The render of this content, from the cache or made now. A refusal
    (one of ``refusals``: the file is too large, damaged, too slow) is cached
    too, so a hostile file costs one render per version, not one per request;
    one with ``remember_s`` (too slow: perhaps only a busy machine) holds that
    long; one marked ``transient`` (the reader is busy) is not cached."""
    path = Path(cache_file(kind, sha256))
    try:
        hit = json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    else:
        if not (isinstance(hit, dict) and "refused" in hit):
            return hit
        if hit.get("until") is None or time.time() < hit["until"]:
            raise RenderRefused(hit["refused"])
    try:
        result = render()
    except refusals as e:
        if not getattr(e, "transient", False):
            remember_s = getattr(e, "remember_s", None)
            _store(path, {"refused": str(e), "until": time.time() + remember_s if remember_s else None})
        raise
    _store(path, result)
    return result


def cached_picture(sha256: str, part: str, load: Callable[[], tuple[str, bytes]], *, refusals=()) -> tuple[str, bytes]:
    """A picture from inside this content (``part``), from the cache or read
    now by ``load`` (in a child process); a refusal is kept too, so asking
    for a hostile part again costs nothing."""
    name = hashlib.sha256(part.encode()).hexdigest()[:32]
    path = Path(cache_file(f"picture-{name}", sha256)).with_suffix(".bin")
    try:
        content_type, _newline, data = path.read_bytes().partition(b"\n")
    except OSError:
        pass
    else:
        if content_type == b"!refused":
            raise RenderRefused(data.decode())
        return content_type.decode(), data
    try:
        content_type, data = load()
    except refusals as e:
        if not getattr(e, "transient", False) and not getattr(e, "remember_s", None):
            _store(path, b"!refused\n" + str(e).encode())
        raise
    _store(path, content_type.encode() + b"\n" + data)
    return content_type, data


def store(kind: str, sha256: str, result: dict | bytes) -> None:
    """Keep a render made along with another (a sheet's later pages, from
    the child run that rendered its first); ``result`` may be its JSON already."""
    _store(cache_file(kind, sha256), result)


def cache_file(kind: str, sha256: str) -> str:
    """Where the render of this content is cached (the file may not exist)."""
    return str(settings.DATA_DIR / "cache" / "preview" / f"{kind}-{RENDERER_VERSION}-{sha256}.json")


def peek_at(path: str, max_bytes: int | None = None) -> dict | None:
    """The cached render in ``path`` (from :func:`cache_file`), or None:
    never renders (nor reads a cached render larger than ``max_bytes``)."""
    try:
        if max_bytes is not None and os.stat(path).st_size > max_bytes:
            return None
        with open(path) as f:
            hit = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return hit if isinstance(hit, dict) and "refused" not in hit else None


def _store(path, result: dict | bytes) -> None:
    try:
        write_private_file(Path(path), result if isinstance(result, bytes) else json.dumps(result))
    except OSError as e:
        log.warning("cannot cache preview %s: %s", path, e)
    return result
