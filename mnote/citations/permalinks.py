"""A card's signed link becomes a ``Citation`` row, with its short
``/c/<token>``, when it is first opened (the mapper makes the citation again
from the link's place) or when an answer holding it is saved; opening it
again finds that row. The links themselves: ``references.py``."""

from mnote.citations.mapper import cite_again
from mnote.citations.models import Citation
from mnote.citations.reanchor import Selector
from mnote.citations.references import precision_label, read_reference
from mnote.library.models import Source


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
        c.citation_markdown = f"[{c.file_name}, {precision_label(c.precision, c.page, c.locator)}]({c.citation_url})"


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
