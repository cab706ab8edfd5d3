"""Previews of every kind LightRAG indexes: real files made with the tools
people make them with, rendered into blocks the locator can land on; the
one table of kinds; hostile files refused or neutralised quickly."""

import os
import re
import zipfile
from pathlib import Path

import lxml.html
import pytest

from mnote.kinds import KINDS, SUPPORTED_EXTENSIONS, kind_of
from mnote.preview.docx.limits import PreviewRejected
from mnote.preview.renderers import asset_loader_for, renderer_for
from tests import preview_files as files
from tests.measured_render import measured
from tests.paths import REPO_DIR
from tests.preview_checks import ASSET, assert_safe, block_texts, blocks, render, rewrite, tree


# --- the one table of kinds ----------------------------------------------------

README_ORIGINAL_ONLY = re.compile(r"original only[^\n]*\n((?:[ \t]*[-*] .*\n)+)", re.IGNORECASE)


def test_every_supported_suffix_has_a_preview_or_is_listed_as_original_only():
    readme = (REPO_DIR / "README.md").read_text()
    listed = README_ORIGINAL_ONLY.search(readme)
    assert listed, "README lists the kinds shown as original only"
    original_only = set(re.findall(r"`(\.[\w]+)`", listed.group(1)))
    for suffix in SUPPORTED_EXTENSIONS:
        has_preview = renderer_for(kind_of("x" + suffix)) is not None
        assert has_preview != (suffix in original_only), suffix


def test_the_library_the_mapper_and_the_workspace_agree_on_each_kind():
    from mnote.citations.mapper import _resource_kind
    from mnote.library.expansion import SUPPORTED_EXTENSIONS as expanded

    assert expanded is SUPPORTED_EXTENSIONS
    assert _resource_kind("server.log") == kind_of("server.log").name == "text"
    assert kind_of("server.log").workspace_text and kind_of("notes.md").workspace_text
    assert not kind_of("deck.pptx").workspace_text
    assert _resource_kind("Deck.PPTX") == "pptx" and _resource_kind("x.unknown") == "other"
    assert {"pptx", "xlsx", "epub", "code", "html", "odt", "rtf", "csv"} <= set(KINDS)


# --- PPTX ------------------------------------------------------------------------


def test_it_shows_slides_in_order_as_cards_with_title_text_table_notes_and_pictures(tmp_path):
    result = render(files.make_pptx(tmp_path / "review.pptx"))
    root = tree(result)

    cards = root.xpath("//section[contains(@class, 'pptx-slide')]")
    assert [c.get("data-slide") for c in cards] == [str(n) for n in range(1, 8)]
    assert result["title"] == "Observatory quarterly review"
    texts = block_texts(result)
    assert texts[:6] == [
        "Observatory quarterly review", "Telescope operations, first quarter", "Mirror maintenance", files.PASSAGE,
        "Reflectivity rose to 92 percent afterwards.", "Metric",
    ]  # fmt: skip
    second = cards[1]
    assert second.xpath(".//h2[@data-heading-level]")[0].text == "Mirror maintenance"
    assert [td.text for td in second.xpath(".//table//td")] == ["Metric", "Value", "Seeing", "0.8 arcsec"]
    assert second.xpath(".//aside[@class='pptx-notes']//p")[0].text == "Mention the cost overrun of the coating plant."
    passage = root.xpath(f"//p[.='{files.PASSAGE}']")[0]
    assert passage.get("data-slide") == "2" and passage.get("data-shape")
    picture = cards[2].xpath(".//img/@src")[0]
    assert picture.startswith(ASSET + "ppt/media/")

    loader = asset_loader_for(kind_of("review.pptx"))
    with open(tmp_path / "review.pptx", "rb") as fp:
        assert loader(fp, picture.removeprefix(ASSET)).content_type == "image/png"
    with open(tmp_path / "review.pptx", "rb") as fp, pytest.raises(PreviewRejected):
        loader(fp, "ppt/slides/slide1.xml")  # only pictures are served
    assert_safe(result)


# --- XLSX and CSV ------------------------------------------------------------------


def test_it_shows_each_sheet_as_a_table_with_tabs_and_cell_ranges(tmp_path):
    result = render(files.make_xlsx(tmp_path / "budget.xlsx"))
    root = tree(result)

    assert root.xpath("//nav[@class='sheet-tabs']/a/text()") == ["Budget", "Observing log"]
    assert root.xpath("//nav[@class='sheet-tabs']/a/@href") == ["#sheet-1", "#sheet-2"]
    rows = blocks(result)
    assert [td.text for td in rows[1].xpath("td")] == ["Mirror coating", "1200.5", "2024-03-01"]
    assert rows[1].get("data-range") == "A2:C2" and rows[1].get("data-sheet") == "Budget"
    last = rows[-1]
    assert last.get("data-sheet") == "Observing log" and last.get("data-range") == "A3:B3"
    assert "0.6 arcsec" in last.text_content()
    # Row numbers are drawn by CSS, so they are not text the locator matches.
    assert rows[1].text_content() == "Mirror coating\t1200.5\t2024-03-01\t"


def test_a_big_sheet_is_paged(tmp_path):
    path = files.make_xlsx(tmp_path / "big.xlsx", rows=1_200)
    first = render(path)
    third = render(path, page=3)

    budget_rows = lambda result: [r for r in blocks(result) if r.get("data-sheet") == "Budget"]
    assert len(budget_rows(first)) == 500
    assert budget_rows(third)[0].get("data-row") == "1001"
    assert budget_rows(third)[-1].get("data-row") == "1203"
    assert "Rows 1–500 of 1,203" in tree(first).xpath("//nav[@class='sheet-pages']")[0].text_content()


def test_a_csv_file_is_a_table_whatever_its_delimiter(tmp_path):
    path = tmp_path / "stars.csv"
    path.write_text('name;magnitude;note\nSirius;-1.46;brightest\nVega;0.03;"standard; zero point"\n')
    result = render(path)

    rows = blocks(result)
    assert [[td.text for td in row.xpath("td")] for row in rows] == [
        ["name", "magnitude", "note"], ["Sirius", "-1.46", "brightest"], ["Vega", "0.03", "standard; zero point"],
    ]  # fmt: skip
    assert rows[2].get("data-range") == "A3:C3"


# --- EPUB and HTML ---------------------------------------------------------------


def test_it_shows_a_book_in_reading_order_with_contents_and_its_pictures(tmp_path):
    result = render(files.make_epub(tmp_path / "guide.epub"))
    root = tree(result)

    assert result["title"] == "A Field Guide to Telescopes"
    toc = root.xpath("//nav[@class='epub-toc']//a")
    assert [a.text for a in toc] == ["Refractors", "Reflectors", "Mounts"]
    for a in toc:
        assert root.xpath(f"//section[@id='{a.get('href')[1:]}']"), a.get("href")
    headings = root.xpath("//section[@data-chapter]//h1/text()")
    assert headings == ["Refractors", "Reflectors", "Mounts"]
    passage = root.xpath(f"//p[.='{files.PASSAGE}']")[0]
    assert passage.get("data-block-index") is not None and passage.get("data-chapter")
    image = root.xpath("//img")[0]
    assert image.get("src") == ASSET + "EPUB/images/dome.png" and image.get("alt") == "The dome"
    assert root.xpath("//a[.='the chapter on refractors']/@href") == ["#chapter-1"]
    # The book's own navigation page is in its reading order; the contents are shown once.
    assert len(root.xpath("//a[.='Reflectors']")) == 1
    with open(tmp_path / "guide.epub", "rb") as fp:
        assert asset_loader_for(kind_of("g.epub"))(fp, "EPUB/images/dome.png").content_type == "image/png"
    assert_safe(result)


HOSTILE_CHAPTER = """
<script>document.body.innerHTML = "owned"</script>
<p onmouseover="alert(1)" style="background:url(https://tracker.example.com/a.gif)">Scripted paragraph</p>
<img src="https://tracker.example.com/pixel.png" alt="remote pixel"/>
<img src="../../../../etc/passwd.png" alt="climbing picture"/>
<svg xmlns="http://www.w3.org/2000/svg"><script>alert(2)</script><text>svg words</text></svg>
<iframe src="https://evil.example.com/"></iframe>
<a href="javascript:alert(3)">js link</a> <a href="../../../etc/passwd">climbing link</a>
<object data="https://evil.example.com/x.swf"></object>
"""


def test_a_books_scripts_and_remote_loads_are_removed(tmp_path):
    result = render(files.make_epub(tmp_path / "hostile.epub", extra_chapter_html=HOSTILE_CHAPTER))
    root = tree(result)

    assert_safe(result)
    text = root.text_content()
    assert "owned" not in text and "alert" not in text
    assert "Scripted paragraph" in text and "svg words" in text
    assert "[remote pixel]" in text and "[climbing picture]" in text
    assert not root.xpath("//a[.='js link']/@href") and not root.xpath("//a[.='climbing link']/@href")


def test_a_web_page_is_sanitised_the_same_way(tmp_path):
    result = render(files.make_html(tmp_path / "dome.html"))
    root = tree(result)

    assert_safe(result)
    assert result["title"] == "Dome manual"
    assert block_texts(result)[:2] == ["Opening the dome", files.PASSAGE]
    assert "[tracking pixel]" in root.text_content()
    assert root.xpath('//a[.="the maker\'s manual"]/@rel') == ["noopener noreferrer"]
    assert root.xpath("//a[.='safety']/@href") == ["#h-safety"] and root.xpath("//*[@id='h-safety']")


def test_an_entity_declared_in_a_web_page_is_never_expanded(tmp_path):
    lol = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    path = files.make_html(tmp_path / "laughs.html", f"<!DOCTYPE html [{lol}]><html><body><p>&lol9;</p></body></html>")
    result = render(path)
    assert len(result["html"]) < 1_000 and "lollol" not in result["html"]


# --- ODT, RTF, code, images --------------------------------------------------------


def test_an_opendocument_text_reads_like_a_docx(tmp_path):
    result = render(files.make_odt(tmp_path / "report.odt"))
    root = tree(result)

    assert root.xpath("//h1[@data-heading-level='1']/text()") == ["Observatory report"]
    assert root.xpath("//p[@class='docx-center']/text()") == ["Prepared for the board"]
    assert files.PASSAGE in block_texts(result)[2]
    assert root.xpath("//sup[@class='docx-noteref']/text()") == ["1"]
    assert "Aluminium, 100 nm thick." in root.xpath("//section[@class='docx-notes']")[0].text_content()
    assert "Check the dome seals" in block_texts(result)
    assert root.xpath("//td/@data-block-index")


def test_a_textbundle_shows_its_markdown_and_its_own_pictures(tmp_path):
    result = render(files.make_textpack(tmp_path / "notes.textpack"))
    root = tree(result)

    assert block_texts(result)[:2] == ["Dome notes", files.PASSAGE]
    assert root.xpath("//img/@src") == [ASSET + "Notes.textbundle/assets/dome.png"]
    assert "remote" in root.xpath("//span[@class='img-alt']/text()")
    with open(tmp_path / "notes.textpack", "rb") as fp:
        picture = asset_loader_for(kind_of("n.textpack"))(fp, "Notes.textbundle/assets/dome.png")
    assert picture.content_type == "image/png"


def test_an_rtf_file_shows_its_text_without_its_tables_of_fonts_and_colours(tmp_path):
    result = render(files.make_rtf(tmp_path / "menu.rtf"))
    assert block_texts(result) == ["Observatory café menu", files.PASSAGE, "Price: 5 € per cup"]


def test_code_has_line_numbers_colours_and_blocks_of_line_ranges(tmp_path):
    result = render(files.make_code(tmp_path / "pointing.py"))
    root = tree(result)

    lines = root.xpath("//span[@class='line']")
    assert [line.get("data-line") for line in lines] == [str(n) for n in range(1, len(files.CODE.splitlines()) + 1)]
    # Pygments' token classes, coloured by static/css/pygments.css.
    assert root.xpath("//span[@class='kn']/text()") == ["import"]
    assert root.xpath("//span[@class='k']/text()").count("def") == 2
    assert root.xpath("//span[@class='nf']/text()") == ["refraction", "hour_angle"]
    ranges = [(b.get("data-line-start"), b.get("data-line-end")) for b in blocks(result)]
    assert ranges[0][0] == "1" and int(ranges[-1][1]) == len(files.CODE.rstrip("\n").splitlines())
    # The text the locator matches is the code itself, without line numbers.
    assert "".join(el.text_content() for el in blocks(result)) == files.CODE.rstrip("\n") + "\n"


def test_an_image_is_shown_whole_and_served_only_if_it_is_what_its_name_says(tmp_path):
    path = tmp_path / "dome.png"
    path.write_bytes(files.png_bytes())
    result = render(path)
    assert tree(result).xpath("//img/@src") == [ASSET + "file"]
    loader = asset_loader_for(kind_of("dome.png"))
    with open(path, "rb") as fp:
        assert loader(fp, "file").content_type == "image/png"
    fake = tmp_path / "fake.png"
    fake.write_text("<svg onload='alert(1)'/>")
    with pytest.raises(PreviewRejected, match="not what its name says"):
        render(fake)


# --- broken and hostile files ------------------------------------------------------


@pytest.mark.parametrize("name", ["deck.pptx", "book.xlsx", "book.epub", "text.odt"])
def test_a_broken_package_gets_a_clear_message(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(PreviewRejected, match=r"^This file is not a valid .*: the archive is damaged"):
        render(path)


def _laughs(root: str) -> bytes:
    lol = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    return f'<?xml version="1.0"?><!DOCTYPE {root} [{lol}]><{root}>&lol9;</{root}>'.encode()


def _bomb(path: Path) -> Path:
    out = path.with_name("hostile-" + path.name)
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
        with target.open("media/bomb.xml", "w", force_zip64=True) as member:
            for _ in range(40):
                member.write(b"<a>" + b"ha" * 500_000 + b"</a>")
    return out


MAKERS = {"pptx": files.make_pptx, "xlsx": files.make_xlsx, "epub": files.make_epub}
FIRST_PART = {"pptx": "ppt/slides/slide1.xml", "xlsx": "xl/worksheets/sheet1.xml", "epub": "EPUB/content.opf"}


def hostile(kind: str, attack: str, tmp_path: Path) -> Path:
    path = MAKERS[kind](tmp_path / f"good.{kind}")
    if attack == "zip bomb":
        return _bomb(path)
    if attack == "entity expansion":
        return rewrite(path, replace={FIRST_PART[kind]: _laughs("x")})
    if attack == "traversal member":
        return rewrite(path, add={"../../etc/passwd": b"root:x:0:0"})
    if attack == "traversal target":
        if kind == "epub":
            opf = (
                zipfile.ZipFile(path)
                .read(FIRST_PART[kind])
                .replace(b'href="chap_1.xhtml"', b'href="../../../../etc/passwd"')
            )
            return rewrite(path, replace={FIRST_PART[kind]: opf})
        rels = "ppt/slides/_rels/slide1.xml.rels" if kind == "pptx" else "xl/_rels/workbook.xml.rels"
        data = zipfile.ZipFile(path).read(rels)
        data = re.sub(rb'Target="[^"]+"', b'Target="../../../../etc/passwd"', data, count=1)
        return rewrite(path, replace={rels: data})
    raise AssertionError(attack)


@pytest.mark.parametrize(
    ("kind", "attack", "expected"),
    [
        ("pptx", "zip bomb", "zip bomb"), ("xlsx", "zip bomb", "zip bomb"), ("epub", "zip bomb", "zip bomb"),
        ("pptx", "entity expansion", "document type declaration"),
        ("xlsx", "entity expansion", "document type declaration"),
        ("epub", "entity expansion", "document type declaration"),
        ("pptx", "traversal member", "points outside the package"),
        ("xlsx", "traversal member", "points outside the package"),
        ("epub", "traversal member", "points outside the package"),
        ("pptx", "traversal target", "outside the package"),
        ("xlsx", "traversal target", "outside the package"),
        ("epub", "traversal target", None),  # the climbing chapter is left out; the rest is shown
    ],
)  # fmt: skip
def test_a_hostile_package_is_refused_or_neutralised_quickly_with_bounded_memory(tmp_path, kind, attack, expected):
    outcome = measured(hostile(kind, attack, tmp_path))

    assert outcome["seconds"] < 5
    assert outcome["rss_growth_mb"] < 300
    if expected is None:
        assert not outcome["rejected"]
        assert "root:x" not in outcome["html"] and "chromatic aberration" not in outcome["html"]
        assert files.PASSAGE in outcome["html"]
    else:
        assert outcome["rejected"], outcome
        assert outcome["message"].startswith(("This file is not a valid", "This document is too large"))
        assert expected in outcome["message"]


def test_a_book_with_a_huge_chapter_is_shown_from_its_beginning_within_bounds(tmp_path):
    path = files.make_epub(tmp_path / "huge.epub")
    paragraphs = b"".join(b"<p>" + os.urandom(512).hex().encode() + b"</p>" for _ in range(30_000))  # 30 MB
    huge = rewrite(path, replace={"EPUB/chap_3.xhtml": b"<html><body><h1>Mounts</h1>" + paragraphs + b"</body></html>"})
    outcome = measured(huge)

    assert not outcome["rejected"], outcome
    assert outcome["seconds"] < 5 and outcome["rss_growth_mb"] < 300, outcome
    assert files.PASSAGE in outcome["html"]


def test_a_hostile_web_page_is_neutralised_quickly(tmp_path):
    lol = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    page = f"<!DOCTYPE html [{lol}]><html><body>{HOSTILE_CHAPTER * 2000}<p>&lol9;</p></body></html>"
    outcome = measured(files.make_html(tmp_path / "hostile.html", page))

    assert not outcome["rejected"] and outcome["seconds"] < 5 and outcome["rss_growth_mb"] < 300
    root = lxml.html.fragment_fromstring(outcome["html"], create_parent="div")
    assert_safe({"html": outcome["html"]})
    assert "lollol" not in outcome["html"] and root.text_content().count("Scripted paragraph") == 2000
