from django.shortcuts import render
from django.views.decorators.http import require_GET

from mnote.citations.models import Citation
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
    return render(request, "citations/citation.html", {"citation": cited, "state": cited.state, "show_path": show_path})
