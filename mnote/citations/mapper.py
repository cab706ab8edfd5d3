"""The one mapper from a LightRAG ``/query/data`` result to citations.

result → references (built from chunks when missing) → registry row (by
LightRAG file name and doc id) → sidecar block → citation. Every consumer —
search results, answers, source cards, permalinks, the JSON API — uses the
``CitationView`` objects made here. Stale, deleted and unmapped references
never become citations; they are kept in the diagnostics.
"""

import hashlib
import json
import string
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from mnote.text import evidence_sentences, lexical_score, with_heading
from mnote.citations.matching import _cleaned, _fingerprint, _match_block
from mnote.citations.matching import forget_text_memos as _forget_matching_memos
from mnote.citations.models import Citation
from mnote.citations.references import precision_label, reference_base, reference_url
from mnote.citations.sidecar import Block, DocIndex, Sidecar, chunk_index_of, cited_chunk_text, doc_id_of_chunk, doc_index
from mnote.kinds import kind_of
from mnote.library.models import Source
from mnote.preview.locator_anchor import anchor_locator, cached_text_map
from mnote.preview.place_index import Place, place_index

PROVIDER = "lightrag"
_BASE36 = string.digits + string.ascii_lowercase
DISPLAY_QUOTE_LIMIT = 700


@dataclass
class CitationView:
    """A citation as every consumer sees it (the contract's field list)."""

    citation_id: str
    source_id: int
    source_path: str
    file_name: str
    lightrag_doc_id: str
    lightrag_file_path: str
    chunk_id: str
    block_id: str | None
    heading_path: list[str]
    display_quote: str
    evidence_text: str
    search_query: str
    precision: str
    degraded: bool
    locator: dict
    citation_url: str
    citation_markdown: str
    relevance_score: float
    relevance_kind: str
    provider_rank: int
    diagnostics: dict
    page: int | None = None
    provider: str = PROVIDER
    source_sha256: str = ""

    @property
    def place(self) -> dict:
        """Where the cited words are, in the preview's terms (page, slide,
        sheet and cell range, block and character range …): empty for "file only"."""
        return {key: self.locator[key] for key in PLACE_FIELDS if key in self.locator}

    @property
    def locator_json(self) -> str:
        return json.dumps(self.locator, ensure_ascii=False)

    def as_json(self) -> dict:
        return {
            "citationId": self.citation_id,
            "provider": self.provider,
            "sourceId": self.source_id,
            "sourcePath": self.source_path,
            "fileName": self.file_name,
            "lightragDocId": self.lightrag_doc_id,
            "lightragFilePath": self.lightrag_file_path,
            "chunkId": self.chunk_id,
            "blockId": self.block_id,
            "headingPath": self.heading_path,
            "displayQuote": self.display_quote,
            "locatorEvidenceText": self.evidence_text,
            "searchQuery": self.search_query,
            "locatorPrecision": self.precision,
            "locatorDegraded": self.degraded,
            "locator": self.locator,
            "locatorPlace": self.place,
            "citationUrl": self.citation_url,
            "citationMarkdown": self.citation_markdown,
            "relevance": {"score": self.relevance_score, "kind": self.relevance_kind, "providerRank": self.provider_rank},
            "diagnostics": self.diagnostics,
        }


@dataclass
class MappedResult:
    query: str
    citations: list[CitationView]
    dropped: list[dict] = field(default_factory=list)
    diagnostics: dict = field(default_factory=dict)


@dataclass
class _Reference:
    file_path: str
    chunks: list[dict]


def _references(data: dict) -> list[_Reference]:
    """LightRAG's references are per file; build them from the chunks when the
    response has none (include_references off, or an older server)."""
    chunks = [c for c in data.get("chunks") or [] if isinstance(c, dict) and c.get("file_path")]
    by_file: dict[str, _Reference] = {}
    for chunk in chunks:
        name = chunk["file_path"]
        if name not in by_file:
            by_file[name] = _Reference(name, [])
        by_file[name].chunks.append(chunk)
    return list(by_file.values())


# What mapping reads of a registry row (and the anchoring, and the
# document index): another field read would cost a query per source, which
# tests/citations/test_citation_mapper.py would see.
_ROW_FIELDS = (
    "pk", "root_id", "relative_path", "absolute_path", "sha256", "lightrag_name", "lightrag_doc_id", "status", "stale",
    "deleted_at", "indexed_at", "root__path",
)  # fmt: skip


def _registry_row(reference: _Reference, rows_by_name: dict[str, Source]) -> tuple[Source | None, str]:
    """The registry row a reference maps to, or the reason it maps to none."""
    source = rows_by_name.get(reference.file_path)
    if source is None:
        return None, "unmapped: no registry row has this LightRAG file name"
    doc_ids = {doc_id_of_chunk(c.get("chunk_id") or "") for c in reference.chunks} - {""}
    # Without a doc id on either side a name alone is not proof: a deleted
    # row (doc id cleared) must never match a reference that has none.
    if not source.lightrag_doc_id or (doc_ids and source.lightrag_doc_id not in doc_ids):
        return None, f"stale: the registry row is {source.status} and maps to another or no LightRAG document"
    if source.stale or source.deleted_at or source.status != Source.Status.INDEXED:
        return None, f"stale: the source is {source.get_status_display()}"
    return source, ""


def _resource_kind(name: str) -> str:
    return kind_of(name).name


class _SourceFacts(NamedTuple):
    """What every citation of one source repeats (path properties that build
    paths, the file's kind): worked out once per source per mapping."""

    file_name: str
    library_path: str
    kind: object

    @classmethod
    def of(cls, source: Source) -> "_SourceFacts":
        # Kept by the process, by the row fields they are made of (pathlib
        # joins, each search again for the same few files, were most of it).
        key = (source.relative_path, source.root.path)
        with _FACTS_LOCK:
            facts = _FACTS.get(key)
        if facts is None:
            file_name = source.file_name
            facts = cls(file_name, source.library_path, kind_of(file_name))
            with _FACTS_LOCK:
                if len(_FACTS) >= 4096:
                    _FACTS.clear()
                _FACTS[key] = facts
        return facts


_FACTS: dict[tuple[str, str], _SourceFacts] = {}
# Shared by the web process's threads.
_FACTS_LOCK = threading.Lock()


def forget_text_memos() -> None:
    """This process's memos — cleaned texts, files' path facts, places' ids
    (a cold start, for tests and benchmarks)."""
    _forget_matching_memos()
    with _FACTS_LOCK:
        _FACTS.clear()
    _short_id.cache_clear()


def _add_anchor(locator: dict, source: Source, memo: dict | None = None, index: DocIndex | None = None) -> None:
    """The cited words' place in the file's preview when that preview is
    rendered already (``locator["anchor"]``: status exact|fuzzy, start/end
    block + offset, W3C TextPosition and TextQuote): the preview marks that
    range without a request, the context panel marks the same words.
    ``memo`` (one mapping's): each source's text map looked up once, not once
    per citation of it — a file's render is looked for on disk."""
    if locator["precision"] in (Citation.Precision.BBOX, Citation.Precision.PAGE):
        return  # a PDF: no text map; the preview finds the words on the page's text layer
    key = ("preview text map", source.pk, source.sha256)
    if memo is not None and key in memo:
        text_map = memo[key]
    else:
        text_map = cached_text_map(source.file_name, source.sha256)
        if memo is not None:
            memo[key] = text_map
    if text_map is None:
        return
    chunk = cited_chunk_text(source, str(locator.get("chunkId") or ""), index)
    anchor = anchor_locator(text_map, locator, chunk=chunk)
    if anchor:
        locator["anchor"] = anchor


def _locator_position(block: Block | None, sidecar: Sidecar | None) -> tuple[str, dict]:
    """Precision and position fields, never faked: a page and rectangle only
    from a real bbox position, paragraph ids only when the DOCX has them."""
    if block is None or sidecar is None:
        return Citation.Precision.FILE, {}
    bboxes = [p for p in block.positions if p.get("type") == "bbox" and p.get("anchor") and isinstance(p.get("range"), list) and len(p["range"]) == 4]
    if bboxes:
        page = str(bboxes[0]["anchor"])
        on_page = [p["range"] for p in bboxes if str(p["anchor"]) == page]
        scale = sidecar.bbox_max
        x0 = min(r[0] for r in on_page) / scale
        y0 = min(r[1] for r in on_page) / scale
        x1 = max(r[2] for r in on_page) / scale
        y1 = max(r[3] for r in on_page) / scale
        if page.isdigit():
            return Citation.Precision.BBOX, {"page": int(page), "bbox": [round(v, 4) for v in (x0, y0, x1, y1)]}
    fields: dict = {"blockId": block.block_id}
    for position in block.positions:
        if position.get("type") == "paraid":
            start, end = (list(position.get("range") or []) + [None, None])[:2]
            if start and end:
                fields["paraIds"] = [start, end]
            break
    return Citation.Precision.PARAGRAPH, fields


# The locator fields that say where the cited words are, by kind (beside
# page/bbox/blockId/paraIds): what the API calls the citation's place.
PLACE_FIELDS = ("page", "bbox", "blockId", "paraIds", "slide", "shape", "sheet", "cellRange", "sheetPage", "blockIndex",
                "charRange", "lineStart")  # fmt: skip


def _cell_range(first: str, last: str) -> str:
    """The range from the first row's range to the last's ("A7:F7", "A9:D9" → "A7:F9")."""
    start, _, first_end = first.partition(":")
    _, _, end = last.partition(":")
    if not (start and end):
        return first
    column = max(first_end.rstrip("0123456789"), end.rstrip("0123456789"), key=lambda c: (len(c), c))
    return f"{start}:{column}{end.lstrip('ABCDEFGHIJKLMNOPQRSTUVWXYZ')}"


def _kind_position(kind_name: str, place: Place) -> tuple[str, dict]:
    """Precision and position fields of words found in the file's place
    index, named by what the kind's preview shows there."""
    if kind_name == "pdf":
        return Citation.Precision.PAGE, {"page": place.page}
    first, last = place.first, place.last
    if first.get("slide", "").isdigit():
        fields = {"slide": int(first["slide"])}
        if first.get("shape"):
            fields["shape"] = first["shape"]
        return Citation.Precision.SLIDE, fields
    if first.get("range") and first.get("sheet") is not None:
        fields = {"cellRange": _cell_range(first["range"], last.get("range") or first["range"]), "sheetPage": place.page}
        if kind_name != "csv":  # a CSV's one sheet is named after the file: no news
            fields["sheet"] = first["sheet"]
        return Citation.Precision.CELLS, fields
    anchor = place.anchor or {}
    fields = {"blockIndex": anchor["start"]["block"]} if anchor.get("start") else {}
    if anchor.get("textPosition"):
        fields["charRange"] = [anchor["textPosition"]["start"], anchor["textPosition"]["end"]]
    if first.get("line", "").isdigit():
        fields["lineStart"] = int(first["line"])
    return Citation.Precision.PASSAGE, fields


def _place_in_index(locator: dict, source: Source, kind_name: str, index: DocIndex, memo: dict) -> tuple[str, dict] | None:
    """Where the worker's place index of this content (``preview.place_index``)
    puts the cited words, inside the cited chunk; None when it has no index
    (not written yet, or a kind without one) or does not find them."""
    places = place_index(source.sha256)
    if places is None:
        return None
    key = ("place", source.pk, source.sha256, locator.get("chunkId"), locator.get("evidenceText"))
    if key not in memo:
        chunk = cited_chunk_text(source, str(locator.get("chunkId") or ""), index)
        found = places.locate(locator, chunk)
        memo[key] = _kind_position(kind_name, found) if found else None
    return memo[key]


def _citation_id(parts: tuple, taken: set[str]) -> str:
    """4 base-36 characters from a hash of provider, source, place and
    occurrence; re-salted until unique within this result."""
    salt = 0
    while True:
        short = _short_id(parts, salt)
        if short not in taken:
            taken.add(short)
            return short
        salt += 1


@lru_cache(maxsize=4096)
def _short_id(parts: tuple, salt: int) -> str:
    # Kept by the process: the same places are cited search after search.
    digest = hashlib.sha256("\0".join(map(str, (*parts, salt))).encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    return "".join(_BASE36[(number // 36**i) % 36] for i in range(4))


@dataclass
class _Mapping:
    """What the citations of one mapping share: the query, the links' base,
    the ids and places taken so far (so none repeats), and what the anchoring
    keeps per source."""

    query: str
    link_base: str | None = None
    taken_ids: set[str] = field(default_factory=set)
    seen: set[tuple] = field(default_factory=set)
    memo: dict = field(default_factory=dict)


@dataclass
class _Place:
    """Where a chunk is cited: its sidecar block (or none), the texts shown
    for it and the locator that opens the preview there."""

    block: Block | None
    block_how: str
    stored: object  # the chunk in LightRAG's chunk store, or None
    display: str
    evidence: str
    short_display: str
    precision: str
    page: int | None
    locator: dict


def _place(mapping: _Mapping, source: Source, index: DocIndex, facts: "_SourceFacts", *, chunk_id: str, raw: str,
           block_hint: str | None) -> _Place | None:
    """The place a chunk of ``source`` cites, or None when an earlier chunk of
    the mapping cited the same place."""
    query = mapping.query
    sidecar = index.sidecar
    stored = index.chunk(chunk_id)
    block, block_how = None, "no_sidecar"
    if sidecar is not None and sidecar.blocks:
        if block_hint is not None:
            block = sidecar.by_id.get(block_hint)
            block_how = "permalink" if block else "no_block_match"
        else:
            block, block_how = _match_block(raw, sidecar, stored.block_ids if stored else (), query,
                                            text_matches=index.text_matches)
    display = _cleaned(raw)
    key = (source.pk, block.block_id) if block else (source.pk, chunk_id, _fingerprint(display))
    if key in mapping.seen:
        return None
    mapping.seen.add(key)
    heading_path = block.heading_path if block else []
    # The card quotes the sentences that answer the query, and the locator
    # asks the preview to mark those same words: the cited block's sentences
    # when the chunk maps to a block (a chunk spans several, and the preview
    # marks words in the block it lands on), else the chunk's.
    evidence_source = sidecar.display_text(block)[1] if block else display
    short_display = evidence_sentences(evidence_source, query, cleaned=True)
    evidence = with_heading(short_display, heading_path)
    precision, position = _locator_position(block, sidecar)
    locator = {
        "precision": str(precision),
        "degraded": precision == Citation.Precision.FILE,
        "resourceKind": facts.kind.name,
        "sourceId": source.pk,
        "sourcePath": facts.library_path,
        **position,
        "headingPath": heading_path,
        "evidenceText": evidence,
        "searchQuery": query,
        "displayQuote": short_display,
        "chunkId": chunk_id or None,
    }
    chunk_index = stored.order_index if stored else chunk_index_of(chunk_id)
    if chunk_index is not None:
        locator["chunkIndex"] = chunk_index
    if not chunk_id:
        del locator["chunkId"]
    if precision == Citation.Precision.FILE:
        found = _place_in_index(locator, source, facts.kind.name, index, mapping.memo)
        if found is not None:
            precision, position = found
            locator.update(precision=str(precision), degraded=False, **position)
    _add_anchor(locator, source, mapping.memo, index)
    anchored = str(((locator.get("anchor") or {}).get("textQuote") or {}).get("exact") or "")
    if anchored.strip():
        # The card quotes the words the preview marks, not LightRAG's text of them.
        short_display = anchored if len(anchored) <= DISPLAY_QUOTE_LIMIT else evidence_sentences(anchored, query)
        locator["displayQuote"] = short_display
    return _Place(block, block_how, stored, display, evidence, short_display, precision, position.get("page"), locator)


def _cite(mapping: _Mapping, source: Source, index: DocIndex, *, chunk_id: str, raw: str, rank: int,
          block_hint: str | None = None, facts: "_SourceFacts | None" = None) -> CitationView | None:
    """One chunk of ``source`` as a citation, or None when an earlier chunk
    of the mapping cited the same place. ``block_hint`` (a permalink being
    opened) names the block the search chose."""
    facts = facts or _SourceFacts.of(source)
    place = _place(mapping, source, index, facts, chunk_id=chunk_id, raw=raw, block_hint=block_hint)
    if place is None:
        return None
    block, query = place.block, mapping.query
    prefix = "IMG-" if facts.kind.image else ""
    # Stable per source version and place (not per search rank): the same passage
    # keeps its id across searches; a collision in one result re-salts it.
    citation_id = prefix + _citation_id((PROVIDER, source.pk, source.sha256, block.block_id if block else chunk_id), mapping.taken_ids)
    # No row yet (a search writes none): the link names the place, signed,
    # and becomes a Citation row when it is first opened (permalinks.py).
    url = reference_url(
        base=mapping.link_base,
        source_id=source.pk,
        sha256=source.sha256,
        chunk_id=chunk_id,
        block_id=block.block_id if block else "",
        query=query,
        # Only when the chunk's text cannot be read again from LightRAG's store.
        quote=None if place.stored else raw,
    )
    label = precision_label(place.precision, place.page, place.locator)
    return CitationView(
        citation_id=citation_id,
        source_id=source.pk,
        source_path=facts.library_path,
        file_name=facts.file_name,
        lightrag_doc_id=source.lightrag_doc_id,
        lightrag_file_path=source.lightrag_name,
        chunk_id=chunk_id,
        block_id=block.block_id if block else None,
        heading_path=place.locator["headingPath"],
        display_quote=place.short_display,
        evidence_text=place.evidence,
        search_query=query,
        precision=str(place.precision),
        degraded=place.precision == Citation.Precision.FILE,
        locator=place.locator,
        citation_url=url,
        citation_markdown=f"[{facts.file_name}, {label}]({url})",
        relevance_score=round(lexical_score(place.display, query), 4),
        relevance_kind="mnote_lexical",
        provider_rank=rank,
        page=place.page,
        source_sha256=source.sha256,
        diagnostics={
            "quoteSource": "lightrag_chunk",
            "referenceMapped": True,
            "sidecarBlockMapped": block is not None,
            "blockMatch": place.block_how,
            "displayCleaned": place.display != raw,
            "locatorTextSource": "sidecar_block" if block else "chunk",
        },
    )


def cite_again(source: Source, *, chunk_id: str, block_id: str, query: str, quote: str | None) -> CitationView | None:
    """The citation a search made of this chunk, made again when its link is
    first opened; None when the source is no longer citable as it was."""
    doc_id = doc_id_of_chunk(chunk_id)
    if source.stale or source.deleted_at or source.status != Source.Status.INDEXED or not source.lightrag_doc_id:
        return None
    if doc_id and doc_id != source.lightrag_doc_id:
        return None  # re-indexed since: the chunk is another version's
    index = doc_index(source)
    stored = index.chunk(chunk_id, with_text=True)
    raw = stored.content if stored else quote
    if raw is None:
        return None
    return _cite(_Mapping(query), source, index, chunk_id=chunk_id, raw=raw, rank=0, block_hint=block_id or None)


def map_query_data(
    result: dict,
    *,
    query: str,
    sources,
    scope: list[str] | None = None,
    rerank_requested: bool | None = None,
    rerank_available: bool | None = None,
) -> MappedResult:
    """Turn a ``/query/data`` result into citations. Writes nothing: each
    citation's link becomes a ``Citation`` row when it is first opened, or
    when an answer holding it is saved (:func:`permalinks.persist`).

    ``sources`` is the registry queryset the asking user may see
    (``Source.objects.visible_to(user)``): a reference to a file outside it is
    dropped without naming the file.
    """
    data = result.get("data") or {}
    references = _references(data)
    names = [r.file_path for r in references]
    # No ORDER BY (the model's default joins and sorts): the rows go into a
    # dict. Only the columns a citation reads (``_ROW_FIELDS``): building the
    # SQL for all forty was most of this query's cost.
    rows = sources.filter(lightrag_name__in=names).select_related("root").only(*_ROW_FIELDS).order_by()
    rows_by_name = {s.lightrag_name: s for s in rows}
    unmatched = set(names) - set(rows_by_name)
    # Registered but outside what this user may see.
    hidden = set(Source.objects.filter(lightrag_name__in=unmatched).values_list("lightrag_name", flat=True)) if unmatched else set()
    in_scope = set(sources.filter(lightrag_name__in=names).within(scope).values_list("pk", flat=True)) if scope else None
    citations: list[CitationView] = []
    dropped: list[dict] = []
    mapping = _Mapping(query, link_base=reference_base())
    rank = 0
    for reference in references:
        if reference.file_path in hidden:
            # Visible to someone else: say nothing that names it.
            dropped.append({"reason": "not visible to you", "chunks": len(reference.chunks)})
            continue
        source, why = _registry_row(reference, rows_by_name)
        if source is None:
            dropped.append({"lightragFilePath": reference.file_path, "reason": why, "chunks": len(reference.chunks)})
            continue
        if in_scope is not None and source.pk not in in_scope:
            dropped.append(
                {"sourcePath": source.library_path, "reason": "outside the search scope", "chunks": len(reference.chunks)}
            )
            continue
        index = doc_index(source)
        facts = _SourceFacts.of(source)
        for chunk in reference.chunks:
            rank += 1
            view = _cite(mapping, source, index, chunk_id=str(chunk.get("chunk_id") or ""),
                         raw=str(chunk.get("content") or ""), rank=rank, facts=facts)
            if view is None:
                continue
            view.diagnostics["providerRerankRequested"] = rerank_requested
            view.diagnostics["providerRerankAvailable"] = rerank_available
            citations.append(view)
    return MappedResult(
        query=query,
        citations=citations,
        dropped=dropped,
        diagnostics={
            "references": len(references),
            "chunks": sum(len(r.chunks) for r in references),
            "referencesBuiltFromChunks": not (data.get("references") or []),
            "providerRerankRequested": rerank_requested,
            "providerRerankAvailable": rerank_available,
            "providerStatus": result.get("status"),
        },
    )
