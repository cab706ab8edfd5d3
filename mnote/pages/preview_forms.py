"""The preview's query parameters, validated: 400 on bad input."""

from django import forms

from mnote.preview.locator_anchor import MAX_LOCATOR_CHARS

MAX_PDF_EVIDENCE_CHARS = 4000  # a locator's evidence window is ~300; more is never searched
PDF_PAGE_WIDTHS = (600, 1000, 1600)


class PreviewForm(forms.Form):
    # The page of a paged sheet (XLSX, CSV); anything else opens the first.
    rows_page = forms.IntegerField(min_value=1, max_value=100_000, required=False)


class AnchorForm(forms.Form):
    evidence = forms.CharField(max_length=MAX_LOCATOR_CHARS)
    # The end of an evidence text too long for one URL (the page sends head and tail).
    tail = forms.CharField(max_length=MAX_LOCATOR_CHARS, required=False)
    heading = forms.CharField(max_length=1000, required=False)
    chunk_id = forms.CharField(max_length=200, required=False)
    query = forms.CharField(max_length=1000, required=False)
    rows_page = forms.IntegerField(min_value=1, max_value=100_000, required=False)


class PdfPageForm(forms.Form):
    w = forms.IntegerField(min_value=1, max_value=100_000, required=False)

    def clean_w(self) -> int:
        """The served width nearest to the one asked for (a few sizes, so the cache holds them)."""
        width = self.cleaned_data["w"] or 1000
        return min(PDF_PAGE_WIDTHS, key=lambda w: abs(w - width))


class PdfFindForm(forms.Form):
    evidence = forms.CharField()
    query = forms.CharField(required=False)
    page = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)

    def clean_evidence(self) -> str:
        return self.cleaned_data["evidence"][:MAX_PDF_EVIDENCE_CHARS]

    def clean_query(self) -> str:
        return self.cleaned_data["query"][:500]
