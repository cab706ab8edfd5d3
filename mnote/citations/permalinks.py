"""Permalinks made when they are needed, not on every search.

A search writes no rows: each card's link (``/c/r/<reference>``) carries a
signed, compact name of the cited place — source id, the first characters of
its content hash, LightRAG's chunk id, the block the mapper chose and the
query (and the chunk's text only when LightRAG's chunk store cannot give it
back). The link becomes a ``Citation`` row, with its short ``/c/<token>``,
when it is first opened or when an answer holding it is saved; opening it
again finds that row. The signature keeps anyone from naming a place the
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
from mnote.citations.reanchor import Selector
from mnote.library.models import Source

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


def precision_label(precision: str, page: int | None) -> str:
    """The untranslated short label of a citation's Markdown."""
    if precision == Citation.Precision.BBOX and page:
        return f"p.{page}"
    return "paragraph" if precision == Citation.Precision.PARAGRAPH else "file only"


def badge_label(precision: str, page: int | None) -> str:
    """The precision badge's words, translated: on a source card and on a citation's page alike."""
    if precision == Citation.Precision.BBOX:
        return _("page %(page)s region") % {"page": page}
    return _("paragraph") if precision == Citation.Precision.PARAGRAPH else _("whole file")


def kept_quote(locator: dict, display_quote: str) -> dict:
    """The fields that let a citation outlive its version: the selector of
    the words the preview marks (when the locator has their place already)
    and the cited passage's text."""
    selector = Selector.from_anchor((locator or {}).get("anchor"))
    return {
        "quote_selector": selector.as_json() if selector else {},
        "cited_text": selector.exact if selector else display_quote,
    }


def persist(citations: list) -> None:
    """Make (or find) the rows of these citations, all at once, and give each
    its short permalink: for what must last (a saved answer)."""
    keys = {}
    for c in citations:
        keys[id(c)] = (c.source_id, c.source_sha256, c.chunk_id, c.block_id or "", c.search_query[:1000])
    wanted = set(keys.values())
    if not wanted:
        return

    def existing() -> dict[tuple, Citation]:
        rows = Citation.objects.filter(
            source_id__in={k[0] for k in wanted},
            chunk_id__in={k[2] for k in wanted},
            block_id__in={k[3] for k in wanted},
            search_query__in={k[4] for k in wanted},
        )
        found = {(r.source_id, r.source_sha256, r.chunk_id, r.block_id, r.search_query): r for r in rows}
        return {key: row for key, row in found.items() if key in wanted}

    found = existing()
    missing = {}
    for c in citations:
        key = keys[id(c)]
        if key not in found and key not in missing:
            missing[key] = Citation(
                source_id=c.source_id,
                source_sha256=c.source_sha256,
                chunk_id=c.chunk_id,
                block_id=c.block_id or "",
                search_query=c.search_query[:1000],
                source_path=c.source_path,
                lightrag_doc_id=c.lightrag_doc_id,
                precision=c.precision,
                locator=c.locator,
                heading_path=c.heading_path,
                display_quote=c.display_quote,
                evidence_text=c.evidence_text,
                **kept_quote(c.locator, c.display_quote),
            )
    if missing:
        # Another request may make the same permalink meanwhile: keep whichever was stored.
        Citation.objects.bulk_create(missing.values(), ignore_conflicts=True)
        found = existing()
    for c in citations:
        c.citation_url = found[keys[id(c)]].get_absolute_url()
        c.citation_markdown = f"[{c.file_name}, {precision_label(c.precision, c.page)}]({c.citation_url})"


class SourceChanged(LookupError):
    """The link's source is visible but has changed since the link was made,
    and nobody opened the link before: the cited place was not kept."""

    def __init__(self, source: Source):
        self.source = source
        super().__init__(f"{source.library_path} has changed since this citation was made.")


def cited(user, reference: str) -> Citation | None:
    """The row of a signed link, made now when it is first opened. None when
    the link is not one of ours or names a source ``user`` may not see (one
    answer for both); SourceChanged when its place can no longer be cited."""
    from mnote.citations.mapper import cite_again

    place = read_reference(reference)
    if place is None:
        return None
    source = Source.objects.visible_to(user).select_related("root").filter(pk=place.source_id).first()
    if source is None:
        return None
    chunk_id = place.chunk_id
    row = (
        Citation.objects.select_related("source__root")
        .filter(
            source=source,
            source_sha256__startswith=place.sha256_prefix,
            chunk_id=chunk_id,
            block_id=place.block_id,
            search_query=place.query,
        )
        .first()
    )
    if row is not None:
        return row
    if not source.sha256.startswith(place.sha256_prefix):
        raise SourceChanged(source)
    view = cite_again(source, chunk_id=chunk_id, block_id=place.block_id, query=place.query, quote=place.quote)
    if view is None:
        raise SourceChanged(source)
    persist([view])
    return Citation.objects.select_related("source__root").get(
        source=source, source_sha256=view.source_sha256, chunk_id=view.chunk_id, block_id=view.block_id or "",
        search_query=view.search_query[:1000],
    )
