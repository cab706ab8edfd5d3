"""Signed links to a cited place: permalinks made when they are needed, not on
every search.

A search writes no rows: each card's link (``/c/r/<reference>``) carries a
signed, compact name of the cited place — source id, the first characters of
its content hash, LightRAG's chunk id, the block the mapper chose and the
query (and the chunk's text only when LightRAG's chunk store cannot give it
back). The link becomes a ``Citation`` row, with its short ``/c/<token>``,
when it is first opened or when an answer holding it is saved; opening it
again finds that row (``permalinks.py``). The signature keeps anyone from naming a place the
app never cited, and whoever opens the link must be allowed to see the
source, as for any permalink.
"""

import json
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core import signing
from django.urls import get_script_prefix, reverse
from django.utils.crypto import salted_hmac
from django.utils.encoding import force_bytes
from django.utils.translation import gettext as _

from mnote.citations.models import Citation

SALT = "mnote.citations.reference"
FORMAT = 1
SHA_CHARS = 16


@dataclass(frozen=True)
class Reference:
    source_id: int
    sha256_prefix: str
    chunk_id: str
    block_id: str
    query: str
    quote: str | None


def _signer() -> signing.Signer:
    return _signer_for(settings.SECRET_KEY, tuple(settings.SECRET_KEY_FALLBACKS))


class _Signer(signing.Signer):
    """Django's signer, giving the same bytes with less work per link (a
    search signs one per citation): the HMAC key is derived once per secret
    (``salted_hmac`` hashes salt + secret again for every signature), and the
    payload's compact JSON comes from one encoder rather than a new one each time."""

    def signature(self, value, key=None):
        key = key or self.key
        macs = self.__dict__.setdefault("_macs", {})
        mac = macs.get(key)
        if mac is None:  # an HMAC fed nothing yet, copied for each value
            mac = macs[key] = salted_hmac(self.salt + "signer", b"", key, algorithm=self.algorithm)
        mac = mac.copy()
        mac.update(force_bytes(value))
        return signing.b64_encode(mac.digest()).decode()

    def sign_object(self, obj, serializer=signing.JSONSerializer, compress=False):
        if compress or serializer is not signing.JSONSerializer:
            return super().sign_object(obj, serializer=serializer, compress=compress)
        return self.sign(signing.b64_encode(_COMPACT_JSON.encode(obj).encode("latin-1")).decode())


# What ``signing.JSONSerializer`` writes (json.dumps with these separators).
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))


@lru_cache(maxsize=4)
def _signer_for(key: str, fallbacks: tuple[str, ...]) -> signing.Signer:
    # One per key, not one per citation of every search (a rotated key makes a new one).
    return _Signer(key=key, fallback_keys=list(fallbacks), salt=SALT)


def encode_reference(*, source_id: int, sha256: str, chunk_id: str, block_id: str, query: str, quote: str | None) -> str:
    # The chunk id whole, not relative to the source's doc id: that id is
    # cleared or replaced when the file changes, and the link must still find its row.
    payload = [FORMAT, source_id, sha256[:SHA_CHARS], chunk_id, block_id, query[:1000]]
    if quote is not None:
        payload.append(quote)
    # Deterministic (no timestamp): the same place and query give the same
    # link. Only a chunk's text is worth compressing.
    return _signer().sign_object(payload, compress=quote is not None)


def reference_url(*, base: str | None = None, **place) -> str:
    """The link to a place; ``base``: :func:`reference_base`, when the caller
    has it already (a mapping asks once, not once per citation)."""
    return (base or reference_base()) + encode_reference(**place)


def reference_base() -> str:
    return _reference_base(get_script_prefix())


@lru_cache(maxsize=8)
def _reference_base(_script_prefix: str) -> str:
    # One reverse() per script prefix, not one per citation.
    return reverse("citation-reference", args=["-"])[:-1]


def read_reference(reference: str) -> Reference | None:
    """The place a link names, or None when it was not signed here."""
    try:
        payload = _signer().unsign_object(reference)
    except (signing.BadSignature, ValueError, UnicodeDecodeError):
        return None
    if not (isinstance(payload, list) and len(payload) in (6, 7) and payload[0] == FORMAT):
        return None
    _, source_id, sha, chunk, block_id, query, *quote = payload
    if not (isinstance(source_id, int) and all(isinstance(v, str) for v in (sha, chunk, block_id, query))):
        return None
    return Reference(source_id, sha, chunk, block_id, query, quote[0] if quote and isinstance(quote[0], str) else None)


def _place_words(locator: dict | None) -> tuple[str, str, str]:
    """(slide, sheet, cell range) a locator names, as text ('' when not named)."""
    locator = locator or {}
    return tuple(str(locator.get(key) or "") for key in ("slide", "sheet", "cellRange"))


def precision_label(precision: str, page: int | None, locator: dict | None = None) -> str:
    """The untranslated short label of a citation's Markdown: what the preview will show."""
    slide, sheet, cells = _place_words(locator)
    if precision in (Citation.Precision.BBOX, Citation.Precision.PAGE) and page:
        return f"p.{page}"
    if precision == Citation.Precision.SLIDE and slide:
        return f"slide {slide}"
    if precision == Citation.Precision.CELLS and cells:
        return f"{sheet}!{cells}" if sheet else cells
    if precision in (Citation.Precision.PARAGRAPH, Citation.Precision.PASSAGE):
        return str(precision)
    return "file only"


def badge_label(precision: str, page: int | None, locator: dict | None = None) -> str:
    """The precision badge's words, translated: on a source card and on a
    citation's page alike. They name what the preview will show; "whole
    file" only when nothing better is known."""
    slide, sheet, cells = _place_words(locator)
    if precision == Citation.Precision.BBOX:
        return _("page %(page)s region") % {"page": page}
    if precision == Citation.Precision.PAGE and page:
        return _("page %(page)s") % {"page": page}
    if precision == Citation.Precision.SLIDE:
        return _("slide %(slide)s") % {"slide": slide} if slide else _("slide")
    if precision == Citation.Precision.CELLS:
        if sheet and cells:
            return _("%(sheet)s, cells %(cells)s") % {"sheet": sheet, "cells": cells}
        return _("cells %(cells)s") % {"cells": cells} if cells else _("cell range")
    if precision == Citation.Precision.PASSAGE:
        return _("passage")
    return _("paragraph") if precision == Citation.Precision.PARAGRAPH else _("whole file")
