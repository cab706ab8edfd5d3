from django.conf import settings
from django.db.models import Count
from django.shortcuts import render
from django.views.decorators.http import require_GET

from mnote.library.models import IndexedRoot, Source
from mnote.library.provider import health_report, webui_url


@require_GET
def home(request):
    counts = dict(Source.objects.visible_to(request.user).values_list("status").annotate(n=Count("id")))
    status_counts = [(label, counts.get(value, 0)) for value, label in Source.Status.choices]
    return render(
        request,
        "library/home.html",
        {
            "report": health_report(),
            "webui_url": webui_url(request),
            "lightrag_url": settings.MNOTE_LIGHTRAG.base_url,
            "status_counts": status_counts,
            "source_total": sum(counts.values()),
            "root_total": IndexedRoot.objects.visible_to(request.user).count(),
        },
    )
