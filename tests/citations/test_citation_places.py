"""A citation's precision per kind, from the place index the worker writes
after a file is indexed: the badge names what the preview will show (page,
slide, sheet and cells, passage), and "whole file" only when nothing better
is known."""

import openpyxl
import pytest
from django.utils import translation
from pptx import Presentation
from pptx.util import Inches

from mnote.citations.mapper import map_query_data
from mnote.library.models import Source
from mnote.library.place_indexes import write_place_indexes
from mnote.preview.place_index import forget, place_index_path
from mnote.search.cards import cards_html
from tests.lightrag_fakes import chunk, result
from tests.pdf_factory import make_pdf

pytestmark = pytest.mark.django_db

SENTENCE = "The north pump was serviced after the February storm surge."


def _deck(path):
    deck = Presentation()
    for words in ("Quarterly review of the plant", SENTENCE):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = "Maintenance"
        slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1)).text_frame.text = words
    deck.save(path)


def _workbook(path):
    book = openpyxl.Workbook()
    book.active.title = "Summary"
    book.active.append(["nothing", "here"])
    sheet = book.create_sheet("Pumps")
    for n in range(1, 12):
        sheet.append([f"pump {n}", "inspected", f"{n * 3} hours"])
    sheet.append(["north pump", SENTENCE, "4 hours"])
    book.save(path)


def _pdf(path):
    make_pdf(path, [["Contents of the report", "Site overview"], ["Findings", SENTENCE, "Next steps follow."]])


def _markdown(path):
    path.write_text(f"# Report\n\nAn opening paragraph on the site.\n\n## Findings\n\n{SENTENCE} It took two days.\n")


def _indexed(shelf, name, make) -> Source:
    source = shelf(name, make)
    source.sha256 = (name.encode().hex() * 64)[:64]
    source.lightrag_name = f"mnote-0123456789abcdef-{name}"
    source.lightrag_doc_id = f"doc-{name}"
    source.save()
    return source


def _cite(source, content=SENTENCE):
    [citation] = map_query_data(result(chunk(source, 0, content)), query="storm surge pump",
                                sources=Source.objects.all()).citations
    return citation


@pytest.fixture
def indexed(shelf, lightrag_dirs):
    """Files of four kinds, indexed, with the place indexes the worker writes."""
    sources = {
        "pdf": _indexed(shelf, "report.pdf", _pdf),
        "pptx": _indexed(shelf, "review.pptx", _deck),
        "xlsx": _indexed(shelf, "pumps.xlsx", _workbook),
        "markdown": _indexed(shelf, "notes.md", _markdown),
    }
    forget()
    assert write_place_indexes() == 4
    yield sources
    forget()


def test_each_kind_names_the_place_the_preview_shows(indexed):
    pdf = _cite(indexed["pdf"])
    assert (pdf.precision, pdf.page, pdf.locator["page"]) == ("page", 2, 2) and not pdf.degraded
    assert pdf.citation_markdown.startswith("[report.pdf, p.2](")

    slide = _cite(indexed["pptx"])
    assert slide.precision == "slide" and slide.locator["slide"] == 2 and slide.locator["shape"]
    assert "slide 2" in slide.citation_markdown

    cells = _cite(indexed["xlsx"])
    assert cells.precision == "cells"
    assert (cells.locator["sheet"], cells.locator["cellRange"], cells.locator["sheetPage"]) == ("Pumps", "A12:C12", 1)
    assert "Pumps!A12:C12" in cells.citation_markdown

    passage = _cite(indexed["markdown"])
    assert passage.precision == "passage" and not passage.degraded
    start, end = passage.locator["charRange"]
    assert end > start and isinstance(passage.locator["blockIndex"], int)
    assert passage.place["charRange"] == [start, end] and passage.as_json()["locatorPlace"] == passage.place


def test_the_cards_badge_names_the_place_in_both_languages(indexed):
    citations = [_cite(indexed[kind]) for kind in ("pdf", "pptx", "xlsx", "markdown")]
    for language, words in (
        ("en", ["page 2", "slide 2", "Pumps, cells A12:C12", "passage"]),
        ("zh-hans", ["第 2 页", "第 2 张幻灯片", "Pumps，单元格 A12:C12", "段落位置"]),
    ):
        with translation.override(language):
            cards = cards_html(citations, "storm surge pump")
        for card, word in zip(cards, words):
            assert f">{word}</span>" in card
            assert "whole file" not in card and "整个文件" not in card


def test_it_says_whole_file_only_when_nothing_better_is_true(indexed, shelf):
    # Words the file does not hold: no place is claimed.
    absent = _cite(indexed["markdown"], "Quarterly dividends were paid to every shareholder in March.")
    assert absent.precision == "file" and absent.degraded and not absent.place
    # A file whose place index is not written yet (the worker has not reached it).
    fresh = _indexed(shelf, "later.md", _markdown)
    assert not place_index_path(fresh.sha256).exists()
    later = _cite(fresh)
    assert later.precision == "file"
    with translation.override("en"):
        assert ">whole file</span>" in cards_html([later], "storm")[0]


def test_a_damaged_file_is_read_once_and_stays_whole_file(shelf, lightrag_dirs):
    broken = _indexed(shelf, "broken.pptx", lambda path: path.write_bytes(b"PK\x03\x04 not a deck"))
    forget()
    assert write_place_indexes() == 1
    assert write_place_indexes() == 0  # the refusal is kept: not read again
    assert _cite(broken).precision == "file"
