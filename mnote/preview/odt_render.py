"""OpenDocument text (ODT) rendered like a DOCX: headings from their outline
level, paragraphs with their alignment, lists, tables, notes, text boxes and
pictures, using the DOCX preview's classes (``docx-center``, ``docx-textbox``
…) so it reads the same. Paragraphs, headings, list items and table cells are
blocks (``data-block-index``). Opened through the guarded ZIP package."""

from __future__ import annotations

from django.utils.translation import gettext as _
from lxml import etree
from lxml import html as lxml_html

from .docx.limits import DEFAULT_LIMITS, Deadline, PreviewRejected
from .docx.safe_package import ZipPackage
from .renderers import browser_image, package_image

TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
FO = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
XLINK = "http://www.w3.org/1999/xlink"
MATHML = "http://www.w3.org/1998/Math/MathML"
CHART = "urn:oasis:names:tc:opendocument:xmlns:chart:1.0"
# ODF's number formats that HTML's <ol type> can draw.
_LIST_TYPES = {"1": "1", "a": "a", "A": "A", "i": "i", "I": "I"}
DC = "http://purl.org/dc/elements/1.1/"
MAX_DEPTH = 60


def t(tag: str) -> str:
    return f"{{{TEXT}}}{tag}"


class OdtPackage(ZipPackage):
    label = "OpenDocument text"
    suffix = ".odt"
    writer = "LibreOffice"


def _list_styles(*roots) -> dict[str, dict[int, str | None]]:
    """List style name → {level: <ol type> for a numbered level, None for bullets}."""
    found: dict[str, dict[int, str | None]] = {}
    for root in roots:
        if root is None:
            continue
        for style in root.iter(t("list-style")):
            levels = found.setdefault(style.get(f"{{{STYLE}}}name", ""), {})
            for level_style in style:
                level = level_style.get(t("level"), "1")
                if not level.isdigit():
                    continue
                numbered = level_style.tag == t("list-level-style-number")
                format_ = level_style.get(f"{{{STYLE}}}num-format", "1")
                levels[int(level)] = _LIST_TYPES.get(format_, "1") if numbered and format_ else None
    return found


def _alignments(*roots) -> dict[str, str]:
    """Paragraph style name → docx-center / docx-right, through parent styles."""
    styles: dict[str, tuple[str | None, str | None]] = {}
    for root in roots:
        if root is None:
            continue
        for style in root.iter(f"{{{STYLE}}}style"):
            props = style.find(f"{{{STYLE}}}paragraph-properties")
            align = props.get(f"{{{FO}}}text-align") if props is not None else None
            styles[style.get(f"{{{STYLE}}}name", "")] = (align, style.get(f"{{{STYLE}}}parent-style-name"))
    found = {}
    for name in styles:
        seen, current, align = set(), name, None
        while current in styles and current not in seen and align is None:
            seen.add(current)
            align, current = styles[current]
        if align in ("center",):
            found[name] = "docx-center"
        elif align in ("end", "right"):
            found[name] = "docx-right"
    return found


class _Writer:
    def __init__(self, package: OdtPackage, asset_url, align: dict[str, str], deadline: Deadline, lists=None):
        self.package, self.asset_url, self.align, self.deadline = package, asset_url, align, deadline
        self.lists: dict[str, dict[int, str | None]] = lists or {}
        self.list_style = ""  # the style of the list being written, which nested lists inherit
        self.list_level = 0
        self.items_so_far: dict[str, int] = {}  # top-level items per list style, for lists that continue
        self.block = 0
        self.notes: list[etree._Element] = []
        self.title = ""

    def mark(self, el) -> None:
        el.set("data-block-index", str(self.block))
        self.block += 1

    def blocks(self, container, out, depth: int = 0, numbered: bool = True) -> None:
        if depth > MAX_DEPTH:
            return
        for child in container:
            tag = child.tag
            if tag == t("p") or tag == t("h"):
                self.paragraph(child, out, numbered, depth)
            elif tag == t("list"):
                self.list(child, out, depth, numbered)
            elif tag == f"{{{TABLE}}}table":
                self.table(child, out, depth)
            elif (
                tag == t("section")
                or tag == t("index-body")
                or etree.QName(tag).localname
                in ("table-of-content", "alphabetical-index", "illustration-index", "bibliography", "user-index")
            ):
                body = child.find(t("index-body"))
                self.blocks(body if body is not None else child, out, depth + 1, numbered)
            elif tag == f"{{{DRAW}}}frame":
                self.frame(child, out, depth)
        self.deadline.check()

    def list(self, list_el, out, depth: int, numbered: bool) -> None:
        """A list as <ol> where its style numbers this level, else <ul>."""
        outer = (self.list_style, self.list_level)
        self.list_style = list_el.get(t("style-name")) or self.list_style
        self.list_level += 1
        number_type = self.lists.get(self.list_style, {}).get(self.list_level)
        top = self.list_level == 1
        continues = list_el.get(t("continue-numbering")) == "true" or list_el.get(t("continue-list"))
        if top and not continues:
            self.items_so_far[self.list_style] = 0
        if number_type:
            html_list = etree.SubElement(out, "ol", {"class": "odt-list", "type": number_type})
            if top and self.items_so_far.get(self.list_style):
                html_list.set("start", str(self.items_so_far[self.list_style] + 1))
        else:
            html_list = etree.SubElement(out, "ul", {"class": "odt-list"})
        for item in list_el:
            if item.tag == t("list-item") and top:
                self.items_so_far[self.list_style] = self.items_so_far.get(self.list_style, 0) + 1
            if item.tag in (t("list-item"), t("list-header")):
                li = etree.SubElement(html_list, "li")
                start = item.get(t("start-value"), "")
                if number_type and start.isdigit() and len(start) < 7:
                    li.set("value", start)
                self.blocks(item, li, depth + 1, numbered)
        self.list_style, self.list_level = outer

    def paragraph(self, p, out, numbered: bool, depth: int) -> None:
        if p.tag == t("h"):
            level = min(max(int(p.get(t("outline-level"), "1") or 1), 1), 6)
            el = etree.SubElement(out, f"h{level}", {"data-heading-level": str(level)})
        else:
            el = etree.SubElement(out, "p")
        cls = self.align.get(p.get(t("style-name"), ""))
        if cls:
            el.set("class", cls)
        self.inline(p, el, depth)
        if not "".join(el.itertext()).strip() and not len(el.findall(".//img")):
            out.remove(el)
            return
        if numbered:
            self.mark(el)
        if p.tag == t("h") and not self.title:
            self.title = " ".join("".join(el.itertext()).split())

    def inline(self, container, el, depth: int) -> None:
        def add(text: str) -> None:
            if not text:
                return
            if len(el):
                el[-1].tail = (el[-1].tail or "") + text
            else:
                el.text = (el.text or "") + text

        add(container.text or "")
        for child in container:
            tag = child.tag
            if tag == t("s"):
                add(" " * min(int(child.get(t("c"), "1") or 1), 100))
            elif tag == t("tab"):
                add("\t")
            elif tag == t("line-break"):
                etree.SubElement(el, "br")
            elif tag == t("note"):
                self.note(child, el)
            elif tag == f"{{{DRAW}}}frame":
                self.frame(child, el, depth, inline=True)
            elif tag in (
                t("bookmark"),
                t("bookmark-start"),
                t("bookmark-end"),
                t("soft-page-break"),
                f"{{{OFFICE}}}annotation",
                f"{{{OFFICE}}}annotation-end",
                t("sequence-decls"),
            ):
                pass
            elif tag == t("a"):
                a = etree.SubElement(el, "a")
                href = child.get(f"{{{XLINK}}}href", "")
                if href.lower().startswith(("http://", "https://", "mailto:")):
                    a.set("href", href)
                    a.set("rel", "noopener noreferrer")
                    a.set("target", "_blank")
                if depth < MAX_DEPTH:
                    self.inline(child, a, depth + 1)
            elif depth < MAX_DEPTH:
                self.inline(child, el, depth + 1)  # spans, fields, changes: their text
            add(child.tail or "")

    def note(self, note, el) -> None:
        citation = note.find(t("note-citation"))
        label = (citation.text or "").strip() if citation is not None else str(len(self.notes) + 1)
        sup = etree.SubElement(el, "sup", {"class": "docx-noteref"})
        sup.text = label
        body = note.find(t("note-body"))
        if body is not None:
            self.notes.append((label, body))

    def embedded(self, obj, out) -> None:
        """An embedded object (a formula, a chart): a formula's text when it is
        MathML, else a note saying what is not shown."""
        part = obj.get(f"{{{XLINK}}}href", "").lstrip("./").rstrip("/")
        try:
            root = self.package.xml(f"{part}/content.xml") if part else None
        except PreviewRejected:
            root = None
        if root is not None and etree.QName(root).namespace == MATHML:
            semantics = root.find(f"{{{MATHML}}}semantics")
            shown = semantics[0] if semantics is not None and len(semantics) else root
            words = " ".join(" ".join(shown.itertext()).split())
            if words:
                etree.SubElement(out, "span", {"class": "math"}).text = words
                return
        is_chart = root is not None and root.find(f".//{{{CHART}}}chart") is not None
        note = etree.SubElement(out, "span", {"class": "preview-note", "role": "img"})
        note.text = _("[chart not shown]") if is_chart else _("[embedded object not shown]")

    def frame(self, frame, out, depth: int, inline: bool = False) -> None:
        obj = frame.find(f"{{{DRAW}}}object")
        if obj is not None:
            self.embedded(obj, out)
            return
        for child in frame:
            if child.tag == f"{{{DRAW}}}image":
                href = child.get(f"{{{XLINK}}}href", "")
                part = href.lstrip("./")
                name = frame.get(f"{{{DRAW}}}name", "")
                if part and browser_image(part) and self.package.member(part) is not None and self.asset_url:
                    etree.SubElement(
                        out, "img", {"src": self.asset_url(part), "alt": name, "class": "docx-image", "loading": "lazy"}
                    )
                else:
                    span = etree.SubElement(out, "span", {"class": "docx-image-placeholder", "role": "img"})
                    span.text = f"[{name or _('image')}]"
                return
            if child.tag == f"{{{DRAW}}}text-box":
                box = etree.SubElement(out, "span" if inline else "aside", {"class": "docx-textbox"})
                self.blocks(child, box, depth + 1, numbered=not inline)
                return

    def table(self, table, out, depth: int) -> None:
        html_table = etree.SubElement(out, "table", {"class": "docx-table"})
        for row in table.iter(f"{{{TABLE}}}table-row"):
            tr = etree.SubElement(html_table, "tr")
            for cell in row:
                if cell.tag != f"{{{TABLE}}}table-cell":
                    continue
                td = etree.SubElement(tr, "td")
                for attr, name in (("number-columns-spanned", "colspan"), ("number-rows-spanned", "rowspan")):
                    value = cell.get(f"{{{TABLE}}}{attr}", "1")
                    if value.isdigit() and 1 < int(value) < 1000:
                        td.set(name, value)
                self.blocks(cell, td, depth + 1, numbered=False)
                if "".join(td.itertext()).strip():
                    self.mark(td)


def preview_odt(fp, ctx, limits=DEFAULT_LIMITS) -> dict:
    deadline = Deadline(limits.time_budget_s)
    with OdtPackage(fp, limits) as package:
        content = package.xml("content.xml")
        if content is None:
            raise package.invalid("it has no content.xml (is it really an OpenDocument file?)")
        body = content.find(f"{{{OFFICE}}}body/{{{OFFICE}}}text")
        if body is None:
            raise package.invalid("it holds no text document (is it a spreadsheet or a presentation?)")
        styles = package.xml("styles.xml")
        writer = _Writer(
            package, ctx.asset_url, _alignments(content, styles), deadline, _list_styles(content, styles)
        )
        article = etree.Element("article", {"class": "docx odt"})
        writer.blocks(body, article)
        if writer.notes:
            section = etree.SubElement(article, "section", {"class": "docx-notes"})
            ol = etree.SubElement(section, "ol")
            for label, note_body in writer.notes:
                li = etree.SubElement(ol, "li", {"class": "docx-note"})
                writer.blocks(note_body, li, 1, numbered=False)
                # The note's number leads its first paragraph, as in the DOCX preview.
                first = li[0] if len(li) and li[0].tag == "p" else li
                span = etree.Element("span", {"class": "docx-note-label"})
                span.text = label
                span.tail = " " + (first.text or "")
                first.text = None
                first.insert(0, span)
                writer.mark(li)
        meta = package.xml("meta.xml")
        title_el = meta.find(f".//{{{DC}}}title") if meta is not None else None
        title = " ".join((title_el.text or "").split()) if title_el is not None else ""
    return {
        "html": lxml_html.tostring(article, encoding="unicode"),
        "blocks": writer.block,
        "title": (title or writer.title)[:300],
        "warnings": [],
    }


def load_asset(fp, part: str):
    if not browser_image(part):
        raise PreviewRejected("This image is in a format the preview cannot show.")
    return package_image(OdtPackage, fp, part)
