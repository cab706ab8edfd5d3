"""Rendered previews cached by the file's sha256 (and the renderer's
version), so a big document is rendered once per content, not per click."""

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from mnote.library.ingest import file_sha256
from mnote.library.models import Source
from mnote.private_files import write_private_file

log = logging.getLogger(__name__)

# Bump when a renderer's output changes, so old cache entries are not served.
RENDERER_VERSION = "1"


def current_sha256(source: Source) -> str:
    """The file's hash as it is now; the registry's when size and mtime agree."""
    stat = os.stat(source.absolute_path)
    if source.sha256 and source.size == stat.st_size and source.mtime == stat.st_mtime:
        return source.sha256
    return file_sha256(Path(source.absolute_path))


def cached(kind: str, sha256: str, render: Callable[[], dict]) -> dict:
    folder = settings.DATA_DIR / "cache" / "preview"
    path = folder / f"{kind}-{RENDERER_VERSION}-{sha256}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    result = render()
    try:
        write_private_file(path, json.dumps(result))
    except OSError as e:
        log.warning("cannot cache preview %s: %s", path, e)
    return result
