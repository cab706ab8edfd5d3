"""Request validation for the JSON API. Bodies are JSON objects, so the
fields here take JSON values as they are: a string where text is expected, a
real ``true``/``false`` for flags, never a guess from something else."""

import re
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError
from django.urls import Resolver404, resolve

from mnote.citations.context import MAX_CONTEXT
from mnote.library.forms import ScopeField
from mnote.search.answers import MODES



class JsonStringField(forms.CharField):
    def to_python(self, value):
        if value is not None and not isinstance(value, str):
            raise ValidationError("Must be a string.", code="invalid")
        return super().to_python(value)


# Ids are database keys: larger ones cannot exist (and SQLite cannot even compare them).
MAX_ID = 2**63 - 1
MAX_CHUNK_INDEX = 10**9
MIN_QUERY_WEIGHT = 3
# LightRAG refuses a query lighter than 3 "English characters", a Chinese,
# Japanese or Korean one counting as 2 (lightrag/query_validation.py). This is
# that rule as the pattern OpenAPI publishes and the form applies, so a query
# the description calls valid is never refused by LightRAG. Its wide set is a
# subset of LightRAG's (BMP blocks only): stricter, never looser.
_WIDE = (
    "\u1100-\u11ff\u2e80-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffee"
)
QUERY_PATTERN = f"\\S[\\s\\S]+\\S|[{_WIDE}][\\s\\S]*\\S|\\S[\\s\\S]*[{_WIDE}]"


class JsonIntegerField(forms.IntegerField):
    """A JSON integer: ``{}``, ``[]``, ``"3"`` or ``true`` are not numbers
    (Django's IntegerField would take the first two as "absent")."""

    def to_python(self, value):
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            return int(value)  # JSON has one number type: 16.0 is the integer 16
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("Must be an integer.", code="invalid")
        return value


class JsonBooleanField(forms.Field):
    """``true``, ``false``, or absent (None: LightRAG's own default)."""

    def to_python(self, value):
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return value
        raise ValidationError("Must be true or false.", code="invalid")


class SearchForm(forms.Form):
    """The parameters of /api/search and /api/query."""

    query = JsonStringField(max_length=1000)
    mode = forms.ChoiceField(choices=[(m, m) for m in MODES], required=False)
    topK = JsonIntegerField(min_value=1, max_value=200, required=False)
    chunkTopK = JsonIntegerField(min_value=1, max_value=100, required=False)
    sourcePaths = ScopeField(required=False)
    enableRerank = JsonBooleanField(required=False)
    verbose = JsonBooleanField(required=False)

    def clean_mode(self):
        # Blank: the search picks the mode that fits the provider.
        return self.cleaned_data.get("mode") or ""

    def clean_verbose(self):
        return bool(self.cleaned_data.get("verbose"))

    def clean_query(self):
        query = self.cleaned_data["query"]
        if not re.search(QUERY_PATTERN, query):
            raise ValidationError(
                "Too short to search: give at least 3 characters "
                "(a Chinese, Japanese or Korean character counts as 2).",
                code="min_length",
            )
        return query


class ConversationHistoryField(forms.Field):
    """Earlier turns of a conversation: ``[{"role": "user"|"assistant", "content": "…"}]``."""

    MAX_TURNS, MAX_CHARS = 20, 8000

    def to_python(self, value):
        if value in (None, ""):
            return []
        if not isinstance(value, list) or len(value) > self.MAX_TURNS:
            raise forms.ValidationError(f"Give a list of at most {self.MAX_TURNS} messages.")
        history = []
        for item in value:
            if (
                not isinstance(item, dict)
                or set(item) != {"role", "content"}
                or item["role"] not in ("user", "assistant")
                or not isinstance(item["content"], str)
                or len(item["content"]) > self.MAX_CHARS
            ):
                raise forms.ValidationError(
                    f'Each message is {{"role": "user" or "assistant", "content": text of at most {self.MAX_CHARS} characters}}.'
                )
            history.append({"role": item["role"], "content": item["content"]})
        return history


class QueryForm(SearchForm):
    stream = JsonBooleanField(required=False)
    conversationHistory = ConversationHistoryField(required=False)


def citation_token_from_url(url: str) -> str | None:
    """The token of a permalink (``/c/<token>``, relative or absolute), by the URLconf."""
    try:
        match = resolve(urlsplit(url).path or "/")
    except Resolver404:
        return None
    return match.kwargs.get("token") if match.url_name == "citation" else None


def citation_reference_from_url(url: str) -> str | None:
    """The signed place of a search's link (``/c/r/<reference>``), not yet a row."""
    try:
        match = resolve(urlsplit(url).path or "/")
    except Resolver404:
        return None
    return match.kwargs.get("reference") if match.url_name == "citation-reference" else None


class OpenReferenceForm(forms.Form):
    citationUrl = JsonStringField(max_length=2048, required=False)
    token = JsonStringField(max_length=24, required=False)

    def clean(self):
        cleaned = super().clean()
        url, token = cleaned.get("citationUrl"), cleaned.get("token")
        if self.errors:
            return cleaned
        if bool(url) == bool(token):
            raise ValidationError("Give either citationUrl or token (exactly one).", code="required")
        if url:
            # A URL that is no permalink names no citation: the view answers
            # 404, as for an unknown token (the description allows any string).
            cleaned["token"] = citation_token_from_url(url)
            cleaned["reference"] = citation_reference_from_url(url)
        return cleaned


class ChunkContextForm(forms.Form):
    chunk_index = forms.IntegerField(min_value=0, max_value=MAX_CHUNK_INDEX)
    context = forms.IntegerField(min_value=0, max_value=MAX_CONTEXT, required=False)
    block_id = forms.CharField(max_length=80, required=False)

    def clean_context(self):
        value = self.cleaned_data.get("context")
        return 2 if value is None else value


class IngestForm(forms.Form):
    sourceId = JsonIntegerField(min_value=1, max_value=MAX_ID, required=False)
    rootId = JsonIntegerField(min_value=1, max_value=MAX_ID, required=False)
    force = JsonBooleanField(required=False)

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        if (cleaned.get("sourceId") is None) == (cleaned.get("rootId") is None):
            raise ValidationError("Give either sourceId or rootId (exactly one).", code="required")
        if cleaned.get("rootId") is not None and cleaned.get("force"):
            self.add_error("force", "force applies to a source only; a root is synced.")
        cleaned["force"] = bool(cleaned.get("force"))
        return cleaned


class DeleteSourceForm(forms.Form):
    sourceId = JsonIntegerField(min_value=1, max_value=MAX_ID)


class EmptyForm(forms.Form):
    pass


class RetryFailedForm(forms.Form):
    # Without a root: every failed file of the library.
    rootId = JsonIntegerField(min_value=1, max_value=MAX_ID, required=False)
