"""A citation's permalink page: the cited place, or an honest word that the
source changed (the cited words looked for again) or is gone; and a card's
signed link, which becomes a permalink when it is first opened."""

import json
from urllib.parse import urlencode

from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from mnote.citations.models import Citation
from mnote.citations.permalinks import SourceChanged, cited
from mnote.citations.references import badge_label
from mnote.citations.reanchor import Reanchored, Selector, reanchor, word_changes
from mnote.library.models import Source
from mnote.pages.preview import current_text_of


def _followed(request, citation: Citation, state: str) -> tuple[Selector, Reanchored] | None:
    """Where the cited words are in the file as it is now, when it has
    changed since the citation was made; None when there is nothing to
    follow (the same version, a row from before quotes were kept, no text)."""
    selector = Selector.from_json(citation.quote_selector)
    if state == "gone" or (state == "current" and selector is not None and selector.twins is not None):
        return None
    now = current_text_of(request, citation.source, citation.locator)
    if now is None:
        return None
    if now["sha256"] == citation.source_sha256:
        # The cited version: what was cited is kept (with whether its words
        # have near twins in it) the first time it is opened, so a later
        # edit can be followed. The preview finds the words as before.
        selector = selector or Selector.from_anchor(now["anchor"])
        if selector is not None and selector.twins is None:
            selector = selector.with_twins(now["text"])
            citation.quote_selector, citation.cited_text = selector.as_json(), selector.exact
            citation.save(update_fields=["quote_selector", "cited_text"])
        return None
    if selector is None:
        return None  # a row from before quotes were kept: it says only "changed"
    return selector, reanchor(selector, now["text"])


def _preview_url(citation: Citation, found: Reanchored | None) -> str:
    """The preview, marking the cited words where they are now (as a fresh
    citation's locator does), or nothing when they were removed."""
    url = reverse("preview", args=[citation.source_id])
    if found is None:
        return f"{url}?{urlencode({'c': citation.token})}"
    if found.case == "removed":
        return url
    locator = {"evidenceText": found.exact, "precision": citation.precision, "sourceId": citation.source_id}
    return f"{url}?{urlencode({'locator': json.dumps(locator, ensure_ascii=False)})}"


@require_GET
def citation(request, token):
    """A permalink: the cited place, or an honest word that the source changed
    or is gone — never the wrong place. When the file has changed, the cited
    words are looked for in it again: unchanged, moved, reworded (old and new
    words side by side) or removed."""
    cited = Citation.objects.select_related("source__root").filter(token=token).first()
    if cited is None or (
        cited.source is not None and not Source.objects.visible_to(request.user).filter(pk=cited.source_id).exists()
    ):
        # The same page for "no such link" and "not yours to see".
        return render(request, "citations/unavailable.html", status=404)
    # A pruned source has no root left to check visibility against: only
    # admins see what was cited from it.
    show_path = cited.source is not None or request.user.is_staff
    badge = badge_label(cited.precision, (cited.locator or {}).get("page"), cited.locator)
    state = cited.state
    followed = _followed(request, cited, state)
    context = {"citation": cited, "state": state, "show_path": show_path, "badge": badge, "followed": None}
    if followed is not None:
        selector, found = followed
        context["followed"] = found
        context["old_words"] = selector.exact
        if found.case == "reworded":
            context["changes"] = word_changes(selector.exact, found.exact)
    if cited.source is not None and state != "gone":
        context["preview_url"] = _preview_url(cited, followed[1] if followed else None)
    return render(request, "citations/citation.html", context)


@require_GET
def reference(request, reference):
    """A card's link: the first open makes its permalink row (the one write a
    GET here may do: a search made none), later opens find it; both go on to
    the short ``/c/<token>``."""
    try:
        row = cited(request.user, reference)
    except SourceChanged as e:
        return render(request, "citations/changed.html", {"source": e.source})
    if row is None:
        return render(request, "citations/unavailable.html", status=404)
    return redirect(row)
