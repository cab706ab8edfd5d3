from django.contrib.auth.decorators import login_not_required
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from mnote.api import views

app_name = "api"
urlpatterns = [
    path("status", views.status, name="status"),
    path("search", views.search, name="search"),
    path("query", views.query, name="query"),
    path("open-reference", views.open_reference, name="open-reference"),
    path("sources/<int:source_id>/chunks", views.source_chunks, name="source-chunks"),
    path("admin/ingest", views.admin_ingest, name="admin-ingest"),
    path("admin/delete-source", views.admin_delete_source, name="admin-delete-source"),
    path("admin/prune-registry", views.admin_prune_registry, name="admin-prune-registry"),
    path("admin/retry-failed", views.admin_retry_failed, name="admin-retry-failed"),
    path("openapi.json", views.openapi, name="openapi"),
    path("docs/", views.docs, name="docs"),
    # Anything else under /api/ is a JSON 404, never the login page.
    re_path(r"^.*$", login_not_required(csrf_exempt(views.not_found))),
]
