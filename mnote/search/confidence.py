"""The embedded rerank, asked by the search itself, and the relevance floor
it decides: does anything LightRAG found match the question well?

LightRAG always returns its nearest chunks, however far they are; a question
the library cannot answer gets a page of them all the same. Neither its order
nor MNote's lexical card score says how near they are (a question that shares
no words with its answer scores as low as one with no answer at all). The
embedded rerank knows: it weighs in the query's cosine to each candidate's
e5 vector. LightRAG asks it to rerank, as it would any provider; the search
then asks it for the cards' cosines, naming them by key
(:func:`card_similarities`): it kept the query's vector from LightRAG's call
and looks the passages' up — no second rerank, no passage sent twice. The floor
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
from mnote.text.relevance import content_key, match_confidence


log = logging.getLogger(__name__)

# The name the embedded rerank answers with (mnote.stack.rerank.RERANK_MODEL;
# the web stages do not import the stack runner, a test holds the two equal).
RERANK_MODEL = "mnote-bm25-dense-fusion"

# Below it a search is a weak match: the measure is match_confidence of the
# page's cards among LightRAG's candidates (the best of the first three cards'
# cosines, how far it stands out from the candidates' median, the query's words
# the cards hold and those no candidate holds); its weights were chosen by
# bench/rerank_tuning.py, this threshold from the page's own measures
# (search_quality.py --questions prints it): on the tuned part of
# bench/questions/handbook.jsonl it holds back 4.7 % of the answerable
# questions and 96 % of those with no answer.
FLOOR = 0.9401
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


def card_similarities(url: str, query: str, texts: list[str]) -> list[float | None] | None:
    """Each passage's cosine to the query, as the embedded rerank measured
    it when LightRAG asked it to rerank this query's candidates (None where
    it keeps no vector for a passage); None when it did not answer. The
    passages are named by :func:`content_key`, not sent again: the call
    costs a lookup, not a rerank."""
    if not texts:
        return []
    try:
        reply = _client().post(f"{url.rstrip('/')}/similarities",
                               json={"query": query, "keys": [content_key(t).hex() for t in texts]})
        reply.raise_for_status()
        cosines = reply.json().get("similarities")
        if not isinstance(cosines, list) or len(cosines) != len(texts):
            raise ValueError("not one similarity per passage")
    except (httpx.HTTPError, ValueError, TypeError, AttributeError) as e:
        log.warning("the rerank at %s gave no similarities; no relevance floor: %s", url, e)
        return None
    return [float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else None for c in cosines]


def weak_match(query: str, texts: list[str], cosines: list[float | None],
               candidates: list[str] | None = None, candidate_cosines: list[float | None] | None = None,
               ) -> tuple[bool | None, float | None]:
    """(weak, measured): weak is True when the cards' passages (``texts``, in
    the page's order, with their cosines to the query; ``candidates``: all
    LightRAG found, with theirs) are below the floor, False when above, None
    when unknown (no cosine for any of them); measured is the
    :func:`match_confidence` it was decided on (for calibrating)."""
    if not texts:
        return True, None
    measured = match_confidence(query, texts, cosines, candidates, candidate_cosines)
    return (None if measured is None else measured < FLOOR), measured
