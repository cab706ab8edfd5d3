"""EPUB books: the chapters in reading order (the package's spine), each
chapter's XHTML sanitised (``html_sanitize``: no scripts, no remote loads),
its pictures served from the book through the preview, and a table of
contents from the book's navigation document (EPUB 3) or NCX (EPUB 2).

Paragraphs, headings, list items and cells are blocks (``data-block-index``,
with ``data-chapter``), so the locator lands on a paragraph. The book is
opened through the guarded ZIP package (bounded reads, a time budget).
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from django.utils.translation import gettext as _
from lxml import etree
from lxml import html as lxml_html

from .docx.limits import DEFAULT_LIMITS, Deadline, PreviewRejected
from .docx.safe_package import ZipPackage, part_name
from .html_sanitize import decode, number_blocks, parse, sanitise
from .renderers import browser_image, package_image

OPF = "http://www.idpf.org/2007/opf"
CONTAINER = "urn:oasis:names:tc:opendocument:xmlns:container"
NCX = "http://www.daisy.org/z3986/2005/ncx/"
DC = "http://purl.org/dc/elements/1.1/"
MAX_CHAPTERS = 2_000
MAX_CHAPTER_BYTES = 8 * 1024 * 1024
_CHAPTER_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}
SVG = "image/svg+xml"


def _without_external_doctype(data: bytes) -> bytes:
    """An external DTD reference (no internal subset) declares nothing: dropped.
    An internal subset could declare entities: it stays, and the file is refused.
    Plain string search: the declaration sits in the file's first bytes."""
    start = data[:4096].upper().find(b"<!DOCTYPE")
    if start < 0:
        return data
    close = data.find(b">", start)
    if close < 0 or data.find(b"[", start, close) >= 0:
        return data
    return data[:start] + data[close + 1 :]


class EpubPackage(ZipPackage):
    label = "EPUB book"
    suffix = ".epub"
    writer = "an EPUB editor"

    def package_xml(self, part: str):
        data = self.read(part)
        if data is None:
            return None
        return self.parse_xml(_without_external_doctype(data), part)


def _href_part(base_part: str, href: str) -> tuple[str | None, str]:
    """(part name, fragment) of a relative link inside the book."""
    split = urlsplit(href)
    if split.scheme or split.netloc:
        return None, ""
    if not split.path:
        return base_part, split.fragment
    return part_name(base_part, unquote(split.path)), split.fragment


class _Book:
    def __init__(self, package: EpubPackage, asset_url):
        self.package = package
        self.asset_url = asset_url
        self.chapters: dict[str, int] = {}  # part → chapter number
        self.pictures = 0

    def link_target(self, chapter_part: str):
        def target(href: str) -> str | None:
            part, fragment = _href_part(chapter_part, href)
            number = self.chapters.get(part or "")
            if number is None:
                return None
            return f"#c{number}-{fragment}" if fragment else f"#chapter-{number}"

        return target

    def image_src(self, chapter_part: str):
        def src(value: str) -> str | None:
            part, _fragment = _href_part(chapter_part, value.strip())
            if not part or not browser_image(part) or self.package.member(part) is None or not self.asset_url:
                return None
            self.pictures += 1
            return self.asset_url(part)

        return src


def _rootfile(package: EpubPackage) -> str:
    container = package.package_xml("META-INF/container.xml")
    if container is None:
        raise package.invalid("it has no META-INF/container.xml (is it really an EPUB?)")
    rootfile = container.find(f".//{{{CONTAINER}}}rootfile")
    path = rootfile.get("full-path") if rootfile is not None else None
    part = part_name("", path) if path else None
    if not part:
        raise package.invalid("its container names no package document")
    return part


def _toc(package: EpubPackage, opf_part: str, manifest: dict, spine, book: _Book) -> list[tuple[int, str, str]]:
    """(depth, label, #target) entries, from the EPUB 3 nav or the EPUB 2 NCX."""
    entries: list[tuple[int, str, str]] = []
    nav = next((item for item in manifest.values() if "nav" in item[2].split()), None)
    if nav is not None and package.member(nav[0]):
        body = parse(decode(package.read(nav[0]) or b""))
        toc = next((n for n in body.iter("nav") if "toc" in (n.get("epub:type") or n.get("type") or "toc")), None)
        if toc is not None:
            target = book.link_target(nav[0])
            for a in toc.iter("a"):
                depth = sum(1 for anc in a.iterancestors() if anc.tag == "ol") - 1
                link = target(a.get("href", ""))
                label = " ".join(a.text_content().split())
                if link and label:
                    entries.append((max(depth, 0), label, link))
            if entries:
                return entries
    ncx_id = spine.get("toc") if spine is not None else None
    ncx = manifest.get(ncx_id or "") or next(
        (item for item in manifest.values() if item[1] == "application/x-dtbncx+xml"), None
    )
    root = package.package_xml(ncx[0]) if ncx and package.member(ncx[0]) else None
    if root is not None:
        target = book.link_target(ncx[0])
        for point in root.iter(f"{{{NCX}}}navPoint"):
            depth = sum(1 for anc in point.iterancestors(f"{{{NCX}}}navPoint"))
            text = point.find(f"{{{NCX}}}navLabel/{{{NCX}}}text")
            content = point.find(f"{{{NCX}}}content")
            link = target(content.get("src", "")) if content is not None else None
            label = " ".join((text.text or "").split()) if text is not None else ""
            if link and label:
                entries.append((depth, label, link))
    return entries


def preview_epub(fp, ctx, limits=DEFAULT_LIMITS) -> dict:
    deadline = Deadline(limits.time_budget_s)
    with EpubPackage(fp, limits) as package:
        opf_part = _rootfile(package)
        opf = package.package_xml(opf_part)
        if opf is None or etree.QName(opf).localname != "package":
            raise package.invalid("its package document is missing")
        manifest: dict[str, tuple[str, str, str]] = {}  # id → (part, media type, properties)
        for item in opf.iter(f"{{{OPF}}}item"):
            part = _href_part(opf_part, item.get("href", ""))[0]
            if part:
                manifest[item.get("id", "")] = (part, item.get("media-type", ""), item.get("properties", ""))
        spine = opf.find(f"{{{OPF}}}spine")
        order = []
        for itemref in spine.iter(f"{{{OPF}}}itemref") if spine is not None else []:
            item = manifest.get(itemref.get("idref", ""))
            if item and item[1] in _CHAPTER_TYPES | {SVG} and package.member(item[0]) and item[0] not in order:
                order.append(item[0])
        warnings = []
        if len(order) > MAX_CHAPTERS:
            warnings.append(_("Only the first %(n)s chapters are shown.") % {"n": MAX_CHAPTERS})
            order = order[:MAX_CHAPTERS]
        manifest_types = {item[0]: item[1] for item in manifest.values()}
        book = _Book(package, ctx.asset_url)
        book.chapters = {part: i + 1 for i, part in enumerate(order)}
        title_el = opf.find(f".//{{{DC}}}title")
        title = " ".join((title_el.text or "").split()) if title_el is not None else ""
        toc = _toc(package, opf_part, manifest, spine, book)
        nav_part = next((item[0] for item in manifest.values() if "nav" in item[2].split()), None)
        if toc and nav_part in order and len(order) > 1:
            # Many books list their navigation document in the reading order too; the
            # contents drawn above already show it, so it is not shown a second time.
            order.remove(nav_part)
            book.chapters = {part: i + 1 for i, part in enumerate(order)}
            toc = _toc(package, opf_part, manifest, spine, book)
        article = etree.Element("article", {"class": "epub"})
        if toc:
            nav = etree.SubElement(article, "nav", {"class": "epub-toc", "aria-label": _("Contents")})
            heading = etree.SubElement(nav, "h2")
            heading.text = _("Contents")
            ol = etree.SubElement(nav, "ol")
            for depth, label, link in toc[:2_000]:
                li = etree.SubElement(ol, "li", {"class": f"toc-depth-{min(depth, 4)}"})
                a = etree.SubElement(li, "a", {"href": link})
                a.text = label
        block = 0
        for number, part in enumerate(order, start=1):
            data = package.read(part) or b""
            if len(data) > MAX_CHAPTER_BYTES:
                # A parsed page takes ten times its size in memory: a huge chapter is cut.
                data = data[:MAX_CHAPTER_BYTES]
                warnings.append(_("A very long chapter is shown from its beginning only."))
            body = _svg_page(package, part) if manifest_types.get(part) == SVG else parse(decode(data), warnings)
            content = sanitise(
                body, link_target=book.link_target(part), image_src=book.image_src(part), id_prefix=f"c{number}-"
            )
            content.set("class", "epub-chapter")
            content.set("id", f"chapter-{number}")
            content.set("data-chapter", str(number))
            content.tag = "section"
            start = block
            block = number_blocks(content, block)
            for el in content.iter():
                if el.get("data-block-index") is not None and int(el.get("data-block-index")) >= start:
                    el.set("data-chapter", str(number))
            article.append(content)
            deadline.check()
        if not order:
            warnings.append(_("This book has no chapters to show."))
    return {
        "html": lxml_html.tostring(article, encoding="unicode"),
        "blocks": block,
        "title": title[:300],
        "warnings": list(dict.fromkeys(warnings)),
    }


def _svg_page(package: EpubPackage, part: str):
    """A page of the reading order that is a drawing (SVG), as a body holding
    it: the sanitiser keeps its words and pictures, or says it is not shown."""
    body = lxml_html.Element("body")
    try:
        drawing = package.package_xml(part)
    except PreviewRejected:
        drawing = None
    if drawing is None:
        note = etree.SubElement(body, "p")
        etree.SubElement(note, "span", {"class": "img-alt", "role": "img"}).text = _("[drawing not shown]")
    else:
        etree.SubElement(body, "p").append(drawing)
    return body


def load_asset(fp, part: str):
    if not browser_image(part):
        raise PreviewRejected("This image is in a format the preview cannot show.")
    return package_image(EpubPackage, fp, part)
