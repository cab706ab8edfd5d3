"""Source cards as HTML, made in Python: the one way a card is rendered, for
search results, an answer's cards and a saved conversation's cards alike.

Why not a template: a page shows up to 20 cards of ~20 values each, and the
template engine's variable lookups, filters and auto-escaping cost more CPU
than everything else on the search page but the citation mapper (issue 17:
on 2 shared cores each millisecond per search is throughput). Here every
value is escaped exactly as the template's auto-escaping did
(``html.escape``, quotes included) and the markup is the template's, byte
for byte (tests/pages/test_search_cards.py compares against the template).
"""

from html import escape

from django.urls import reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from mnote.citations.permalinks import badge_label
from mnote.text import mark_terms


def marked_quote(display: str, query: str) -> str:
    """The quote as HTML, query terms in ``<mark>``, every segment escaped."""
    return "".join(f"<mark>{escape(text)}</mark>" if hit else escape(text) for text, hit in mark_terms(display, query))


def _labels() -> dict:
    """The words every card repeats, translated and escaped once per page, not once per card."""
    return {
        "score_title": escape(
            _("How many of your search words this passage holds (MNote’s own count, not a rerank).")
        ),
        "score_label": escape(_("word match")),
        "open": escape(_("Open")),
        "copy": escape(_("Copy link")),
    }


def cards_html(citations, query: str) -> list[SafeString]:
    """Each citation's card, in order. ``citations``: the mapper's citations
    or saved cards (``search.views._stored_card``), which carry the same
    attributes."""
    # One preview URL per source, not a reverse() per card.
    previews = {sid: escape(reverse("preview", args=[sid])) for sid in {c.source_id for c in citations}}
    labels = _labels()
    rank = _("search rank %(n)s")
    cards = []
    for c in citations:
        precision = str(c.precision)
        heading = " › ".join(c.heading_path)
        cards.append(
            _card(
                id=escape(str(c.citation_id)),
                locator=escape(c.locator_json),
                preview=previews[c.source_id],
                path=escape(c.source_path),
                file_name=escape(c.file_name),
                precision=escape(precision),
                precision_label=escape(badge_label(precision, c.page)),
                heading=f'<p class="muted heading-path">{escape(heading)}</p>' if heading else "",
                quote=marked_quote(c.display_quote, query),
                score=f"{c.relevance_score:.2f}",
                rank=escape(rank % {"n": c.provider_rank}),
                url=escape(c.citation_url),
                labels=labels,
            )
        )
    return cards


def _card(*, id, locator, preview, path, file_name, precision, precision_label, heading, quote, score, rank, url, labels):
    """One card's markup, every value already escaped. The blank lines before
    and after are the ones the card partial ({% partialdef %} + {% with %}) left
    in the page."""
    return SafeString(f"""

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
    <span title="{labels["score_title"]}">{labels["score_label"]} {score}</span>
    · <span>{rank}</span>
    · <span class="path">{path}</span>
    <a class="open-card" href="{url}">{labels["open"]}</a>
    <button type="button" class="small copy-link" data-url="{url}">{labels["copy"]}</button>
  </footer>
</article>

""")
