"""A permalink made on one version of a file, opened after the file was
edited on disk: its page says whether the cited words are unchanged, moved,
reworded (with the differences marked) or removed, and the preview marks
them where they are now — or marks nothing."""

import hashlib
import html
import json
import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.factories import CARE_NOTES as TEXT, CARE_QUOTE as QUOTE, cited_care_notes

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]



@pytest.fixture
def cited_file(library_dir):
    return cited_care_notes(library_dir)


def edit(path, source, text: str) -> None:
    """What a person and then a sync do: the file edited, the registry told."""
    path.write_text(text)
    source.sha256, source.stale = hashlib.sha256(text.encode()).hexdigest(), True
    source.save()


def open_page(client, citation) -> str:
    page = client.get(citation.get_absolute_url())
    assert page.status_code == 200
    return page.content.decode()


def marked_in_preview(page: str) -> str | None:
    """The words the page's preview is told to mark (None: nothing)."""
    [src] = re.findall(r'<iframe id="citation-frame"[^>]* src="([^"]*)"', page)
    query = parse_qs(urlparse(html.unescape(src)).query)
    if "locator" in query:
        return json.loads(query["locator"][0])["evidenceText"]
    return "(the citation's own)" if "c" in query else None


def case_of(page: str) -> str:
    [case] = re.findall(r'data-reanchor="([a-z]+)"', page)
    return case


@pytest.fixture
def opened_once(member_client, cited_file):
    """The permalink opened before the edit: what it cited is kept then."""
    path, source, citation = cited_file
    page = open_page(member_client, citation)
    assert marked_in_preview(page) == "(the citation's own)" and "data-reanchor" not in page
    citation.refresh_from_db()
    assert citation.quote_selector["exact"] == QUOTE and citation.cited_text == QUOTE
    assert citation.quote_selector["twins"] is False  # no other words close to these in the file
    return path, source, citation


def test_words_still_there_after_text_added_above_are_unchanged(member_client, opened_once):
    path, source, citation = opened_once
    edit(path, source, "# Safety\n\nWear gloves in the plant room.\n\n" + TEXT)
    page = open_page(member_client, citation)
    assert case_of(page) == "unchanged" and "still in it as they were" in page
    assert marked_in_preview(page) == QUOTE


def test_words_whose_paragraph_moved_are_moved(member_client, opened_once):
    path, source, citation = opened_once
    moved = TEXT.replace("Valve stems are lapped every spring by the night shift. The plant restarts after.\n\n", "")
    edit(path, source, moved + "\n# Archive\n\nOld logs go to the basement.\n\n" + QUOTE + "\n")
    page = open_page(member_client, citation)
    assert case_of(page) == "moved" and "in another place" in page
    assert marked_in_preview(page) == QUOTE


def test_reworded_words_are_shown_old_and_new_with_the_differences_marked(member_client, opened_once):
    path, source, citation = opened_once
    edit(path, source, TEXT.replace("lapped every spring", "lapped and polished every autumn"))
    page = open_page(member_client, citation)
    assert case_of(page) == "reworded"
    assert '<del class="diff-removed">spring</del>' in page
    assert '<ins class="diff-added">and polished</ins>' in page and '<ins class="diff-added">autumn</ins>' in page
    assert marked_in_preview(page) == "Valve stems are lapped and polished every autumn by the night shift."
    # The preview marks the new words, as it would a fresh citation's.
    [src] = re.findall(r'<iframe id="citation-frame"[^>]* src="([^"]*)"', page)
    preview = member_client.get(html.unescape(src))
    anchor = preview.context["locator"]["anchor"]
    assert anchor["textQuote"]["exact"] == "Valve stems are lapped and polished every autumn by the night shift."


def test_removed_words_are_shown_as_cited_and_nothing_is_marked(member_client, opened_once):
    path, source, citation = opened_once
    edit(path, source, TEXT.replace(QUOTE, "Ask the foreman."))
    page = open_page(member_client, citation)
    assert case_of(page) == "removed" and "no longer in it" in page
    assert f'<blockquote class="quote">{QUOTE}</blockquote>' in page
    assert marked_in_preview(page) is None


def test_a_row_without_a_kept_quote_still_says_the_file_changed(member_client, cited_file):
    path, source, citation = cited_file
    edit(path, source, TEXT.replace("lapped every spring", "lapped every autumn"))
    page = open_page(member_client, citation)
    assert "data-reanchor" not in page and "The source has changed" in page
    assert marked_in_preview(page) == "(the citation's own)"


def test_a_permalink_made_from_a_placed_citation_keeps_its_quote_and_context():
    from mnote.citations.permalinks import kept_quote

    anchor = {"textQuote": {"exact": QUOTE, "prefix": "# Valves ", "suffix": " The plant"}, "textPosition": {"start": 80, "end": 136}}
    assert kept_quote({"anchor": anchor}, "a shorter quote") == {
        "quote_selector": {"exact": QUOTE, "prefix": "# Valves ", "suffix": " The plant", "start": 80, "end": 136, "twins": None,
                           "twinWords": []},
        "cited_text": QUOTE,
    }
    # Not placed yet: the words are kept; the selector comes when the permalink is first opened.
    assert kept_quote({}, "a shorter quote") == {"quote_selector": {}, "cited_text": "a shorter quote"}


def test_the_case_is_said_in_chinese_too(member_client, opened_once):
    path, source, citation = opened_once
    edit(path, source, TEXT.replace(QUOTE, "Ask the foreman."))
    member_client.cookies["django_language"] = "zh-hans"
    page = open_page(member_client, citation)
    assert case_of(page) == "removed" and "被引用的文字已不在文件中" in page
