"""The page where a user makes, names and revokes their own API tokens (for
the JSON API and the MCP server). A key is shown once, when it is made."""

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from mnote.api.models import ApiToken


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
    context = {
        "form": form,
        "new_key": request.session.pop("new_api_token", ""),
        "tokens": ApiToken.objects.filter(user=request.user),
        "mcp_url": request.build_absolute_uri("/mcp"),
    }
    return render(request, "api/tokens.html", context, status=400 if form.errors else 200)


@require_POST
def revoke(request, pk: int):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token.delete()
    messages.success(request, _("Token “%(name)s” revoked: it no longer opens anything.") % {"name": token.name or token.prefix})
    return redirect("tokens")
