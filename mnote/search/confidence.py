"""The relevance floor: does anything LightRAG found match the question well?

LightRAG always returns its nearest chunks, however far they are; a question
the library cannot answer gets a page of them all the same. Neither its order
nor MNote's lexical card score says how near they are (a question that shares
no words with its answer scores as low as one with no answer at all). The
embedded rerank knows: it weighs in the query's cosine to each candidate's
stored e5 vector, and measures how well a page of cards matches
(``confidence``, :func:`mnote.stack.rerank.match_confidence`). This module
asks it about the cards a search shows; below :data:`FLOOR` the search is a
weak match: the page says nothing matches well and folds the cards away, the
API and MCP say ``lowConfidence``.

The floor was calibrated on the tuned part of the question set
(bench/questions/handbook.jsonl, ``bench/rerank_tuning.py``): the highest
threshold that holds back at most 5 % of its answerable questions.

With another rerank provider (or none), nothing here is known: ``None``, and
no floor is applied.
"""

from __future__ import annotations

import functools
import logging

import httpx
from django.conf import settings

from mnote.lightrag.client import _tls_context


log = logging.getLogger(__name__)

# The name the embedded rerank answers with (mnote.stack.rerank.RERANK_MODEL;
# the web stages do not import the stack runner, a test holds the two equal).
RERANK_MODEL = "mnote-bm25-dense-fusion"

# Below it a search is a weak match: the measure is the rerank's
# match_confidence of the page's cards (how far the best of the first three
# stands out from the median of all, plus a tenth of the query's words they
# hold). On the tuned part of bench/questions/handbook.jsonl it holds back 5 %
# of the answerable questions and 78 % of those with no answer.
FLOOR = 0.0528
TIMEOUT_SECONDS = 3.0


# The embedded rerank reads the candidates' stored vectors from this store's
# file in LightRAG's working folder (mnote.stack.rerank.StoredVectors); with
# another vector store (PGVectorStorage, the scaled set-up) it has none and
# cannot say how near the cards are, so the floor is not asked for.
VECTORS_THE_RERANK_READS = "NanoVectorDBStorage"


def embedded_rerank_url(health) -> str | None:
    """The embedded rerank's URL when LightRAG uses it and it can measure the
    cards' confidence, else None."""
    if health is None or not health.rerank_enabled or health.rerank_model != RERANK_MODEL:
        return None
    configuration = (health.raw or {}).get("configuration") or {}
    if configuration.get("vector_storage", VECTORS_THE_RERANK_READS) != VECTORS_THE_RERANK_READS:
        return None
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


def cards_confidence(url: str, query: str, texts: list[str]) -> float | None:
    """The embedded rerank's ``confidence`` for these passages, in this order."""
    try:
        reply = _client().post(url, json={"query": query, "documents": texts, "return_confidence": True})
        reply.raise_for_status()
        value = reply.json().get("confidence")
    except (httpx.HTTPError, ValueError) as e:
        log.warning("relevance floor unknown: the rerank at %s did not answer: %s", url, e)
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def weak_match(query: str, texts: list[str], health) -> bool | None:
    """True when the cards' passages (``texts``, in the page's order) are
    below the floor; False when above; None when unknown (no embedded rerank)."""
    url = embedded_rerank_url(health)
    if url is None:
        return None
    if not texts:
        return True
    measured = cards_confidence(url, query, texts)
    return None if measured is None else measured < FLOOR
