"""The relevance floor's cosines after LightRAG's own rerank call: the
search names the cards' passages by key and the model endpoint answers from
the vectors it kept (``POST /v1/rerank/similarities``), without a second
rerank and without the passages' text sent again."""

import json

import pytest

from mnote.text.relevance import content_key
from tests.model_endpoint_process import endpoint_request, start_endpoint, stop_endpoint


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    working = tmp_path_factory.mktemp("rag_storage")
    proc, base, log = start_endpoint(["--quiet", "--no-calibrate", "--lightrag-working-dir", str(working)])
    try:
        yield base
    finally:
        stop_endpoint(proc)
        log.close()


PASSAGES = [  # a flush of LightRAG's chunks: several, as its ingest sends them
    "Re-aluminise the primary and secondary mirrors every 24 months in the coating plant.",
    "The azimuth bearing oil pressure must stay between 2 and 3 bar while the telescope slews.",
    "Clean the mirror with carbon dioxide snow, never when the dome humidity is above 80 percent.",
    "Report every accident or near miss to the safety officer on the same day.",
]
QUERY = "how often is the mirror recoated"


def test_the_cosines_by_key_are_those_the_rerank_weighed_for_lightrag(endpoint):
    status, _, _ = endpoint_request(endpoint, "/v1/embeddings", {"model": "m", "input": PASSAGES})  # LightRAG's flush
    assert status == 200
    status, _, body = endpoint_request(endpoint, "/v1/rerank", {"model": "m", "query": QUERY, "documents": PASSAGES})
    weighed = {r["index"]: r["query_similarity"] for r in json.loads(body)["results"]}

    keys = [content_key(p).hex() for p in [PASSAGES[1], "never embedded", PASSAGES[0]]]
    status, _, body = endpoint_request(endpoint, "/v1/rerank/similarities", {"query": QUERY, "keys": keys})

    assert status == 200
    assert json.loads(body)["similarities"] == [weighed[1], None, weighed[0]]


def test_a_passage_nobody_embedded_has_no_cosine_and_a_bad_key_is_refused(endpoint):
    status, _, body = endpoint_request(endpoint, "/v1/rerank/similarities",
                                       {"query": "anything", "keys": [content_key("unknown text").hex()]})
    assert status == 200 and json.loads(body)["similarities"] == [None]

    status, _, body = endpoint_request(endpoint, "/v1/rerank/similarities", {"query": "q", "keys": ["not hex"]})
    assert status == 400 and "error" in json.loads(body)
