"""What a reader of the preview would miss, fixed: each kind shows what the
file holds or says at that place what it leaves out; hostile markup costs
milliseconds. Small files made in the test with the tools people use."""

import time
import zipfile

import lxml.html

from tests import preview_files as files
from tests.preview_checks import assert_safe, block_texts, blocks, render, rewrite, tree

# --- HTML and EPUB ---------------------------------------------------------------


def test_a_doctype_built_to_make_a_regex_backtrack_renders_at_once(tmp_path):
    # 145 bytes that froze the web process for minutes under the old DOCTYPE regex.
    page = "<!DOCTYPE %s[\n<p>x</p>\n" % ("[]" * 40)
    started = time.perf_counter()
    result = render(files.make_html(tmp_path / "redos.html", page))
    assert time.perf_counter() - started < 1
    assert_safe(result)


def test_a_page_nested_deeper_than_the_parser_goes_says_where_it_stops(tmp_path):
    page = "<p>Before the pit</p>" + "<div>" * 3000 + "deep" + "</div>" * 3000 + "<p>After the pit</p>"
    result = render(files.make_html(tmp_path / "deep.html", page))
    assert "Before the pit" in block_texts(result)
    assert any("nested too deeply" in w for w in result["warnings"])


def test_a_page_cannot_load_a_remote_picture_or_borrow_the_previews_classes(tmp_path):
    page = (
        '<p>Chart <img src="https://tracker.example.com/p.png" alt="sales"> and '
        '<span class="sheet-pages docx-label img-alt">words</span>'
        '<a href="https://example.com/x" onclick="steal()">out</a></p>'
    )
    result = render(files.make_html(tmp_path / "p.html", page))
    root = tree(result)
    assert_safe(result)
    assert not root.xpath("//img") and "[sales]" in root.text_content()
    assert root.xpath("//span[.='words']/@class") in ([], ["img-alt"])
    assert root.xpath("//a[.='out']/@target") == ["_blank"]


def test_a_book_page_drawn_as_svg_shows_its_words(tmp_path):
    path = files.make_epub(tmp_path / "book.epub")
    with zipfile.ZipFile(path) as package:
        opf = package.read("EPUB/content.opf").decode()
    opf = opf.replace("</manifest>", '<item id="plate" href="plate.svg" media-type="image/svg+xml"/></manifest>')
    opf = opf.replace("</spine>", '<itemref idref="plate"/></spine>')
    svg = (
        b'<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/svg11.dtd">'
        b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><script>alert(1)</script>'
        b"<text x='1' y='10'>Plate one: the great refractor</text></svg>"
    )
    result = render(rewrite(path, replace={"EPUB/content.opf": opf.encode()}, add={"EPUB/plate.svg": svg}))
    assert "Plate one: the great refractor" in block_texts(result)
    assert "alert" not in result["html"]
    assert_safe(result)


# --- RTF ---------------------------------------------------------------------------


def _rtf(tmp_path, body: bytes):
    path = tmp_path / "letter.rtf"
    path.write_bytes(b"{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Calibri;}}\\uc1\\pard " + body + b"}")
    return render(path)


def test_an_rtf_with_nul_bytes_renders(tmp_path):
    # Outlook's RTF message bodies carry NULs; lxml refuses them.
    result = _rtf(tmp_path, b"Meeting at\x00 noon\\par Lone surrogate \\u-10179? gone\\par")
    assert block_texts(result) == ["Meeting at noon", "Lone surrogate \ufffd gone"]


def test_rtf_hidden_text_is_not_shown(tmp_path):
    result = _rtf(tmp_path, b"Visible {\\v secret note }words\\par Also \\v hidden\\v0 shown\\par")
    assert block_texts(result) == ["Visible words", "Also shown"]


def test_rtf_list_paragraphs_keep_their_first_letter(tmp_path):
    result = _rtf(
        tmp_path,
        b"{\\listtext\\f1 \\u8226\\tab}First item\\par"
        b"{\\listtext\\pard\\plain \\u8226\\'b7\\tab}Second item\\par",
    )
    first, second = block_texts(result)
    # Without a stand-in after \u8226 the \tab is the stand-in (RTF 1.9: a control word counts as one).
    assert first.replace(" ", "") == "\u2022Firstitem" and second == "\u2022 Second item"


def test_rtf_nested_table_cells_stay_words_apart(tmp_path):
    result = _rtf(
        tmp_path,
        b"\\trowd\\cellx2000\\cellx4000 Outer\\cell "
        b"\\pard\\intbl\\itap2 Inner one\\nestcell Inner two\\nestcell{\\*\\nesttableprops\\trowd\\nestrow}"
        b"\\cell\\row ",
    )
    assert "Inner one Inner two" in " ".join(block_texts(result))


# --- XLSX --------------------------------------------------------------------------


def _sheet_rows(result) -> dict[str, list[str]]:
    return {el.get("data-range"): [td.text or "" for td in el.xpath("td")] for el in blocks(result)}


def test_data_far_to_the_right_is_shown(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    book.active["A1"] = "Header"
    for column, value in (("GW", "north"), ("GX", "east"), ("GY", "south")):
        book.active[f"{column}10"] = value
    book.save(tmp_path / "wide.xlsx")

    rows = _sheet_rows(render(tmp_path / "wide.xlsx"))
    assert rows["A10:GY10"][-3:] == ["north", "east", "south"]


def test_a_row_wider_than_the_preview_says_what_it_leaves_out(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.cell(row=1, column=1, value="Shown")
    for column in range(2000, 2005):
        sheet.cell(row=1, column=column, value=f"far {column}")
    book.save(tmp_path / "huge.xlsx")

    result = render(tmp_path / "huge.xlsx")
    row = blocks(result)[0]
    assert row.xpath("td/text()")[0] == "Shown"
    assert "5 more cells past column AMJ are not shown." in row.xpath("td[@class='preview-note']/text()")
    assert result["warnings"]
    # The note is the preview's, not the sheet's: outside the text a citation is matched in.
    from mnote.preview.text_map import build_text_map

    assert "not shown" not in build_text_map(result["html"]).text


def test_number_formats_are_applied(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    cases = [
        (0.166666666666667, "0%", "17%"),
        (0.0525, "0.00%", "5.25%"),
        (1234567.891, "#,##0.00", "1,234,567.89"),
        (3.14159, "0.0", "3.1"),
        (12345.678, '"$"#,##0.00', "$12,345.68"),
        (-5, "#,##0;(#,##0)", "(5)"),
        (123456, "0.00E+00", "1.23E+05"),
        (2.5, "0.0#", "2.5"),
        (0.5, "h:mm", "12:00:00"),
        (1.25, "[h]:mm:ss", "30:00:00"),
    ]
    for row, (value, code, _shown) in enumerate(cases, start=1):
        sheet.cell(row=row, column=1, value=value).number_format = code
    book.save(tmp_path / "formats.xlsx")

    shown = [cells[0] for cells in _sheet_rows(render(tmp_path / "formats.xlsx")).values()]
    assert shown == [expected for _value, _code, expected in cases]


def test_merged_cells_span_rows_and_columns(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet["A1"] = "Quarter"
    sheet["B1"] = "Sales by region"
    sheet.merge_cells("B1:D1")
    sheet["A2"] = "Q1"
    sheet.merge_cells("A2:A3")
    sheet["B2"], sheet["C2"], sheet["D2"] = 1, 2, 3
    sheet["B3"], sheet["C3"], sheet["D3"] = 4, 5, 6
    book.save(tmp_path / "merged.xlsx")

    root = tree(render(tmp_path / "merged.xlsx"))
    assert root.xpath("//td[.='Sales by region']/@colspan") == ["3"]
    assert root.xpath("//td[.='Q1']/@rowspan") == ["2"]
    assert [len(tr.xpath("td")) for tr in root.xpath("//tbody/tr")] == [2, 4, 3]


# --- ODT ---------------------------------------------------------------------------


def _odt_with_lists_and_a_formula(path):
    from odf.draw import Frame, Object
    from odf.opendocument import OpenDocumentText
    from odf.text import List, ListItem, ListLevelStyleBullet, ListLevelStyleNumber, ListStyle, P

    doc = OpenDocumentText()
    numbers = ListStyle(name="Numbers")
    numbers.addElement(ListLevelStyleNumber(level=1, numformat="1", numsuffix="."))
    numbers.addElement(ListLevelStyleNumber(level=2, numformat="a", numsuffix=")"))
    bullets = ListStyle(name="Bullets")
    bullets.addElement(ListLevelStyleBullet(level=1, bulletchar="•"))
    doc.automaticstyles.addElement(numbers)
    doc.automaticstyles.addElement(bullets)
    steps = List(stylename=numbers)
    for text in ("Open the dome", "Cool the mirror"):
        item = ListItem()
        item.addElement(P(text=text))
        steps.addElement(item)
    inner = List()
    item = ListItem()
    item.addElement(P(text="Wait an hour"))
    inner.addElement(item)
    steps.lastChild.addElement(inner)
    doc.text.addElement(steps)
    doc.text.addElement(P(text="Between the lists"))
    more = List(stylename=numbers, continuenumbering="true")
    item = ListItem()
    item.addElement(P(text="Point the telescope"))
    more.addElement(item)
    doc.text.addElement(more)
    loose = List(stylename=bullets)
    item = ListItem()
    item.addElement(P(text="Bring coffee"))
    loose.addElement(item)
    doc.text.addElement(loose)
    paragraph = P(text="The energy is ")
    frame = Frame(name="Objekt1", anchortype="as-char")
    frame.addElement(Object(href="./Object 1"))
    paragraph.addElement(frame)
    doc.text.addElement(paragraph)
    chart = P(text="Sales: ")
    frame = Frame(name="Objekt2", anchortype="as-char")
    frame.addElement(Object(href="./Object 2"))
    chart.addElement(frame)
    doc.text.addElement(chart)
    doc.save(str(path))
    math = (
        b'<math xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mrow><mi>E</mi><mo>=</mo><mi>m</mi>'
        b'<msup><mi>c</mi><mn>2</mn></msup></mrow><annotation encoding="StarMath 5.0">E = m c^2</annotation>'
        b"</semantics></math>"
    )
    chart_xml = (
        b'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        b'xmlns:chart="urn:oasis:names:tc:opendocument:xmlns:chart:1.0"><office:body><office:chart>'
        b"<chart:chart/></office:chart></office:body></office:document-content>"
    )
    return rewrite(path, add={"Object 1/content.xml": math, "Object 2/content.xml": chart_xml})


def test_odt_numbered_lists_are_numbered_and_bullets_stay_bullets(tmp_path):
    root = tree(render(_odt_with_lists_and_a_formula(tmp_path / "steps.odt")))
    first, second = root.xpath("//ol[@type='1']")
    assert [" ".join(li.xpath("p/text()")) for li in first.xpath("li")] == ["Open the dome", "Cool the mirror"]
    assert first.xpath("li/ol/@type") == ["a"]
    assert second.get("start") == "3"  # it continues the list above
    assert root.xpath("//ul/li/p/text()") == ["Bring coffee"]


def test_odt_formulas_show_their_text_and_charts_say_they_are_not_shown(tmp_path):
    result = render(_odt_with_lists_and_a_formula(tmp_path / "physics.odt"))
    texts = block_texts(result)
    assert "The energy is E = m c 2" in texts
    assert not any("Objekt" in text for text in texts)
    assert tree(result).xpath("//p[starts-with(., 'Sales')]/span[@class='preview-note']/text()") == [
        "[chart not shown]"
    ]


# --- PPTX --------------------------------------------------------------------------


def _deck_with_a_chart_and_a_footer(path):
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    for number in (1, 2):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = f"Clear nights, part {number}"
        for placeholder in slide.slide_layout.placeholders:
            kind = placeholder.placeholder_format.type
            if kind is not None and kind.name in ("FOOTER", "DATE", "SLIDE_NUMBER"):
                slide.shapes.clone_placeholder(placeholder)
        for shape in slide.placeholders:
            name = shape.placeholder_format.type.name
            if name == "FOOTER":
                shape.text_frame.text = "Observatory board, confidential"
            elif name == "DATE":
                shape.text_frame.text = "3 March 2024"
    data = CategoryChartData()
    data.categories = ["Jan", "Feb", "Mar"]
    data.add_series("Clear nights", (12, 9, 15))
    graphic = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, 0, Inches(2), Inches(6), Inches(4), data)
    graphic.chart.has_title = True
    graphic.chart.chart_title.text_frame.text = "Clear nights per month"
    deck.save(path)
    return path


def test_pptx_footer_date_and_slide_number_are_shown(tmp_path):
    root = tree(render(_deck_with_a_chart_and_a_footer(tmp_path / "deck.pptx")))
    second = root.xpath("//section[@data-slide='2']")[0]
    footer = second.xpath(".//footer[@class='pptx-footer']")[0]
    assert [" ".join(span.text.split()) for span in footer] == ["3 March 2024", "Observatory board, confidential", "2"]


def test_a_pptx_chart_shows_its_title_and_data(tmp_path):
    result = render(_deck_with_a_chart_and_a_footer(tmp_path / "deck.pptx"))
    chart = tree(result).xpath("//figure[@class='pptx-chart']")[0]
    assert chart.xpath("figcaption/text()") == ["Clear nights per month"]
    assert [[c.text or "" for c in tr] for tr in chart.xpath("table/tr")] == [
        ["", "Jan", "Feb", "Mar"],
        ["Clear nights", "12", "9", "15"],
    ]
    assert "drawing is not shown" in chart.xpath("span[@class='preview-note']/text()")[0]
    assert "[chart]" not in result["html"]


def test_a_note_about_what_is_not_shown_is_in_the_readers_language(tmp_path):
    from django.utils import translation

    path = _deck_with_a_chart_and_a_footer(tmp_path / "deck.pptx")
    with translation.override("zh-hans"):
        result = render(path)
    assert "图表：以表格显示其数据；图形本身未显示。" in tree(result).xpath("//span[@class='preview-note']/text()")


def test_a_cells_phonetic_guide_is_not_run_into_its_text(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    book.active["A1"] = "placeholder"
    book.save(tmp_path / "rph.xlsx")
    with zipfile.ZipFile(tmp_path / "rph.xlsx") as package:
        sheet = package.read("xl/worksheets/sheet1.xml")
    rich = '<is><r><t>課きく</t></r><r><t>毛</t></r><rPh sb="0" eb="1"><r><t>カ</t></r></rPh></is>'.encode()
    path = rewrite(
        tmp_path / "rph.xlsx", replace={"xl/worksheets/sheet1.xml": sheet.replace(b"<is><t>placeholder</t></is>", rich)}
    )
    assert block_texts(render(path)) == ["課きく毛"]


def test_a_long_sheet_shows_its_first_page_and_counts_every_row(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    for n in range(1, 6_002):
        sheet.append([f"reading {n}", n])
    book.save(tmp_path / "long.xlsx")

    result = render(tmp_path / "long.xlsx")
    assert len(blocks(result)) == 500
    assert "Rows 1–500 of 6,001" in tree(result).xpath("//nav[@class='sheet-pages']")[0].text_content()


def test_the_sanitiser_keeps_no_scheme_style_or_data_url_it_does_not_trust(tmp_path):
    page = (
        '<base href="https://evil.example.com/"><p style="color:red" class="x">Styled</p>'
        '<a href=" JaVaScRiPt:alert(1)">sneaky</a> <a href="data:text/html,hi">data</a> '
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="inline"> <a href="vbscript:x">vb</a>'
        "<math><mi>x</mi><mo>=</mo><mn>2</mn></math>"
    )
    result = render(files.make_html(tmp_path / "schemes.html", page))
    root = tree(result)
    assert_safe(result)
    assert not root.xpath("//a/@href") and not root.xpath("//img") and not root.xpath("//base")
    assert not root.xpath("//p[@style or @class]") and "[inline]" in root.text_content()
    assert root.xpath("//span[@class='math']/text()") == ["x = 2"]


def test_links_pictures_and_ids_after_a_drawing_are_still_mapped(tmp_path):
    page = (
        '<p><svg><text>Figure words</text></svg> then <img src="x.png" alt="after"> '
        '<a href="#later" id="first">to later</a></p><h2 id="later">Later</h2>'
    )
    root = tree(render(files.make_html(tmp_path / "order.html", page)))
    assert "[after]" in root.text_content() and not root.xpath("//img")
    assert root.xpath("//a[.='to later']/@href") == ["#h-later"] and root.xpath("//h2/@id") == ["h-later"]
