"""Full-library search and answers: LightRAG retrieves, the mapper makes the
citations, and answers are badged by MNote. Used by the pages and the JSON
API alike."""

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db.models import Q
from django.utils.translation import gettext_noop

from mnote.citations.mapper import MappedResult, map_query_data
from mnote.search.confidence import card_similarities, embedded_rerank_url, weak_match
from mnote.library.models import IndexedRoot, Source
from mnote.lightrag import QUERY_MODES, lightrag_mode
from mnote.lightrag.provider import lightrag_client, recent_health
from mnote.search.badges import AnsweredSentence, BadgePlacer, extractive_answer, render_badged_text
from mnote.text import is_unreadable, query_terms

MODES = QUERY_MODES
_WHY_NOT_IN_LIGHTRAG = {
    Source.Status.NOT_INDEXED: gettext_noop("not indexed yet"),
    Source.Status.QUEUED: gettext_noop("indexing (queued)"),
    Source.Status.INDEXING: gettext_noop("indexing"),
    Source.Status.FAILED: gettext_noop("LightRAG failed to index it"),
    Source.Status.STALE: gettext_noop("changed since it was indexed; waiting to be re-indexed"),
    Source.Status.DELETE_SUBMITTED: gettext_noop("deleted"),
    Source.Status.REMOVED: gettext_noop("deleted"),
    Source.Status.EXCLUDED: gettext_noop("excluded by its root's exclude patterns"),
    Source.Status.DUPLICATE: gettext_noop("a duplicate of another file's content"),
}


class UnknownScope(ValueError):
    """A scope path names no folder or file the asking user can see."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        super().__init__("No folder or file in the library is called " + ", ".join(f"“{p}”" for p in paths))


# With a scope, LightRAG is asked again for more candidates until this many
# citations fall inside it; each ask widens chunk_top_k, at most this often.
SCOPE_ENOUGH = 5
SCOPE_WIDENING = 3
SCOPE_MAX_CHUNK_TOP_K = 200
DEFAULT_CHUNK_TOP_K = 20  # LightRAG 1.5.7's own default
# With a rerank provider, LightRAG is asked for this many candidates to
# rerank (the dense top 20 often misses the paragraph holding the user's very
# words), and the page maps and shows the first CARDS_SHOWN of its order.
RERANK_CANDIDATES = 60
CARDS_SHOWN = 20


def _first_chunks(result: dict, n: int) -> dict:
    data = result.get("data") or {}
    chunks = data.get("chunks") or []
    if len(chunks) <= n:
        return result
    return {**result, "data": {**data, "chunks": chunks[:n]}}


def _scope_exists(user, path: str) -> bool:
    """A root, a folder above or inside a root, or a file the user may see."""
    roots = list(IndexedRoot.objects.visible_to(user).only("pk", "path"))
    for root in roots:
        root_path = root.path.strip("/")
        if root_path == path or root_path.startswith(path + "/"):
            return True
        if path.startswith(root_path + "/"):
            rest = path[len(root_path) + 1 :]
            inside = Q(relative_path=rest) | Q(relative_path__startswith=rest + "/")
            if Source.objects.filter(root=root).filter(inside).exists():
                return True
    return False


def check_scope(user, scope: list[str] | None) -> None:
    """Raise UnknownScope naming the paths that match nothing the user may see
    (a misspelt scope must not silently return nothing)."""
    unknown = [p for p in scope or [] if not _scope_exists(user, p.strip("/"))]
    if unknown:
        raise UnknownScope(unknown)


def _drop_unreadable(mapped: MappedResult) -> None:
    """Cards whose quote is empty (Word theme/settings XML) or Word's field
    error text never reach a page or the API."""
    readable = []
    for c in mapped.citations:
        if is_unreadable(c.display_quote):
            mapped.dropped.append({"sourcePath": c.source_path, "reason": "unreadable quote", "chunks": 1})
        else:
            readable.append(c)
    mapped.citations[:] = readable


def _mapping(user, query: str, scope: list[str] | None, enable_rerank: bool | None, health, sources=None) -> dict:
    """What the mapper needs besides LightRAG's result, alike for a search and an answer."""
    return {
        "query": query,
        "sources": sources if sources is not None else Source.objects.visible_to(user),
        "scope": scope,
        "rerank_requested": enable_rerank,
        "rerank_available": health.rerank_enabled,
    }


def full_library_search(
    user,
    query: str,
    *,
    mode: str | None = None,
    top_k: int | None = None,
    chunk_top_k: int | None = None,
    scope: list[str] | None = None,
    enable_rerank: bool | None = None,
    sources=None,
) -> MappedResult:
    """LightRAG references only (no answer), mapped to citations the user may see.

    ``sources``: the user's visible sources when the caller has them already
    (``Source.objects.filter(root_id__in=IndexedRoot.objects.visible_ids(user))``);
    read here otherwise.

    With a scope, LightRAG's top chunks may all lie outside it (the scope is a
    post-filter), so LightRAG is asked again with a wider ``chunk_top_k``
    until enough citations fall inside it — a bounded number of times.

    Without a ``mode``: the provider's (:func:`default_mode`); the one used
    is ``diagnostics["mode"]``.

    Raises UnknownScope, and the LightRAG client's typed errors (unavailable,
    busy, rejected).
    """
    with lightrag_client() as client:
        mapped, _chunks, _health = _retrieve(
            client, user, query, mode=mode, top_k=top_k, chunk_top_k=chunk_top_k, scope=scope,
            enable_rerank=enable_rerank, sources=sources,
        )
    return mapped


def _retrieve(client, user, query: str, *, mode, top_k, chunk_top_k, scope, enable_rerank, sources=None):
    """(citations the user may see, the ``/query/data`` chunks of the last
    ask, LightRAG's health): the one retrieval of a search and of an answer."""
    check_scope(user, scope)
    width = chunk_top_k
    asks = 0
    health = recent_health(client)
    mode = mode or default_mode(health)
    reranked_pool = chunk_top_k is None and health.rerank_enabled and enable_rerank is not False
    if reranked_pool:
        width = RERANK_CANDIDATES
    # LightRAG reranks with the embedded rerank, which keeps the query's
    # vector; the relevance floor then asks it for the cards' cosines by key
    # (see search.confidence).
    rerank_url = embedded_rerank_url(health) if reranked_pool else None
    while True:
        asks += 1
        result = client.query_data(query, mode=mode, top_k=top_k, chunk_top_k=width, enable_rerank=enable_rerank)
        found = (result.get("data") or {}).get("chunks") or []
        if reranked_pool and not scope:
            result = _first_chunks(result, CARDS_SHOWN)
        mapped = map_query_data(result, **_mapping(user, query, scope, enable_rerank, health, sources))
        _drop_unreadable(mapped)
        asked = width or DEFAULT_CHUNK_TOP_K
        returned = len((result.get("data") or {}).get("chunks") or [])
        if (
            not scope
            or len(mapped.citations) >= SCOPE_ENOUGH
            or returned < asked  # LightRAG has nothing more to give
            or asks >= SCOPE_WIDENING
            or asked >= SCOPE_MAX_CHUNK_TOP_K
        ):
            break
        width = min(asked * 3, SCOPE_MAX_CHUNK_TOP_K)
    if reranked_pool:
        del mapped.citations[CARDS_SHOWN:]
    mapped.diagnostics["lowConfidence"], mapped.diagnostics["matchConfidence"] = _weak_match(
        rerank_url, query, found, mapped)
    mapped.diagnostics["llmAvailable"] = health.has_llm
    mapped.diagnostics["mode"] = lightrag_mode(mode)
    if scope:
        mapped.diagnostics["outsideScope"] = sum(
            d.get("chunks", 1) for d in mapped.dropped if d["reason"] == "outside the search scope"
        )
        mapped.diagnostics["scopeAsks"] = asks
        mapped.diagnostics["chunkTopK"] = width or DEFAULT_CHUNK_TOP_K
    return mapped, (result.get("data") or {}).get("chunks") or [], health


def _weak_match(rerank_url: str | None, query: str, found: list[dict],
                mapped: MappedResult) -> tuple[bool | None, float | None]:
    """The relevance floor (:mod:`mnote.search.confidence`) on the cards' passages, in the page's order,
    among all the candidates LightRAG found, and its measure; None, None without the embedded rerank."""
    if rerank_url is None:
        return None, None
    texts = [str(c.get("content") or "") for c in found]
    cosines = card_similarities(rerank_url, query, texts) if texts else []
    if cosines is None:
        return None, None
    by_chunk = {c.get("chunk_id"): (text, cos) for c, text, cos in zip(found, texts, cosines)}
    cards = [by_chunk.get(c.chunk_id, ("", None)) for c in mapped.citations[:CARDS_SHOWN]]
    return weak_match(query, [t for t, _ in cards], [c for _, c in cards], texts, cosines)


def not_in_lightrag(user, query: str, *, limit: int = 10, root_ids: list[int] | None = None) -> list[dict]:
    """Files whose name matches the query but that LightRAG cannot cite, with why.
    ``root_ids``: the roots the user may see (``IndexedRoot.objects.visible_ids``)
    when the caller has them already; read here otherwise."""
    terms = [t for t in query_terms(query) if len(t) >= 2][:8]
    if not terms:
        return []
    roots = IndexedRoot.objects.visible_ids(user) if root_ids is None else root_ids
    if not roots:
        return []
    found = []
    for pk, root_path, relative_path, status in _name_matches(roots, terms, limit):
        path = Source(root=IndexedRoot(path=root_path), relative_path=relative_path).library_path
        found.append({"sourceId": pk, "sourcePath": path, "status": status, "reason": _WHY_NOT_IN_LIGHTRAG.get(status, status)})
    return found


def _name_matches(root_ids: list[int], terms: list[str], limit: int):
    """(id, root path, relative path, status) of the sources in ``root_ids``
    whose relative path holds one of ``terms``, not indexed and current, in
    the registry's order."""
    named = Q()
    for term in terms:
        named |= Q(relative_path__icontains=term)
    rows = Source.objects.filter(root_id__in=root_ids).filter(named).exclude(status=Source.Status.INDEXED, stale=False)
    return rows.values_list("pk", "root__path", "relative_path", "status")[:limit]


NO_LLM_NOTE = gettext_noop("Extractive answer: no LLM is configured, so these are the cited sentences that best match.")
# Below the relevance floor the cards are folded away, and no answer is built on them.
WEAK_MATCH_NOTE = gettext_noop(
    "Nothing in the library matches this question well, so no answer was written from it."
)
# Answers no longer withhold (their context is only ever what the asker may
# see); saved turns made when they did still carry this note.
WITHHELD_NOTE = gettext_noop(
    "Extractive answer: the LLM's context could not be limited to documents you may open, "
    "so these are the cited sentences that best match instead."
)


@dataclass
class Answer:
    query: str
    kind: str  # "llm" or "extractive"
    sentences: list[AnsweredSentence]
    mapped: MappedResult
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return render_badged_text(self.sentences)

    @property
    def plain_text(self) -> str:
        """The answer without badges, as a conversation's earlier turn."""
        return "".join(s.space_before + s.text for s in self.sentences)


@dataclass
class AnswerEvent:
    """One step of an answer as it is made: ``context`` (all citations known,
    before any word), ``text`` (sentences completed since the last event and
    the text still being written), ``done``."""

    kind: str
    answer: Answer
    sentences: list[AnsweredSentence] = field(default_factory=list)
    pending: str = ""


# --- the LLM's context: made by MNote, from the asker's citations only ---------
#
# LightRAG has no notion of who asks: the context its own answer modes give
# the LLM holds chunks, knowledge-graph entities and relations drawn from every
# file, and its answer cache is keyed by the question. So MNote never lets
# LightRAG build an answer's context. It retrieves with /query/data (the
# search's retrieval), keeps the chunks of the citations the mapper made — only
# of registry rows the asker may see, inside the scope — and sends the LLM a
# prompt holding those chunks' text and nothing else, through LightRAG's
# ``bypass`` mode (no retrieval and no answer cache; only the asker's own
# conversation goes with it). Entities and relations are never sent: their
# descriptions merge text from every file that names them.

# LightRAG 1.5.7 takes at most 64 KiB in a query (MAX_QUERY_CHARS); the
# chunks stop here, leaving room for the instructions and the question.
CONTEXT_MAX_CHARS = 48_000
ANSWER_PROMPT = """---Role---
You are an assistant answering the user's question from the Document Chunks below, and from nothing else.

---Instructions---
- Use only facts stated in the Document Chunks. If they do not answer the question, say so; do not guess.
- After each sentence that uses a chunk, put that chunk's reference_id in square brackets, like [1].
- Answer in the language of the question. Be concise.
- End with a "### References" section listing the reference ids you used.

---Context---
Document Chunks (each entry's reference_id refers to the Reference Document List):

```json
{chunks}
```

Reference Document List:

```
{references}
```

---Question---
{question}"""


@dataclass
class AnswerContext:
    prompt: str
    ids_by_reference: dict[str, list[str]]
    """The prompt's reference ids ("1", "2", …) → the ids of the citations of that file."""


def answer_context(question: str, citations, chunks: list[dict]) -> AnswerContext | None:
    """The LLM's prompt: the question and the text of the chunks ``citations``
    were made of, numbered by file; None when there is no such chunk.

    By construction, nothing else reaches the prompt: a chunk goes in only
    when a citation (which the mapper made only of a source the asker may see,
    inside the scope) names its file and its id."""
    cited = {(c.lightrag_file_path, c.chunk_id) for c in citations}
    paths = {c.lightrag_file_path: c.source_path for c in citations}
    numbers: dict[str, str] = {}
    lines, used, seen = [], 0, set()
    for chunk in chunks:
        name, content = str(chunk.get("file_path") or ""), chunk.get("content")
        key = (name, str(chunk.get("chunk_id") or ""))
        if key not in cited or key in seen or not isinstance(content, str):
            continue
        seen.add(key)
        number = numbers.get(name, str(len(numbers) + 1))
        line = json.dumps({"reference_id": number, "content": content}, ensure_ascii=False)
        if used + len(line) > CONTEXT_MAX_CHARS:
            break
        numbers[name] = number
        lines.append(line)
        used += len(line) + 1
    if not lines:
        return None
    references = "\n".join(f"[{number}] {paths[name]}" for name, number in numbers.items())
    prompt = ANSWER_PROMPT.format(chunks="\n".join(lines), references=references, question=question)
    ids = {n: [c.citation_id for c in citations if c.lightrag_file_path == name] for name, n in numbers.items()}
    return AnswerContext(prompt, ids)


def default_mode(health) -> str:
    """Graph retrieval needs the entities an LLM extracts at ingest; without
    one there is no graph, and vectors alone (naive) are all there is."""
    return "mix" if health is not None and health.has_llm else "naive"


def answer_stream(
    user,
    query: str,
    *,
    mode: str | None = None,
    top_k: int | None = None,
    chunk_top_k: int | None = None,
    scope: list[str] | None = None,
    enable_rerank: bool | None = None,
    history: list[dict[str, str]] | None = None,
) -> Iterator[AnswerEvent]:
    """An answer as it is written: the search's retrieval (``mode`` picks how
    LightRAG finds the chunks) mapped to the citations the asker may see, then
    the LLM asked with a context made of those citations' chunks alone
    (:func:`answer_context`), its words badged only from them.

    Without an LLM the answer is extractive. Closing the generator closes the
    connection, and LightRAG stops the answer.
    """
    with lightrag_client() as client:
        mapped, chunks, health = _retrieve(
            client, user, query, mode=mode, top_k=top_k, chunk_top_k=chunk_top_k, scope=scope,
            enable_rerank=enable_rerank,
        )
        if mapped.diagnostics.get("lowConfidence"):
            answer = Answer(query, "extractive", [], mapped, notes=[WEAK_MATCH_NOTE])
            yield AnswerEvent("context", answer)
            yield AnswerEvent("done", answer)
            return
        if not health.has_llm:
            answer = Answer(query, "extractive", extractive_answer(query, mapped.citations), mapped, notes=[NO_LLM_NOTE])
            yield AnswerEvent("context", answer)
            yield AnswerEvent("done", answer)
            return
        answer = Answer(query, "llm", [], mapped)
        yield AnswerEvent("context", answer)
        context = answer_context(query, mapped.citations, chunks)
        if context is None:
            # Nothing the asker may open was found: no context, so no LLM.
            yield AnswerEvent("done", answer)
            return
        placer = BadgePlacer(mapped.citations, query=query, ids_by_reference=context.ids_by_reference)
        with client.answer_stream(context.prompt, conversation_history=history) as stream:
            for piece in stream.pieces():
                new = placer.feed(piece)
                answer.sentences.extend(new)
                yield AnswerEvent("text", answer, new, placer.pending)
        new = placer.finish()
        answer.sentences.extend(new)
        yield AnswerEvent("text", answer, new, "")
        yield AnswerEvent("done", answer)


def answer_question(user, query: str, **options) -> Answer:
    """An answer whose sentences carry badges of this query's citations only,
    read to its end (:func:`answer_stream`, whose options it takes, for pages
    without JavaScript and the JSON API)."""
    answer = None
    for event in answer_stream(user, query, **options):
        answer = event.answer
    return answer
