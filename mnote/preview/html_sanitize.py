"""Untrusted (X)HTML — a web page from the library, an EPUB chapter — made
safe to show inside the preview page.

Two steps. lxml parses the page and this module rewrites what only it knows
how to: links inside the document become ``#…`` anchors, pictures become the
URLs the preview serves them under (or their alt text), ids get a prefix, SVG
and MathML become their words. Then nh3 (the Ammonia sanitiser, made for
exactly this and fuzzed by its authors) keeps a small allow-list of
text-bearing tags and attributes: no scripts, styles, event handlers, forms,
frames, embedded objects or SVG; links only to http(s)/mailto (opened in a new
tab, no referrer) or to places inside the same document; pictures only at the
URLs the first step gave them, never a remote load. A document type
declaration is cut off with plain string search (no regular expression can
backtrack on it), so no entity it declares is ever expanded, and the parser
never reaches the network.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import nh3
from django.utils.translation import gettext as _
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
    "head", "title", "param", "portal", "dialog", "svg", "math",
}  # fmt: skip
_ATTRIBUTES = {"colspan", "rowspan", "start", "reversed", "lang", "dir", "alt", "title", "datetime", "id"}
# The stand-ins this module draws (for a picture not shown, an SVG, a formula):
# the only classes a page keeps, so a page cannot dress up as the preview.
_OWN_CLASSES = {"img-alt", "svg-images", "svg-text", "math", "html-note"}
_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_ENCODING = re.compile(rb"""^\s{0,100}<\?xml[^>]{0,300}encoding\s{0,8}=\s{0,8}["']([\w.:-]{1,40})["']""")
_META_CHARSET = re.compile(rb"""<meta[^>]{0,500}charset\s{0,8}=\s{0,8}["']?([\w.:-]{1,40})""", re.IGNORECASE)
# lxml's HTML parser stops at this depth (libxml2's limit without huge_tree)
# and drops the rest of the page: the preview then says so.
_TOO_DEEP = "Excessive depth"


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


def _after_prolog(text: str) -> str:
    """``text`` from after its XML declaration and document type declaration
    (with any internal subset, whose entities are thus never declared)."""
    start = len(text) - len(text.lstrip())
    if text.startswith("<?xml", start):
        end = text.find("?>", start)
        start = len(text) if end < 0 else end + 2
        start += len(text[start:]) - len(text[start:].lstrip())
    if text[start : start + 9].upper() == "<!DOCTYPE":
        close = text.find(">", start)
        bracket = text.find("[", start, close if close >= 0 else len(text))
        if bracket >= 0:  # an internal subset ends at "]" then ">"
            end = text.find("]", bracket)
            close = text.find(">", end) if end >= 0 else -1
        start = len(text) if close < 0 else close + 1
    return text[start:]


def parse(text: str, warnings: list[str] | None = None) -> etree._Element:
    """The document's <body> (or root), parsed without its DTD. A page cut
    short by the parser's depth limit gets a note in ``warnings``."""
    text = _after_prolog(text)
    if not text.strip():
        return lxml_html.Element("body")
    # One parser per page: its error log is then this page's alone.
    parser = lxml_html.HTMLParser(no_network=True, remove_comments=True, remove_pis=True, recover=True)
    root = lxml_html.document_fromstring(text, parser=parser)
    if warnings is not None and any(_TOO_DEEP in error.message for error in parser.error_log):
        warnings.append(_("Part of this page is nested too deeply to show; the preview stops where it does."))
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
    """``body``'s content, sanitised, in a new <div>. ``link_target(href)``
    turns an internal link into ``#…`` (or None to drop it); ``image_src(src)``
    gives the URL a picture is served under (or None: its alt text instead)."""
    served: set[str] = set()
    _rewrite(body, link_target, image_src, id_prefix, served)
    body.tag = "div"
    body.attrib.clear()

    def keep(element: str, attribute: str, value: str) -> str | None:
        if element == "img" and attribute == "src":
            return value if value in served else None
        if element == "a" and attribute == "href":
            return value if value.startswith("#") or value.lower().startswith(_SAFE_SCHEMES) else None
        if attribute == "id":
            return value[:200 + len(id_prefix)] if id_prefix else None
        return value[:500]

    cleaned = nh3.clean(
        lxml_html.tostring(body, encoding="unicode"),
        tags=_KEPT,
        clean_content_tags=_DROPPED_WITH_CONTENT,
        attributes={"*": _ATTRIBUTES, "a": {"href"}, "img": {"src"}},
        allowed_classes={"span": _OWN_CLASSES},
        tag_attribute_values={"span": {"role": {"img"}}},
        attribute_filter=keep,
        url_schemes={"http", "https", "mailto"},
        link_rel=None,
        strip_comments=True,
    )
    container = lxml_html.fragment_fromstring(cleaned, create_parent="div")
    for a in container.iter("a"):
        if a.get("href", "").lower().startswith(_SAFE_SCHEMES):
            a.set("rel", "noopener noreferrer")
            a.set("target", "_blank")
    for img in container.iter("img"):
        img.set("loading", "lazy")
    return container


def _rewrite(body, link_target, image_src, id_prefix: str, served: set[str]) -> None:
    """What only this module can decide before nh3 sees the page: where links
    and pictures point, ids, and the words of SVG and MathML. Each pass walks
    a list made before it changes the tree (a live iterator stops at the
    first element replaced)."""
    foreign = [el for el in body.iter() if _local(el.tag) in ("svg", "math")]
    for el in foreign:
        if el.getparent() is not None and not any(_local(a.tag) in ("svg", "math") for a in el.iterancestors()):
            _replace_foreign(el, _local(el.tag), image_src, served)
    dropped = _DROPPED_WITH_CONTENT - {"svg", "math"}
    for el in list(body.iter())[1:]:  # not the body itself
        name = _local(el.tag)
        if not name or name in dropped:
            continue
        if el.tag != name:
            el.tag = name  # "html:p", "{xhtml}p": what nh3 knows as p
        if name == "img":
            src = image_src(el.get("src", ""))
            if src:
                served.add(src)
                el.set("src", src)
            else:
                _alt_text(el, el.get("alt", ""))
                continue
        elif name == "a":
            _link(el, link_target)
        if el.get("id") is not None and id_prefix:
            el.set("id", id_prefix + el.get("id")[:200])


def _link(el, link_target) -> None:
    href = el.get("href", "").strip()
    if href and not href.lower().startswith(_SAFE_SCHEMES):
        href = link_target(href) or ""
    if href:
        el.set("href", href)
    else:
        el.attrib.pop("href", None)


def _alt_text(el, alt: str) -> None:
    stand_in = lxml_html.Element("span", {"class": "img-alt", "role": "img"})
    stand_in.text = f"[{alt}]" if alt else "[image]"
    stand_in.tail = el.tail
    el.getparent().replace(el, stand_in)


def _replace_foreign(el, name: str, image_src, served: set[str]) -> None:
    """SVG can run scripts and MathML renders unevenly: an SVG's pictures
    (an EPUB cover) and a formula's text are kept, the markup is not."""
    if name == "svg":
        holder = lxml_html.Element("span", {"class": "svg-images"})
        for image in el.xpath(".//*[local-name()='image']"):
            href = next((v for k, v in image.attrib.items() if _local(k) == "href"), "")
            src = image_src(href)
            if src:
                served.add(src)
                etree.SubElement(holder, "img", {"src": src, "alt": ""})
        # Fixed-layout books set their words as SVG text.
        words = " ".join(" ".join(el.xpath(".//*[local-name()='text']//text()")).split())
        if words:
            etree.SubElement(holder, "span", {"class": "svg-text"}).text = words
        elif not len(holder):
            # A drawing with neither words nor a picture the preview can show.
            holder.set("class", "img-alt")
            holder.set("role", "img")
            holder.text = _("[drawing not shown]")
    else:
        holder = lxml_html.Element("span", {"class": "math"})
        # Token by token (mi, mo, mn), so "x = 2" does not read "x=2" to a search.
        holder.text = " ".join(" ".join(el.itertext()).split())
    holder.tail = el.tail
    el.getparent().replace(el, holder)


def number_blocks(container: etree._Element, start: int = 0) -> int:
    """Give each innermost text block ``data-block-index`` (from ``start``),
    headings ``data-heading-level``; returns the next index."""
    index = start
    block_set = set(BLOCK_TAGS)

    def loose_text(el) -> str:
        # The words of ``el`` outside the blocks it holds.
        out = [el.text or ""]
        for child in el:
            if isinstance(child.tag, str) and child.tag not in block_set and not any(
                isinstance(d.tag, str) and d.tag in block_set for d in child.iterdescendants()
            ):
                out.append("".join(child.itertext()))
            out.append(child.tail or "")
        return "".join(out)

    for el in container.iter(*BLOCK_TAGS):
        # A list item or quote holding paragraphs is scored through its
        # paragraphs; its own words beside them (a DocBook ``div.para``'s
        # text before its list) are a block too, or the locator never sees them.
        if any(isinstance(d.tag, str) and d.tag in block_set for d in el.iterdescendants()):
            if not loose_text(el).strip():
                continue
        elif not "".join(el.itertext()).strip():
            continue
        el.set("data-block-index", str(index))
        if el.tag[0] == "h" and el.tag[1:].isdigit():
            el.set("data-heading-level", el.tag[1:])
        index += 1
    return index
