"""WordprocessingML → an HTML element tree (built with lxml, never by string
concatenation, so every piece of document text is escaped on output).

Blocks (paragraphs, headings, list items, table cells, notes, text-box
paragraphs) get ``data-block-index`` in document order and ``data-para-id``
from ``w14:paraId``. Inside a table cell or a note the cell or note is the
block; its paragraphs are not blocks of their own.

CSS hooks: ``docx``, ``docx-list``/``docx-li``/``docx-level-N``/``docx-label``,
``docx-table``, ``docx-textbox``, ``docx-math``/``docx-math-display``/
``docx-equation``, ``docx-notes``/``docx-note``/``docx-note-label``/
``docx-noteref``/``docx-backref``, ``docx-image``/``docx-image-placeholder``,
``docx-tab``, ``docx-title``/``docx-subtitle``/``docx-caption``/``docx-quote``,
``docx-center``/``docx-right``. A ``.docx-noteref`` is a footnote number in
running text; text matching should skip it (LightRAG's chunks do not have it).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import NamedTuple

from lxml import etree

from .namespaces import (
    A,
    MC,
    OFFICE,
    PIC,
    R_EMBED,
    R_ID,
    R_LINK,
    UNDERSTOOD_CHOICE_NAMESPACES,
    V,
    W14_PARA_ID,
    W_ID,
    W_VAL,
    WP,
    m,
    w,
)
from .numbering import Numbering, lower_roman
from .omml import omml_to_text
from .limits import Deadline, DocxRejected, Limits, invalid
from .safe_package import DocxPackage, Relationship
from .styles import PLAIN, RunFormat, Styles, is_on
from .symbols import symbol_char, symbol_text

# Tags, in Clark notation, looked up once.
P, R, T, TBL, TR, TC = w("p"), w("r"), w("t"), w("tbl"), w("tr"), w("tc")
PPR, RPR, PSTYLE, RSTYLE, TRPR, TCPR = w("pPr"), w("rPr"), w("pStyle"), w("rStyle"), w("trPr"), w("tcPr")
NUMPR, OUTLINE_LVL, JC = w("numPr"), w("outlineLvl"), w("jc")
SDT, SDT_CONTENT, CUSTOM_XML, SMART_TAG = w("sdt"), w("sdtContent"), w("customXml"), w("smartTag")
INS, DEL, MOVE_TO, MOVE_FROM = w("ins"), w("del"), w("moveTo"), w("moveFrom")
HYPERLINK, FLD_SIMPLE, FLD_CHAR, INSTR_TEXT = w("hyperlink"), w("fldSimple"), w("fldChar"), w("instrText")
TAB, PTAB, BR, CR, SYM = w("tab"), w("ptab"), w("br"), w("cr"), w("sym")
NO_BREAK_HYPHEN, DRAWING, PICT, OBJECT, RUBY = w("noBreakHyphen"), w("drawing"), w("pict"), w("object"), w("ruby")
FOOTNOTE_REF, ENDNOTE_REF = w("footnoteReference"), w("endnoteReference")
BOOKMARK_START, ALT_CHUNK, TXBX_CONTENT = w("bookmarkStart"), w("altChunk"), w("txbxContent")
SECT_PR, HEADER_REF, FOOTER_REF = w("sectPr"), w("headerReference"), w("footerReference")
DIR, BDO, BODY = w("dir"), w("bdo"), w("body")
OMATH, OMATH_PARA = m("oMath"), m("oMathPara")
MC_AC, MC_CHOICE, MC_FALLBACK = f"{{{MC}}}AlternateContent", f"{{{MC}}}Choice", f"{{{MC}}}Fallback"
A_BLIP, A_GRAPHIC_DATA = f"{{{A}}}blip", f"{{{A}}}graphicData"
WP_DOCPR, WP_EXTENT = f"{{{WP}}}docPr", f"{{{WP}}}extent"
PIC_PIC, V_IMAGEDATA = f"{{{PIC}}}pic", f"{{{V}}}imagedata"

_WEB_IMAGES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "jpe": "image/jpeg",
    "gif": "image/gif",
    "bmp": "image/bmp",
    "webp": "image/webp",
}
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]*):")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_FIELD_TOKEN = re.compile(r'"([^"]*)"|(\S+)')
_EMU_PER_PX = 9525
_MAX_FIELD_NESTING = 32
_MAX_LATEX_ATTR = 2000
_BACKREF = "\u21a9"


@dataclass
class _Field:
    begin: etree._Element
    in_result: bool = False
    href: str | None = None
    instr: list[str] = field(default_factory=list)


@dataclass
class _Story:
    part: str
    rels: dict[str, Relationship]


def safe_href(url: str | None, anchor: str | None = None) -> str | None:
    """An http/https/mailto URL or an in-document anchor; None for anything else."""
    if url:
        url = _CONTROL.sub("", url.strip())
        if url.startswith("#"):
            return "#" + bookmark_id(url[1:])
        match = _SCHEME.match(url)
        if not match or match.group(1).lower() not in _SAFE_SCHEMES:
            return None
        return url + ("#" + anchor if anchor else "")
    if anchor:
        return "#" + bookmark_id(anchor)
    return None


def bookmark_id(name: str) -> str:
    return "docx-bm-" + re.sub(r"[^\w.\-]", "_", name)[:100]


def _append_text(el: etree._Element, text: str) -> None:
    if len(el):
        last = el[-1]
        last.tail = (last.tail or "") + text
    else:
        el.text = (el.text or "") + text


def choose_branch(alternate: etree._Element) -> etree._Element | None:
    """The one branch of an ``mc:AlternateContent`` to render."""
    for child in alternate:
        if child.tag == MC_CHOICE:
            required = (child.get("Requires") or "").split()
            nsmap = child.nsmap
            if required and all(nsmap.get(prefix) in UNDERSTOOD_CHOICE_NAMESPACES for prefix in required):
                return child
        elif child.tag == MC_FALLBACK:
            return child
    return None


def _first_para_id(el: etree._Element) -> str | None:
    for p in el.iter(P):
        para_id = p.get(W14_PARA_ID)
        if para_id:
            return para_id
    return None


def _int(value: str | None, default: int = 0) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


class BodyRenderer:
    def __init__(
        self,
        package: DocxPackage,
        main_part: str,
        styles: Styles,
        numbering: Numbering,
        image_url: Callable[[str], str] | None,
        deadline: Deadline,
        limits: Limits,
    ):
        self.pkg = package
        self.main_part = main_part
        self.styles = styles
        self.numbering = numbering
        self.image_url = image_url
        self.deadline = deadline
        self.limits = limits
        self.story = _Story(main_part, package.relationships(main_part))
        self.images: dict[str, str] = {}
        self.warnings: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()
        self.block_count = 0
        self.first_heading: str | None = None
        self._block_depth = 0  # > 0 inside a cell or note: its paragraphs are not blocks
        self._depth = 0
        self._fields: list[_Field] = []
        self._fields_in_instr = 0
        self._field_overflow = 0
        self._field_href: str | None = None
        self._field_a: etree._Element | None = None
        self._pending_boxes: list[etree._Element] = []
        self._content = False
        self._display_math = False
        self._merge_outer: etree._Element | None = None
        self._merge_inner: etree._Element | None = None
        self._merge_key: tuple = ()
        self._notes: dict[str, dict[str, int]] = {"footnote": {}, "endnote": {}}
        self._note_refs_placed: set[str] = set()
        self._runs = 0
        self._paragraphs = 0
        self._has_deletions = True

    # -- entry point ---------------------------------------------------------

    def render(self, document: etree._Element) -> etree._Element:
        body = document.find(BODY)
        if body is None:
            raise invalid("its main part has no document body")
        article = etree.Element("article", {"class": "docx"})
        # Only documents with tracked deletions can have deleted paragraph marks.
        self._has_deletions = next(body.iter(DEL, MOVE_FROM), None) is not None
        self.blocks(body, article)
        self._render_notes(article, "footnote", "footnotes", "fn")
        self._render_notes(article, "endnote", "endnotes", "en")
        self._render_headers_footers(article, body)
        return article

    def _render_headers_footers(self, article: etree._Element, body: etree._Element) -> None:
        """Each distinct page header and footer once, after everything else
        (so the body's block numbers do not move), marked as such."""
        seen_parts: set[str] = set()
        seen_texts: set[str] = set()
        sections = {"header": None, "footer": None}
        refs = [
            (kind, ref) for kind, tag in (("header", HEADER_REF), ("footer", FOOTER_REF))
            for sect in body.iter(SECT_PR) for ref in sect.iter(tag)
        ]  # fmt: skip
        for kind, ref in refs:
            rel = self.story.rels.get(ref.get(R_ID) or "")
            if rel is None or not rel.part or rel.part in seen_parts:
                continue
            seen_parts.add(rel.part)
            root = self.pkg.xml(rel.part)
            text = " ".join("".join(t.text or "" for t in root.iter(T)).split()) if root is not None else ""
            if not text or text in seen_texts:
                continue  # page numbers only, or the same words as another header
            seen_texts.add(text)
            self.deadline.check()
            if sections[kind] is None:
                sections[kind] = etree.SubElement(article, "section", {"class": f"docx-{kind}s"})
                label = etree.SubElement(sections[kind], "p", {"class": "docx-hf-label"})
                label.text = "Page header" if kind == "header" else "Page footer"
            holder = etree.SubElement(sections[kind], "div", {"class": f"docx-{kind}"})
            saved_story, self.story = self.story, _Story(rel.part, self.pkg.relationships(rel.part))
            saved_deletions = self._has_deletions
            self._has_deletions = next(root.iter(DEL, MOVE_FROM), None) is not None
            fields = self._save_fields()
            self.blocks(root, holder)
            self._restore_fields(fields)
            self._has_deletions = saved_deletions
            self.story = saved_story
            self.stats[f"{kind}s"] += 1

    def _mark_block(self, el: etree._Element, para_id: str | None) -> None:
        el.set("data-block-index", str(self.block_count))
        self.block_count += 1
        if para_id:
            el.set("data-para-id", para_id)

    # -- block level ---------------------------------------------------------

    def blocks(self, container: etree._Element, out: etree._Element) -> None:
        if self._depth >= self.limits.max_render_depth:
            self.warnings["Some deeply nested content is not shown."] += 1
            return
        self._depth += 1
        merged: list[etree._Element] = []
        merged_props = _NO_PARAGRAPH_PROPS  # of the last paragraph in ``merged``
        for child in container:
            tag = child.tag
            if tag == P:
                props = _paragraph_props(child, self._has_deletions)
                # A deleted paragraph mark joins the paragraph with the next one.
                # A drop cap is a framed paragraph of its own: joined to the word it starts.
                if props.mark_deleted or props.drop_cap:
                    merged.append(child)
                    merged_props = props
                    continue
                if merged:
                    merged.append(child)
                    self.paragraph(merged, out, props)
                    merged = []
                else:
                    self.paragraph((child,), out, props)
                continue
            if merged:
                self.paragraph(merged, out, merged_props)
                merged = []
            if tag == TBL:
                self.table(child, out)
            elif tag == SDT:
                content = child.find(SDT_CONTENT)
                if content is not None:
                    self.blocks(content, out)
            elif tag in (CUSTOM_XML, INS, MOVE_TO):
                self.blocks(child, out)
            elif tag == MC_AC:
                branch = choose_branch(child)
                if branch is not None:
                    self.blocks(branch, out)
            elif tag == ALT_CHUNK:
                self.warnings["Embedded documents (altChunk) are not shown."] += 1
        if merged:
            self.paragraph(merged, out, merged_props)
        self._depth -= 1

    def paragraph(self, paragraphs, out: etree._Element, props: _ParagraphProps) -> None:
        """``paragraphs`` rendered as one block; ``props`` are the last one's
        (the surviving paragraph mark carries the properties)."""
        self.deadline.check()
        self._paragraphs += 1
        if self._paragraphs > self.limits.max_blocks:
            # The byte count before parsing knows only the "w:" prefix; this holds for any.
            raise DocxRejected(
                f"This document is too large to preview (more than {self.limits.max_blocks:,} paragraphs)."
            )
        el = etree.Element("p")
        saved_boxes, self._pending_boxes = self._pending_boxes, []
        self._content = False
        self._display_math = False
        self._field_a = None
        for p in paragraphs:
            self.inline(p, el)
        boxes, self._pending_boxes = self._pending_boxes, saved_boxes
        if self._content:
            self._finish_paragraph(el, paragraphs, out, props)
        for box in boxes:
            self.text_box(box, out)

    def _finish_paragraph(self, el, paragraphs, out, props: _ParagraphProps) -> None:
        style_id, numpr, outline, jc = props.style_id, props.numpr, props.outline, props.jc
        # Headings come from heading styles only: Word lets any paragraph carry
        # a direct outline level (signature lines, dates, form labels do), and
        # those are not headings a reader sees. A direct "body text" level (9)
        # still makes a heading-styled paragraph body text.
        level = None if outline is not None and not 0 <= outline <= 8 else self.styles.heading_level(style_id)
        numbered = self.numbering.label(numpr, style_id)
        if numbered is not None:
            label, ilvl = numbered
            if label:
                label_el = etree.Element("span", {"class": "docx-label"})
                label_el.text = label
                label_el.tail = " " + (el.text or "")
                el.text = None
                el.insert(0, label_el)
        classes = []
        if level is not None:
            el.tag = f"h{min(level + 1, 6)}"
            el.set("data-heading-level", str(level + 1))
            if self.first_heading is None:
                self.first_heading = "".join(el.itertext()).strip()
        elif numbered is not None:
            el.tag = "li"
            classes += ["docx-li", f"docx-level-{numbered[1]}"]
        else:
            name = self.styles.name(style_id) if style_id else ""
            if name in _STYLE_CLASSES:
                classes.append(_STYLE_CLASSES[name])
                if name == "title" and self.first_heading is None:
                    self.first_heading = "".join(el.itertext()).strip()
            if self._display_math:
                classes.append("docx-equation")
        if jc in _ALIGN_CLASSES:
            classes.append(_ALIGN_CLASSES[jc])
        if classes:
            el.set("class", " ".join(classes))
        if self._block_depth == 0:
            para_id = None
            for p in paragraphs:
                para_id = p.get(W14_PARA_ID)
                if para_id:
                    break
            self._mark_block(el, para_id)
        # A newline between blocks keeps words of neighbouring blocks apart in textContent.
        el.tail = "\n"
        if el.tag == "li":
            # The last child without len(out), which counts every child of a long body.
            last = next(reversed(out), None)
            if last is not None and last.tag == "ul" and last.get("class") == "docx-list":
                last.append(el)
            else:
                ul = etree.SubElement(out, "ul", {"class": "docx-list"})
                ul.tail = "\n"
                ul.append(el)
        else:
            out.append(el)

    def text_box(self, content: etree._Element, out: etree._Element) -> None:
        aside = etree.SubElement(out, "aside", {"class": "docx-textbox"})
        aside.tail = "\n"
        fields = self._save_fields()
        self.blocks(content, aside)
        self._restore_fields(fields)
        if len(aside):
            self.stats["text_boxes"] += 1
        else:
            out.remove(aside)

    # -- tables --------------------------------------------------------------

    def table(self, tbl: etree._Element, out: etree._Element) -> None:
        if self._depth >= self.limits.max_render_depth:
            self.warnings["Some deeply nested content is not shown."] += 1
            return
        self._depth += 1
        self.deadline.check()
        table = etree.SubElement(out, "table", {"class": "docx-table"})
        table.tail = "\n"
        head = body = None
        open_merges: dict[int, etree._Element] = {}
        in_header = True
        for tr in _rows(tbl):
            # Children are scanned once, not looked up with find(): a table of
            # 10,000 cells pays for every lookup (ElementPath per call).
            trpr = _child(tr, TRPR)
            row_props = {child.tag: child for child in trpr} if trpr is not None else _NO_PROPS
            if DEL in row_props:
                continue  # a deleted row
            is_header = in_header and bool(is_on(row_props.get(TBL_HEADER)))
            in_header = is_header
            if is_header:
                head = head if head is not None else etree.SubElement(table, "thead")
                row = etree.SubElement(head, "tr")
            else:
                body = body if body is not None else etree.SubElement(table, "tbody")
                row = etree.SubElement(body, "tr")
            column = 0
            before = row_props.get(GRID_BEFORE)
            if before is not None:
                column = max(0, min(_int(before.get(W_VAL)), 1000))
            last_cell = None
            for tc in _cells(tr):
                tcpr = _child(tc, TCPR)
                span, vmerge, hmerge = 1, None, None
                if tcpr is not None:
                    for prop in tcpr:
                        tag = prop.tag
                        if tag == GRID_SPAN:
                            span = max(1, min(_int(prop.get(W_VAL), 1), 1000))
                        elif tag == V_MERGE:
                            vmerge = prop.get(W_VAL) or "continue"
                        elif tag == H_MERGE:
                            hmerge = prop.get(W_VAL) or "continue"
                if hmerge == "continue" and last_cell is not None:
                    last_cell.set("colspan", str(_int(last_cell.get("colspan"), 1) + span))
                    column += span
                    continue
                if vmerge == "continue" and column in open_merges:
                    above = open_merges[column]
                    above.set("rowspan", str(_int(above.get("rowspan"), 1) + 1))
                    column += span
                    continue
                cell = etree.SubElement(row, "th" if is_header else "td")
                cell.tail = "\n"
                if span > 1:
                    cell.set("colspan", str(span))
                for c in range(column, column + span):
                    open_merges.pop(c, None)
                if vmerge is not None:
                    open_merges[column] = cell
                self._cell(tc, cell)
                last_cell = cell
                column += span
        if not len(table):
            out.remove(table)
        else:
            self.stats["tables"] += 1
        self._depth -= 1

    def _cell(self, tc: etree._Element, cell: etree._Element) -> None:
        if self._block_depth == 0:
            self._mark_block(cell, _first_para_id(tc))
        self._block_depth += 1
        self.blocks(tc, cell)
        self._block_depth -= 1

    # -- inline level --------------------------------------------------------

    def inline(self, container: etree._Element, out: etree._Element) -> None:
        for child in container:
            tag = child.tag
            if tag == R:
                self.run(child, out)
            elif tag in _UNWRAP_INLINE:
                self.inline(child, out)
            elif tag == HYPERLINK:
                self.hyperlink(child, out)
            elif tag == SDT:
                content = child.find(SDT_CONTENT)
                if content is not None:
                    self.inline(content, out)
            elif tag == FLD_SIMPLE:
                self.field_simple(child, out)
            elif tag == OMATH:
                self.math(child, out, display=False)
            elif tag == OMATH_PARA:
                for omath in child.iter(OMATH):
                    self.math(omath, out, display=True)
            elif tag == BOOKMARK_START:
                name = child.get(w("name"))
                if name and name != "_GoBack":
                    etree.SubElement(out, "span", {"id": bookmark_id(name)})
            elif tag == MC_AC:
                branch = choose_branch(child)
                if branch is not None:
                    self.inline(branch, out)

    def hyperlink(self, el: etree._Element, out: etree._Element) -> None:
        url = None
        rel_id = el.get(R_ID)
        if rel_id:
            rel = self.story.rels.get(rel_id)
            url = rel.target if rel is not None else None
        anchor = el.get(w("anchor"))
        href = safe_href(url, anchor)
        if href is None and (url or anchor):
            self.warnings["Links to addresses other than http, https and mailto are shown as plain text."] += 1
        self._link(el, out, href)

    def field_simple(self, el: etree._Element, out: etree._Element) -> None:
        self._link(el, out, _field_href(el.get(w("instr")) or ""))

    def _link(self, el, out, href) -> None:
        if href is None or out.tag == "a" or self._field_href is not None:
            self.inline(el, out)
            return
        a = etree.SubElement(out, "a", {"href": href})
        if not href.startswith("#"):
            a.set("rel", "noopener noreferrer")
            a.set("target", "_blank")
        self.inline(el, a)

    def run(self, r: etree._Element, out: etree._Element) -> None:
        self._runs += 1
        if self._runs & 0x3FF == 0:
            self.deadline.check()
        children = r.iterchildren()
        for first in children:
            if first.tag == RPR:  # w:rPr comes first in a run; the rest is its content
                self.run_content(children, out, self.styles.format_of(first))
            else:
                self.run_content(chain((first,), children), out, PLAIN)
            break

    def run_content(self, children: Iterable[etree._Element], out: etree._Element, fmt: RunFormat) -> None:
        for child in children:
            tag = child.tag
            if tag == T:
                if self._fields_in_instr or fmt.hidden:
                    continue
                text = child.text
                if text:
                    if fmt.symbol_font:
                        text = symbol_text(fmt.symbol_font, text)
                    if self._field_href is None and fmt[:6] == _UNFORMATTED:
                        # Plain text, most of a document: straight into ``out`` (what ``text`` would do).
                        _append_text(out, text)
                        if not self._content and not text.isspace():
                            self._content = True
                    else:
                        self.text(out, fmt, text)
            elif tag == FLD_CHAR:
                self.field_char(child, out)
            elif tag == INSTR_TEXT:
                if self._fields and not self._fields[-1].in_result and not self._field_overflow:
                    self._fields[-1].instr.append(child.text or "")
            elif self._fields_in_instr or fmt.hidden or tag == RPR:
                continue
            elif tag == TAB or tag == PTAB:
                span = etree.SubElement(self.target(out, fmt), "span", {"class": "docx-tab"})
                span.text = "\t"
            elif tag == BR:
                if child.get(w("type")) in (None, "textWrapping"):
                    self.line_break(out, fmt)
            elif tag == CR:
                self.line_break(out, fmt)
            elif tag == SYM:
                code = _int_hex(child.get(w("char")))
                if code is not None:
                    self.text(out, fmt, symbol_char((child.get(w("font")) or "").strip().lower(), code))
            elif tag == NO_BREAK_HYPHEN:
                self.text(out, fmt, "-")
            elif tag == DRAWING:
                self.drawing(child, out, fmt)
            elif tag == PICT or tag == OBJECT:
                self.vml(child, out, fmt)
            elif tag == FOOTNOTE_REF:
                self.note_ref(child, out, "footnote")
            elif tag == ENDNOTE_REF:
                self.note_ref(child, out, "endnote")
            elif tag == RUBY:
                self.ruby(child, out, fmt)
            elif tag == MC_AC:
                branch = choose_branch(child)
                if branch is not None:
                    self.run_content(branch, out, fmt)

    def target(self, out: etree._Element, fmt: RunFormat) -> etree._Element:
        """Where a run's content goes: inside its formatting elements, merged
        with the previous run's when they are formatted alike."""
        if self._field_href is not None and out.tag != "a":
            a = self._field_a
            if a is None or not len(out) or out[-1] is not a:
                a = etree.SubElement(out, "a", {"href": self._field_href})
                if not self._field_href.startswith("#"):
                    a.set("rel", "noopener noreferrer")
                    a.set("target", "_blank")
                self._field_a = a
            out = a
        key = fmt[:6]  # code, bold, italic, underline, strike, vert
        if key == _UNFORMATTED:
            return out
        outer = self._merge_outer
        if key == self._merge_key and outer is not None and len(out) and out[-1] is outer and outer.tail is None:
            return self._merge_inner
        inner = out
        outer = None
        for flag, tag in zip(key, _FORMAT_TAGS, strict=True):
            if flag:
                inner = etree.SubElement(inner, tag if tag else ("sup" if fmt.vert == "superscript" else "sub"))
                outer = inner if outer is None else outer
        self._merge_outer, self._merge_inner, self._merge_key = outer, inner, key
        return inner

    def text(self, out: etree._Element, fmt: RunFormat, text: str) -> None:
        _append_text(self.target(out, fmt), text)
        if not self._content and not text.isspace():
            self._content = True

    def line_break(self, out: etree._Element, fmt: RunFormat) -> None:
        br = etree.SubElement(self.target(out, fmt), "br")
        br.tail = "\n"

    def ruby(self, el: etree._Element, out: etree._Element, fmt: RunFormat) -> None:
        ruby = etree.SubElement(self.target(out, PLAIN), "ruby")
        base = el.find(w("rubyBase"))
        if base is not None:
            self.inline(base, ruby)
        annotation = el.find(w("rt"))
        if annotation is not None:
            rt = etree.SubElement(ruby, "rt")
            self.inline(annotation, rt)

    # -- fields --------------------------------------------------------------

    def field_char(self, el: etree._Element, out: etree._Element) -> None:
        kind = el.get(w("fldCharType"))
        if kind == "begin":
            if len(self._fields) >= _MAX_FIELD_NESTING:
                self._field_overflow += 1
                return
            self._fields.append(_Field(el))
            self._fields_in_instr += 1
        elif kind == "separate":
            if self._fields and not self._field_overflow and not self._fields[-1].in_result:
                field = self._fields[-1]
                field.in_result = True
                self._fields_in_instr -= 1
                field.href = _field_href("".join(field.instr))
                if field.href and self._field_href is None:
                    self._field_href, self._field_a = field.href, None
        elif kind == "end":
            if self._field_overflow:
                self._field_overflow -= 1
                return
            if self._fields:
                field = self._fields.pop()
                if not field.in_result:
                    self._fields_in_instr -= 1
                    if not self._fields_in_instr and "".join(field.instr).split()[:1] == ["FORMCHECKBOX"]:
                        # A legacy form check box has no result text; Word draws the box.
                        self.text(out, PLAIN, "☒" if _checkbox_checked(field.begin) else "☐")
                if field.href and field.href == self._field_href:
                    self._field_href, self._field_a = None, None

    def _save_fields(self):
        saved = (self._fields, self._fields_in_instr, self._field_overflow, self._field_href, self._field_a)
        self._fields, self._fields_in_instr, self._field_overflow = [], 0, 0
        self._field_href, self._field_a = None, None
        return saved

    def _restore_fields(self, saved) -> None:
        self._fields, self._fields_in_instr, self._field_overflow, self._field_href, self._field_a = saved

    # -- math ----------------------------------------------------------------

    def math(self, omath: etree._Element, out: etree._Element, display: bool) -> None:
        if self._fields_in_instr:
            return
        text, latex = omml_to_text(omath)
        if not text:
            return
        span = etree.SubElement(
            self.target(out, PLAIN), "span", {"class": "docx-math docx-math-display" if display else "docx-math"}
        )
        span.text = text
        if len(latex) <= _MAX_LATEX_ATTR:
            span.set("data-latex", latex)
        self._content = True
        self._display_math = self._display_math or display
        self.stats["equations"] += 1

    # -- drawings, images, text boxes ----------------------------------------

    def drawing(self, drawing: etree._Element, out: etree._Element, fmt: RunFormat) -> None:
        for frame in drawing:  # wp:inline / wp:anchor
            doc_pr = frame.find(WP_DOCPR)
            alt = ""
            if doc_pr is not None:
                alt = (doc_pr.get("descr") or doc_pr.get("title") or "").strip()
            size = None
            extent = frame.find(WP_EXTENT)
            if extent is not None:
                size = (_int(extent.get("cx")) // _EMU_PER_PX, _int(extent.get("cy")) // _EMU_PER_PX)
            data = frame.find(f"{{{A}}}graphic/{A_GRAPHIC_DATA}")
            if data is None:
                continue
            found = False
            for kind, el in _drawing_items(data):
                found = True
                if kind == "textbox":
                    self._pending_boxes.append(el)
                else:
                    pic_alt = _picture_alt(el) or alt
                    rel_id = el.get(R_EMBED) or el.get(R_LINK)
                    self.image(rel_id, out, pic_alt, size if el.get(R_EMBED) else None)
            if not found:
                uri = data.get("uri") or ""
                what = "chart" if uri.endswith("/chart") else "diagram" if "diagram" in uri else "graphic"
                self.warnings[f"Charts, diagrams and other graphics appear as placeholders ({what})."] += 1
                self.placeholder(out, f"[{what}: {alt}]" if alt else f"[{what}]", alt)

    def vml(self, el: etree._Element, out: etree._Element, fmt: RunFormat) -> None:
        for kind, item in _vml_items(el):
            if kind == "textbox":
                self._pending_boxes.append(item)
            else:
                shape = item.getparent()
                alt = (shape.get("alt") if shape is not None else None) or item.get(f"{{{OFFICE}}}title") or ""
                self.image(item.get(R_ID) or item.get(f"{{{OFFICE}}}relid"), out, alt.strip(), None)

    def image(self, rel_id: str | None, out: etree._Element, alt: str, size: tuple[int, int] | None) -> None:
        rel = self.story.rels.get(rel_id or "")
        label = f"[image: {alt}]" if alt else "[image]"
        if rel is None or rel.external or not rel.part:
            if rel is not None and rel.external:
                self.warnings["Images linked from outside the document are not loaded."] += 1
            else:
                self.warnings["Some images are missing from the file."] += 1
            self.placeholder(out, label, alt)
            return
        part = rel.part
        if self.pkg.member(part) is None:
            self.warnings["Some images are missing from the file."] += 1
            self.placeholder(out, label, alt)
            return
        content_type = _WEB_IMAGES.get(part.rsplit(".", 1)[-1].lower())
        if content_type is None:
            self.warnings["Images in formats browsers cannot show (EMF, WMF, TIFF …) appear as placeholders."] += 1
            self.placeholder(out, label, alt)
            return
        self.images[part] = content_type
        self.stats["images"] += 1
        if self.image_url is None:
            self.placeholder(out, label, alt).set("data-image-part", part)
            return
        img = etree.SubElement(
            self.target(out, PLAIN),
            "img",
            {"src": self.image_url(part), "alt": alt, "class": "docx-image", "loading": "lazy"},
        )
        if size and 0 < size[0] <= 5000 and 0 < size[1] <= 5000:
            img.set("width", str(size[0]))
            img.set("height", str(size[1]))
        self._content = True

    def placeholder(self, out: etree._Element, label: str, alt: str) -> etree._Element:
        span = etree.SubElement(self.target(out, PLAIN), "span", {"class": "docx-image-placeholder", "role": "img"})
        span.text = label
        if alt:
            span.set("aria-label", alt)
        self._content = True
        return span

    # -- footnotes and endnotes ----------------------------------------------

    def note_ref(self, el: etree._Element, out: etree._Element, kind: str) -> None:
        note_id = el.get(W_ID)
        if note_id is None:
            return
        order = self._notes[kind]
        number = order.setdefault(note_id, len(order) + 1)
        prefix = "fn" if kind == "footnote" else "en"
        sup = etree.SubElement(self.target(out, PLAIN), "sup", {"class": "docx-noteref"})
        a = etree.SubElement(sup, "a", {"href": f"#docx-{prefix}-{number}"})
        ref_id = f"docx-{prefix}ref-{number}"
        if ref_id not in self._note_refs_placed:
            self._note_refs_placed.add(ref_id)
            a.set("id", ref_id)
        a.text = str(number) if kind == "footnote" else lower_roman(number)
        self._content = True

    def _render_notes(self, article: etree._Element, kind: str, rel_kind: str, prefix: str) -> None:
        order = self._notes[kind]
        if not order:
            return
        part = self.pkg.related_part(self.main_part, rel_kind)
        root = self.pkg.xml(part) if part else None
        notes = {}
        if root is not None:
            for note in root.iter(w(kind)):
                if note.get(w("type")) in (None, "normal"):
                    notes[note.get(W_ID)] = note
        if not notes:
            return
        section = etree.SubElement(article, "section", {"class": f"docx-notes docx-{kind}s"})
        ol = etree.SubElement(section, "ol")
        saved_story, self.story = self.story, _Story(part, self.pkg.relationships(part))
        self._has_deletions = next(root.iter(DEL, MOVE_FROM), None) is not None
        fields = self._save_fields()
        skipped = 0
        queue: list[str] = []
        while True:
            # Notes may cite further notes, so the order can grow while rendering.
            if len(order) > len(queue):
                queue.extend(list(order)[len(queue) :])
            if len(ol) + skipped >= len(queue):
                break
            note_id = queue[len(ol) + skipped]
            number = order[note_id]
            note = notes.get(note_id)
            if note is None:
                skipped += 1
                continue
            self.deadline.check()
            li = etree.SubElement(ol, "li", {"class": "docx-note", "id": f"docx-{prefix}-{number}"})
            li.tail = "\n"
            self._mark_block(li, _first_para_id(note))
            self._block_depth += 1
            self.blocks(note, li)
            self._block_depth -= 1
            label = etree.Element("span", {"class": "docx-note-label"})
            label.text = str(number) if kind == "footnote" else lower_roman(number)
            first = li[0] if len(li) and li[0].tag == "p" else li
            text = first.text or ""
            label.tail = text if text[:1].isspace() else " " + text
            first.text = None
            first.insert(0, label)
            back = etree.SubElement(li[-1] if len(li) and li[-1].tag == "p" else li, "a")
            back.set("href", f"#docx-{prefix}ref-{number}")
            back.set("class", "docx-backref")
            back.set("aria-label", "Back to the text")
            back.text = _BACKREF
            self.stats[f"{kind}s"] += 1
        self._restore_fields(fields)
        self.story = saved_story
        if not len(ol):
            article.remove(section)


_UNFORMATTED = PLAIN[:6]
_UNWRAP_INLINE = frozenset({INS, MOVE_TO, SMART_TAG, CUSTOM_XML, DIR, BDO})
_FORMAT_TAGS = ("code", "strong", "em", "u", "s", "")
_STYLE_CLASSES = {
    "title": "docx-title",
    "subtitle": "docx-subtitle",
    "caption": "docx-caption",
    "quote": "docx-quote",
    "intense quote": "docx-quote",
}
_ALIGN_CLASSES = {"center": "docx-center", "right": "docx-right", "end": "docx-right"}


class _ParagraphProps(NamedTuple):
    """What the renderer reads from a paragraph's ``w:pPr``."""

    style_id: str | None = None
    numpr: etree._Element | None = None
    outline: int | None = None
    jc: str | None = None
    drop_cap: bool = False  # framed as a drop cap (the first w:framePr says)
    mark_deleted: bool = False  # its paragraph mark is a tracked deletion


_NO_PARAGRAPH_PROPS = _ParagraphProps()
_FRAME_PR = w("framePr")
_DROP_CAP = w("dropCap")
_STYLE_PROP, _NUMPR_PROP, _OUTLINE_PROP, _JC_PROP, _FRAME_PROP, _MARK_PROP = range(6)
_PPR_KINDS = {PSTYLE: _STYLE_PROP, NUMPR: _NUMPR_PROP, OUTLINE_LVL: _OUTLINE_PROP, JC: _JC_PROP,
              _FRAME_PR: _FRAME_PROP, RPR: _MARK_PROP}  # fmt: skip


def _paragraph_props(p: etree._Element, deletions: bool) -> _ParagraphProps:
    """A paragraph's properties, read in one pass over its ``w:pPr`` (which
    comes first in a paragraph); ``deletions``: the story has tracked
    deletions, so the paragraph mark may be one."""
    if not len(p):
        return _NO_PARAGRAPH_PROPS
    ppr = p[0]
    if ppr.tag != PPR:
        return _NO_PARAGRAPH_PROPS
    style_id = numpr = outline = jc = drop_cap = None
    mark_deleted = False
    for prop in ppr:
        kind = _PPR_KINDS.get(prop.tag)
        if kind is None:
            continue
        if kind == _STYLE_PROP:
            style_id = prop.get(W_VAL)
        elif kind == _NUMPR_PROP:
            numpr = prop
        elif kind == _OUTLINE_PROP:
            outline = _int(prop.get(W_VAL), 9)
        elif kind == _JC_PROP:
            jc = prop.get(W_VAL)
        elif kind == _FRAME_PROP:
            if drop_cap is None:
                drop_cap = prop.get(_DROP_CAP) in ("drop", "margin")
        elif deletions and not mark_deleted:
            for mark in prop:
                tag = mark.tag
                if tag == DEL or tag == MOVE_FROM:
                    mark_deleted = True
                    break
    return _ParagraphProps(style_id, numpr, outline, jc, bool(drop_cap), mark_deleted)


def _checkbox_checked(begin: etree._Element) -> bool:
    box = begin.find(f"{w('ffData')}/{w('checkBox')}")
    if box is None:
        return False
    state = box.find(w("checked"))
    if state is None:
        state = box.find(w("default"))
    return bool(is_on(state))


def _int_hex(value: str | None) -> int | None:
    try:
        return int(value, 16) if value else None
    except ValueError:
        return None


def _field_href(instr: str) -> str | None:
    tokens = [quoted if quoted is not None and bare == "" else bare for quoted, bare in _FIELD_TOKEN.findall(instr)]
    if not tokens or tokens[0].upper() != "HYPERLINK":
        return None
    url = anchor = None
    i = 1
    while i < len(tokens):
        token = tokens[i]
        if token.lower() == "\\l" and i + 1 < len(tokens):
            anchor = tokens[i + 1]
            i += 2
            continue
        if token.lower() in ("\\o", "\\t") and i + 1 < len(tokens):
            i += 2
            continue
        if not token.startswith("\\") and url is None:
            url = token
        i += 1
    return safe_href(url, anchor)


def _nested(el: etree._Element, tag: str) -> Iterator[etree._Element]:
    for child in el:
        if child.tag == tag:
            yield child
        elif child.tag in (SDT, CUSTOM_XML):
            content = child.find(SDT_CONTENT) if child.tag == SDT else child
            if content is not None:
                yield from _nested(content, tag)


_NO_PROPS: dict = {}
TBL_HEADER, GRID_BEFORE, GRID_SPAN, V_MERGE, H_MERGE = w("tblHeader"), w("gridBefore"), w("gridSpan"), w("vMerge"), w("hMerge")


def _child(el: etree._Element, tag: str) -> etree._Element | None:
    """The first child with this tag among the first few (properties come first)."""
    for i, child in enumerate(el):
        if child.tag == tag:
            return child
        if i >= 2:
            return None
    return None


def _rows(tbl: etree._Element) -> Iterator[etree._Element]:
    return _nested(tbl, TR)


def _cells(tr: etree._Element) -> Iterator[etree._Element]:
    return _nested(tr, TC)


def _drawing_items(el: etree._Element) -> Iterator[tuple[str, etree._Element]]:
    """Images (``a:blip``) and text boxes in a DrawingML graphic, in order."""
    for child in el:
        tag = child.tag
        if tag == A_BLIP:
            yield "image", child
        elif tag == TXBX_CONTENT:
            yield "textbox", child
        elif tag == MC_AC:
            branch = choose_branch(child)
            if branch is not None:
                yield from _drawing_items(branch)
        elif isinstance(tag, str):
            yield from _drawing_items(child)


def _vml_items(el: etree._Element) -> Iterator[tuple[str, etree._Element]]:
    for child in el:
        tag = child.tag
        if tag == V_IMAGEDATA:
            yield "image", child
        elif tag == TXBX_CONTENT:
            yield "textbox", child
        elif isinstance(tag, str):
            yield from _vml_items(child)


def _picture_alt(blip: etree._Element) -> str:
    pic = blip.getparent()
    pic = pic.getparent() if pic is not None else None
    if pic is None or pic.tag != PIC_PIC:
        return ""
    cnv = pic.find(f"{{{PIC}}}nvPicPr/{{{PIC}}}cNvPr")
    return (cnv.get("descr") or "").strip() if cnv is not None else ""
