"""A TextBundle archive (``.textpack``: Bear, Ulysses, iA Writer): its
Markdown text rendered like a Markdown file, its pictures (``assets/``)
served from the archive. Opened through the guarded ZIP package."""

from __future__ import annotations

import posixpath
from urllib.parse import unquote, urlsplit

from lxml import html as lxml_html

from .docx.limits import DEFAULT_LIMITS, PreviewRejected
from .docx.safe_package import ZipPackage
from .renderers import browser_image, package_image
from .text_render import _markdown, _number_blocks

_TEXT_NAMES = ("text.md", "text.markdown", "text.txt")


class TextpackPackage(ZipPackage):
    label = "TextBundle archive"
    suffix = ".textpack"
    writer = "a Markdown editor"


def _text_part(package: TextpackPackage) -> str:
    # The bundle is a folder inside the ZIP (notes.textbundle/text.md) or its root.
    for name in sorted(package._members, key=len):
        if posixpath.basename(name).lower() in _TEXT_NAMES and name.count("/") <= 1:
            return name
    raise package.invalid("it holds no text.md")


def preview_textpack(fp, ctx, limits=DEFAULT_LIMITS) -> dict:
    with TextpackPackage(fp, limits) as package:
        part = _text_part(package)
        text = (package.read(part) or b"").decode("utf-8", "replace")
        folder = posixpath.dirname(part)
        container = lxml_html.fragment_fromstring(_markdown.render(text) or "<p></p>", create_parent="div")
        for image in container.iter("img"):
            src = unquote(urlsplit(image.get("src", "")).path)
            name = posixpath.normpath(posixpath.join(folder, src)) if src and not src.startswith("/") else ""
            if name and not name.startswith("..") and browser_image(name) and package.member(name) is not None:
                image.set("src", ctx.asset_url(name))
                image.set("data-bundle-asset", "1")
        html = "".join(lxml_html.tostring(child, encoding="unicode") for child in container)
    bundled = [img.get("src") for img in container.iter("img") if img.get("data-bundle-asset")]
    rendered, blocks = _number_blocks(html, keep_images=bundled)
    return {"html": rendered, "blocks": blocks, "title": "", "warnings": []}


def load_asset(fp, part: str):
    if not browser_image(part):
        raise PreviewRejected("This image is in a format the preview cannot show.")
    return package_image(TextpackPackage, fp, part)
