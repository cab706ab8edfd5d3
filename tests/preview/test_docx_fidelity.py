"""DOCX as Word shows it: headings only from heading styles, drop caps
joined to their word, page headers and footers shown once and marked, the
renderer's classes styled, a table-heavy document rendered in under a second."""

import re
import time
from pathlib import Path

import lxml.html

from mnote.demo.docx_writer import Document, Heading, Table, write_docx
from mnote.preview.docx_render import render_docx
from tests.docx_xml import NAMESPACES, XMLNS, blocks, make_docx, p, r, render, texts
from tests.paths import REPO_DIR



def test_a_direct_outline_level_does_not_make_a_signature_line_a_heading(tmp_path):
    html = render(
        tmp_path,
        p(r("Annual report"), ppr='<w:pStyle w:val="Heading1"/>')
        + p(r("Signed: J. Smith"), ppr='<w:outlineLvl w:val="0"/>')
        + p(r("Date: 3 March 2025"), ppr='<w:outlineLvl w:val="1"/><w:jc w:val="right"/>'),
    )
    found = [(el.tag, el.text_content()) for el in blocks(html)]
    assert found == [("h1", "Annual report"), ("p", "Signed: J. Smith"), ("p", "Date: 3 March 2025")]
    assert blocks(html)[2].get("class") == "docx-right"


def test_a_drop_cap_is_joined_to_its_word(tmp_path):
    html = render(
        tmp_path,
        p(r("D"), ppr='<w:framePr w:dropCap="drop" w:lines="3" w:wrap="around" w:vAnchor="text" w:hAnchor="text"/>')
        + p(r("rop caps open many old books."))
        + p(r("M"), ppr='<w:framePr w:dropCap="margin" w:lines="2"/>')
        + p(r("argin caps too."))
        + p(r("A framed paragraph that is not a drop cap."), ppr='<w:framePr w:w="2000" w:h="400"/>')
        + p(r("Stays apart.")),
    )
    assert texts(html) == ["Drop caps open many old books.", "Margin caps too.",
                           "A framed paragraph that is not a drop cap.", "Stays apart."]  # fmt: skip


def _with_headers(tmp_path: Path) -> Path:
    header = f"<w:hdr {XMLNS}><w:p><w:r><w:t>Confidential – Observatory board</w:t></w:r></w:p></w:hdr>"
    same_words = f"<w:hdr {XMLNS}><w:p><w:r><w:t>Confidential – Observatory board</w:t></w:r></w:p></w:hdr>"
    footer = (f'<w:ftr {XMLNS}><w:p><w:r><w:t xml:space="preserve">Page </w:t></w:r>'
              f'<w:fldSimple w:instr="PAGE"><w:r><w:t>1</w:t></w:r></w:fldSimple></w:p>'
              f'<w:p><w:r><w:t>Only the footer names the author: R. Hooke</w:t></w:r></w:p></w:ftr>')  # fmt: skip
    section = ('<w:sectPr><w:headerReference w:type="default" r:id="rH1"/><w:headerReference w:type="first" r:id="rH2"/>'
               '<w:footerReference w:type="default" r:id="rF1"/></w:sectPr>')  # fmt: skip
    body = (p(r("First section text.")) + f"<w:p><w:pPr>{section}</w:pPr></w:p>"
            + p(r("Second section text.")) + section)  # fmt: skip
    return make_docx(
        tmp_path / "headers.docx", body,
        rels=(("rH1", "header", "header1.xml", False), ("rH2", "header", "header2.xml", False),
              ("rF1", "footer", "footer1.xml", False)),
        files={"word/header1.xml": header.encode(), "word/header2.xml": same_words.encode(), "word/footer1.xml": footer.encode()},
    )  # fmt: skip


def test_page_headers_and_footers_are_shown_once_and_marked(tmp_path):
    rendered = render_docx(_with_headers(tmp_path))
    root = lxml.html.fragment_fromstring(rendered.html)

    headers = root.xpath("//section[@class='docx-headers']/div[@class='docx-header']")
    footers = root.xpath("//section[@class='docx-footers']/div[@class='docx-footer']")
    assert [h.text_content().strip() for h in headers] == ["Confidential – Observatory board"]
    assert "Only the footer names the author: R. Hooke" in footers[0].text_content()
    assert len(footers) == 1
    assert root.xpath("//p[@class='docx-hf-label']/text()") == ["Page header", "Page footer"]
    # After the body, so the body's block numbers are those of the document alone.
    assert texts(rendered.html)[:2] == ["First section text.", "Second section text."]
    assert "R. Hooke" in texts(rendered.html)[-1]


def test_the_stylesheet_styles_every_class_the_renderer_emits():
    css = (REPO_DIR / "static" / "css" / "mnote.css").read_text() + (
        REPO_DIR / "static" / "css" / "preview.css"
    ).read_text()
    source = (REPO_DIR / "mnote" / "preview" / "docx" / "body_html.py").read_text()
    emitted = set(re.findall(r"docx-[a-z]+(?:-[a-z]+)*", source)) - {
        "docx-level",
        "docx-fn",
        "docx-en",
        "docx-ref",
        "docx-bm",
    }  # prefixes of classes and ids
    emitted |= {"docx-headers", "docx-footers", "docx-center", "docx-right", "docx-quote", "docx-subtitle"}
    unstyled = sorted(c for c in emitted if not re.search(rf"\.{re.escape(c)}\b", css))
    assert unstyled == []


def test_a_document_of_11_500_table_cells_renders_in_under_a_second(tmp_path):
    rows = [[f"{r}.{c}" for c in range(10)] for r in range(1_150)]
    path = write_docx(Document(title="Inventory", blocks=[Heading("Inventory", 1), Table(header=[f"C{c}" for c in range(10)], rows=rows)]),
                      tmp_path / "inventory.docx")  # fmt: skip
    render_docx(path)  # warm-up: imports and caches, as a running server has them

    started = time.process_time()
    rendered = render_docx(path)
    elapsed = time.process_time() - started

    assert rendered.block_count >= 11_500
    assert elapsed < 1.0, f"{elapsed:.2f} s of CPU"


assert NAMESPACES  # the helpers above come from the DOCX renderer's tests
