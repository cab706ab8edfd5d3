"""The preview in headless Chromium: citations land on the cited passage, a
second citation of the same file moves the highlight without reloading it,
and the answer is honest when a passage cannot be found."""

import json
from urllib.parse import quote

import pytest

from mnote.search.answers import full_library_search
from mnote.library.models import IndexedRoot, Source
from tests.pdf_factory import make_pdf
from tests.paths import DEMO_LIBRARY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

DEMO = DEMO_LIBRARY


def frame_of(page):
    return page.frame_locator("#preview-frame")


def wait_located(card, timeout=15_000):
    # Selector waits, not wait_for_function: the page's CSP forbids eval.
    card.locator("xpath=self::*[@data-located-status]").wait_for(timeout=timeout)
    return card.get_attribute("data-located-status")


def initial_status(page, timeout=15_000):
    page.locator("#document[data-initial-status]").wait_for(timeout=timeout)
    return page.locator("#document").get_attribute("data-initial-status")


def highlighted_text(page) -> str:
    # The cited words are marked piece by piece (one mark per text node).
    return "".join(frame_of(page).locator("mark.mnote-hit").all_inner_texts())


def count_frame_navigations(page) -> list:
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url) if frame != page.main_frame else None)
    return navigations


@pytest.mark.integration
def test_it_highlights_the_cited_docx_block_and_moves_without_reloading(demo_library, logged_in_page, live_server):
    page = logged_in_page
    page.goto(f"{live_server.url}/search/?q={quote('Zerodur primary mirror coating aluminium')}&mode=library&retrieval=naive")
    manual_cards = page.locator("article.source-card[data-locator]").filter(has_text="gamma-telescope-manual.docx")
    assert manual_cards.count() >= 2, "need two citations of the same DOCX"
    navigations = count_frame_navigations(page)

    first = manual_cards.nth(0)
    first.click()
    assert wait_located(first) in ("exact", "fuzzy")
    first_quote = first.locator("blockquote").inner_text()
    first_hit = highlighted_text(page)
    assert _shares_words(first_hit, first_quote)
    loads_after_first = len(navigations)

    second = manual_cards.nth(1)
    second.click()
    assert wait_located(second) in ("exact", "fuzzy")
    assert _shares_words(highlighted_text(page), second.locator("blockquote").inner_text())
    assert highlighted_text(page) != first_hit
    assert len(navigations) == loads_after_first == 1  # same file: moved by postMessage, no reload

    other = page.locator("article.source-card[data-locator]").filter(has_not_text="gamma-telescope-manual.docx").first
    other.click()
    assert wait_located(other) in ("exact", "fuzzy", "not_found")
    assert len(navigations) == 2  # another file loads in the same frame


@pytest.mark.integration
def test_it_lands_on_the_later_section_not_on_the_longer_word(demo_library, logged_in_page, live_server, member):
    mapped = full_library_search(member, "吡咯烷", mode="naive")
    later = [c for c in mapped.citations if c.file_name == "实验室安全手册.docx" and "六、吡咯烷的操作与储存" in c.heading_path]
    assert later, [c.heading_path for c in mapped.citations]
    source = Source.objects.get(pk=later[0].source_id)
    page = logged_in_page
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(later[0].locator))}")
    assert initial_status(page) in ("exact", "fuzzy")
    hit = page.locator(".mnote-hit, .mnote-hit-outline").first
    assert "吡咯烷" in hit.inner_text()
    # The section the highlight sits in is the later one, not the NMP section.
    section = hit.evaluate(
        """el => { let n = el; while (n) { n = n.previousElementSibling || n.parentElement;
                   if (n && n.dataset && n.dataset.headingLevel) return n.textContent; } return ''; }"""
    )
    assert "六" in section and "N-甲基吡咯烷酮" not in hit.inner_text()


def test_it_draws_a_bbox_on_its_page_and_says_when_text_is_absent(logged_in_page, live_server, library_dir):
    (library_dir / "reports").mkdir()
    pdf = make_pdf(
        library_dir / "reports" / "orbital.pdf",
        [
            ["Orbital Debris Report 2025", "Tracked objects larger than 10 cm exceeded 36,000."],
            ["Collision risk", "The annual collision probability grows with the flux of debris."],
            ["Debris by altitude", "Most objects orbit between 500 and 600 km."],
        ],
    )
    root = IndexedRoot.objects.create(name="Reports", path="reports")
    source = Source.objects.create(root=root, relative_path="orbital.pdf", absolute_path=str(pdf), status="indexed")
    page = logged_in_page

    bbox = {"precision": "bbox", "sourceId": source.pk, "page": 2, "bbox": [0.1, 0.1, 0.9, 0.2],
            "evidenceText": "Collision risk", "searchQuery": "collision", "displayQuote": "Collision risk"}
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(bbox))}")
    assert initial_status(page) == "exact"
    rect = page.locator('.pdf-page[data-page="2"] .mnote-rect')
    assert rect.count() == 1
    assert page.locator("#locate-note").is_hidden()

    absent = {"precision": "file", "sourceId": source.pk, "evidenceText": "The reactor uses heavy water as a moderator",
              "searchQuery": "heavy water", "displayQuote": "heavy water"}
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(absent))}")
    assert initial_status(page) == "not_found"
    assert page.locator("#locate-note").is_visible()
    assert page.locator(".mnote-rect").count() == 0


def test_it_finds_pdf_text_without_a_bbox_and_calls_it_a_text_match(logged_in_page, live_server, library_dir):
    (library_dir / "reports").mkdir()
    pdf = make_pdf(library_dir / "reports" / "orbital.pdf",
                   [["Introduction", "Nothing here."], ["Collision risk", "The annual collision probability grows with the flux of debris."]])
    root = IndexedRoot.objects.create(name="Reports", path="reports")
    source = Source.objects.create(root=root, relative_path="orbital.pdf", absolute_path=str(pdf), status="indexed")
    locator = {"precision": "file", "sourceId": source.pk, "evidenceText": "annual collision probability grows with the flux",
               "searchQuery": "collision probability", "displayQuote": "annual collision probability"}
    page = logged_in_page
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(locator))}")
    assert initial_status(page) == "fuzzy"  # a text match, never "exact"
    assert page.locator('.pdf-page[data-page="2"] .mnote-rect').count() >= 1


def test_it_ignores_locate_messages_from_another_origin(logged_in_page, live_server, library_dir):
    notes = library_dir / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Title\n\nFirst paragraph about telescopes.\n\nSecond paragraph about domes.\n")
    root = IndexedRoot.objects.create(name="Notes", path="notes")
    source = Source.objects.create(root=root, relative_path="a.md", absolute_path=str(notes / "a.md"), status="indexed")
    page = logged_in_page
    page.goto(f"{live_server.url}/preview/{source.pk}/")
    # A message whose origin is not ours is dropped before it is read.
    page.evaluate(
        """() => window.dispatchEvent(new MessageEvent('message', {origin: 'https://evil.example', source: window.parent,
             data: {type: 'mnote:locate', requestId: 'x', locator: {evidenceText: 'Second paragraph about domes'}}}))"""
    )
    page.wait_for_timeout(300)
    assert page.locator(".mnote-hit").count() == 0


def _shares_words(a: str, b: str) -> bool:
    words = {w for w in b.lower().split() if len(w) > 4}
    return len(words & set(a.lower().split())) >= 3
