"""A web page (HTML) from the library, sanitised (``html_sanitize``): its
text and structure, no scripts, no remote loads; its pictures show as alt
text, since they live outside the file."""

from __future__ import annotations

from django.utils.translation import gettext as _
from lxml import html as lxml_html

from .html_sanitize import decode, number_blocks, parse, sanitise
from .text_render import MAX_TEXT_BYTES


def preview_html(fp, ctx) -> dict:
    data = fp.read(MAX_TEXT_BYTES + 1)
    truncated = len(data) > MAX_TEXT_BYTES
    warnings = [_("Only the beginning of this large file is shown.")] if truncated else []
    body = parse(decode(data[:MAX_TEXT_BYTES]), warnings)
    title_el = body.getroottree().find(".//title")
    title = " ".join((title_el.text_content() if title_el is not None else "").split())
    container = sanitise(
        body,
        link_target=lambda href: "#h-" + href[1:] if href.startswith("#") and len(href) > 1 else None,
        id_prefix="h-",
    )
    container.set("class", "html-page")
    blocks = number_blocks(container)
    return {
        "html": lxml_html.tostring(container, encoding="unicode"),
        "blocks": blocks,
        "title": title[:300],
        "warnings": warnings,
    }
