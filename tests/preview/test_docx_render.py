"""DOCX → HTML for the preview: what real documents contain, the block
attributes the locator relies on, and hostile files."""

import io
import os
import struct
import time
import zipfile
import zlib
from pathlib import Path

import lxml.html
import pytest

from mnote.demo.docx_writer import Document, Heading, Paragraph, write_docx
from mnote.preview.docx_render import DocxRejected, Limits, load_docx_image, render_docx
from tests.measured_render import measured
from tests.paths import FIXTURES, REPO_DIR
from tests.docx_xml import PNG, REL, XMLNS, blocks, drawing, make_docx, p, package_rels, r, render, texts

DEMO = REPO_DIR / "mnote" / "demo" / "library"
# The whole real-world corpus when MNOTE_DOCX_CORPUS names it (.ci/run does),
# else the licensed subset that every clone carries.
CORPUS = Path(os.environ.get("MNOTE_DOCX_CORPUS") or FIXTURES / "corpus-docx")


def assert_block_indexes_run_in_order(html: str) -> None:
    indexes = [int(el.get("data-block-index")) for el in blocks(html)]
    assert indexes == list(range(len(indexes)))


# --- our own demo documents --------------------------------------------------


def test_it_renders_the_demo_manual_with_headings_lists_table_equation_and_footnote():
    rendered = render_docx(DEMO / "en" / "gamma-telescope-manual.docx")
    root = lxml.html.fragment_fromstring(rendered.html)

    assert rendered.title == "GAMMA Telescope Operations and Maintenance Manual"
    assert rendered.block_count == len(blocks(rendered.html)) > 50
    assert_block_indexes_run_in_order(rendered.html)
    headings = {el.text_content(): el.get("data-heading-level") for el in root.iter("h1", "h2")}
    assert headings["2. Optics"] == "1" and headings["2.1 Secondary and tertiary mirrors"] == "2"
    assert [li.text_content() for li in root.iter("li")][0].startswith("1. ")
    assert any(li.text_content().startswith("• ") for li in root.iter("li"))
    assert root.xpath("//td[@rowspan='3']") and root.xpath("//table/thead/tr/th")
    equations = [el.text_content() for el in root.find_class("docx-math")]
    assert "SNR=S/(√(S+B))" in equations
    assert any("R_S²" in text for text in equations)  # a fraction over a sub-superscript, not "RS2"
    note = root.find_class("docx-note")[0]
    assert "Zerodur is a glass-ceramic" in note.text_content() and note.get("data-block-index")
    assert root.xpath("//sup[@class='docx-noteref']/a[@href='#docx-fn-1']")
    # The demo writer gives every paragraph a w14:paraId; every block carries one.
    para_ids = [el.get("data-para-id") for el in blocks(rendered.html)]
    assert all(para_ids) and len(set(para_ids)) == len(para_ids)


def test_it_renders_the_chinese_handbook_with_both_pyrrolidine_sections():
    rendered = render_docx(DEMO / "zh" / "实验室安全手册.docx")
    block_texts = texts(rendered.html)

    assert rendered.title == "实验室安全手册"
    assert "六、吡咯烷的操作与储存" in block_texts
    early = next(i for i, text in enumerate(block_texts) if "N-甲基吡咯烷酮" in text)
    assert early < block_texts.index("六、吡咯烷的操作与储存")
    assert "1. 每日实验结束后清理个人台面并用湿抹布擦拭；溅出的试剂立即处理，不得留待次日。" in block_texts
    assert any(text.startswith("V₁=") for text in block_texts)
    assert all(el.get("data-para-id") for el in blocks(rendered.html))


def test_it_renders_ten_thousand_paragraphs_as_ten_thousand_blocks(tmp_path):
    paragraphs = [Heading(f"Part {i // 1000}", 1) if i % 1000 == 0 else Paragraph(f"Paragraph {i} of the log.")
                  for i in range(10_000)]  # fmt: skip
    path = write_docx(Document(title="Long log", blocks=paragraphs), tmp_path / "long.docx")

    started = time.monotonic()
    rendered = render_docx(path)

    assert time.monotonic() - started < 10
    assert rendered.block_count >= 10_000
    assert texts(rendered.html)[9_999] == "Paragraph 9999 of the log."


# --- the corpus of real-world files -----------------------------------------


def test_it_renders_or_rejects_every_corpus_file():
    # A corpus that was named but holds nothing is a failure, not a skip.
    files = sorted(CORPUS.glob("*.docx"))
    assert files, f"no DOCX corpus at {CORPUS} (set MNOTE_DOCX_CORPUS)"
    rendered = rejected = 0
    for path in files:
        try:
            result = render_docx(path, image_url=lambda part: f"/image?part={part}")
        except DocxRejected as e:
            assert e.message.startswith("This "), path.name
            rejected += 1
            continue
        rendered += 1
        root = lxml.html.fragment_fromstring(result.html)
        assert root.tag == "article", path.name
        assert not root.xpath("//script|//iframe|//object|//embed|//*[@onload or @onerror]"), path.name
        assert all(href.startswith(("http:", "https:", "mailto:", "#")) for href in root.xpath("//a/@href")), path.name
        assert_block_indexes_run_in_order(result.html)
        assert result.block_count == len(blocks(result.html)), path.name
    assert rendered > 0.9 * len(files)


# --- what real documents contain --------------------------------------------

STYLES = """
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="a3"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Berschrift1"><w:name w:val="Überschrift 1"/>
  <w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="MyChapter"><w:name w:val="My chapter"/><w:basedOn w:val="Berschrift1"/></w:style>
<w:style w:type="paragraph" w:styleId="Caption"><w:name w:val="caption"/></w:style>
<w:style w:type="character" w:styleId="Strong"><w:name w:val="Strong"/><w:rPr><w:b/></w:rPr></w:style>
"""


def test_it_finds_headings_through_heading_styles_only(tmp_path):
    # "Direct": an outline level set on the paragraph itself, as Word lets a
    # signature line or a form label carry; it stays body text.
    html = render(
        tmp_path,
        p(r("Chapter"), ppr='<w:pStyle w:val="MyChapter"/>')
        + p(r("Localised"), ppr='<w:pStyle w:val="a3"/>')
        + p(r("Direct"), ppr='<w:outlineLvl w:val="3"/>')
        + p(r("Body after all"), ppr='<w:pStyle w:val="Berschrift1"/><w:outlineLvl w:val="9"/>')
        + p(r("Undefined style"), ppr='<w:pStyle w:val="Heading3"/>')
        + p(r("Table 1. Caption"), ppr='<w:pStyle w:val="Caption"/>'),
        styles=STYLES,
    )
    found = [(el.tag, el.get("data-heading-level"), el.text_content()) for el in blocks(html)]

    assert found == [
        ("h1", "1", "Chapter"),
        ("h2", "2", "Localised"),
        ("p", None, "Direct"),
        ("p", None, "Body after all"),
        ("h3", "3", "Undefined style"),
        ("p", None, "Table 1. Caption"),
    ]
    assert blocks(html)[-1].get("class") == "docx-caption"


NUMBERING = """
<w:abstractNum w:abstractNumId="0">
  <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/></w:lvl>
  <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%1.%2)"/></w:lvl>
  <w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="(%3)"/>
    <w:lvlRestart w:val="1"/></w:lvl>
</w:abstractNum>
<w:abstractNum w:abstractNumId="1">
  <w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/><w:lvlText w:val="\uf0b7"/>
    <w:rPr><w:rFonts w:ascii="Symbol" w:hAnsi="Symbol"/></w:rPr></w:lvl>
</w:abstractNum>
<w:abstractNum w:abstractNumId="2">
  <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="chineseCounting"/><w:lvlText w:val="第%1章"/></w:lvl>
</w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>
<w:num w:numId="3"><w:abstractNumId w:val="0"/>
  <w:lvlOverride w:ilvl="0"><w:startOverride w:val="7"/></w:lvlOverride></w:num>
<w:num w:numId="4"><w:abstractNumId w:val="2"/></w:num>
<w:num w:numId="5"><w:abstractNumId w:val="0"/></w:num>
"""


def item(text: str, num_id: int, ilvl: int = 0) -> str:
    return p(r(text), ppr=f'<w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num_id}"/></w:numPr>')


def test_it_numbers_list_items_in_document_order(tmp_path):
    html = render(
        tmp_path,
        item("one", 1)
        + item("one-a", 1, 1)
        + item("one-a-1", 1, 2)
        + item("one-a-2", 1, 2)
        + item("one-b", 1, 1)
        + item("one-b-1 (lvlRestart 1: continues across level 2)", 1, 2)
        + item("two", 1)
        + item("two-1 (restarted by level 1)", 1, 2)
        + p(r(""), ppr='<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>')  # empty: no number used
        + item("bullet", 2)
        + p(r("Between the lists"))
        + item("restarted at seven", 3)
        + item("continues the same abstract list", 5)
        + item("first chapter", 4)
        + item("second chapter", 4),
        numbering=NUMBERING,
    )

    assert texts(html) == [
        "I. one",
        "I.a) one-a",
        "(1) one-a-1",
        "(2) one-a-2",
        "I.b) one-b",
        "(3) one-b-1 (lvlRestart 1: continues across level 2)",
        "II. two",
        "(1) two-1 (restarted by level 1)",
        "• bullet",
        "Between the lists",
        "VII. restarted at seven",
        "VIII. continues the same abstract list",
        "第一章 first chapter",
        "第二章 second chapter",
    ]
    root = lxml.html.fragment_fromstring(html)
    assert root.xpath("//ul[@class='docx-list']/li[contains(@class, 'docx-level-2')]")


def test_it_survives_absurd_numbering_values(tmp_path):
    numbering = (
        '<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="999999999999"/>'
        '<w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%1%9)"/></w:lvl></w:abstractNum>'
        '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
    )
    html = render(tmp_path, item("x", 1) + item("y", 1, ilvl=12) + item("z", 7), numbering=numbering)

    assert texts(html) == ["999999999999) x", "y", "z"]


def tc(text: str, tcpr: str = "", para_id: str | None = None) -> str:
    return (
        f"<w:tc>{f'<w:tcPr>{tcpr}</w:tcPr>' if tcpr else ''}{p(r(text), para_id=para_id) if text else '<w:p/>'}</w:tc>"
    )


def test_it_renders_merged_cells_header_rows_and_nested_tables(tmp_path):
    nested = f"<w:tbl><w:tr>{tc('inner')}</w:tr></w:tbl>"
    html = render(
        tmp_path,
        "<w:tbl>"
        f"<w:tr><w:trPr><w:tblHeader/></w:trPr>{tc('Name', para_id='0000000A')}{tc('Value', '<w:gridSpan w:val="2"/>')}</w:tr>"
        f"<w:tr>{tc('merged down', '<w:vMerge w:val="restart"/>')}{tc('b')}{tc('c')}</w:tr>"
        f"<w:tr>{tc('', '<w:vMerge/>')}{tc('e')}<w:tc><w:p><w:r><w:t>f</w:t></w:r></w:p>{nested}<w:p/></w:tc></w:tr>"
        "<w:sdt><w:sdtContent>"
        f"<w:tr>{tc('in a content control')}{tc('h')}{tc('i')}</w:tr>"
        "</w:sdtContent></w:sdt>"
        "</w:tbl>",
    )
    root = lxml.html.fragment_fromstring(html)

    assert [th.text_content().strip() for th in root.xpath("//thead/tr/th")] == ["Name", "Value"]
    assert root.xpath("//thead/tr/th")[1].get("colspan") == "2"
    assert root.xpath("//td[@rowspan='2']")[0].text_content().strip() == "merged down"
    assert root.xpath("//td/table//td")[0].text_content().strip() == "inner"
    assert texts(html) == ["Name", "Value", "merged down", "b", "c", "e", "f inner", "in a content control", "h", "i"]
    assert blocks(html)[0].get("data-para-id") == "0000000A"
    assert_block_indexes_run_in_order(html)


def test_it_keeps_accepted_text_of_tracked_changes(tmp_path):
    html = render(
        tmp_path,
        p(
            r("Kept "),
            '<w:del w:id="1" w:author="a"><w:r><w:delText>deleted </w:delText></w:r></w:del>',
            '<w:ins w:id="2" w:author="a">' + r("inserted ") + "</w:ins>",
            '<w:moveFrom w:id="3" w:author="a">' + r("moved away ") + "</w:moveFrom>",
            '<w:moveTo w:id="4" w:author="a">' + r("moved here") + "</w:moveTo>",
        )
        + p(r("First half, "), ppr='<w:rPr><w:del w:id="5" w:author="a"/></w:rPr>', para_id="00000001")
        + p(r("joined with the second."), para_id="00000002")
        + p('<w:del w:id="6" w:author="a"><w:r><w:delText>gone</w:delText></w:r></w:del>'),
    )

    assert texts(html) == ["Kept inserted moved here", "First half, joined with the second."]
    assert blocks(html)[1].get("data-para-id") == "00000001"


def test_it_renders_links_only_to_safe_addresses(tmp_path):
    html = render(
        tmp_path,
        p(
            '<w:hyperlink r:id="rWeb">' + r("web") + "</w:hyperlink>",
            '<w:hyperlink r:id="rJs">' + r("script") + "</w:hyperlink>",
            '<w:hyperlink r:id="rFile">' + r("file") + "</w:hyperlink>",
            '<w:hyperlink w:anchor="_Toc1">' + r("inside") + "</w:hyperlink>",
            '<w:fldSimple w:instr=" HYPERLINK &quot;mailto:ops@example.org&quot; ">' + r("mail") + "</w:fldSimple>",
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
            '<w:r><w:instrText xml:space="preserve"> HYPERLINK "https://example.org/a" \\o "tip" </w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
            + r("field link")
            + '<w:r><w:fldChar w:fldCharType="end"/></w:r>',
        )
        + p('<w:bookmarkStart w:id="0" w:name="_Toc1"/>', r("Target")),
        rels=(
            ("rWeb", "hyperlink", "https://example.org/?q=1&x=<2>", True),
            ("rJs", "hyperlink", "javascript:alert(1)", True),
            ("rFile", "hyperlink", "file:///etc/passwd", True),
        ),
    )
    root = lxml.html.fragment_fromstring(html)
    links = {a.text_content(): a.get("href") for a in root.iter("a")}

    assert links == {
        "web": "https://example.org/?q=1&x=<2>",
        "inside": "#docx-bm-_Toc1",
        "mail": "mailto:ops@example.org",
        "field link": "https://example.org/a",
    }
    assert root.xpath("//span[@id='docx-bm-_Toc1']")
    assert "script" in texts(html)[0] and "javascript" not in html


def test_it_renders_footnotes_and_endnotes_at_the_end_with_back_references(tmp_path):
    separators = (
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
        '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>'
    )
    html = render(
        tmp_path,
        p(
            r("Claim"),
            '<w:r><w:footnoteReference w:id="2"/></w:r>',
            r(" and more"),
            '<w:r><w:endnoteReference w:id="1"/></w:r>',
        ),  # fmt: skip
        footnotes=separators
        + '<w:footnote w:id="2"><w:p w14:paraId="0000F002"><w:r><w:footnoteRef/></w:r>'
        + r(" The source.")
        + "</w:p></w:footnote>",
        endnotes='<w:endnote w:id="1"><w:p><w:r><w:endnoteRef/></w:r>' + r(" Afterword.") + "</w:p></w:endnote>",
    )
    root = lxml.html.fragment_fromstring(html)

    assert texts(html) == ["Claim1 and morei", "1 The source.↩", "i Afterword.↩"]
    footnote = root.get_element_by_id("docx-fn-1")
    assert footnote.get("data-para-id") == "0000F002"
    assert footnote.xpath(".//a[@class='docx-backref']/@href") == ["#docx-fnref-1"]
    assert root.xpath("//sup[@class='docx-noteref']/a[@id='docx-fnref-1']")
    assert root.get_element_by_id("docx-en-1") is not None


def test_it_renders_one_branch_of_a_text_box_after_its_paragraph(tmp_path):
    box = '<w:txbxContent><w:p w14:paraId="0000B0C1"><w:r><w:t>{}</w:t></w:r></w:p></w:txbxContent>'
    drawing = (
        '<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wp:anchor><wp:docPr id="1" name="Box"/>'
        '<a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
        f"<wps:wsp><wps:txbx>{box.format('Inside the box')}</wps:txbx></wps:wsp>"
        "</a:graphicData></a:graphic></wp:anchor></w:drawing></mc:Choice>"
        f"<mc:Fallback><w:pict><v:shape><v:textbox>{box.format('Inside the box')}</v:textbox></v:shape></w:pict>"
        "</mc:Fallback></mc:AlternateContent></w:r>"
    )
    vml_only = f"<w:r><w:pict><v:shape><v:textbox>{box.format('Old VML box')}</v:textbox></v:shape></w:pict></w:r>"
    html = render(tmp_path, p(r("Host "), drawing) + p(vml_only) + p(r("After")))

    assert texts(html) == ["Host", "Inside the box", "Old VML box", "After"]
    assert [b.get("data-para-id") for b in blocks(html)][1] == "0000B0C1"
    assert len(lxml.html.fragment_fromstring(html).find_class("docx-textbox")) == 2


def test_it_renders_symbols_tabs_breaks_fields_ruby_and_formatting(tmp_path):
    html = render(
        tmp_path,
        p(
            '<w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t><w:br w:type="page"/></w:r>',
            '<w:r><w:sym w:font="Symbol" w:char="F061"/><w:sym w:font="Wingdings" w:char="F0FC"/></w:r>',
            r("d", '<w:rFonts w:ascii="Symbol" w:hAnsi="Symbol"/>'),
            '<w:smartTag w:uri="x" w:element="place">' + r(" Oslo") + "</w:smartTag>",
            '<w:customXml w:element="x">' + r(" custom") + "</w:customXml>",
            "<w:sdt><w:sdtContent>" + r(" control") + "</w:sdtContent></w:sdt>",
            '<w:fldSimple w:instr=" PAGE ">' + r(" 7") + "</w:fldSimple>",
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> DATE </w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
            + r(" 2026-01-05")
            + '<w:r><w:fldChar w:fldCharType="end"/></w:r>',
            "<w:r><w:ruby><w:rubyPr/><w:rt><w:r><w:t>かんじ</w:t></w:r></w:rt>"
            "<w:rubyBase><w:r><w:t>漢字</w:t></w:r></w:rubyBase></w:ruby></w:r>",
        )
        + p(
            r("bold", "<w:b/>"),
            r("italic", "<w:i/>"),
            r("under", '<w:u w:val="single"/>'),
            r("struck", "<w:strike/>"),
            r("2", '<w:vertAlign w:val="superscript"/>'),
            r("i", '<w:vertAlign w:val="subscript"/>'),
            r("strong", '<w:rStyle w:val="Strong"/>'),
            r("not bold", '<w:rStyle w:val="Strong"/><w:b w:val="0"/>'),
            r("hidden", "<w:vanish/>"),
        ),  # fmt: skip
        styles=STYLES,
    )
    root = lxml.html.fragment_fromstring(html)
    first, second = blocks(html)

    assert first.text_content() == "a\tb\ncα✓δ Oslo custom control 7 2026-01-05漢字かんじ"
    assert first.xpath(".//span[@class='docx-tab']") and first.xpath(".//br")
    assert first.xpath(".//ruby/rt")[0].text_content() == "かんじ"
    assert [(el.tag, el.text_content()) for el in second] == [
        ("strong", "bold"), ("em", "italic"), ("u", "under"), ("s", "struck"), ("sup", "2"), ("sub", "i"),
        ("strong", "strong"),
    ]  # fmt: skip
    assert second.text_content() == "bolditalicunderstruck2istrongnot bold"
    assert root is not None


def math(inner: str, display: bool = False) -> str:
    omath = f"<m:oMath>{inner}</m:oMath>"
    return f"<w:p><m:oMathPara>{omath}</m:oMathPara></w:p>" if display else p(r("x: "), omath)


def mr(text: str) -> str:
    return f"<m:r><m:t>{text}</m:t></m:r>"


@pytest.mark.parametrize(
    ("omml", "expected"),
    [
        (f"<m:nary><m:naryPr><m:chr m:val=\"∫\"/></m:naryPr><m:sub>{mr('0')}</m:sub><m:sup>{mr('1')}</m:sup>"
         f"<m:e>{mr('x')}</m:e></m:nary>", "∫₀¹x"),
        (f"<m:f><m:num>{mr('a+b')}</m:num><m:den>{mr('2')}</m:den></m:f>", "(a+b)/2"),
        (f"<m:sSup><m:e>{mr('e')}</m:e><m:sup>{mr('-x')}</m:sup></m:sSup>", "e⁻ˣ"),
        (f"<m:sSubSup><m:e>{mr('x')}</m:e><m:sub>{mr('i')}</m:sub><m:sup>{mr('2')}</m:sup></m:sSubSup>", "xᵢ²"),
        (f"<m:rad><m:radPr><m:degHide m:val=\"1\"/></m:radPr><m:deg/><m:e>{mr('2')}</m:e></m:rad>", "√2"),
        (f"<m:rad><m:deg>{mr('3')}</m:deg><m:e>{mr('x')}</m:e></m:rad>", "∛x"),
        (f"<m:d><m:dPr><m:begChr m:val=\"[\"/><m:endChr m:val=\"]\"/></m:dPr><m:e>{mr('a')}</m:e><m:e>{mr('b')}</m:e>"
         "</m:d>", "[a|b]"),
        (f"<m:func><m:fName>{mr('sin')}</m:fName><m:e>{mr('θ')}</m:e></m:func>", "sin θ"),
        (f"<m:func><m:fName><m:limLow><m:e>{mr('lim')}</m:e><m:lim>{mr('n→∞')}</m:lim></m:limLow></m:fName>"
         f"<m:e>{mr('aₙ')}</m:e></m:func>", "lim_(n→∞)aₙ"),
        (f"<m:acc><m:accPr><m:chr m:val=\"\u0302\"/></m:accPr><m:e>{mr('x')}</m:e></m:acc>", "x\u0302"),
        (f"<m:bar><m:barPr><m:pos m:val=\"top\"/></m:barPr><m:e>{mr('z')}</m:e></m:bar>", "z\u0305"),
        (f"<m:m><m:mr><m:e>{mr('1')}</m:e><m:e>{mr('0')}</m:e></m:mr><m:mr><m:e>{mr('0')}</m:e><m:e>{mr('1')}</m:e>"
         "</m:mr></m:m>", "1 0; 0 1"),
        (f"<m:eqArr><m:e>{mr('x=1')}</m:e><m:e>{mr('y=2')}</m:e></m:eqArr>", "x=1; y=2"),
        (f"<m:limUpp><m:e>{mr('=')}</m:e><m:lim>{mr('def')}</m:lim></m:limUpp>", "=ᵈᵉᶠ"),
        (f"<m:sSup><m:e>{mr('e')}</m:e><m:sup>{mr('-ΦAt')}</m:sup></m:sSup>", "e^(−ΦAt)"),
        (f"<m:groupChr><m:e>{mr('a+b')}</m:e></m:groupChr>", "a+b"),
        (f"<m:sSub><m:e>{mr('H')}</m:e><m:sub>{mr('2')}</m:sub></m:sSub>{mr('O')}", "H₂O"),
    ],
)  # fmt: skip
def test_it_renders_equations_as_readable_linear_text(tmp_path, omml, expected):
    html = render(tmp_path, math(omml, display=True) + math(omml))
    root = lxml.html.fragment_fromstring(html)
    display, inline = root.find_class("docx-math")

    assert display.text_content() == expected and "docx-math-display" in display.get("class")
    assert inline.text_content() == expected and blocks(html)[1].text_content() == "x: " + expected
    assert "docx-equation" in blocks(html)[0].get("class")


def test_it_serves_package_images_through_the_given_url_and_never_external_ones(tmp_path):
    path = make_docx(
        tmp_path / "images.docx",
        p(drawing('r:embed="rImg"', "A logo"))
        + p(drawing('r:link="rOut"', "Tracking pixel"))
        + p(drawing('r:embed="rEmf"', "Old chart"))
        + p(drawing('r:embed="rMissing"', "Lost")),
        rels=(
            ("rImg", "image", "media/logo.png", False),
            ("rOut", "image", "https://tracker.example/pixel.png", True),
            ("rEmf", "image", "media/chart.emf", False),
        ),
        files={"word/media/logo.png": PNG, "word/media/chart.emf": b"\x01\x00\x00\x00emf"},
    )
    rendered = render_docx(path, image_url=lambda part: f"/preview/7/image?part={part}")
    root = lxml.html.fragment_fromstring(rendered.html)

    img = root.find(".//img")
    assert (img.get("src"), img.get("alt"), img.get("width"), img.get("height")) == (
        "/preview/7/image?part=word/media/logo.png", "A logo", "100", "50"
    )  # fmt: skip
    assert [el.text_content() for el in root.find_class("docx-image-placeholder")] == [
        "[image: Tracking pixel]", "[image: Old chart]", "[image: Lost]"
    ]  # fmt: skip
    assert "tracker.example" not in rendered.html
    assert list(rendered.images) == ["word/media/logo.png"]
    assert rendered.images["word/media/logo.png"].data == PNG
    assert load_docx_image(path, "word/media/logo.png") == ("image/png", PNG)
    assert len(rendered.warnings) == 3
    without_urls = render_docx(path).html
    assert "<img" not in without_urls and 'data-image-part="word/media/logo.png"' in without_urls


def test_it_refuses_to_serve_an_image_that_is_not_what_its_name_says(tmp_path):
    path = make_docx(tmp_path / "t.docx", p(r("x")), files={"word/media/fake.png": b"<svg onload=alert(1)>"})

    with pytest.raises(DocxRejected, match="not what its name says"):
        load_docx_image(path, "word/media/fake.png")
    with pytest.raises(DocxRejected, match="cannot show"):
        load_docx_image(path, "word/document.xml")


def test_it_escapes_all_document_text(tmp_path):
    html = render(
        tmp_path,
        p(r("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(2)&gt;"))
        + p('<w:bookmarkStart w:id="1" w:name="x&quot; onclick=&quot;alert(3)"/>', r("b")),
    )
    root = lxml.html.fragment_fromstring(html)

    assert not root.xpath("//script|//img|//*[@onclick or @onerror]")
    assert texts(html)[0] == "<script>alert(1)</script> & <img src=x onerror=alert(2)>"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_it_reads_strict_ooxml_and_finds_the_main_part_through_the_package_relationships(tmp_path, encoding):
    strict = "http://purl.oclc.org/ooxml/wordprocessingml/main"
    document = (
        f'<?xml version="1.0" encoding="{encoding}"?><w:document xmlns:w="{strict}"><w:body><w:p><w:pPr>'
        '<w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Strict heading</w:t></w:r></w:p></w:body></w:document>'
    )
    strict_main = "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument"
    path = tmp_path / "strict.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "_rels/.rels", package_rels("/word/main-part.xml").replace(f"{REL}/officeDocument", strict_main)
        )
        archive.writestr("word/main-part.xml", document.encode(encoding))

    assert texts(render_docx(path).html) == ["Strict heading"]


def test_it_stops_when_the_time_budget_is_spent(tmp_path):
    path = make_docx(tmp_path / "t.docx", p(r("x")))

    with pytest.raises(DocxRejected, match="takes too long to preview"):
        render_docx(path, limits=Limits(time_budget_s=0))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "legacy Word 97-2003 (.doc) file or a password-protected"),
        (b"{\\rtf1\\ansi hello}", "RTF"),
        (b"<html><body>hi</body></html>", "XML or HTML"),
        (b"just some text", "not a ZIP package"),
    ],
)
def test_it_names_what_a_non_docx_file_is(tmp_path, content, message):
    path = tmp_path / "x.docx"
    path.write_bytes(content)

    with pytest.raises(DocxRejected, match="This file is not a valid Word document") as caught:
        render_docx(path)
    assert message in caught.value.message


def test_it_rejects_a_spreadsheet_renamed_to_docx(tmp_path):
    path = make_docx(tmp_path / "t.docx", document='<workbook xmlns="urn:x"><sheets/></workbook>')

    with pytest.raises(DocxRejected, match="not a Word document body"):
        render_docx(path)


# --- hostile files: clear message, seconds, bounded memory -------------------

def hostile_document(tmp_path: Path, document: bytes) -> Path:
    return make_docx(tmp_path / "hostile.docx", document=document.decode("utf-8", "surrogatepass"))


def billion_laughs(tmp_path):
    entities = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    return hostile_document(
        tmp_path,
        f'<?xml version="1.0"?><!DOCTYPE w:document [{entities}]>'
        f"<w:document {XMLNS}><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>".encode(),
    )


def external_entity(tmp_path):
    return hostile_document(
        tmp_path,
        b'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        + f"<w:document {XMLNS}><w:body><w:p><w:r><w:t>&xxe;</w:t></w:r></w:p></w:body></w:document>".encode(),
    )


def doctype_in_utf16(tmp_path):
    xml = f'<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE w:document><w:document {XMLNS}><w:body/></w:document>'
    path = tmp_path / "hostile.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_rels/.rels", package_rels())
        archive.writestr("word/document.xml", b"\xff\xfe" + xml.encode("utf-16-le"))
    return path


def deeply_nested(tmp_path):
    depth = 20_000
    return hostile_document(
        tmp_path,
        f"<w:document {XMLNS}><w:body>".encode()
        + b"<w:customXml>" * depth
        + b"<w:p/>"
        + b"</w:customXml>" * depth
        + b"</w:body></w:document>",
    )


def _stream_member(archive: zipfile.ZipFile, name: str, chunk: bytes, count: int) -> None:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with archive.open(info, "w", force_zip64=True) as member:
        for _ in range(count):
            member.write(chunk)


def compressible_bomb(tmp_path):
    # 40 MB of one repeated paragraph: under the size limit, but about 1000:1.
    path = make_docx(tmp_path / "hostile.docx", p(r("x")))
    paragraph = f"<w:p><w:r><w:t>{'ha' * 50}</w:t></w:r></w:p>".encode()
    with zipfile.ZipFile(path, "a") as archive:
        _stream_member(archive, "word/bomb.xml", paragraph * 10_000, 30)
    return path


def huge_member(tmp_path):
    path = make_docx(tmp_path / "hostile.docx", p(r("x")))
    with zipfile.ZipFile(path, "a") as archive:
        _stream_member(archive, "word/media/huge.bin", b"\0" * (1 << 20), 120)
    return path


def lying_size(tmp_path):
    """document.xml holds 200 MB of zeros but the directory says 19 MB, which
    also keeps the declared compression ratio under the limit."""
    path = tmp_path / "hostile.docx"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("_rels/.rels", package_rels())
        _stream_member(archive, "word/document.xml", b"\0" * (1 << 20), 200)
    data = bytearray(buffer.getvalue())
    declared = 19 << 20
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(b"word/document.xml") + 1)
    compressed = struct.unpack_from("<I", data, central + 20)[0]
    assert compressed == 0xFFFFFFFF or declared < 100 * compressed
    # ZIP64 keeps the real sizes in an extra field: rewrite it, and the plain field too.
    struct.pack_into("<I", data, central + 24, declared if compressed != 0xFFFFFFFF else 0xFFFFFFFF)
    name_len, extra_len = struct.unpack_from("<HH", data, central + 28)
    extra = central + 46 + name_len
    end = extra + extra_len
    while extra < end:
        tag, size = struct.unpack_from("<HH", data, extra)
        if tag == 1:
            struct.pack_into("<Q", data, extra + 4, declared)
        extra += 4 + size
    path.write_bytes(bytes(data))
    return path


def traversal_member(tmp_path):
    path = make_docx(tmp_path / "hostile.docx", p(r("x")))
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("../../etc/passwd", b"root:x:0:0")
    return path


def traversal_relationship(tmp_path):
    return make_docx(
        tmp_path / "hostile.docx",
        p(drawing('r:embed="rEvil"', "")),
        rels=(("rEvil", "image", "../../../../etc/passwd", False),),
    )


def traversal_main_part(tmp_path):
    path = tmp_path / "hostile.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_rels/.rels", package_rels("../../etc/passwd"))
    return path


def truncated(tmp_path):
    path = make_docx(tmp_path / "whole.docx", p(r("x" * 5000)) * 50)
    data = path.read_bytes()
    (tmp_path / "hostile.docx").write_bytes(data[: len(data) // 2])
    return tmp_path / "hostile.docx"


def too_many_entries(tmp_path):
    path = make_docx(tmp_path / "hostile.docx", p(r("x")))
    with zipfile.ZipFile(path, "a") as archive:
        for i in range(6_000):
            archive.writestr(f"word/media/{i}.bin", b"")
    return path


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (billion_laughs, "document type declaration"),
        (external_entity, "document type declaration"),
        (doctype_in_utf16, "document type declaration"),
        (deeply_nested, "nested too deeply"),
        (compressible_bomb, "zip bomb"),
        (huge_member, "too large to preview"),
        (lying_size, "damaged"),
        (traversal_member, "points outside the package"),
        (traversal_relationship, "outside the package"),
        (traversal_main_part, "outside the package"),
        (truncated, "damaged or truncated"),
        (too_many_entries, "lists 6,"),
    ],
    ids=lambda value: value.__name__ if callable(value) else None,
)
def test_it_rejects_a_hostile_file_quickly_with_bounded_memory(tmp_path, build, message):
    path = build(tmp_path)

    # A fresh process, so peak RSS measures this file alone.
    outcome = measured(path, how="docx")

    assert outcome["rejected"], outcome
    assert outcome["message"].startswith(("This file is not a valid Word document", "This document is too large"))
    assert message in outcome["message"]
    assert outcome["seconds"] < 5
    assert outcome["rss_growth_mb"] < 200


def test_it_limits_total_decompressed_size(tmp_path):
    path = make_docx(tmp_path / "t.docx", p(r("x" * 10_000)))

    with pytest.raises(DocxRejected, match="too large to preview"):
        render_docx(path, limits=Limits(max_total_bytes=5_000))


def test_it_never_crashes_on_broken_xml_or_missing_parts(tmp_path):
    broken = make_docx(tmp_path / "broken.docx", document="<w:document><w:body>")
    with pytest.raises(DocxRejected, match="not well-formed XML"):
        render_docx(broken)

    no_main = tmp_path / "no-main.docx"
    with zipfile.ZipFile(no_main, "w") as archive:
        archive.writestr("_rels/.rels", package_rels())
    with pytest.raises(DocxRejected, match="no main document part"):
        render_docx(no_main)

    # A declared CRC that does not match the data.
    path = make_docx(tmp_path / "crc.docx", p(r("hello")))
    data = bytearray(path.read_bytes())
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(b"word/document.xml"))
    struct.pack_into("<I", data, central + 16, zlib.crc32(b"other"))
    path.write_bytes(bytes(data))
    with pytest.raises(DocxRejected, match="damaged"):
        render_docx(path)
