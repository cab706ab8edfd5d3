"""The embedded rerank, asked by the search itself, and the relevance floor
it decides: does anything LightRAG found match the question well?

LightRAG always returns its nearest chunks, however far they are; a question
the library cannot answer gets a page of them all the same. Neither its order
nor MNote's lexical card score says how near they are (a question that shares
no words with its answer scores as low as one with no answer at all). The
embedded rerank knows: it weighs in the query's cosine to each candidate's
e5 vector, and returns those cosines with its order. So a search whose
LightRAG uses the embedded rerank asks LightRAG for its candidates without
reranking and sends them to the rerank once (:func:`rerank_chunks`): one
call orders them and carries what the floor needs. The floor
(:func:`weak_match`) is then measured on the cards the asker may see, in the
page's order (:func:`mnote.text.relevance.match_confidence`); below
:data:`FLOOR` the page says nothing matches well and folds the cards away, the
API and MCP say ``lowConfidence``.

The floor was calibrated on the tuned part of the question set
(bench/questions/handbook.jsonl, ``bench/rerank_tuning.py``): the highest
threshold that holds back at most 5 % of its answerable questions.

With another rerank provider (or none), LightRAG reranks as it is configured
to, nothing here is known and no floor is applied.
"""

from __future__ import annotations

import functools
import logging

import httpx
from django.conf import settings

from mnote.lightrag.client import _tls_context
from mnote.text.relevance import match_confidence


log = logging.getLogger(__name__)

# The name the embedded rerank answers with (mnote.stack.rerank.RERANK_MODEL;
# the web stages do not import the stack runner, a test holds the two equal).
RERANK_MODEL = "mnote-bm25-dense-fusion"

# Below it a search is a weak match: the measure is match_confidence of the
# page's cards (how far the best of the first three stands out from the median
# of all, plus a tenth of the query's words they hold). On the tuned part of
# bench/questions/handbook.jsonl it holds back 5 % of the answerable questions
# and 78 % of those with no answer.
FLOOR = 0.0528
TIMEOUT_SECONDS = 3.0


def embedded_rerank_url(health) -> str | None:
    """The embedded rerank's URL when LightRAG uses it, else None. It keeps
    the chunk vectors it computed for LightRAG itself, so it measures the
    cards' confidence whatever store LightRAG keeps its own vectors in."""
    if health is None or not health.rerank_enabled or health.rerank_model != RERANK_MODEL:
        return None
    configuration = (health.raw or {}).get("configuration") or {}
    url = configuration.get("rerank_binding_host")
    return url if isinstance(url, str) and url.startswith(("http://", "https://")) else None


def _client() -> httpx.Client:
    # The transport tests fake LightRAG with fakes its rerank too.
    transport = getattr(settings, "MNOTE_LIGHTRAG_TRANSPORT", None)
    if transport is not None:
        return httpx.Client(transport=transport, timeout=TIMEOUT_SECONDS)
    return _shared_client()


@functools.cache
def _shared_client() -> httpx.Client:
    """One keep-alive client per process (httpx clients are thread-safe): a
    new one per search would build a TLS context and a connection each time."""
    return httpx.Client(timeout=TIMEOUT_SECONDS, verify=_tls_context())


def rerank_chunks(url: str, query: str, chunks: list[dict]) -> tuple[list[dict], dict[str, float]] | None:
    """LightRAG's candidate chunks in the embedded rerank's order, and each
    chunk's cosine to the query by chunk id (empty when the rerank has no
    vectors for them); None when the rerank did not answer."""
    if not chunks:
        return [], {}
    texts = [str(c.get("content") or "") for c in chunks]
    try:
        reply = _client().post(url, json={"query": query, "documents": texts})
        reply.raise_for_status()
        results = reply.json().get("results")
        order = [r["index"] for r in results]
        if sorted(set(order)) != sorted(order) or not all(isinstance(i, int) and 0 <= i < len(chunks) for i in order):
            raise ValueError("results name documents that were not sent")
    except (httpx.HTTPError, ValueError, TypeError, KeyError) as e:
        log.warning("the rerank at %s did not answer; LightRAG's order is kept, no relevance floor: %s", url, e)
        return None
    cosines = {}
    for result in results:
        similarity = result.get("query_similarity")
        if isinstance(similarity, (int, float)) and not isinstance(similarity, bool):
            cosines[str(chunks[result["index"]].get("chunk_id") or "")] = float(similarity)
    return [chunks[i] for i in order], cosines


def weak_match(query: str, texts: list[str], cosines: list[float | None]) -> bool | None:
    """True when the cards' passages (``texts``, in the page's order, with
    their cosines to the query) are below the floor; False when above; None
    when unknown (no cosine for any of them)."""
    if not texts:
        return True
    measured = match_confidence(query, texts, cosines)
    return None if measured is None else measured < FLOOR
