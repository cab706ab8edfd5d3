"""A permalink opened in headless Chromium after its file was edited: the
preview beside it marks the cited words where they are now (reworded), or
marks nothing (removed)."""

import hashlib

import pytest

from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot, Source

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

QUOTE = "Valve stems are lapped every spring by the night shift."
TEXT = (
    "# Pumps\n\nCheck the seals weekly and write down what you find.\n\n"
    "# Valves\n\nValve stems are lapped every spring by the night shift. The plant restarts after.\n\n"
    "# Filters\n\nReplace the intake filters when the pressure drop passes forty millibar.\n"
)


def marked(page, *, located: bool = True) -> str:
    """The words the preview marks, once it has placed its passage (or, with
    nothing to place, once the document is shown)."""
    frame = page.frame_locator("#citation-frame")
    frame.locator("#document[data-initial-status]" if located else "#document").wait_for(timeout=15_000)
    return "".join(frame.locator("mark.mnote-hit").all_inner_texts())


def cited_then_edited(library_dir, client_page, live_server, new_text: str):
    notes = library_dir / "notes"
    notes.mkdir()
    path = notes / "care.md"
    path.write_text(TEXT)
    root = IndexedRoot.objects.create(name="Notes", path="notes")
    source = Source.objects.create(root=root, relative_path="care.md", absolute_path=str(path), status="indexed",
                                   sha256=hashlib.sha256(TEXT.encode()).hexdigest(), lightrag_doc_id="doc-care")
    citation = Citation.objects.create(
        source=source, source_path="Notes/care.md", source_sha256=source.sha256, precision="paragraph",
        locator={"precision": "paragraph", "evidenceText": QUOTE, "headingPath": ["Valves"]},
        heading_path=["Valves"], display_quote=QUOTE,
    )
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
