"""A citation of a PDF, a workbook, a deck or a text file, opened in the real
preview (Chromium) as the app cites it: the evidence the mapper puts in the
locator (the chunk's sentences that answer the query, padded to a card's
width) reaches the preview, which opens the place that holds the answer and
marks the cited words — on the right page, only the cited cells, in view once
the pictures have loaded, in whole words."""

import io
import json
import time
from urllib.parse import quote

import pytest

from mnote.text import with_heading
from mnote.text.display import clean_display_text
from mnote.text.evidence import evidence_sentences
from tests import preview_files as files

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PHONE = {"width": 390, "height": 844}


def cited(chunk: str, query: str, **extra) -> dict:
    """The locator the mapper makes for a chunk with no sidecar block (every
    kind but DOCX): the chunk's evidence sentences for the query."""
    quote_ = evidence_sentences(clean_display_text(chunk), query, cleaned=True)
    return {"precision": "file", "degraded": True, "evidenceText": with_heading(quote_, []), "displayQuote": quote_,
            "searchQuery": query, **extra}


def open_at(page, live_server, source, locator) -> str:
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(locator))}")
    page.locator("#document[data-initial-status]").wait_for(timeout=20_000)
    return page.locator("#document").get_attribute("data-initial-status")


def in_view(page, selector: str) -> bool:
    """Whether the element is inside the viewport (what a reader sees without scrolling)."""
    return page.locator(selector).first.evaluate(
        "el => { const r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; }"
    )


def shots(page, tmp_path, name: str) -> None:
    """Desktop and phone screenshots of the case (in the test's temporary folder)."""
    page.screenshot(path=tmp_path / f"{name}-desktop.png")
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(300)
    page.screenshot(path=tmp_path / f"{name}-phone.png")


# --- PDF: the page that holds the answer --------------------------------------

SITES_PAGE_1 = [
    "Coastal monitoring report, winter season.",
    *[f"Site {n}: the dune line retreated {n} metres since the last survey." for n in range(1, 4)],
    *[f"Routine note {n} on the vegetation of the landward side." for n in range(24)],
    "Site 4: the old retaining wall has collapsed. Recommendation: install",
    "monitoring stakes along the ridge and repeat the survey in spring.",
]
SITES_PAGE_2 = [
    "Site 5: erosion at the car park edge continues at the usual rate.",
    "Site 7 showed a sinkhole that opened after the February storm surge.",
    "The hole is four metres wide and fenced off.",
    *[f"Site {n}: the footpath was resurfaced in March." for n in range(8, 30)],
]


def test_a_pdf_citation_opens_the_page_that_holds_the_answer(shelf, logged_in_page, live_server, tmp_path):
    from tests.pdf_factory import line_baseline, make_pdf

    source = shelf("coast.pdf", lambda path: make_pdf(path, [SITES_PAGE_1, SITES_PAGE_2]))
    query = "sinkhole after the February storm surge"
    # LightRAG's chunk runs over the page break (pypdf's text, a page per line run).
    locator = cited("\n".join(SITES_PAGE_1[-8:] + SITES_PAGE_2[:6]), query)
    assert "has collapsed" in locator["evidenceText"]  # the evidence is padded with page 1's sentences
    page = logged_in_page
    assert open_at(page, live_server, source, locator) == "fuzzy"  # a text match, labelled so
    page.wait_for_timeout(900)  # smooth scrolling
    # The sentence with the answer is drawn stronger, on page 2, and is what the reader sees.
    focus = page.locator(".mnote-focus")
    assert focus.count() == 1
    assert focus.evaluate("r => r.closest('.pdf-page').dataset.page") == "2"
    where = focus.evaluate("""r => {
        const img = r.closest('.pdf-page').querySelector('img').getBoundingClientRect();
        const box = r.getBoundingClientRect();
        return {top: (box.top - img.top) / img.height, bottom: (box.bottom - img.top) / img.height}; }""")
    assert where["top"] < line_baseline(1) < where["bottom"]
    assert in_view(page, ".mnote-focus")
    # The card's evidence is marked too, on both pages it covers.
    pages = page.locator(".mnote-rect").evaluate_all("rs => rs.map((r) => r.closest('.pdf-page').dataset.page)")
    assert sorted(set(pages)) == ["1", "2"]
    shots(page, tmp_path, "pdf")
    assert in_view(page, ".mnote-focus")  # the phone's narrower page: still in view


# --- XLSX: the cited cells, on the page that holds them -----------------------

SITE_ROWS = 620  # more than a page of the preview (sheet_render.PAGE_ROWS = 500)
BEAUMONT, PORT_ARTHUR = 12, 540


def site_row(n: int) -> list:
    if n == BEAUMONT:
        return [n, "Beaumont Jefferson County", "flooded after the storm", "2024-03-01"]
    if n == PORT_ARTHUR:
        return [n, "Port Arthur Jefferson County", "levee overtopped in the surge", "2024-03-02"]
    return [n, f"Site {n} in Harris County", "inspected, no damage", f"2024-0{n % 9 + 1}-01"]


def make_sites_workbook(path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Sites"
    sheet.append(["Number", "Place", "Finding", "Date"])
    for n in range(1, SITE_ROWS + 1):
        sheet.append(site_row(n))
    book.save(path)
    return path


def sheet_chunk(first: int, last: int) -> str:
    """LightRAG's text of those rows (its XLSX extractor: tab-separated, a row per line)."""
    return "\n".join("\t".join(str(v) for v in site_row(n)) for n in range(first, last + 1))


def test_a_sheet_citation_marks_the_cited_cells_and_a_second_one_turns_to_its_page(
    shelf, logged_in_page, live_server, locate_in_frame, tmp_path
):
    source = shelf("sites.xlsx", make_sites_workbook)
    page = logged_in_page
    first, second = locate_in_frame(page, source, [
        cited(sheet_chunk(1, 40), "Beaumont flooded"),
        cited(sheet_chunk(525, 560), "Port Arthur levee overtopped"),
    ])  # fmt: skip
    frame = page.frame_locator("#locate-frame")
    # The first: the cited row's cells only, not the rows of the chunk around it.
    assert first["status"] in ("exact", "fuzzy")
    assert first["text"].split() == "12 Beaumont Jefferson County flooded after the storm 2024-03-01".split()
    # The second, in the same open preview (no reload): page 2 of the sheet, its row.
    assert second["status"] in ("exact", "fuzzy") and second["sameWindow"]
    marks = frame.locator("mark.mnote-hit")
    assert marks.first.evaluate("m => m.closest('tr').dataset.range") == f"A{PORT_ARTHUR + 1}:D{PORT_ARTHUR + 1}"
    assert marks.all_inner_texts() == [str(PORT_ARTHUR), *site_row(PORT_ARTHUR)[1:]]
    assert frame.locator("#document").get_attribute("data-rows-page") == "2"
    assert frame.locator("nav.sheet-pages strong").first.inner_text() == "2"
    page.wait_for_timeout(900)
    assert marks.first.evaluate(
        "m => { const r = m.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }"
    )
    page.locator("#locate-frame").screenshot(path=tmp_path / "xlsx-desktop.png")
    page.set_viewport_size(PHONE)
    page.locator("#locate-frame").evaluate("f => { f.style.width = '390px'; f.style.height = '700px'; }")
    page.wait_for_timeout(300)
    page.locator("#locate-frame").screenshot(path=tmp_path / "xlsx-phone.png")


# --- PPTX: the mark stays in view while the pictures load ---------------------

def make_picture_deck(path):
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for n in range(5):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = f"Site photograph {n}"
        slide.shapes.add_picture(io.BytesIO(files.png_bytes((800, 600), (40 * n, 90, 160))), Inches(1), Inches(1.5),
                                 width=Inches(8))
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Mirror maintenance"
    slide.placeholders[1].text_frame.text = files.PASSAGE
    for n in range(3):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Filler slide {n}"
        slide.placeholders[1].text = f"Routine observing log entry number {n} with nothing special."
    deck.save(path)
    return path


def test_a_deck_citation_stays_in_view_after_the_pictures_above_it_load(shelf, logged_in_page, live_server, tmp_path):
    source = shelf("photos.pptx", make_picture_deck)
    page = logged_in_page
    page.set_viewport_size({"width": 1000, "height": 600})

    def slow_picture(route):
        time.sleep(0.8)  # a deck's pictures come from the preview's child process, after the page
        route.continue_()

    page.route("**/image/**", slow_picture)
    chunk = "\n".join([f"Site photograph {n}" for n in range(5)] + ["Mirror maintenance", files.PASSAGE])
    assert open_at(page, live_server, source, cited(chunk, "mirror recoated aluminium")) == "exact"
    # Every picture the reader could see has loaded (they come from the deck a moment after the page).
    page.wait_for_function("""() => Array.from(document.querySelectorAll('img')).filter((img) => {
        const r = img.getBoundingClientRect(); return r.bottom > -1500 && r.top < innerHeight + 1500; })
        .every((img) => img.complete)""", timeout=20_000)
    page.wait_for_timeout(600)
    # The card's evidence runs from the titles of the slides before; the preview takes the reader to the passage.
    assert "".join(page.locator("mark.mnote-hit").all_inner_texts()).endswith("Mirror maintenance" + files.PASSAGE)
    assert "".join(page.locator("mark.mnote-focus").all_inner_texts()) == files.PASSAGE
    assert page.locator("mark.mnote-focus").first.evaluate("m => m.closest('[data-slide]').dataset.slide") == "6"
    assert in_view(page, "mark.mnote-focus")
    shots(page, tmp_path, "pptx")
    assert in_view(page, "mark.mnote-focus")


# --- HTML, Markdown, text: whole words ----------------------------------------

FLOOD = ("The gauge at Beaumont Jefferson County recorded the highest water since 1994. "
         "Crews closed the east levee road before noon and reopened it two days later.")  # fmt: skip
TEXT_FILES = {
    "flood.html": f"<html><body><h1>Flood log</h1><p>Opening remarks of the log.</p><p>{FLOOD}</p></body></html>",
    "flood.md": f"# Flood log\n\nOpening remarks of the log.\n\n{FLOOD}\n",
    "flood.txt": f"Flood log\n\nOpening remarks of the log.\n\n{FLOOD}\n",
}


def test_a_text_citation_marks_whole_words(shelf, logged_in_page, live_server, tmp_path):
    page = logged_in_page
    for name, content in TEXT_FILES.items():
        source = shelf(name, lambda path, content=content: path.write_text(content))
        # A quote cut inside words at both ends, and a close one (a word changed) that is aligned.
        for evidence in ("aumont Jefferson County recorded the highest water since 1994. Crews closed the ea",
                         "umont Jefferson County recorded the highest waters since 1994. Crews shut the east levee ro"):
            locator = {"precision": "paragraph", "evidenceText": evidence, "displayQuote": evidence,
                       "searchQuery": "Beaumont"}
            assert open_at(page, live_server, source, locator) in ("exact", "fuzzy"), (name, evidence)
            marked = " ".join("".join(page.locator("mark.mnote-hit").all_inner_texts()).split())
            assert marked.startswith("Beaumont Jefferson"), (name, marked)
            assert marked.split()[-1] in ("east", "levee", "road"), (name, marked)
    shots(page, tmp_path, "text")
