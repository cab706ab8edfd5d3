"""The relevance floor is measured by the embedded rerank with whatever
vector store LightRAG uses."""

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


def test_the_rerank_measures_the_floor_whatever_store_lightrag_keeps_its_vectors_in():
    # The rerank keeps the chunk vectors it computed for LightRAG itself, so
    # the scaled set-up (vectors in PostgreSQL) gets the floor too.
    for storage in ("PGVectorStorage", "NanoVectorDBStorage"):
        assert confidence.embedded_rerank_url(_health(storage)) == RERANK_URL
