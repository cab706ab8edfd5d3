"""The local rerank provider LightRAG calls (``POST /v1/rerank`` of the model
endpoint, run as a real subprocess under the LightRAG venv, where bm25s is)."""

import json

import pytest

from mnote.text.relevance import tokens
from tests.model_endpoint_process import endpoint_request, start_endpoint, stop_endpoint


@pytest.fixture(scope="module")
def endpoint():
    proc, base, log = start_endpoint(["--quiet"])
    try:
        yield base
    finally:
        stop_endpoint(proc)
        log.close()


def _rerank(base, query, documents, **extra):
    status, _, body = endpoint_request(base, "/v1/rerank", {"model": "m", "query": query, "documents": documents, **extra})
    assert status == 200, body
    return json.loads(body)["results"]


def test_it_puts_the_paragraph_holding_the_words_above_a_tiny_chunk_the_dense_order_preferred(endpoint):
    documents = [
        "Hello",  # LightRAG's dense order put this first
        "Travel claims are filed within thirty days.",
        "Purchase approval needs two signatures from the budget holder before the order is placed.",
    ]
    results = _rerank(endpoint, "approval needs two signatures from the budget holder", documents)

    assert [r["index"] for r in results][0] == 2
    assert sorted(r["index"] for r in results) == [0, 1, 2]
    assert results[0]["relevance_score"] > results[1]["relevance_score"]


def test_it_keeps_the_dense_order_when_no_word_matches(endpoint):
    results = _rerank(endpoint, "zebra xylophone", ["first passage", "second passage", "third passage"])

    assert [r["index"] for r in results] == [0, 1, 2]


def test_it_reads_chinese_without_a_word_segmenter(endpoint):
    documents = ["会议纪要：下周一开会。", "市场内卫生清洁要求每日两次，由管理处检查。", "设备清单"]
    results = _rerank(endpoint, "卫生清洁要求", documents, top_n=2)

    assert [r["index"] for r in results] == [1, 0]


def test_it_refuses_a_malformed_request_with_a_json_error(endpoint):
    status, _, body = endpoint_request(endpoint, "/v1/rerank", {"query": "x", "documents": [1, 2]})
    assert status == 400 and "error" in json.loads(body)
    status, _, body = endpoint_request(endpoint, "/v1/rerank", {"query": "", "documents": ["a"]})
    assert status == 400


def test_its_tokens_pair_neighbouring_words_and_chinese_characters():
    assert tokens("The Budget holder") == ["budget", "holder", "budget_holder"]
    assert tokens("清洁要求") == ["清", "洁", "要", "求", "清洁", "洁要", "要求"]
