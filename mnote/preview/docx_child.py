"""DOCX previews rendered in a child process with a memory limit (the
mechanism of sandbox.py, as for PDFs): a document that passes every size
check yet needs hundreds of MB to render costs the child, not the web worker.

    rendered = render_docx_isolated(handle, image_base="/preview/7/image/")
"""

import json
import logging
import sys
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

if __name__ == "__main__":  # the child process: find the mnote package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mnote.preview import sandbox  # noqa: E402
from mnote.preview.docx.limits import DEFAULT_LIMITS, DocxRejected, DocxTooSlow  # noqa: E402

log = logging.getLogger(__name__)

CHILD_MEMORY_BYTES = 768 * 1024 * 1024
TIMEOUT_S = DEFAULT_LIMITS.time_budget_s + 10  # the renderer's own budget, plus start-up on a busy machine
MAX_HTML_BYTES = 32 * 1024 * 1024


def render_docx_isolated(handle: BinaryIO, *, image_base: str) -> dict:
    """The preview of an opened DOCX as {"html", "blocks", "title", "warnings"};
    DocxRejected with a message for users when it cannot be shown."""
    path = f"{sandbox.FD_PATH}{handle.fileno()}"
    try:
        out = sandbox.run_child(
            __file__, "render", path, {"image_base": image_base}, timeout=TIMEOUT_S, memory=CHILD_MEMORY_BYTES, log=log
        )
    except sandbox.ChildRejected as e:
        refusal = DocxRejected(str(e))
        refusal.remember_s = e.remember_s
        raise refusal from e
    except sandbox.ChildFailed as e:
        if e.reason == "busy":
            raise DocxBusy("The preview is busy; try again in a moment.") from e
        if e.reason == "timeout":
            raise DocxTooSlow(f"This document takes too long to preview (more than {TIMEOUT_S:g} s).") from e
        raise DocxRejected(
            {
                "timeout": f"This document takes too long to preview (more than {TIMEOUT_S:g} s).",
                "memory": "This document needs more memory than the preview allows.",
            }.get(e.reason, "The preview failed on this document; it may be damaged.")
        ) from e
    return json.loads(out)


class DocxBusy(DocxRejected):
    """Every reader slot stayed busy; trying again later may work."""

    transient = True  # never cached as the file's refusal


def _child_render(path: str, image_base: str) -> bytes:
    from mnote.preview.docx_render import render_docx

    # Part names may hold spaces, "#", "?" or any script.
    rendered = render_docx(path, image_url=lambda part: image_base + quote(part.lstrip("/"), safe="/"))
    from mnote.preview.text_map import build_text_map

    # The text map is built here too: parsing the preview's HTML again costs
    # the web worker as much memory as rendering it.
    out = json.dumps(
        {
            "html": rendered.html,
            "blocks": rendered.block_count,
            "title": rendered.title,
            "warnings": rendered.warnings,
            "textMap": build_text_map(rendered.html).compact(),
        }
    ).encode()
    if len(out) > MAX_HTML_BYTES:
        raise DocxRejected("This document is too large to preview (its preview would pass 32 MB).")
    return out


if __name__ == "__main__":
    sys.exit(
        sandbox.child_main(
            sys.argv, {"render": _child_render}, DocxRejected, "This document needs more memory than the preview allows."
        )
    )
