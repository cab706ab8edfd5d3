"""A tiny, dependency-free writer for Word 2010+ (.docx) files.

The demo library needs DOCX files that exercise the parts of WordprocessingML
our ingestion and preview code must cope with (real heading styles, lists,
tables with merged cells, OMML equations, footnotes, hyperlinks, w14 paragraph
ids), and it needs them to be reproducible byte for byte so the checked-in
copies can be verified by a test. Hand-writing the XML keeps every one of those
features under our control instead of depending on a third-party generator's
defaults.

Usage::

    doc = Document(title="Manual", blocks=[
        Heading("Introduction", 1),
        Paragraph("Plain text, ", Text("bold", bold=True), Footnote("A note.")),
        BulletList(["one", "two"]),
        Equation(("SNR", "=", frac("S", sqrt(("S", "+", "B"))))),
    ])
    write_docx(doc, "manual.docx")
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from .docx_model import (
    Block,
    BulletList,
    Cell,
    Document,
    Equation,
    Footnote,
    Heading,
    Inline,
    InlineContent,
    Link,
    Math,
    MathExpr,
    MathNode,
    NumberedList,
    Paragraph,
    PlainRun,
    Table,
    Text,
    delim,
    frac,
    plain,
    sqrt,
    sub,
    subsup,
    sup,
)
from .docx_parts import (
    PKG_REL,
    REL,
    app_xml,
    content_types_xml,
    core_xml,
    ns,
    package_rels,
    settings_xml,
    styles_xml,
    xml_part,
)

__all__ = [
    "BulletList",
    "Cell",
    "Document",
    "Equation",
    "Footnote",
    "Heading",
    "Link",
    "Math",
    "NumberedList",
    "Paragraph",
    "Table",
    "Text",
    "build_docx",
    "delim",
    "frac",
    "plain",
    "sqrt",
    "sub",
    "subsup",
    "sup",
    "write_docx",
]

# A4 with 1-inch margins, in twentieths of a point.
PAGE_WIDTH, PAGE_HEIGHT, MARGIN = 11906, 16838, 1440
TEXT_WIDTH = PAGE_WIDTH - 2 * MARGIN

# Zip entries get a fixed timestamp so regenerating yields identical bytes.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

_MATH_RPR = '<w:rPr><w:rFonts w:ascii="Cambria Math" w:hAnsi="Cambria Math"/></w:rPr>'


def _math_xml(expr: MathExpr) -> str:
    if isinstance(expr, str):
        return f'<m:r>{_MATH_RPR}<m:t xml:space="preserve">{escape(expr)}</m:t></m:r>'
    if isinstance(expr, PlainRun):
        return (
            f'<m:r><m:rPr><m:sty m:val="p"/></m:rPr>{_MATH_RPR}'
            f'<m:t xml:space="preserve">{escape(expr.text)}</m:t></m:r>'
        )
    if isinstance(expr, tuple):
        return "".join(_math_xml(part) for part in expr)
    if not isinstance(expr, MathNode):
        raise TypeError(f"not a math expression: {expr!r}")

    def wrap(tag: str, part: MathExpr) -> str:
        return f"<m:{tag}>{_math_xml(part)}</m:{tag}>"

    ctrl = f"<m:ctrlPr>{_MATH_RPR}</m:ctrlPr>"
    if expr.kind == "f":
        num, den = expr.parts
        return f"<m:f><m:fPr>{ctrl}</m:fPr>{wrap('num', num)}{wrap('den', den)}</m:f>"
    if expr.kind == "rad":
        (radicand,) = expr.parts
        return f'<m:rad><m:radPr><m:degHide m:val="1"/>{ctrl}</m:radPr><m:deg/>{wrap("e", radicand)}</m:rad>'
    if expr.kind == "d":
        (inner,) = expr.parts
        return f"<m:d><m:dPr>{ctrl}</m:dPr>{wrap('e', inner)}</m:d>"
    if expr.kind == "sSub":
        base, subscript = expr.parts
        return f"<m:sSub><m:sSubPr>{ctrl}</m:sSubPr>{wrap('e', base)}{wrap('sub', subscript)}</m:sSub>"
    if expr.kind == "sSup":
        base, superscript = expr.parts
        return f"<m:sSup><m:sSupPr>{ctrl}</m:sSupPr>{wrap('e', base)}{wrap('sup', superscript)}</m:sSup>"
    if expr.kind == "sSubSup":
        base, subscript, superscript = expr.parts
        return (
            f"<m:sSubSup><m:sSubSupPr>{ctrl}</m:sSubSupPr>{wrap('e', base)}"
            f"{wrap('sub', subscript)}{wrap('sup', superscript)}</m:sSubSup>"
        )
    raise ValueError(f"unknown math node {expr.kind!r}")


def _math_text(expr: MathExpr) -> str:
    """Linear text of an expression; only used to derive stable paragraph ids."""
    if isinstance(expr, str):
        return expr
    if isinstance(expr, PlainRun):
        return expr.text
    if isinstance(expr, tuple):
        return "".join(_math_text(p) for p in expr)
    return expr.kind + "(" + ",".join(_math_text(p) for p in expr.parts) + ")"


# --------------------------------------------------------------------------
# Paragraph ids
# --------------------------------------------------------------------------


class _ParaIds:
    """Hands out w14:paraId / w14:textId pairs.

    Ids are derived from the paragraph's own text (plus an occurrence counter
    for repeated text) rather than its position, so editing one paragraph of a
    demo document does not renumber every paragraph after it; citation anchors
    recorded against an older build keep pointing at the same passages.
    MS-DOCX requires both values to be below 0x80000000.
    """

    def __init__(self, seed: str):
        self._seed = seed
        self._seen_keys: Counter[str] = Counter()
        self._used: set[int] = set()

    def _draw(self, material: str) -> str:
        attempt = 0
        while True:
            digest = hashlib.sha256(f"{self._seed}\x00{material}\x00{attempt}".encode()).digest()
            value = int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
            if value and value not in self._used:
                self._used.add(value)
                return f"{value:08X}"
            attempt += 1

    def attrs(self, key: str) -> str:
        occurrence = self._seen_keys[key]
        self._seen_keys[key] += 1
        para_id = self._draw(f"para\x00{key}\x00{occurrence}")
        text_id = self._draw(f"text\x00{key}\x00{occurrence}")
        return f' w14:paraId="{para_id}" w14:textId="{text_id}"'


# --------------------------------------------------------------------------
# document.xml rendering
# --------------------------------------------------------------------------


def _t(text: str) -> str:
    return f'<w:t xml:space="preserve">{escape(text)}</w:t>'


def _as_inlines(content: InlineContent) -> tuple[Inline, ...]:
    if isinstance(content, (str, Text, Link, Footnote, Math)):
        return (content,)
    return tuple(content)


def _inline_key(inlines: Iterable[Inline]) -> str:
    parts = []
    for item in inlines:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, (Text, Link)):
            parts.append(item.text)
        elif isinstance(item, Footnote):
            parts.append("[^]")
        elif isinstance(item, Math):
            parts.append(_math_text(item.expr))
    return "".join(parts)


class _Renderer:
    def __init__(self, doc: Document):
        self.doc = doc
        self.ids = _ParaIds(doc.title)
        # rId1..rId4 are the fixed parts (styles, settings, numbering, footnotes).
        self.hyperlinks: dict[str, str] = {}
        self.footnotes: list[str] = []
        self.numbered_lists = 0

    # -- inlines -------------------------------------------------------------

    def _run(self, item: Inline) -> str:
        if isinstance(item, str):
            return f"<w:r>{_t(item)}</w:r>"
        if isinstance(item, Text):
            props = ""
            if item.code:
                props += '<w:rFonts w:ascii="Consolas" w:hAnsi="Consolas" w:cs="Consolas"/>'
            if item.bold:
                props += "<w:b/><w:bCs/>"
            if item.italic:
                props += "<w:i/><w:iCs/>"
            rpr = f"<w:rPr>{props}</w:rPr>" if props else ""
            return f"<w:r>{rpr}{_t(item.text)}</w:r>"
        if isinstance(item, Link):
            rel_id = self.hyperlinks.setdefault(item.url, f"rId{5 + len(self.hyperlinks)}")
            return (
                f'<w:hyperlink r:id="{rel_id}" w:history="1"><w:r><w:rPr>'
                f'<w:rStyle w:val="Hyperlink"/></w:rPr>{_t(item.text)}</w:r></w:hyperlink>'
            )
        if isinstance(item, Footnote):
            # Ids -1 and 0 are reserved for the separator notes.
            note_id = len(self.footnotes) + 1
            self.footnotes.append(self._footnote_xml(note_id, item.text))
            return (
                '<w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr>'
                f'<w:footnoteReference w:id="{note_id}"/></w:r>'
            )
        if isinstance(item, Math):
            return f"<m:oMath>{_math_xml(item.expr)}</m:oMath>"
        raise TypeError(f"not an inline: {item!r}")

    def _runs(self, inlines: Iterable[Inline]) -> str:
        return "".join(self._run(item) for item in inlines)

    def _footnote_xml(self, note_id: int, text: str) -> str:
        attrs = self.ids.attrs(f"footnote\x00{text}")
        return (
            f'<w:footnote w:id="{note_id}"><w:p{attrs}><w:pPr><w:pStyle w:val="FootnoteText"/></w:pPr>'
            '<w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:footnoteRef/></w:r>'
            f"<w:r>{_t(' ' + text)}</w:r></w:p></w:footnote>"
        )

    def _paragraph(self, inlines: tuple[Inline, ...], ppr: str = "", key_prefix: str = "p") -> str:
        attrs = self.ids.attrs(f"{key_prefix}\x00{_inline_key(inlines)}")
        ppr_xml = f"<w:pPr>{ppr}</w:pPr>" if ppr else ""
        return f"<w:p{attrs}>{ppr_xml}{self._runs(inlines)}</w:p>"

    # -- blocks --------------------------------------------------------------

    def block(self, block: Block) -> str:
        if isinstance(block, Heading):
            if block.level not in (1, 2, 3):
                raise ValueError("headings support levels 1-3")
            return self._paragraph((block.text,), f'<w:pStyle w:val="Heading{block.level}"/>', f"h{block.level}")
        if isinstance(block, Paragraph):
            ppr = f'<w:pStyle w:val="{block.style}"/>' if block.style else ""
            return self._paragraph(block.content, ppr)
        if isinstance(block, BulletList):
            return self._list(block.items, num_id=1)
        if isinstance(block, NumberedList):
            # Each numbered list gets its own w:num (ids 2, 3, ...) so it
            # restarts at 1 instead of continuing the previous list.
            self.numbered_lists += 1
            return self._list(block.items, num_id=1 + self.numbered_lists)
        if isinstance(block, Table):
            return self._table(block)
        if isinstance(block, Equation):
            attrs = self.ids.attrs(f"eq\x00{_math_text(block.expr)}")
            return f"<w:p{attrs}><m:oMathPara><m:oMath>{_math_xml(block.expr)}</m:oMath></m:oMathPara></w:p>"
        raise TypeError(f"not a block: {block!r}")

    def _list(self, items: Sequence[InlineContent], num_id: int) -> str:
        ppr = f'<w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="{num_id}"/></w:numPr>'
        return "".join(self._paragraph(_as_inlines(item), ppr, "li") for item in items)

    def _table(self, table: Table) -> str:
        header = [c if isinstance(c, Cell) else Cell(c, bold=True) for c in table.header]
        rows = [[c if isinstance(c, Cell) else Cell(c) for c in row] for row in table.rows]
        columns = sum(c.span for c in header)
        for row in rows:
            if sum(c.span for c in row) != columns:
                raise ValueError(f"table row spans {sum(c.span for c in row)} of {columns} columns")
        weights = list(table.widths or [1] * columns)
        if len(weights) != columns:
            raise ValueError("one width per grid column is required")
        widths = [TEXT_WIDTH * w // sum(weights) for w in weights]
        widths[-1] += TEXT_WIDTH - sum(widths)

        out = []
        if table.caption:
            out.append(self._paragraph((table.caption,), '<w:pStyle w:val="Caption"/><w:keepNext/>', "cap"))
        out.append(
            "<w:tbl><w:tblPr>"
            '<w:tblStyle w:val="TableGrid"/>'
            f'<w:tblW w:w="{TEXT_WIDTH}" w:type="dxa"/>'
            '<w:tblLook w:val="04A0" w:firstRow="1" w:lastRow="0" w:firstColumn="1" '
            'w:lastColumn="0" w:noHBand="0" w:noVBand="1"/>'
            "</w:tblPr><w:tblGrid>" + "".join(f'<w:gridCol w:w="{w}"/>' for w in widths) + "</w:tblGrid>"
        )
        for index, row in enumerate([header, *rows]):
            trpr = "<w:trPr><w:tblHeader/></w:trPr>" if index == 0 else ""
            out.append(f"<w:tr>{trpr}")
            column = 0
            for cell in row:
                width = sum(widths[column : column + cell.span])
                column += cell.span
                tcpr = f'<w:tcW w:w="{width}" w:type="dxa"/>'
                if cell.span > 1:
                    tcpr += f'<w:gridSpan w:val="{cell.span}"/>'
                if cell.merge == "restart":
                    tcpr += '<w:vMerge w:val="restart"/>'
                elif cell.merge == "continue":
                    tcpr += "<w:vMerge/>"
                elif cell.merge is not None:
                    raise ValueError(f"unknown vertical merge {cell.merge!r}")
                inlines = _as_inlines(cell.content)
                if cell.bold:
                    inlines = tuple(Text(i, bold=True) if isinstance(i, str) else i for i in inlines)
                out.append(f"<w:tc><w:tcPr>{tcpr}</w:tcPr>{self._paragraph(inlines, '', 'td')}</w:tc>")
            out.append("</w:tr>")
        out.append("</w:tbl>")
        return "".join(out)

    def document_xml(self) -> str:
        parts = []
        blocks = self.doc.blocks
        for index, block in enumerate(blocks):
            parts.append(self.block(block))
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            # Word fuses adjacent tables into one and insists on a paragraph
            # between a final table and sectPr; an empty spacer avoids both.
            if isinstance(block, Table) and (following is None or isinstance(following, Table)):
                parts.append(self._paragraph((), "", "after-table"))
        body = "".join(parts)
        sect = (
            f'<w:sectPr><w:pgSz w:w="{PAGE_WIDTH}" w:h="{PAGE_HEIGHT}"/>'
            f'<w:pgMar w:top="{MARGIN}" w:right="{MARGIN}" w:bottom="{MARGIN}" w:left="{MARGIN}" '
            'w:header="708" w:footer="708" w:gutter="0"/>'
            '<w:cols w:space="708"/><w:docGrid w:linePitch="360"/></w:sectPr>'
        )
        return xml_part(
            f'<w:document {ns("w", "r", "m", "mc", "w14")} mc:Ignorable="w14">'
            f"<w:body>{body}{sect}</w:body></w:document>"
        )

    def footnotes_xml(self) -> str:
        separators = (
            f'<w:footnote w:type="separator" w:id="-1"><w:p{self.ids.attrs("sep")}>'
            '<w:pPr><w:spacing w:after="0" w:line="240" w:lineRule="auto"/></w:pPr>'
            "<w:r><w:separator/></w:r></w:p></w:footnote>"
            f'<w:footnote w:type="continuationSeparator" w:id="0"><w:p{self.ids.attrs("cont-sep")}>'
            '<w:pPr><w:spacing w:after="0" w:line="240" w:lineRule="auto"/></w:pPr>'
            "<w:r><w:continuationSeparator/></w:r></w:p></w:footnote>"
        )
        return xml_part(
            f'<w:footnotes {ns("w", "r", "m", "mc", "w14")} mc:Ignorable="w14">'
            f"{separators}{''.join(self.footnotes)}</w:footnotes>"
        )

    def numbering_xml(self) -> str:
        bullet = (
            '<w:abstractNum w:abstractNumId="0"><w:nsid w:val="1B2C3D4E"/>'
            '<w:multiLevelType w:val="hybridMultilevel"/>'
            + "".join(
                f'<w:lvl w:ilvl="{lvl}"><w:start w:val="1"/><w:numFmt w:val="bullet"/>'
                f'<w:lvlText w:val="{sym}"/><w:lvlJc w:val="left"/>'
                f'<w:pPr><w:ind w:left="{720 * (lvl + 1)}" w:hanging="360"/></w:pPr>'
                f'<w:rPr><w:rFonts w:ascii="{font}" w:hAnsi="{font}" w:hint="default"/></w:rPr></w:lvl>'
                for lvl, (sym, font) in enumerate([("\u2022", "Calibri"), ("\u25e6", "Calibri"), ("\u25aa", "Calibri")])
            )
            + "</w:abstractNum>"
        )
        decimal = (
            '<w:abstractNum w:abstractNumId="1"><w:nsid w:val="2C3D4E5F"/>'
            '<w:multiLevelType w:val="hybridMultilevel"/>'
            + "".join(
                f'<w:lvl w:ilvl="{lvl}"><w:start w:val="1"/><w:numFmt w:val="{fmt}"/>'
                f'<w:lvlText w:val="%{lvl + 1}."/><w:lvlJc w:val="left"/>'
                f'<w:pPr><w:ind w:left="{720 * (lvl + 1)}" w:hanging="360"/></w:pPr></w:lvl>'
                for lvl, fmt in enumerate(["decimal", "lowerLetter", "lowerRoman"])
            )
            + "</w:abstractNum>"
        )
        nums = '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>' + "".join(
            f'<w:num w:numId="{1 + n}"><w:abstractNumId w:val="1"/>'
            '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>'
            for n in range(1, self.numbered_lists + 1)
        )
        return xml_part(f"<w:numbering {ns('w')}>{bullet}{decimal}{nums}</w:numbering>")

    def document_rels(self) -> str:
        fixed = [
            ("rId1", f"{REL}/styles", "styles.xml"),
            ("rId2", f"{REL}/settings", "settings.xml"),
            ("rId3", f"{REL}/numbering", "numbering.xml"),
            ("rId4", f"{REL}/footnotes", "footnotes.xml"),
        ]
        rels = [f'<Relationship Id="{i}" Type="{t}" Target="{target}"/>' for i, t, target in fixed]
        rels += [
            f'<Relationship Id="{rid}" Type="{REL}/hyperlink" Target="{escape(url, {chr(34): "&quot;"})}" '
            'TargetMode="External"/>'
            for url, rid in self.hyperlinks.items()
        ]
        return xml_part(f'<Relationships xmlns="{PKG_REL}">{"".join(rels)}</Relationships>')


# --------------------------------------------------------------------------
# Packaging
# --------------------------------------------------------------------------


def build_docx(doc: Document) -> bytes:
    renderer = _Renderer(doc)
    # The body must be rendered first: it is what discovers footnotes,
    # hyperlinks and numbered lists for the other parts.
    document = renderer.document_xml()
    parts = [
        ("[Content_Types].xml", content_types_xml()),
        ("_rels/.rels", package_rels()),
        ("docProps/core.xml", core_xml(doc)),
        ("docProps/app.xml", app_xml()),
        ("word/document.xml", document),
        ("word/_rels/document.xml.rels", renderer.document_rels()),
        ("word/styles.xml", styles_xml(doc.language)),
        ("word/settings.xml", settings_xml(doc.language)),
        ("word/numbering.xml", renderer.numbering_xml()),
        ("word/footnotes.xml", renderer.footnotes_xml()),
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, xml in parts:
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            # Stored, not deflated: deflate output may differ between zlib
            # builds (zlib vs zlib-ng), which would break the byte-identical
            # regeneration check on other machines. OPC allows both methods.
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 0
            info.external_attr = 0
            archive.writestr(info, xml.encode("utf-8"))
    return buffer.getvalue()


def write_docx(doc: Document, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(build_docx(doc))
    return path
