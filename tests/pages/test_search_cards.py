"""Cards are made in Python (``mnote.search.cards``, through ``format_html``),
not by a template render per card. What a reader gets must not change: the
search results, an answer's cards and a saved conversation's cards are
compared, byte for byte, with what the card template made before (kept here
as the reference, as it was in templates/search/cards.html at 5ef2c4e)."""

import json
import re
from html import escape
from types import SimpleNamespace

import pytest
from django.template import engines
from django.urls import reverse
from django.utils import translation
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

import mnote.pages.search as views
from mnote.search.cards import cards_html
from mnote.text import mark_terms
from tests.app_requests import events_of
from tests.factories import indexed_source
from tests.lightrag_fakes import HANDBOOK, named_chunk, QUERY, serve_scripted

pytestmark = pytest.mark.django_db

# The card partial as it was (its {% partialdef card %} body), rendered per card.
TEMPLATE_CARD = '\n{% with labels=item.labels %}\n<article class="card source-card" id="cite-{{ item.id }}" data-citation-id="{{ item.id }}"\n         data-locator="{{ item.locator_json }}" data-preview-url="{{ item.preview_url }}">\n  <header class="card-head">\n    <span class="cite-id">[{{ item.id }}]</span>\n    <strong class="file-name" title="{{ item.path }}">{{ item.file_name }}</strong>\n    <span class="badge precision-{{ item.precision }}">{{ item.precision_label }}</span>\n    <span class="located" aria-live="polite"></span>\n  </header>\n  {% if item.heading %}<p class="muted heading-path">{{ item.heading }}</p>{% endif %}\n  <blockquote class="quote">{{ item.quote_html }}</blockquote>\n  <footer class="card-foot muted">\n    <span title="{{ labels.score_title }}">{{ labels.score }} {{ item.score }}</span>\n    · <span>{{ item.rank_label }}</span>\n    · <span class="path">{{ item.path }}</span>\n    <a class="open-card" href="{{ item.url }}">{{ labels.open }}</a>\n    <button type="button" class="small copy-link" data-url="{{ item.url }}">{{ labels.copy }}</button>\n  </footer>\n</article>\n{% endwith %}\n'


def _template_cards(citations, query) -> list[SafeString]:
    """The cards as the template made them: the view\'s per-card values
    (search.views._cards at 5ef2c4e) through the card partial."""
    template = engines["django"].from_string(TEMPLATE_CARD)
    previews = {sid: reverse("preview", args=[sid]) for sid in {c.source_id for c in citations}}
    labels = {
        "score_title": _("How many of your search words this passage holds (MNote’s own count, not a rerank)."),
        "score": _("word match"),
        "open": _("Open"),
        "copy": _("Copy link"),
    }
    cards = []
    for c in citations:
        if c.precision == "bbox":
            precision_label = _("page %(page)s region") % {"page": c.page}
        else:
            precision_label = _("paragraph") if c.precision == "paragraph" else _("whole file")
        quote = "".join(f"<mark>{escape(t)}</mark>" if hit else escape(t) for t, hit in mark_terms(c.display_quote, query))
        item = {
            "id": c.citation_id,
            "locator_json": c.locator_json,
            "path": c.source_path,
            "file_name": c.file_name,
            "precision": c.precision,
            "url": c.citation_url,
            "quote_html": mark_safe(quote),
            "preview_url": previews[c.source_id],
            "precision_label": precision_label,
            "heading": " › ".join(c.heading_path),
            "score": f"{c.relevance_score:.2f}",
            "rank_label": _("search rank %(n)s") % {"n": c.provider_rank},
            "labels": labels,
        }
        cards.append(SafeString(template.render({"item": item})))
    return cards


def _both(get_page, monkeypatch) -> tuple[str, str]:
    """A page as the app makes it now, and the same page with the template\'s cards."""
    now = get_page()
    with monkeypatch.context() as m:
        m.setattr(views, "cards_html", _template_cards)
        before = get_page()
    return now, before


@pytest.fixture
def odd_names(library):
    """A file whose path and words need escaping everywhere a card shows them."""
    return indexed_source(library["handbook"].root, "R&D <drafts>/\"budget\" & 'plans'.md", lightrag_name="odd.md")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_search_results_are_byte_identical_to_the_template_cards(member_client, settings, library, odd_names, monkeypatch, language):
    odd = 'Budget <script>alert("x")</script> & the budget’s holder, < 5 <i> \'quoted\' budget'
    chunks = [
        named_chunk("handbook.docx", 0, HANDBOOK),
        named_chunk("odd.md", 0, odd),
        named_chunk("minutes.md", 1, "Minutes: the budget holder signs purchase approvals; two signatures are needed."),
        named_chunk("crossrefs.docx", 2, "Budget tables and cross references for every purchase over the limit."),
    ]
    serve_scripted(settings, lambda body: chunks)
    member_client.cookies["django_language"] = language

    def page():
        response = member_client.get("/search/", {"q": "budget approval", "mode": "library"}, headers={"HX-Request": "true"})
        assert response.status_code == 200
        return response.content.decode()

    now, before = _both(page, monkeypatch)
    assert now.count('class="card source-card"') == 4
    assert "&quot;budget&quot; &amp; &#x27;plans&#x27;" in now and "<script>" not in now
    assert now == before


def test_an_answers_cards_and_a_saved_conversations_cards_are_byte_identical(member_client, member, with_llm, gamma, monkeypatch):
    def streamed():
        response = member_client.post("/ask/", {"q": QUERY}, HTTP_ACCEPT="text/event-stream")
        # The html of each event (the conversation's id and URL differ between the two asks).
        return json.dumps([(name, data.get("html")) for name, data in events_of(response)])

    now, before = _both(streamed, monkeypatch)
    assert "source-card" in now and now == before

    conversation = member.conversations.first()
    now, before = _both(lambda: member_client.get(conversation.get_absolute_url()).content.decode(), monkeypatch)
    assert now.count('class="card source-card"') >= 1
    # The page\'s CSRF token and CSP nonce differ per request; the rest must not.
    assert _without_tokens(now) == _without_tokens(before)


def _without_tokens(page: str) -> str:
    return re.sub(r'(nonce="|value="|"X-CSRFToken": ")[A-Za-z0-9_-]{20,}', r"\1-", page)


def _stored(**fields) -> SimpleNamespace:
    card = {
        "citation_id": "ab12",
        "source_id": 7,
        "source_path": "office/a.pdf",
        "file_name": "a.pdf",
        "precision": "paragraph",
        "page": None,
        "heading_path": [],
        "display_quote": "",
        "locator_json": "{}",
        "relevance_score": 0,
        "provider_rank": None,
        "citation_url": "",
    }
    return SimpleNamespace(**{**card, **fields})


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_kind_of_card_is_byte_identical_to_the_template(language):
    """Region, paragraph and file-only precision, headings or none, no rank
    (a saved card), characters that need escaping in every value."""
    cards = [
        _stored(precision="bbox", page=3, heading_path=["1. <Intro>", "1.1 A & B"], display_quote="Region quote < 2",
                locator_json=json.dumps({"page": 3, "q": "a \"b\" <c>"}), relevance_score=0.5, provider_rank=2,
                citation_url="/c/r/x?a=1&b=2"),
        _stored(citation_id="cd34", source_id=8, precision="file", display_quote="File 'only' quote"),
        _stored(citation_id="ef56", heading_path=["Only heading"], display_quote="A paragraph quote", relevance_score=1),
    ]
    with translation.override(language):
        assert cards_html(cards, "quote region") == _template_cards(cards, "quote region")


def test_a_card_is_html_the_page_does_not_escape_again():
    [card] = cards_html([_stored(display_quote="A quote")], "quote")
    assert isinstance(card, SafeString)
    assert '<blockquote class="quote">A <mark>quote</mark></blockquote>' in card
