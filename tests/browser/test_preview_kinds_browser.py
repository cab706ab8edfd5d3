"""The preview of slides, sheets, books and code in headless Chromium: a
citation lands on the cited slide shape, row, paragraph or line range, with
the same locator script and protocol as DOCX."""

import json
from urllib.parse import quote

import pytest

from tests import preview_files as files

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def open_at(page, live_server, source, evidence, query=""):
    locator = {
        "precision": "paragraph",
        "sourceId": source.pk,
        "evidenceText": evidence,
        "searchQuery": query,
        "displayQuote": evidence,
    }
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(locator))}")
    page.locator("#document[data-initial-status]").wait_for(timeout=15_000)
    return page.locator("#document").get_attribute("data-initial-status")


def hit(page):
    """The block the cited words were marked in (the first, if several)."""
    return page.locator("mark.mnote-hit").first.locator("xpath=ancestor::*[@data-block-index][1]")


def marked(page) -> str:
    # The cited words are marked piece by piece (one mark per text node).
    return "".join(page.locator("mark.mnote-hit").all_inner_texts())


def test_it_lands_on_the_slide_and_shape_of_a_presentation(shelf, logged_in_page, live_server):
    source = shelf("review.pptx", files.make_pptx)
    page = logged_in_page
    assert open_at(page, live_server, source, files.PASSAGE, "aluminium") == "exact"
    found = hit(page)
    assert marked(page) == files.PASSAGE
    assert found.get_attribute("data-slide") == "2" and found.get_attribute("data-shape")
    assert found.is_visible()


def test_it_lands_on_the_row_of_a_sheet_and_names_its_cell_range(shelf, logged_in_page, live_server):
    source = shelf("budget.xlsx", files.make_xlsx)
    page = logged_in_page
    status = open_at(
        page, live_server, source, "2 Perfect seeing on the spectrograph run, 0.6 arcsec all night", "seeing"
    )
    assert status == "exact"
    found = hit(page)
    assert found.get_attribute("data-sheet") == "Observing log" and found.get_attribute("data-range") == "A3:B3"
    # The row number is drawn, not text.
    assert (
        page.locator('th.row-number[data-n="3"]').first.evaluate("el => getComputedStyle(el, '::before').content")
        == '"3"'
    )


def test_it_lands_on_the_paragraph_of_a_book(shelf, logged_in_page, live_server):
    source = shelf("guide.epub", files.make_epub)
    page = logged_in_page
    assert open_at(page, live_server, source, "recoated with aluminium in the vacuum chamber", "vacuum") in (
        "exact",
        "fuzzy",
    )
    found = hit(page)
    assert marked(page) == "recoated with aluminium in the vacuum chamber"
    assert found.inner_text() == files.PASSAGE and found.get_attribute("data-chapter")
    picture = page.locator("section.epub-chapter img").first
    picture.scroll_into_view_if_needed()
    # Read from the book in the preview's child process: it may come a moment after the page.
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=picture.element_handle(), timeout=20_000)
    assert picture.evaluate("img => img.naturalWidth") == 40  # served from the book


def test_it_lands_on_the_line_range_of_a_code_file(shelf, logged_in_page, live_server):
    source = shelf("pointing.py", files.make_code)
    page = logged_in_page
    evidence = "def hour_angle(lst_hours: float, right_ascension_hours: float) -> float:\n    # The hour angle grows westward as the sky turns."
    assert open_at(page, live_server, source, evidence, "hour angle") == "exact"
    found = hit(page)
    assert (found.get_attribute("data-line-start"), found.get_attribute("data-line-end")) == ("11", "13")
    # Line numbers show, from CSS, and are not part of the text.
    first_line = page.locator('.code .line[data-line="11"]')
    assert first_line.evaluate("el => getComputedStyle(el, '::before').content") == '"11"'
    assert not marked(page).lstrip().startswith("11")
    assert page.locator(".code span.k").first.evaluate("el => getComputedStyle(el).color") != "rgb(0, 0, 0)"


def test_a_centred_docx_paragraph_and_a_text_box_look_as_in_word(shelf, logged_in_page, live_server):
    from tests.docx_xml import make_docx, p, r

    source = shelf("letter.docx", lambda path: make_docx(path, p(r("Centred title line"), ppr='<w:jc w:val="center"/>')
                                                          + p(r("Signed, the director"), ppr='<w:jc w:val="right"/>')))  # fmt: skip
    page = logged_in_page
    page.goto(f"{live_server.url}/preview/{source.pk}/")
    assert page.locator("p.docx-center").evaluate("el => getComputedStyle(el).textAlign") == "center"
    assert page.locator("p.docx-right").evaluate("el => getComputedStyle(el).textAlign") == "right"
