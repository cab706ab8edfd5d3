"""The page where a user makes, names and revokes their own API tokens (for
the JSON API and the MCP server). A key is shown once, when it is made."""

import json
import sys

from django import forms
from django.conf import settings
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from mnote.api.links import link_base
from mnote.api.models import ApiToken
from mnote.data_dir import BASE_DIR, sqlite_path
from mnote.env import env_str

# Stands for the key on the page once it is no longer shown.
KEY_PLACEHOLDER = "mnote_…"


class TokenForm(forms.Form):
    name = forms.CharField(
        label=gettext_lazy("Name"),
        max_length=120,
        strip=True,
        help_text=gettext_lazy("What the token is for, e.g. the agent or tool using it."),
    )


@require_http_methods(["GET", "POST"])
def tokens(request):
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        _token, key = ApiToken.objects.create_token(request.user, form.cleaned_data["name"])
        # Shown by the next page only (a reload neither shows it again nor makes another).
        request.session["new_api_token"] = key
        return redirect("tokens")
    new_key = request.session.pop("new_api_token", "")
    context = {
        "form": form,
        "new_key": new_key,
        "tokens": ApiToken.objects.filter(user=request.user),
        "mcp_url": request.build_absolute_uri("/mcp"),
        **mcp_configurations(request, new_key or KEY_PLACEHOLDER),
    }
    return render(request, "api/tokens.html", context, status=400 if form.errors else 200)


@require_POST
def revoke(request, pk: int):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token.delete()
    messages.success(request, _("Token “%(name)s” revoked: it no longer opens anything.") % {"name": token.name or token.prefix})
    return redirect("tokens")


def mcp_configurations(request, key: str) -> dict:
    """MCP client configurations to paste, as JSON text: over HTTP to this
    site, and over stdio on this machine with absolute paths (this process's
    Python, the project's manage.py, the data folder it reads)."""
    base = link_base(request)
    http = {"mcpServers": {"mnote": {"type": "http", "url": f"{base}/mcp", "headers": {"Authorization": f"Bearer {key}"}}}}
    environment = {"MNOTE_API_TOKEN": key, "MNOTE_DATA_DIR": str(settings.DATA_DIR), "MNOTE_PUBLIC_URL": base}
    stdio = {
        "mcpServers": {
            "mnote": {"command": sys.executable, "args": [str(BASE_DIR / "manage.py"), "mcp_stdio"], "env": environment}
        }
    }
    return {
        "mcp_http_config": json.dumps(http, indent=2, ensure_ascii=False),
        "mcp_stdio_config": json.dumps(stdio, indent=2, ensure_ascii=False),
        # The server's own secrets are never shown: the page names them.
        "stdio_extra_env": [
            name
            for name, needed in (
                ("DATABASE_URL", str(settings.DATABASES["default"]["NAME"]) != str(sqlite_path(settings.DATA_DIR))),
                ("MNOTE_SECRET_KEY", bool(env_str("MNOTE_SECRET_KEY"))),
            )
            if needed
        ],
    }
