"""Permalinks: a citation persisted so its link opens the same source at the
same place for any team member allowed to see it. Rows are made only when a
citation must last — its link opened, its answer saved (permalinks.py) —
never by a search."""

import secrets

from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from mnote.library.models import Source


def new_token() -> str:
    return secrets.token_urlsafe(9)


class Citation(models.Model):
    class Precision(models.TextChoices):
        # Named by what the preview will show at the cited words.
        BBOX = "bbox", _("page region")
        PARAGRAPH = "paragraph", _("paragraph")
        PAGE = "page", _("page")
        SLIDE = "slide", _("slide")
        CELLS = "cells", _("cell range")
        PASSAGE = "passage", _("passage")
        FILE = "file", _("file only")

    token = models.CharField(max_length=24, unique=True, default=new_token, editable=False)
    # SET_NULL: a pruned registry row leaves a permalink that says the source is gone.
    source = models.ForeignKey(Source, null=True, on_delete=models.SET_NULL, related_name="citations")
    source_path = models.CharField(max_length=2048, help_text=_("Library path when cited."))
    source_sha256 = models.CharField(max_length=64)
    lightrag_doc_id = models.CharField(max_length=80, blank=True)
    chunk_id = models.CharField(max_length=120, blank=True)
    block_id = models.CharField(max_length=80, blank=True)
    precision = models.CharField(max_length=10, choices=Precision.choices)
    locator = models.JSONField(default=dict)
    heading_path = models.JSONField(default=list)
    display_quote = models.TextField()
    evidence_text = models.TextField(blank=True)
    search_query = models.CharField(max_length=1000, blank=True)
    # What was cited, in a form that outlives the version (``source_sha256``
    # names it): the W3C Web Annotation TextQuote selector (exact words, a
    # little context before and after) and TextPosition (offsets in the text
    # the preview showed) — ``citations.reanchor`` finds the words again in
    # a new version. Empty on rows made before it was kept, and until the
    # cited words were first placed in the preview's text.
    quote_selector = models.JSONField(default=dict, blank=True)
    # The cited passage's words, shown even when the file is gone.
    cited_text = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                # Per query too: a link shared from one search names that search's words.
                fields=["source", "source_sha256", "chunk_id", "block_id", "search_query"],
                name="one_permalink_per_cited_place_and_query",
            )
        ]

    def __str__(self):
        return f"{self.source_path} ({self.get_precision_display()})"

    def get_absolute_url(self):
        return reverse("citation", args=[self.token])

    @property
    def state(self) -> str:
        """"current", "changed" (the file's content moved on) or "gone"."""
        source = self.source
        if source is None or source.deleted_at is not None or source.status in (
            Source.Status.REMOVED,
            Source.Status.DELETE_SUBMITTED,
        ):
            return "gone"
        if source.sha256 != self.source_sha256 or source.stale:
            return "changed"
        return "current"
