from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import set_language

from mnote.api import mcp_http
from mnote.pages import tokens as token_views
from mnote.api import views as api_views
from mnote.pages import citations as citation_views
from mnote.pages import library as library_views

urlpatterns = [
    path("", library_views.home, name="home"),
    path("library/", include("mnote.library.urls")),
    path("c/<str:token>", citation_views.citation, name="citation"),
    path("c/r/<str:reference>", citation_views.reference, name="citation-reference"),
    path("", include("mnote.search.urls")),
    path("preview/", include("mnote.preview.urls")),
    path("accounts/", include("mnote.accounts.urls")),
    path("people/groups/", include("mnote.library.group_urls")),
    path("people/", include("mnote.accounts.people_urls")),
    path("api/", include("mnote.api.urls")),
    path("mcp", mcp_http.mcp, name="mcp"),
    path("tokens/", token_views.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke", token_views.revoke, name="token-revoke"),
    # The login page offers the language switch too.
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("admin/", admin.site.urls),
]
