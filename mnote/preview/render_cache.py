"""Rendered previews cached by the file's sha256 (and the renderer's
version), so a big document is rendered once per content, not per click."""

import json
import logging
from collections.abc import Callable

from django.conf import settings

from mnote.private_files import write_private_file

log = logging.getLogger(__name__)

# Bump when a renderer's output changes, so old cache entries are not served.
RENDERER_VERSION = "2"  # 2: every render carries its text map (anchoring.py)


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
