"""The relevance floor is asked of the embedded rerank only where it can
measure it: it reads the candidates' stored vectors from LightRAG's
NanoVectorDB file, so with the vectors in PostgreSQL (the scaled set-up) a
search does not send it the cards' passages for a confidence it cannot give."""

import httpx

from mnote.lightrag.responses import Health
from mnote.search import confidence
from mnote.stack.rerank import RERANK_MODEL
from tests.lightrag_fakes import recorded

RERANK_URL = "http://model.test/v1/rerank"


def _health(vector_storage: str) -> Health:
    _, body = recorded("health.json")
    configuration = {**body["configuration"], "enable_rerank": True, "rerank_binding": "cohere",
                     "rerank_model": RERANK_MODEL, "rerank_binding_host": RERANK_URL,
                     "vector_storage": vector_storage}  # fmt: skip
    return Health.from_body({**body, "configuration": configuration})


def _rerank(settings, asks: list) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        asks.append(request)
        return httpx.Response(200, json={"model": RERANK_MODEL, "results": [], "confidence": 0.0})

    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(handler)


def test_with_lightrags_vectors_in_postgresql_the_floor_is_unknown_and_not_asked(settings):
    asks = []
    _rerank(settings, asks)

    assert confidence.weak_match("canteen menu", ["The canteen opens at eight."], _health("PGVectorStorage")) is None
    assert asks == []


def test_with_its_own_vector_files_the_floor_is_asked_and_applied(settings):
    asks = []
    _rerank(settings, asks)

    assert confidence.weak_match("canteen menu", ["The canteen opens at eight."], _health("NanoVectorDBStorage")) is True
    assert [str(a.url) for a in asks] == [RERANK_URL]
