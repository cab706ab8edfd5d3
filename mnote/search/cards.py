"""Source cards as HTML, made in Python: the one way a card is rendered, for
search results, an answer's cards and a saved conversation's cards alike.

Every value goes through ``format_html``, so each is escaped by construction:
a field added to a card later cannot reach the page unescaped. The markup is
the card template's as it was, byte for byte (tests/pages/test_search_cards.py
compares against it).
"""

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from mnote.citations.references import badge_label
from mnote.text import mark_terms

_CARD = """

<article class="card source-card" id="cite-{id}" data-citation-id="{id}"
         data-locator="{locator}" data-preview-url="{preview}">
  <header class="card-head">
    <span class="cite-id">[{id}]</span>
    <strong class="file-name" title="{path}">{file_name}</strong>
    <span class="badge precision-{precision}">{precision_label}</span>
    <span class="located" aria-live="polite"></span>
  </header>
  {heading}
  <blockquote class="quote">{quote}</blockquote>
  <footer class="card-foot muted">
    <span title="{score_title}">{score_label} {score}</span>
    · <span>{rank}</span>
    · <span class="path">{path}</span>
    <a class="open-card" href="{url}">{open}</a>
    <button type="button" class="small copy-link" data-url="{url}">{copy}</button>
  </footer>
</article>

"""
# The blank lines before and after a card are the ones the card partial
# ({% partialdef %} + {% with %}) left in the page.


def marked_quote(display: str, query: str) -> SafeString:
    """The quote as HTML, query terms in ``<mark>``, every segment escaped."""
    segments = ((format_html("<mark>{}</mark>", text) if hit else text,) for text, hit in mark_terms(display, query))
    return format_html_join("", "{}", segments)


def _labels() -> dict:
    """The words every card repeats, translated once per page, not once per card."""
    return {
        "score_title": _("How many of your search words this passage holds (MNote’s own count, not a rerank)."),
        "score_label": _("word match"),
        "open": _("Open"),
        "copy": _("Copy link"),
    }


def cards_html(citations, query: str) -> list[SafeString]:
    """Each citation's card, in order. ``citations``: the mapper's citations
    or saved cards (``pages.search._stored_card``), which carry the same
    attributes."""
    # One preview URL per source, not a reverse() per card.
    previews = {sid: reverse("preview", args=[sid]) for sid in {c.source_id for c in citations}}
    labels = _labels()
    rank = _("search rank %(n)s")
    cards = []
    for c in citations:
        precision = str(c.precision)
        heading = " › ".join(c.heading_path)
        cards.append(
            format_html(
                _CARD,
                id=c.citation_id,
                locator=c.locator_json,
                preview=previews[c.source_id],
                path=c.source_path,
                file_name=c.file_name,
                precision=precision,
                precision_label=badge_label(precision, c.page, getattr(c, "locator", None)),
                heading=format_html('<p class="muted heading-path">{}</p>', heading) if heading else "",
                quote=marked_quote(c.display_quote, query),
                score=f"{c.relevance_score:.2f}",
                rank=rank % {"n": c.provider_rank},
                url=c.citation_url,
                **labels,
            )
        )
    return cards
