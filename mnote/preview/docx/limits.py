"""What a preview may cost and how it says no: the limits every renderer
checks a file against, its time budget, and the refusal whose message a user
reads (``PreviewRejected``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

MB = 1024 * 1024


class PreviewRejected(Exception):
    """The file cannot be previewed; ``message`` is written for users."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# The name the DOCX renderer and its callers know it by.
DocxRejected = PreviewRejected


@dataclass(frozen=True)
class Limits:
    max_entries: int = 5_000
    max_total_bytes: int = 200 * MB  # declared and actually decompressed, all members
    max_member_bytes: int = 50 * MB  # any one member, declared and actual
    max_ratio: int = 100  # uncompressed : compressed, per member ...
    ratio_floor_bytes: int = 1 * MB  # ... once it is larger than this
    time_budget_s: float = 10.0  # wall time for one render
    max_render_depth: int = 60  # nested tables / text boxes / notes
    # An XML part is parsed whole, at ~10-15× its size in memory, and every
    # paragraph costs render time: a 45 MB part that compresses only 2.3×
    # passes the limits above yet takes seconds and hundreds of MB. These two
    # budgets refuse it before a byte is parsed.
    max_xml_part_bytes: int = 20 * MB  # any one XML part, declared and actual
    max_blocks: int = 100_000  # paragraphs + table cells in one part


DEFAULT_LIMITS = Limits()

_INVALID = "This file is not a valid Word document: "


def invalid(reason: str) -> DocxRejected:
    return DocxRejected(_INVALID + reason)


def mb_text(n: int) -> str:
    return f"{n / MB:,.0f} MB" if n >= MB else f"{n / 1024:,.0f} KB"


class DocxTooSlow(DocxRejected):
    """Over the time budget: maybe the file, maybe a busy machine, so the
    refusal is remembered for a while rather than for the file's version."""

    remember_s = 600


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self._end:
            raise DocxTooSlow(f"This document takes too long to preview (more than {self.seconds:g} s).")
