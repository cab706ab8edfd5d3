"""Markdown and plain text as readable HTML, with the block attributes the
locator script scores (``data-block-index``, ``data-heading-level``)."""

import codecs
from pathlib import Path
from typing import BinaryIO

from django.utils.translation import gettext as _
from lxml import html as lxml_html
from markdown_it import MarkdownIt

# A preview of a bigger text file shows its beginning and says so.
MAX_TEXT_BYTES = 5 * 1024 * 1024
_BLOCK_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "td", "th", "pre", "blockquote", "dt", "dd")
# "html": False — raw HTML in a user's Markdown is shown as text, never run.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


class TextRejected(ValueError):
    """A text file we cannot show; the message says why."""


def read_text(path: Path | BinaryIO, limit: int = MAX_TEXT_BYTES) -> tuple[str, bool]:
    """The file's text (UTF-8, else the best guess) and whether it was cut.
    ``path`` may be an open binary file (read from its start, left open)."""
    try:
        if hasattr(path, "read"):
            path.seek(0)
            data = path.read(limit + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except OSError as e:
        raise TextRejected(_("This file cannot be read: %(error)s.") % {"error": e.strerror or e}) from e
    return decode_text(data, limit)


def decode_text(data: bytes, limit: int = MAX_TEXT_BYTES) -> tuple[str, bool]:
    """``read_text`` of bytes already read (a sync's read of a new file)."""
    truncated = len(data) > limit
    if truncated:
        data = data[:limit]
    if b"\0" in data[:8192]:
        raise TextRejected(_("This file looks binary, not text; it cannot be previewed as text."))
    # "utf-8-sig" as the utf-8 codec after the BOM: the same text, without
    # the Python-level codec wrapper a workspace index pays per file.
    try:
        return (data[3:] if data.startswith(codecs.BOM_UTF8) else data).decode("utf-8"), truncated
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("gb18030"), truncated
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), truncated


def _number_blocks(fragment_html: str, keep_images: list[str] = ()) -> tuple[str, int]:
    if not fragment_html.strip():
        return "", 0
    container = lxml_html.fragment_fromstring(fragment_html, create_parent="div")
    index = 0
    for element in container.iter(*_BLOCK_TAGS):
        # A list item holding paragraphs is scored through its paragraphs.
        if element.tag == "li" and element.find("p") is not None:
            continue
        element.set("data-block-index", str(index))
        if element.tag[0] == "h" and element.tag[1:].isdigit():
            element.set("data-heading-level", element.tag[1:])
        index += 1
    for link in container.iter("a"):
        href = link.get("href", "")
        if not href.startswith(("http://", "https://", "mailto:", "#")):
            link.attrib.pop("href", None)
        else:
            link.set("rel", "noopener noreferrer")
            link.set("target", "_blank")
    for image in list(container.iter("img")):
        if image.get("src") in keep_images:  # served from inside the file (a TextBundle's assets)
            image.attrib.pop("data-bundle-asset", None)
            continue
        # Images in a Markdown file point outside the library: alt text only.
        stand_in = lxml_html.Element("span", {"class": "img-alt"})
        stand_in.text = image.get("alt") or "[image]"
        stand_in.tail = image.tail
        image.getparent().replace(image, stand_in)
    inner = "".join(lxml_html.tostring(child, encoding="unicode") for child in container)
    return (container.text or "") + inner, index


def render_markdown(path: Path) -> tuple[str, int, bool]:
    text, truncated = read_text(path)
    rendered, blocks = _number_blocks(_markdown.render(text))
    return rendered, blocks, truncated


def render_plain_text(path: Path) -> tuple[str, int, bool]:
    """Paragraphs separated by blank lines; line breaks kept by CSS."""
    text, truncated = read_text(path)
    paragraphs = [p.strip("\n") for p in text.replace("\r\n", "\n").split("\n\n")]
    container = lxml_html.Element("div")
    index = 0
    for paragraph in paragraphs:
        if not paragraph.strip():
            continue
        element = lxml_html.Element("p", {"class": "plain", "data-block-index": str(index)})
        element.text = paragraph
        container.append(element)
        index += 1
    return "".join(lxml_html.tostring(child, encoding="unicode") for child in container), index, truncated


def _preview(render_file, fp) -> dict:
    html, blocks, truncated = render_file(fp)
    warnings = [_("Only the beginning of this large file is shown.")] if truncated else []
    return {"html": html, "blocks": blocks, "title": "", "warnings": warnings}


def preview_markdown(fp, ctx) -> dict:
    return _preview(render_markdown, fp)


def preview_text(fp, ctx) -> dict:
    return _preview(render_plain_text, fp)
