from django.urls import path

from mnote.pages import library as views
from mnote.pages import uploads as upload_views

app_name = "library"

urlpatterns = [
    path("sources/<int:source_id>/reindex/", views.reindex, name="reindex"),
    path("sources/<int:source_id>/delete-index/", views.delete_index_view, name="delete_index"),
    path("sources/clear-stale/", views.clear_stale, name="clear_stale"),
    path("tree/", views.tree, name="tree"),
    path("progress/", views.progress, name="progress"),
    path("sources/retry-failed/", views.retry_failed_view, name="retry_failed"),
    path("roots/<int:root_id>/retry-failed/", views.root_retry_failed, name="root_retry_failed"),
    path("roots/", views.roots, name="roots"),
    path("roots/add/", views.root_add, name="root_add"),
    path("roots/<int:root_id>/edit/", views.root_edit, name="root_edit"),
    path("roots/<int:root_id>/disable/", views.root_disable, name="root_disable"),
    path("roots/<int:root_id>/enable/", views.root_enable, name="root_enable"),
    path("roots/<int:root_id>/remove/", views.root_remove, name="root_remove"),
    path("roots/<int:root_id>/upload/", upload_views.upload, name="upload"),
]
