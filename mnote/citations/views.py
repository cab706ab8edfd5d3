from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from mnote.citations.models import Citation
from mnote.citations.permalinks import SourceChanged, badge_label, cited
from mnote.library.models import Source


@require_GET
def citation(request, token):
    """A permalink: the cited place, or an honest word that the source changed
    or is gone — never the wrong place."""
    cited = Citation.objects.select_related("source__root").filter(token=token).first()
    if cited is None or (
        cited.source is not None and not Source.objects.visible_to(request.user).filter(pk=cited.source_id).exists()
    ):
        # The same page for "no such link" and "not yours to see".
        return render(request, "citations/unavailable.html", status=404)
    # A pruned source has no root left to check visibility against: only
    # admins see what was cited from it.
    show_path = cited.source is not None or request.user.is_staff
    badge = badge_label(cited.precision, (cited.locator or {}).get("page"))
    context = {"citation": cited, "state": cited.state, "show_path": show_path, "badge": badge}
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
