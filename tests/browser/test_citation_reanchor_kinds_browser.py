"""A permalink to a row of a spreadsheet (CSV), opened in headless Chromium
after the sheet was edited: the page names the case and the preview's table
marks the cited row where it is now, or marks nothing when the row went."""

import hashlib

import pytest

from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot, Source

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

ROWS = [
    "Item,Room,Checked by,Note",
    "Fume hood,Lab 2,Mia Wong,Sash kept below the marked line",
    "Eye wash station,Lab 2,Li Na,Flushed for three minutes weekly",
    "Fire blanket,Corridor,Sam Reyes,Seal intact and in date",
]
CITED = "Eye wash station Lab 2 Li Na Flushed for three minutes weekly"


def cited_sheet(library_dir):
    folder = library_dir / "safety"
    folder.mkdir()
    path = folder / "checks.csv"
    text = "\n".join(ROWS) + "\n"
    path.write_text(text)
    root = IndexedRoot.objects.create(name="Safety", path="safety")
    source = Source.objects.create(root=root, relative_path="checks.csv", absolute_path=str(path), status="indexed",
                                   sha256=hashlib.sha256(text.encode()).hexdigest(), lightrag_doc_id="doc-checks")
    citation = Citation.objects.create(
        source=source, source_path="Safety/checks.csv", source_sha256=source.sha256, precision="paragraph",
        locator={"precision": "paragraph", "evidenceText": CITED}, display_quote=CITED,
    )
    return path, source, citation


def marked(page, *, located: bool = True) -> str:
    frame = page.frame_locator("#citation-frame")
    frame.locator("#document[data-initial-status]" if located else "#document").wait_for(timeout=15_000)
    return " ".join(" ".join(t.split()) for t in frame.locator("mark.mnote-hit").all_inner_texts())


EDITS = {
    # edited how: (the sheet's rows after the edit, the case the page names, the words marked)
    "rows_inserted_above_and_row_moved": (
        [ROWS[0], "Gas cylinders,Store,Li Na,Chained upright", ROWS[1], ROWS[3], ROWS[2]], "moved", CITED),
    "cell_reworded": (
        [ROWS[0], ROWS[1], ROWS[2].replace("three minutes weekly", "three minutes every Monday"), ROWS[3]],
        "reworded", "Eye wash station Lab 2 Li Na Flushed for three minutes every Monday"),
    "row_deleted": ([ROWS[0], ROWS[1], ROWS[3]], "removed", ""),
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


@pytest.mark.parametrize("edited", list(EDITS))
def test_a_cited_row_is_found_again_after_the_sheet_is_edited(edited, member_client, member_page, live_server,
                                                               library_dir):
    rows, case, words = EDITS[edited]
    path, source, citation = cited_sheet(library_dir)
    assert member_client.get(citation.get_absolute_url()).status_code == 200
    citation.refresh_from_db()
    assert " ".join(citation.quote_selector["exact"].split()) == CITED  # kept on the first open
    text = "\n".join(rows) + "\n"
    path.write_text(text)
    source.sha256, source.stale = hashlib.sha256(text.encode()).hexdigest(), True
    source.save()

    member_page.goto(live_server.url + citation.get_absolute_url())
    status = member_page.locator("[data-reanchor]")
    assert status.get_attribute("data-reanchor") == case
    assert marked(member_page, located=bool(words)) == words
    if case == "reworded":
        assert member_page.locator("del.diff-removed").all_inner_texts() == ["weekly"]
        assert member_page.locator("ins.diff-added").all_inner_texts() == ["every Monday"]
    if case == "removed":
        assert "Fume hood" in member_page.frame_locator("#citation-frame").locator("#document").inner_text()
