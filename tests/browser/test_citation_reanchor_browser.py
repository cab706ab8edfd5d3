"""A permalink opened in headless Chromium after its file was edited: the
page names the case (unchanged, moved, reworded, removed) and the preview
beside it marks the cited words where they are now, or marks nothing."""

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


# --- each case the page names, one page each ----------------------------------------------
# The permalink is first opened by the server (what it cites is kept then, as
# in a browser), the file is edited, and only the page after the edit is
# loaded in Chromium, in a context given the member's session cookie: one
# page per case.

def moved(text: str) -> str:
    """The cited sentence cut and pasted under a new heading at the end."""
    return text.replace(QUOTE + " ", "") + "\n# Archive\n\nOld logs go to the basement.\n\n" + QUOTE + "\n"


CASES = {
    # edited how: (the new text, the case the page names, the words marked in the preview)
    "text_edited_below": (
        TEXT.replace("pressure drop passes forty millibar", "filter gauge reads red"), "unchanged", QUOTE),
    "text_inserted_above": (
        "# Safety\n\nWear gloves in the plant room. Keep the doors shut.\n\n" + TEXT, "unchanged", QUOTE),
    "passage_moved": (moved(TEXT), "moved", QUOTE),
    "words_changed_around": (
        TEXT.replace("# Valves", "# Valve care").replace("restarts after.", "starts up again after."),
        "unchanged", QUOTE),
    "combined_edit": (
        "# Safety\n\nWear gloves in the plant room.\n\n" + moved(TEXT).replace("every spring", "every autumn"),
        "reworded", "Valve stems are lapped every autumn by the night shift."),
}


@pytest.fixture
def member_page(chromium, live_server, member_client):
    """A browser page with the member's session: no log-in page to load."""
    from django.conf import settings

    context = chromium.new_context(viewport={"width": 1400, "height": 900}, locale="en-US")
    session = member_client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}])
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("edited", list(CASES))
def test_the_page_names_the_case_and_the_preview_marks_the_words_where_they_are_now(
    edited, member_client, member_page, live_server, library_dir
):
    new_text, case, words = CASES[edited]
    path, source, citation = cited_care_notes(library_dir)
    assert member_client.get(citation.get_absolute_url()).status_code == 200
    citation.refresh_from_db()
    assert citation.quote_selector["exact"] == QUOTE  # kept on the first open
    path.write_text(new_text)
    source.sha256, source.stale = hashlib.sha256(new_text.encode()).hexdigest(), True
    source.save()

    member_page.goto(live_server.url + citation.get_absolute_url())
    status = member_page.locator("[data-reanchor]")
    assert status.get_attribute("data-reanchor") == case
    assert status.is_visible() and "The file has changed since this citation was made" in status.inner_text()
    assert marked(member_page) == words
    if case == "reworded":
        assert member_page.locator("del.diff-removed").all_inner_texts() == ["spring"]
        assert member_page.locator("ins.diff-added").all_inner_texts() == ["autumn"]
    else:  # the words as they were cited, nothing marked as changed
        assert member_page.locator("del.diff-removed, ins.diff-added").count() == 0
