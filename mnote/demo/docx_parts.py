"""The parts of a .docx package that do not depend on the body: styles,
settings, document properties, content types and the package's
relationships, with the namespaces every part declares."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

if TYPE_CHECKING:
    from .docx_model import Document

NS = {
    "w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "m": "http://schemas.openxmlformats.org/officeDocument/2006/math",
    "mc": "http://schemas.openxmlformats.org/markup-compatibility/2006",
    "w14": "http://schemas.microsoft.com/office/word/2010/wordml",
}
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
CT_WML = "application/vnd.openxmlformats-officedocument.wordprocessingml"


def ns(*prefixes: str) -> str:
    return " ".join(f'xmlns:{p}="{NS[p]}"' for p in prefixes)


def xml_part(body: str) -> str:
    return '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' + body


def styles_xml(language: str) -> str:
    def heading(level: int, size: int, before: int) -> str:
        return (
            f'<w:style w:type="paragraph" w:styleId="Heading{level}">'
            f'<w:name w:val="heading {level}"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/>'
            f'<w:link w:val="Heading{level}Char"/><w:uiPriority w:val="9"/>'
            + ("<w:unhideWhenUsed/>" if level > 1 else "")
            + "<w:qFormat/>"
            f'<w:pPr><w:keepNext/><w:keepLines/><w:spacing w:before="{before}" w:after="120"/>'
            f'<w:outlineLvl w:val="{level - 1}"/></w:pPr>'
            f'<w:rPr><w:b/><w:bCs/><w:color w:val="1F3864"/><w:sz w:val="{size}"/><w:szCs w:val="{size}"/></w:rPr>'
            "</w:style>"
            f'<w:style w:type="character" w:customStyle="1" w:styleId="Heading{level}Char">'
            f'<w:name w:val="Heading {level} Char"/><w:basedOn w:val="DefaultParagraphFont"/>'
            f'<w:link w:val="Heading{level}"/><w:uiPriority w:val="9"/>'
            f'<w:rPr><w:b/><w:bCs/><w:color w:val="1F3864"/><w:sz w:val="{size}"/><w:szCs w:val="{size}"/></w:rPr>'
            "</w:style>"
        )

    border = 'w:val="single" w:sz="4" w:space="0" w:color="808080"'
    return xml_part(
        f'<w:styles {ns("w", "mc", "w14")} mc:Ignorable="w14">'
        "<w:docDefaults><w:rPrDefault><w:rPr>"
        '<w:rFonts w:ascii="Calibri" w:eastAsia="SimSun" w:hAnsi="Calibri" w:cs="Times New Roman"/>'
        '<w:sz w:val="22"/><w:szCs w:val="22"/>'
        f'<w:lang w:val="{language}" w:eastAsia="zh-CN" w:bidi="ar-SA"/>'
        "</w:rPr></w:rPrDefault><w:pPrDefault><w:pPr>"
        '<w:spacing w:after="160" w:line="259" w:lineRule="auto"/>'
        "</w:pPr></w:pPrDefault></w:docDefaults>"
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>'
        '<w:style w:type="character" w:default="1" w:styleId="DefaultParagraphFont">'
        '<w:name w:val="Default Paragraph Font"/><w:uiPriority w:val="1"/><w:semiHidden/><w:unhideWhenUsed/></w:style>'
        '<w:style w:type="table" w:default="1" w:styleId="TableNormal"><w:name w:val="Normal Table"/>'
        '<w:uiPriority w:val="99"/><w:semiHidden/><w:unhideWhenUsed/><w:tblPr><w:tblInd w:w="0" w:type="dxa"/>'
        '<w:tblCellMar><w:top w:w="0" w:type="dxa"/><w:left w:w="108" w:type="dxa"/>'
        '<w:bottom w:w="0" w:type="dxa"/><w:right w:w="108" w:type="dxa"/></w:tblCellMar></w:tblPr></w:style>'
        '<w:style w:type="numbering" w:default="1" w:styleId="NoList"><w:name w:val="No List"/>'
        '<w:uiPriority w:val="99"/><w:semiHidden/><w:unhideWhenUsed/></w:style>'
        + heading(1, 32, 360)
        + heading(2, 26, 240)
        + heading(3, 24, 200)
        + '<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/>'
        '<w:next w:val="Normal"/><w:uiPriority w:val="10"/><w:qFormat/>'
        '<w:pPr><w:spacing w:after="240"/><w:contextualSpacing/></w:pPr>'
        '<w:rPr><w:kern w:val="28"/><w:sz w:val="48"/><w:szCs w:val="48"/></w:rPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/>'
        '<w:basedOn w:val="Normal"/><w:uiPriority w:val="34"/><w:qFormat/>'
        '<w:pPr><w:spacing w:after="60"/><w:ind w:left="720"/><w:contextualSpacing/></w:pPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="Caption"><w:name w:val="caption"/><w:basedOn w:val="Normal"/>'
        '<w:next w:val="Normal"/><w:uiPriority w:val="35"/><w:unhideWhenUsed/><w:qFormat/>'
        '<w:pPr><w:spacing w:after="120"/></w:pPr>'
        '<w:rPr><w:i/><w:iCs/><w:color w:val="44546A"/><w:sz w:val="18"/><w:szCs w:val="18"/></w:rPr></w:style>'
        '<w:style w:type="character" w:styleId="Hyperlink"><w:name w:val="Hyperlink"/>'
        '<w:basedOn w:val="DefaultParagraphFont"/><w:uiPriority w:val="99"/><w:unhideWhenUsed/>'
        '<w:rPr><w:color w:val="0563C1"/><w:u w:val="single"/></w:rPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="FootnoteText"><w:name w:val="footnote text"/>'
        '<w:basedOn w:val="Normal"/><w:link w:val="FootnoteTextChar"/><w:uiPriority w:val="99"/>'
        '<w:semiHidden/><w:unhideWhenUsed/><w:pPr><w:spacing w:after="0" w:line="240" w:lineRule="auto"/></w:pPr>'
        '<w:rPr><w:sz w:val="20"/><w:szCs w:val="20"/></w:rPr></w:style>'
        '<w:style w:type="character" w:customStyle="1" w:styleId="FootnoteTextChar">'
        '<w:name w:val="Footnote Text Char"/><w:basedOn w:val="DefaultParagraphFont"/>'
        '<w:link w:val="FootnoteText"/><w:uiPriority w:val="99"/><w:semiHidden/>'
        '<w:rPr><w:sz w:val="20"/><w:szCs w:val="20"/></w:rPr></w:style>'
        '<w:style w:type="character" w:styleId="FootnoteReference"><w:name w:val="footnote reference"/>'
        '<w:basedOn w:val="DefaultParagraphFont"/><w:uiPriority w:val="99"/><w:semiHidden/><w:unhideWhenUsed/>'
        '<w:rPr><w:vertAlign w:val="superscript"/></w:rPr></w:style>'
        '<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/>'
        '<w:basedOn w:val="TableNormal"/><w:uiPriority w:val="39"/>'
        '<w:pPr><w:spacing w:after="0" w:line="240" w:lineRule="auto"/></w:pPr>'
        f"<w:tblPr><w:tblBorders><w:top {border}/><w:left {border}/><w:bottom {border}/>"
        f"<w:right {border}/><w:insideH {border}/><w:insideV {border}/></w:tblBorders></w:tblPr></w:style>"
        "</w:styles>"
    )


def settings_xml(language: str) -> str:
    return xml_part(
        f'<w:settings {ns("w", "m", "mc", "w14")} mc:Ignorable="w14">'
        '<w:zoom w:percent="100"/><w:defaultTabStop w:val="720"/>'
        '<w:characterSpacingControl w:val="doNotCompress"/>'
        '<w:footnotePr><w:footnote w:id="-1"/><w:footnote w:id="0"/></w:footnotePr>'
        # compatibilityMode 14 is what makes Word treat the file as Word 2010
        # rather than opening it in compatibility mode.
        '<w:compat><w:compatSetting w:name="compatibilityMode" '
        'w:uri="http://schemas.microsoft.com/office/word" w:val="14"/></w:compat>'
        '<m:mathPr><m:mathFont m:val="Cambria Math"/><m:brkBin m:val="before"/>'
        '<m:brkBinSub m:val="--"/><m:smallFrac m:val="0"/><m:dispDef/><m:lMargin m:val="0"/>'
        '<m:rMargin m:val="0"/><m:defJc m:val="centerGroup"/><m:wrapIndent m:val="1440"/>'
        '<m:intLim m:val="subSup"/><m:naryLim m:val="undOvr"/></m:mathPr>'
        f'<w:themeFontLang w:val="{language}" w:eastAsia="zh-CN"/>'
        '<w:decimalSymbol w:val="."/><w:listSeparator w:val=","/>'
        "</w:settings>"
    )


def core_xml(doc: Document) -> str:
    def elem(tag: str, value: str) -> str:
        return f"<{tag}>{escape(value)}</{tag}>" if value else ""

    return xml_part(
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:dcmitype="http://purl.org/dc/dcmitype/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        + elem("dc:title", doc.title)
        + elem("dc:subject", doc.subject)
        + elem("dc:creator", doc.author)
        + elem("cp:keywords", doc.keywords)
        + elem("dc:description", doc.description)
        + elem("cp:lastModifiedBy", doc.author)
        + elem("dc:language", doc.language)
        + f'<dcterms:created xsi:type="dcterms:W3CDTF">{doc.created}</dcterms:created>'
        + f'<dcterms:modified xsi:type="dcterms:W3CDTF">{doc.created}</dcterms:modified>'
        + "</cp:coreProperties>"
    )


def app_xml() -> str:
    return xml_part(
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" '
        'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        "<Application>MNote docx_writer</Application><DocSecurity>0</DocSecurity>"
        "<AppVersion>14.0000</AppVersion></Properties>"
    )


def content_types_xml() -> str:
    overrides = [
        ("/word/document.xml", f"{CT_WML}.document.main+xml"),
        ("/word/styles.xml", f"{CT_WML}.styles+xml"),
        ("/word/settings.xml", f"{CT_WML}.settings+xml"),
        ("/word/numbering.xml", f"{CT_WML}.numbering+xml"),
        ("/word/footnotes.xml", f"{CT_WML}.footnotes+xml"),
        ("/docProps/core.xml", "application/vnd.openxmlformats-package.core-properties+xml"),
        ("/docProps/app.xml", "application/vnd.openxmlformats-officedocument.extended-properties+xml"),
    ]
    return xml_part(
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        + "".join(f'<Override PartName="{p}" ContentType="{ct}"/>' for p, ct in overrides)
        + "</Types>"
    )


def package_rels() -> str:
    return xml_part(
        f'<Relationships xmlns="{PKG_REL}">'
        f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/>'
        f'<Relationship Id="rId2" Type="{PKG_REL}/metadata/core-properties" Target="docProps/core.xml"/>'
        f'<Relationship Id="rId3" Type="{REL}/extended-properties" Target="docProps/app.xml"/>'
        "</Relationships>"
    )
