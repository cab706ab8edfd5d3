"""Small DOCX files written by hand for locate tests: the structures a cited
passage hides in — headings, numbered lists, tables with long cells, nested
tables, text boxes, footnotes — as raw WordprocessingML, with no dependency on
the renderer under test.

    make_docx(tmp_path / "x.docx", [heading("Intro"), para("Text."), table([["a", "b"]])])

Each helper returns a body XML string; ``make_docx`` zips them with styles
(Heading 1–3 with outline levels), one decimal numbering and footnotes.
"""

import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

W_NS = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)


def run(text: str, bold: bool = False) -> str:
    props = "<w:rPr><w:b/></w:rPr>" if bold else ""
    return f'<w:r>{props}<w:t xml:space="preserve">{escape(text)}</w:t></w:r>'


def para(*parts: str, style: str | None = None, numbered: bool = False) -> str:
    """A paragraph; ``parts`` are plain strings or ``run``/``footnote`` XML."""
    ppr = ""
    if style or numbered:
        ppr = "<w:pPr>"
        if style:
            ppr += f'<w:pStyle w:val="{style}"/>'
        if numbered:
            ppr += '<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>'
        ppr += "</w:pPr>"
    body = "".join(p if p.startswith("<") else run(p) for p in parts)
    return f"<w:p>{ppr}{body}</w:p>"


def heading(text: str, level: int = 1) -> str:
    return para(text, style=f"Heading{level}")


def footnote(note_id: int) -> str:
    return f'<w:r><w:rPr><w:vertAlign w:val="superscript"/></w:rPr><w:footnoteReference w:id="{note_id}"/></w:r>'


def text_box(*paragraphs: str) -> str:
    """A paragraph holding a floating text box (the DrawingML branch and its VML fallback)."""
    inner = "".join(paragraphs)
    drawing = (
        '<w:drawing><wp:anchor distT="0" distB="0" distL="0" distR="0" simplePos="0" relativeHeight="1" behindDoc="0" '
        'locked="0" layoutInCell="1" allowOverlap="1"><wp:simplePos x="0" y="0"/><wp:positionH relativeFrom="column">'
        '<wp:posOffset>0</wp:posOffset></wp:positionH><wp:positionV relativeFrom="paragraph"><wp:posOffset>0</wp:posOffset>'
        '</wp:positionV><wp:extent cx="2000000" cy="800000"/><wp:wrapNone/><wp:docPr id="9" name="Text Box 9"/>'
        '<a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"><wps:wsp>'
        f'<wps:cNvSpPr txBox="1"/><wps:spPr/><wps:txbx><w:txbxContent>{inner}</w:txbxContent></wps:txbx><wps:bodyPr/>'
        "</wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing>"
    )
    fallback = f'<w:pict><v:shape style="width:160pt;height:60pt"><v:textbox><w:txbxContent>{inner}</w:txbxContent></v:textbox></v:shape></w:pict>'
    return f"<w:p><w:r><mc:AlternateContent><mc:Choice Requires=\"wps\">{drawing}</mc:Choice><mc:Fallback>{fallback}</mc:Fallback></mc:AlternateContent></w:r></w:p>"


def table(rows: list[list], widths: int = 4000) -> str:
    """A table; a cell is a string (one paragraph), a list of body XML strings
    (several paragraphs, or a nested ``table``)."""
    out = ["<w:tbl><w:tblPr><w:tblW w:w=\"0\" w:type=\"auto\"/></w:tblPr>"]
    out.append("<w:tblGrid>" + "".join(f'<w:gridCol w:w="{widths}"/>' for _ in rows[0]) + "</w:tblGrid>")
    for row in rows:
        out.append("<w:tr>")
        for cell in row:
            content = para(cell) if isinstance(cell, str) else "".join(cell)
            if not content.endswith("</w:p>"):
                content += "<w:p/>"  # a cell ends with a paragraph
            out.append(f'<w:tc><w:tcPr><w:tcW w:w="{widths}" w:type="dxa"/></w:tcPr>{content}</w:tc>')
        out.append("</w:tr>")
    out.append("</w:tbl>")
    return "".join(out)


_STYLES = (
    f"<w:styles {W_NS}>"
    '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
    + "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{n}"><w:name w:val="heading {n}"/><w:basedOn w:val="Normal"/>'
        f'<w:pPr><w:outlineLvl w:val="{n - 1}"/></w:pPr><w:rPr><w:b/></w:rPr></w:style>'
        for n in (1, 2, 3)
    )
    + "</w:styles>"
)
_NUMBERING = (
    f"<w:numbering {W_NS}>"
    '<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
    '<w:lvlText w:val="%1."/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
    "</w:numbering>"
)


def make_docx(path: Path | str, body: list[str], footnotes: dict[int, str] | None = None) -> Path:
    path = Path(path)
    notes = "".join(f'<w:footnote w:id="{i}">{para(text)}</w:footnote>' for i, text in (footnotes or {}).items())
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
            '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
            '<Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>'
            '<Override PartName="/word/footnotes.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"/>'
            "</Types>"
        ),
        "_rels/.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
            "</Relationships>"
        ),
        "word/_rels/document.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>'
            '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/>'
            '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes" Target="footnotes.xml"/>'
            "</Relationships>"
        ),
        "word/document.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W_NS}><w:body>{"".join(body)}</w:body></w:document>',
        "word/styles.xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' + _STYLES,
        "word/numbering.xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' + _NUMBERING,
        "word/footnotes.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:footnotes {W_NS}>'
            '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
            f"{notes}</w:footnotes>"
        ),
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return path
