"""The precision badge of a saved conversation's cards and of a permalink's
page names the place the citation was made with (page, slide, cells,
passage), in the reader's language; "whole file" only for a file-only one."""

import pytest
from django.utils import translation

from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot
from mnote.pages.search import _stored_card
from mnote.search.cards import cards_html
from tests.factories import indexed_source

pytestmark = pytest.mark.django_db


def _saved(precision: str, **locator) -> dict:
    return {"citationId": "ab12", "sourceId": 7, "sourcePath": "plant/x", "fileName": "x", "locatorPrecision": precision,
            "locator": {"precision": precision, **locator}, "displayQuote": "The north pump was serviced."}


@pytest.mark.parametrize("precision, locator, en, zh", [
    ("page", {"page": 4}, "page 4", "第 4 页"),
    ("slide", {"slide": 3, "shape": "5"}, "slide 3", "第 3 张幻灯片"),
    ("cells", {"sheet": "Pumps", "cellRange": "A7:F9", "sheetPage": 2}, "Pumps, cells A7:F9", "Pumps，单元格 A7:F9"),
    ("cells", {"cellRange": "B2:C2", "sheetPage": 1}, "cells B2:C2", "单元格 B2:C2"),
    ("passage", {"blockIndex": 3, "charRange": [10, 80]}, "passage", "段落位置"),
    ("file", {}, "whole file", "整个文件"),
])  # fmt: skip
def test_a_saved_cards_badge_names_its_place(precision, locator, en, zh):
    card = _stored_card(_saved(precision, **locator))
    for language, words in (("en", en), ("zh-hans", zh)):
        with translation.override(language):
            [html] = cards_html([card], "pump")
        assert f'<span class="badge precision-{precision}">{words}</span>' in html


def test_a_permalinks_page_shows_the_slide_it_cites(member_client, member):
    root = IndexedRoot.objects.create(name="Plant", path="plant")
    deck = indexed_source(root, "review.pptx")
    cited = Citation.objects.create(source=deck, source_path="plant/review.pptx", source_sha256=deck.sha256,
                                    precision="slide", locator={"precision": "slide", "slide": 2, "shape": "3"},
                                    display_quote="The north pump was serviced.")
    html = member_client.get(cited.get_absolute_url(), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert ">slide 2</span>" in html and "whole file" not in html
