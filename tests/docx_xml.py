"""DOCX packages written as raw WordprocessingML (a part's XML by hand, for
the cases a word processor would never write), and the blocks our DOCX
renderer makes of them."""

import zipfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

import lxml.html

from mnote.preview.docx_render import render_docx

NAMESPACES = {
    "w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "m": "http://schemas.openxmlformats.org/officeDocument/2006/math",
    "w14": "http://schemas.microsoft.com/office/word/2010/wordml",
    "mc": "http://schemas.openxmlformats.org/markup-compatibility/2006",
    "wp": "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "pic": "http://schemas.openxmlformats.org/drawingml/2006/picture",
    "wps": "http://schemas.microsoft.com/office/word/2010/wordprocessingShape",
    "v": "urn:schemas-microsoft-com:vml",
    "o": "urn:schemas-microsoft-com:office:office",
}


XMLNS = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in NAMESPACES.items())

REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def package_rels(main: str = "word/document.xml") -> str:
    return (
        f'<Relationships xmlns="{PKG_REL}">'
        f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="{main}"/></Relationships>'
    )


def make_docx(
    path: Path,
    body: str = "",
    *,
    styles: str | None = None,
    numbering: str | None = None,
    footnotes: str | None = None,
    endnotes: str | None = None,
    rels: tuple[tuple[str, str, str, bool], ...] = (),
    files: dict[str, bytes] | None = None,
    document: str | None = None,
) -> Path:
    """A DOCX with ``body`` inside w:body, plus the parts asked for.
    ``rels`` are (id, type, target, external) of the main part."""
    parts = {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
        "_rels/.rels": package_rels(),
        "word/document.xml": document or f"<w:document {XMLNS}><w:body>{body}</w:body></w:document>",
    }
    all_rels = list(rels)
    for rel_id, kind, xml, root in (
        ("rSt", "styles", styles, "styles"),
        ("rNum", "numbering", numbering, "numbering"),
        ("rFn", "footnotes", footnotes, "footnotes"),
        ("rEn", "endnotes", endnotes, "endnotes"),
    ):
        if xml is not None:
            parts[f"word/{kind}.xml"] = f"<w:{root} {XMLNS}>{xml}</w:{root}>"
            all_rels.append((rel_id, kind, f"{kind}.xml", False))
    parts["word/_rels/document.xml.rels"] = (
        f'<Relationships xmlns="{PKG_REL}">'
        + "".join(
            f'<Relationship Id="{i}" Type="{REL}/{t}" Target={quoteattr(target)}'
            + (' TargetMode="External"/>' if ext else "/>")
            for i, t, target, ext in all_rels
        )
        + "</Relationships>"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, xml in parts.items():
            archive.writestr(name, xml.encode("utf-8") if isinstance(xml, str) else xml)
        for name, data in (files or {}).items():
            archive.writestr(name, data)
    return path


def p(*runs: str, ppr: str = "", para_id: str | None = None) -> str:
    attr = f' w14:paraId="{para_id}"' if para_id else ""
    return f"<w:p{attr}>{f'<w:pPr>{ppr}</w:pPr>' if ppr else ''}{''.join(runs)}</w:p>"


def r(text: str, rpr: str = "") -> str:
    return f'<w:r>{f"<w:rPr>{rpr}</w:rPr>" if rpr else ""}<w:t xml:space="preserve">{text}</w:t></w:r>'


def blocks(html: str) -> list[lxml.html.HtmlElement]:
    root = lxml.html.fragment_fromstring(html)
    return [el for el in root.iter() if el.get("data-block-index") is not None]


def texts(html: str) -> list[str]:
    return [" ".join(el.text_content().split()) for el in blocks(html)]


def render(tmp_path: Path, body: str = "", **parts) -> str:
    return render_docx(make_docx(tmp_path / "t.docx", body, **parts)).html


def drawing(rel_attr: str, descr: str) -> str:
    return (
        f'<w:r><w:drawing><wp:inline><wp:extent cx="952500" cy="476250"/><wp:docPr id="1" name="P" descr="{descr}"/>'
        '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">'
        f"<pic:pic><pic:blipFill><a:blip {rel_attr}/></pic:blipFill></pic:pic>"
        "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"
    )
