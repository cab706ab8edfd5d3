"""A permalink opened in headless Chromium after its file was edited: the
preview beside it marks the cited words where they are now (reworded), or
marks nothing (removed)."""

import hashlib

import pytest

from tests.factories import CARE_NOTES as TEXT, CARE_QUOTE as QUOTE, cited_care_notes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]



def marked(page, *, located: bool = True) -> str:
    """The words the preview marks, once it has placed its passage (or, with
    nothing to place, once the document is shown)."""
    frame = page.frame_locator("#citation-frame")
    frame.locator("#document[data-initial-status]" if located else "#document").wait_for(timeout=15_000)
    return "".join(frame.locator("mark.mnote-hit").all_inner_texts())


def cited_then_edited(library_dir, client_page, live_server, new_text: str):
    path, source, citation = cited_care_notes(library_dir)
    client_page.goto(live_server.url + citation.get_absolute_url())  # opened once: what it cites is kept
    assert marked(client_page) == QUOTE
    path.write_text(new_text)
    source.sha256, source.stale = hashlib.sha256(new_text.encode()).hexdigest(), True
    source.save()
    client_page.goto(live_server.url + citation.get_absolute_url())
    return client_page


def test_the_preview_marks_reworded_words_where_they_are_now(logged_in_page, live_server, library_dir):
    new = "# Safety\n\nWear gloves.\n\n" + TEXT.replace("lapped every spring", "lapped and polished every autumn")
    page = cited_then_edited(library_dir, logged_in_page, live_server, new)
    assert page.locator("[data-reanchor]").get_attribute("data-reanchor") == "reworded"
    assert page.locator("del.diff-removed").all_inner_texts() == ["spring"]
    assert marked(page) == "Valve stems are lapped and polished every autumn by the night shift."


def test_the_preview_marks_nothing_when_the_words_were_removed(logged_in_page, live_server, library_dir):
    page = cited_then_edited(library_dir, logged_in_page, live_server, TEXT.replace(QUOTE + " ", ""))
    assert page.locator("[data-reanchor]").get_attribute("data-reanchor") == "removed"
    assert marked(page, located=False) == "" and "Pump" in page.frame_locator("#citation-frame").locator("#document").inner_text()
