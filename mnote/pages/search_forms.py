from django import forms
from django.utils.translation import gettext_lazy as _

from mnote.library.forms import ScopeField

MODE_CHOICES = [
    ("library", _("Full library")),
    ("workspace", _("Workspace")),
]
RETRIEVAL_CHOICES = [("mix", _("mix (vectors + graph)")), ("naive", _("naive (vectors only)"))]


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Search"), max_length=1000, strip=True)
    mode = forms.ChoiceField(label=_("Mode"), choices=MODE_CHOICES, required=False)
    # Blank: the provider's mode (mix with an LLM; naive without one, which builds no graph).
    retrieval = forms.ChoiceField(
        label=_("Retrieval"), choices=[("", _("automatic (mix with an LLM, naive without)")), *RETRIEVAL_CHOICES], required=False
    )
    scope = ScopeField(
        text=True,
        label=_("Scope"),
        required=False,
        help_text=_("Library paths of folders or files, one per line or comma-separated."),
        widget=forms.TextInput(attrs={"placeholder": _("e.g. demo/en, demo/zh/会议纪要-2026-10.md")}),
    )

    def clean_mode(self):
        return self.cleaned_data.get("mode") or "library"

    def clean_retrieval(self):
        return self.cleaned_data.get("retrieval") or ""


class AskForm(SearchForm):
    q = forms.CharField(label=_("Question"), max_length=1000, strip=True, widget=forms.Textarea(attrs={"rows": 2}))
    conversation = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def clean_retrieval(self):
        # Blank: the view picks the mode that fits the provider (no graph → naive).
        return self.cleaned_data.get("retrieval") or ""
