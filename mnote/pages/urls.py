"""Every page's address, by area (the JSON API's are in ``mnote.api.urls``)."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from mnote.pages import citations, groups, library, people, preview, roots, search, tokens, uploads
from mnote.pages.people_forms import LoginForm

library_patterns = [
    path("sources/<int:source_id>/reindex/", library.reindex, name="reindex"),
    path("sources/<int:source_id>/delete-index/", library.delete_index_view, name="delete_index"),
    path("sources/clear-stale/", library.clear_stale, name="clear_stale"),
    path("tree/", library.tree, name="tree"),
    path("progress/", library.progress, name="progress"),
    path("sources/retry-failed/", library.retry_failed_view, name="retry_failed"),
    path("roots/<int:root_id>/retry-failed/", library.root_retry_failed, name="root_retry_failed"),
    path("roots/", roots.roots, name="roots"),
    path("roots/add/", roots.root_add, name="root_add"),
    path("roots/<int:root_id>/edit/", roots.root_edit, name="root_edit"),
    path("roots/<int:root_id>/disable/", roots.root_disable, name="root_disable"),
    path("roots/<int:root_id>/enable/", roots.root_enable, name="root_enable"),
    path("roots/<int:root_id>/remove/", roots.root_remove, name="root_remove"),
    path("roots/<int:root_id>/upload/", uploads.upload, name="upload"),
]

search_patterns = [
    path("search/", search.search, name="search"),
    path("ask/", search.ask, name="ask"),
    path("ask/c/<int:pk>/", search.conversation, name="conversation"),
    path("ask/c/<int:pk>/delete", search.conversation_delete, name="conversation-delete"),
]

preview_patterns = [
    path("<int:source_id>/", preview.document, name="preview"),
    path("<int:source_id>/original", preview.original, name="preview-original"),
    path("<int:source_id>/image/<path:part>", preview.asset, name="preview-asset"),
    path("<int:source_id>/page/<int:page>.png", preview.pdf_page, name="preview-pdf-page"),
    path("<int:source_id>/find", preview.pdf_find, name="preview-pdf-find"),
    path("<int:source_id>/anchor", preview.anchor, name="preview-anchor"),
]

account_patterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="accounts/login.html", authentication_form=LoginForm),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]

group_patterns = [
    path("add/", groups.group_add, name="add"),
    path("<int:group_id>/", groups.group_edit, name="edit"),
    path("<int:group_id>/delete/", groups.group_delete, name="delete"),
]

people_patterns = [
    path("", people.people, name="people"),
    path("invite/", people.invite, name="invite"),
    path("invitations/<int:invitation_id>/", people.invitation, name="invitation"),
    path("invitations/<int:invitation_id>/revoke/", people.invitation_revoke, name="invitation_revoke"),
    path("join/<str:token>/", people.join, name="join"),
    path("users/<int:user_id>/", people.user_edit, name="user_edit"),
    path("users/<int:user_id>/reset-link/", people.user_reset_link, name="user_reset_link"),
    path("users/<int:user_id>/active/", people.user_active, name="user_active"),
    path("reset/<uidb64>/<token>/", people.ResetView.as_view(), name="reset"),
]

urlpatterns = [
    path("", library.home, name="home"),
    path("library/", include((library_patterns, "library"))),
    path("c/<str:token>", citations.citation, name="citation"),
    path("c/r/<str:reference>", citations.reference, name="citation-reference"),
    path("", include(search_patterns)),
    path("preview/", include(preview_patterns)),
    path("accounts/", include(account_patterns)),
    path("people/groups/", include((group_patterns, "groups"))),
    path("people/", include((people_patterns, "people"))),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke", tokens.revoke, name="token-revoke"),
]
