"""Untrusted (X)HTML — a web page from the library, an EPUB chapter — made
safe to show inside the preview page.

What survives is a small set of text-bearing tags and a few attributes:
no scripts, styles, event handlers, forms, frames, embedded objects or SVG;
links only to http(s)/mailto (opened in a new tab, no referrer) or to places
inside the same document; pictures only when ``image_src`` maps them to a
URL the preview serves (a part of the EPUB), never a remote load. A
document type declaration is removed before parsing, so no entity it
declares is ever expanded, and the parser never reaches the network.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lxml import etree
from lxml import html as lxml_html

BLOCK_TAGS = (
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "li",
    "td",
    "th",
    "pre",
    "blockquote",
    "dt",
    "dd",
    "figcaption",
    "caption",
    "div",
)
_KEPT = {
    "a", "abbr", "b", "bdi", "bdo", "blockquote", "br", "caption", "cite", "code", "dd", "del", "dfn", "div", "dl", "dt",
    "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol",
    "p", "pre", "q", "rp", "rt", "ruby", "s", "samp", "section", "small", "span", "strong", "sub", "sup", "table", "tbody",
    "td", "tfoot", "th", "thead", "tr", "u", "ul", "var", "article", "aside", "header", "footer", "main", "nav", "time",
}  # fmt: skip
_DROPPED_WITH_CONTENT = {
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "noscript", "template", "form",
    "input", "button", "select", "textarea", "canvas", "audio", "video", "source", "track", "link", "meta", "base",
    "head", "title", "param", "portal", "dialog",
}  # fmt: skip
_ATTRIBUTES = {"colspan", "rowspan", "start", "reversed", "lang", "dir", "alt", "title", "datetime"}
_DOCTYPE = re.compile(r"<!DOCTYPE(?:[^\[>]|\[.*?\])*>", re.IGNORECASE | re.DOTALL)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([\w.:-]+)["']""")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)
_PARSER = lxml_html.HTMLParser(no_network=True, remove_comments=True, remove_pis=True, recover=True, huge_tree=False)


def decode(data: bytes) -> str:
    """Bytes of an (X)HTML file as text: BOM, XML declaration, meta charset, else UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", "replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    match = _ENCODING.match(data) or _META_CHARSET.search(data[:4096])
    encoding = match.group(1).decode("ascii") if match else "utf-8"
    try:
        return data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def parse(text: str) -> etree._Element:
    """The document's <body> (or root), parsed without its DTD."""
    text = _XML_DECLARATION.sub("", _DOCTYPE.sub("", text, count=1), count=1)
    if not text.strip():
        return lxml_html.Element("body")
    root = lxml_html.document_fromstring(text, parser=_PARSER)
    body = root.find(".//body")
    return body if body is not None else root


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower() if isinstance(tag, str) else ""


def sanitise(
    body: etree._Element,
    *,
    link_target: Callable[[str], str | None] = lambda href: None,
    image_src: Callable[[str], str | None] = lambda src: None,
    id_prefix: str = "",
) -> etree._Element:
    """``body`` cleaned in place and renamed to a <div>. ``link_target(href)``
    turns an internal link into ``#…`` (or None to drop it); ``image_src(src)``
    gives the URL a picture is served under (or None: its alt text instead)."""
    _clean_children(body, link_target, image_src, id_prefix)
    body.tag = "div"
    body.attrib.clear()
    return body


def _clean_children(parent, link_target, image_src, id_prefix: str) -> None:
    # Depth-first over what is kept: a dropped subtree is never walked.
    for el in list(parent):
        name = _local(el.tag)
        if not name:  # comments, processing instructions, entities
            el.drop_tree()
            continue
        if name in ("svg", "math"):
            _replace_foreign(el, name, image_src)
            continue
        if name in _DROPPED_WITH_CONTENT:
            el.drop_tree()
            continue
        attributes = dict(el.attrib)
        el.attrib.clear()
        el.tag = name
        for key, value in attributes.items():
            key = _local(key)
            if key in _ATTRIBUTES:
                el.set(key, value[:500])
            elif key == "id" and id_prefix:
                el.set("id", id_prefix + value[:200])
        if name == "img":
            src = image_src(attributes.get("src", ""))
            if src:
                el.set("src", src)
                el.set("loading", "lazy")
            else:
                _alt_text(el, attributes.get("alt", ""))
            continue
        _clean_children(el, link_target, image_src, id_prefix)
        if name == "a":
            _link(el, attributes.get("href", ""), link_target)
        elif name not in _KEPT:
            el.drop_tag()


def _link(el, href: str, link_target) -> None:
    href = href.strip()
    if href.lower().startswith(("http://", "https://", "mailto:")):
        el.set("href", href)
        el.set("rel", "noopener noreferrer")
        el.set("target", "_blank")
    elif href:
        target = link_target(href)
        if target:
            el.set("href", target)


def _alt_text(el, alt: str) -> None:
    stand_in = lxml_html.Element("span", {"class": "img-alt", "role": "img"})
    stand_in.text = f"[{alt}]" if alt else "[image]"
    stand_in.tail = el.tail
    el.getparent().replace(el, stand_in)


def _replace_foreign(el, name: str, image_src) -> None:
    """SVG can run scripts and MathML renders unevenly: an SVG's pictures
    (an EPUB cover) and a formula's text are kept, the markup is not."""
    if name == "svg":
        holder = lxml_html.Element("span", {"class": "svg-images"})
        for image in el.xpath(".//*[local-name()='image']"):
            href = next((v for k, v in image.attrib.items() if _local(k) == "href"), "")
            src = image_src(href)
            if src:
                etree.SubElement(holder, "img", {"src": src, "alt": "", "loading": "lazy"})
        # Fixed-layout books set their words as SVG text.
        words = " ".join(" ".join(el.xpath(".//*[local-name()='text']//text()")).split())
        if words:
            etree.SubElement(holder, "span", {"class": "svg-text"}).text = words
    else:
        holder = lxml_html.Element("span", {"class": "math"})
        holder.text = " ".join(etree.tostring(el, method="text", encoding="unicode", with_tail=False).split())
    holder.tail = el.tail
    el.getparent().replace(el, holder)


def number_blocks(container: etree._Element, start: int = 0) -> int:
    """Give each innermost text block ``data-block-index`` (from ``start``),
    headings ``data-heading-level``; returns the next index."""
    index = start
    block_set = set(BLOCK_TAGS)
    for el in container.iter(*BLOCK_TAGS):
        # A list item or quote holding paragraphs is scored through its paragraphs.
        if any(isinstance(d.tag, str) and d.tag in block_set for d in el.iterdescendants()):
            continue
        if not "".join(el.itertext()).strip():
            continue
        el.set("data-block-index", str(index))
        if el.tag[0] == "h" and el.tag[1:].isdigit():
            el.set("data-heading-level", el.tag[1:])
        index += 1
    return index
