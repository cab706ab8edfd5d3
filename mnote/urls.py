from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import set_language

from mnote.api import mcp_http

urlpatterns = [
    path("", include("mnote.pages.urls")),
    path("api/", include("mnote.api.urls")),
    path("mcp", mcp_http.mcp, name="mcp"),
    # The login page offers the language switch too.
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("admin/", admin.site.urls),
]
