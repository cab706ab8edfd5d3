"""PowerPoint (PPTX) as slide cards, in the presentation's order: the title,
text frames, tables, pictures and speaker notes of each slide.

Every paragraph of a text frame, every table cell and every notes paragraph
is a block (``data-block-index``, with ``data-slide`` and ``data-shape``), so
the locator lands on a slide and a shape. Opened through the guarded ZIP
package (bounded reads, no DTD or entities, a time budget).
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from lxml import etree
from lxml import html as lxml_html

from .docx.limits import DEFAULT_LIMITS, Deadline, PreviewRejected
from .docx.safe_package import ZipPackage
from .renderers import browser_image, package_image

P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
MAX_SLIDES = 2_000
# A chart's data drawn as a table: enough to read it, not a spreadsheet.
MAX_CHART_SERIES = 20
MAX_CHART_POINTS = 60
_FOOTER_TYPES = ("dt", "ftr", "sldNum")
_TITLE_TYPES = {"title", "ctrTitle"}
_NOTES_SKIPPED = {"sldImg", "sldNum", "hdr", "ftr", "dt"}


class PptxPackage(ZipPackage):
    label = "PowerPoint presentation"
    suffix = ".pptx"
    writer = "PowerPoint"


def _p(tag: str) -> str:
    return f"{{{P}}}{tag}"


def _a(tag: str) -> str:
    return f"{{{A}}}{tag}"


def _paragraph_text(paragraph) -> str:
    parts = []
    for el in paragraph.iter(_a("t"), _a("br"), _a("tab")):
        if el.tag == _a("t"):
            parts.append(el.text or "")
        elif el.tag == _a("br"):
            parts.append("\n")
        else:
            parts.append("\t")
    return "".join(parts)


def _placeholder_type(shape) -> str | None:
    ph = shape.find(f"{_p('nvSpPr')}/{_p('nvPr')}/{_p('ph')}")
    if ph is None:
        return None
    return ph.get("type", "body")


def _shape_id(shape) -> str:
    for path in ("nvSpPr", "nvGraphicFramePr", "nvPicPr", "nvGrpSpPr", "nvCxnSpPr"):
        c_nv = shape.find(f"{_p(path)}/{_p('cNvPr')}")
        if c_nv is not None:
            return c_nv.get("id", "")
    return ""


def _shape_name(shape) -> str:
    for path in ("nvSpPr", "nvGraphicFramePr", "nvPicPr"):
        c_nv = shape.find(f"{_p(path)}/{_p('cNvPr')}")
        if c_nv is not None:
            return c_nv.get("descr") or c_nv.get("name") or ""
    return ""


def _chart_points(data) -> list[str]:
    """The cached values of a chart's categories or series (c:cat, c:val), in order."""
    if data is None:
        return []
    points: dict[int, str] = {}
    for pt in data.iter(f"{{{C}}}pt"):
        index = pt.get("idx", "")
        value = pt.find(f"{{{C}}}v")
        if index.isdigit() and int(index) < MAX_CHART_POINTS and value is not None:
            points[int(index)] = _chart_number(value.text or "")
    return [points.get(i, "") for i in range(max(points) + 1)] if points else []


def _chart_number(text: str) -> str:
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:.6g}"


class _Deck:
    def __init__(self, package: PptxPackage, asset_url, deadline: Deadline):
        self.package = package
        self.asset_url = asset_url
        self.deadline = deadline
        self.block = 0
        self.title = ""
        self.pictures = 0
        self.footer_shapes: list = []  # the slide's date, footer and number, drawn at its foot

    def block_element(self, parent, tag: str, text: str, slide: int, shape: str, cls: str) -> etree._Element:
        el = etree.SubElement(
            parent,
            tag,
            {"class": cls, "data-block-index": str(self.block), "data-slide": str(slide), "data-shape": shape},
        )
        el.text = text
        self.block += 1
        return el

    def text_frame(self, parent, body, slide: int, shape: str, cls: str) -> None:
        for paragraph in body.iter(_a("p")):
            text = _paragraph_text(paragraph)
            if not text.strip():
                continue
            ppr = paragraph.find(_a("pPr"))
            level = int(ppr.get("lvl", "0")) if ppr is not None and (ppr.get("lvl") or "0").isdigit() else 0
            bullet = (
                ppr is not None
                and ppr.find(_a("buNone")) is None
                and (ppr.find(_a("buChar")) is not None or ppr.find(_a("buAutoNum")) is not None)
            )
            el = self.block_element(parent, "p", text, slide, shape, cls)
            if level:
                el.set("class", f"{cls} pptx-level-{min(level, 4)}")
            if bullet:
                el.set("class", el.get("class") + " pptx-bullet")

    def table(self, parent, tbl, slide: int, shape: str) -> None:
        table = etree.SubElement(parent, "table", {"class": "pptx-table"})
        for tr in tbl.iter(_a("tr")):
            row = etree.SubElement(table, "tr")
            for tc in tr.findall(_a("tc")):
                if tc.get("hMerge") == "1" or tc.get("vMerge") == "1":
                    continue
                text = "\n".join(_paragraph_text(p) for p in tc.iter(_a("p"))).strip()
                cell = self.block_element(row, "td", text, slide, shape, "pptx-cell")
                if not text:
                    del cell.attrib["data-block-index"]
                    self.block -= 1
                for attr, name in (("gridSpan", "colspan"), ("rowSpan", "rowspan")):
                    if (tc.get(attr) or "1").isdigit() and int(tc.get(attr, "1")) > 1:
                        cell.set(name, tc.get(attr))

    def picture(self, parent, pic, slide_part: str, slide: int) -> None:
        blip = pic.find(f".//{_a('blip')}")
        alt = _shape_name(pic)
        rel = self.package.relationships(slide_part).get(blip.get(f"{{{R}}}embed", "")) if blip is not None else None
        figure = etree.SubElement(
            parent, "figure", {"class": "pptx-picture", "data-slide": str(slide), "data-shape": _shape_id(pic)}
        )
        if rel is not None and rel.part and not rel.external and browser_image(rel.part) and self.asset_url:
            etree.SubElement(figure, "img", {"src": self.asset_url(rel.part), "alt": alt, "loading": "lazy"})
            self.pictures += 1
        else:
            span = etree.SubElement(figure, "span", {"class": "img-alt", "role": "img"})
            span.text = f"[{alt}]" if alt else _("[picture]")

    def shapes(self, parent, tree, slide_part: str, slide: int, depth: int = 0) -> None:
        if depth > 20:
            raise self.package.invalid("its shapes are nested too deeply")
        for shape in tree:
            tag = etree.QName(shape).localname if isinstance(shape.tag, str) else ""
            shape_id = _shape_id(shape)
            if tag == "sp":
                body = shape.find(_p("txBody"))
                kind = _placeholder_type(shape)
                if kind in _FOOTER_TYPES:
                    self.footer_shapes.append((kind, body if body is not None else etree.Element("none"), shape_id))
                    continue
                if body is None:
                    continue
                if kind in _TITLE_TYPES:
                    text = " ".join(_paragraph_text(p) for p in body.iter(_a("p"))).strip()
                    if text:
                        self.block_element(parent, "h2", text, slide, shape_id, "pptx-title").set(
                            "data-heading-level", "2"
                        )
                        self.title = self.title or text
                elif kind == "subTitle":
                    self.text_frame(parent, body, slide, shape_id, "pptx-subtitle")
                else:
                    self.text_frame(parent, body, slide, shape_id, "pptx-text")
            elif tag == "graphicFrame":
                tbl = shape.find(f".//{_a('tbl')}")
                if tbl is not None:
                    self.table(parent, tbl, slide, shape_id)
                elif shape.find(f".//{{{C}}}chart") is not None:
                    self.chart(parent, shape, slide_part, slide, shape_id)
            elif tag == "pic":
                self.picture(parent, shape, slide_part, slide)
            elif tag == "grpSp":
                self.shapes(parent, shape, slide_part, slide, depth + 1)
            elif tag == "AlternateContent":
                choice = shape.find("{*}Fallback")
                if choice is not None:
                    self.shapes(parent, choice, slide_part, slide, depth + 1)

    def footer(self, parent, slide: int) -> None:
        """The slide's date, footer and number, in the order they sit, as one line."""
        shapes, self.footer_shapes = self.footer_shapes, []
        if not shapes:
            return
        line = etree.SubElement(parent, "footer", {"class": "pptx-footer"})
        order = {kind: i for i, kind in enumerate(_FOOTER_TYPES)}
        for kind, body, shape_id in sorted(shapes, key=lambda item: order[item[0]]):
            if kind == "sldNum":
                # Its field keeps "‹#›" or the number it had when saved: the slide's own is shown.
                self.block_element(line, "span", str(slide), slide, shape_id, "pptx-sldNum")
                continue
            text = " ".join(_paragraph_text(p).strip() for p in body.iter(_a("p"))).strip()
            if text:
                self.block_element(line, "span", text, slide, shape_id, f"pptx-{kind}")

    def chart(self, parent, frame, slide_part: str, slide: int, shape_id: str) -> None:
        """A chart as its title and its data in a table; the drawing itself is not shown."""
        figure = etree.SubElement(parent, "figure", {"class": "pptx-chart", "data-slide": str(slide)})
        reference = frame.find(f".//{{{C}}}chart")
        rel = self.package.relationships(slide_part).get(reference.get(f"{{{R}}}id", ""))
        try:
            root = self.package.xml(rel.part) if rel is not None and rel.part and not rel.external else None
        except PreviewRejected:
            root = None
        note = etree.SubElement(figure, "span", {"class": "preview-note"})
        if root is None:
            note.text = _("[chart not shown]")
            return
        note.text = _("Chart: its data as a table; the drawing is not shown.")
        title = root.find(f".//{{{C}}}title")
        if title is not None:
            text = " ".join("".join(t.text or "" for t in title.iter(_a("t"))).split())
            if text:
                self.block_element(figure, "figcaption", text, slide, shape_id, "pptx-chart-title")
        series = root.findall(f".//{{{C}}}ser")[:MAX_CHART_SERIES]
        categories: list[str] = []
        for ser in series:
            categories = _chart_points(ser.find(f"{{{C}}}cat"))
            if categories:
                break
        table = etree.SubElement(figure, "table", {"class": "pptx-table"})
        if categories:
            head = etree.SubElement(table, "tr")
            etree.SubElement(head, "th")
            for category in categories:
                etree.SubElement(head, "th").text = category
        for ser in series:
            name_el = ser.find(f"{{{C}}}tx")
            # Its cached text (c:v), not the cell reference it was taken from (c:f).
            name = " ".join(v.text or "" for v in name_el.iter(f"{{{C}}}v")) if name_el is not None else ""
            name = " ".join(name.split())
            values_el = ser.find(f"{{{C}}}val")
            values = _chart_points(values_el if values_el is not None else ser.find(f"{{{C}}}yVal"))
            row = etree.SubElement(table, "tr")
            if name:
                self.block_element(row, "th", name, slide, shape_id, "pptx-cell")
            else:
                etree.SubElement(row, "th")
            for value in values:
                etree.SubElement(row, "td").text = value

    def notes(self, parent, slide_part: str, slide: int) -> None:
        part = self.package.related_part(slide_part, "notesSlide")
        root = self.package.xml(part) if part else None
        if root is None:
            return
        holder = None
        for shape in root.iter(_p("sp")):
            if _placeholder_type(shape) in _NOTES_SKIPPED:
                continue
            body = shape.find(_p("txBody"))
            if body is None or not "".join(body.itertext()).strip():
                continue
            if holder is None:
                holder = etree.SubElement(parent, "aside", {"class": "pptx-notes"})
                label = etree.SubElement(holder, "span", {"class": "pptx-notes-label"})
                label.text = _("Speaker notes")
            self.text_frame(holder, body, slide, "notes", "pptx-note")


def preview_pptx(fp, ctx, limits=DEFAULT_LIMITS) -> dict:
    deadline = Deadline(limits.time_budget_s)
    with PptxPackage(fp, limits) as package:
        main = package.related_part("", "officeDocument") or "ppt/presentation.xml"
        presentation = package.xml(main)
        if presentation is None or etree.QName(presentation).localname != "presentation":
            raise package.invalid("it has no presentation part (is it a Word document or a workbook?)")
        rels = package.relationships(main)
        deck = _Deck(package, ctx.asset_url, deadline)
        article = etree.Element("article", {"class": "pptx"})
        slide_list = presentation.find(_p("sldIdLst"))
        slides = list(slide_list if slide_list is not None else [])
        warnings = []
        if len(slides) > MAX_SLIDES:
            warnings.append(_("Only the first %(n)s slides are shown.") % {"n": MAX_SLIDES})
        for number, sld_id in enumerate(slides[:MAX_SLIDES], start=1):
            rel = rels.get(sld_id.get(f"{{{R}}}id", ""))
            root = package.xml(rel.part) if rel is not None and rel.part else None
            if root is None:
                continue
            card = etree.SubElement(
                article, "section", {"class": "pptx-slide", "id": f"slide-{number}", "data-slide": str(number)}
            )
            if root.get("show") == "0":
                card.set("class", "pptx-slide pptx-hidden")
            label = etree.SubElement(card, "span", {"class": "pptx-slide-number"})
            label.text = _("Slide %(n)s") % {"n": number}
            tree = root.find(f"{_p('cSld')}/{_p('spTree')}")
            if tree is not None:
                deck.shapes(card, tree, rel.part, number)
            deck.footer(card, number)
            deck.notes(card, rel.part, number)
            deadline.check()
        if not slides:
            warnings.append(_("This presentation has no slides."))
    return {
        "html": lxml_html.tostring(article, encoding="unicode"),
        "blocks": deck.block,
        "title": deck.title[:300],
        "warnings": warnings,
    }


def load_asset(fp, part: str):
    if not browser_image(part):
        raise PreviewRejected("This image is in a format the preview cannot show.")
    return package_image(PptxPackage, fp, part)
