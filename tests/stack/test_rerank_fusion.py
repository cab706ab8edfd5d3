"""The embedded rerank's fusion (lexical, LightRAG's order, the query's cosine
to the stored chunk vectors, hub chunks demoted) and where its cosines come
from: LightRAG's own vector file, read again when it changes."""

import base64
import json
import os
import struct
import time
import zlib

import pytest

from mnote.stack import rerank
from mnote.stack.rerank import (
    Fusion, StoredVectors, fused_scores, similarity_source, substance,
)
from mnote.text.relevance import match_confidence, word_coverage
from tests.model_endpoint_process import endpoint_request, start_endpoint, stop_endpoint


def _packed(vector) -> str:
    """A vector as LightRAG's NanoVectorDB stores it: float16, zlib, base64."""
    return base64.b64encode(zlib.compress(struct.pack(f"<{len(vector)}e", *vector))).decode()


def _write_vdb(path, records) -> None:
    data = [{"__id__": f"chunk-{i}", "content": text, "vector": _packed(vector)} for i, (text, vector) in enumerate(records)]
    path.write_text(json.dumps({"embedding_dim": len(records[0][1]), "data": data, "matrix": ""}))


def test_the_embedders_similarity_lifts_a_paraphrased_answer_above_a_passage_sharing_one_word():
    documents = ["The canteen opens at eight.", "Quota limits how much disk a user may fill.", "Disk cleanup notes."]
    lexical = [0.0, 0.0, 1.0]  # the question shares "disk" with the third only
    cosines = [0.70, 0.90, 0.72]

    words_only = fused_scores("cap disk usage per person", documents, None, Fusion(0.7, 0.3, 0.0), lexical=lexical)
    with_meaning = fused_scores("cap disk usage per person", documents, cosines, Fusion(0.4, 0.1, 0.5), lexical=lexical)

    assert max(range(3), key=words_only.__getitem__) == 2
    assert max(range(3), key=with_meaning.__getitem__) == 1


def test_without_similarities_their_weight_goes_to_lightrags_order():
    documents = ["first", "second"]
    scores = fused_scores("q", documents, [None, None], Fusion(0.5, 0.2, 0.3), lexical=[0.0, 0.0])

    assert scores == [0.5, 0.25]


def test_tiny_chunks_and_filler_are_demoted():
    documents = ["Hello", "Lorem ipsum dolor sit amet " * 10, "The quota system allows limiting disk space for a user " * 3]
    fusion = Fusion(1.0, 0.0, 0.0, substance_words=20, filler_factor=0.3)
    scores = fused_scores("disk", documents, None, fusion, lexical=[1.0, 1.0, 1.0])

    assert scores[2] == 1.0
    assert scores[0] < 0.1 and scores[1] <= 0.3
    assert substance("| | |\n| | |") == 0 and substance("删除软件包") == 2


def test_stored_vectors_are_found_by_the_chunks_text_and_read_again_when_the_file_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(StoredVectors, "RECHECK_SECONDS", 0.0)
    path = tmp_path / "vdb_chunks.json"
    _write_vdb(path, [("alpha passage", [3.0, 4.0]), ("beta passage", [1.0, 0.0])])
    stored = StoredVectors(str(path))

    alpha, beta, unknown = stored.lookup(["alpha passage", "beta passage", "never stored"])
    assert [round(x, 3) for x in alpha] == [0.6, 0.8] and unknown is None

    _write_vdb(path, [("gamma passage", [0.0, 2.0])])
    os.utime(path, ns=(1, 1))  # a different stamp even within the same clock tick
    # read by a thread; searches meanwhile get the vectors read before
    deadline = time.monotonic() + 10
    while stored.lookup(["gamma passage"])[0] is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stored.lookup(["alpha passage", "gamma passage"])[0] is None
    assert list(stored.lookup(["gamma passage"])[0]) == [0.0, 1.0]


def test_a_missing_or_broken_vector_file_gives_no_similarities(tmp_path):
    broken = tmp_path / "vdb_chunks.json"
    broken.write_text("{not json")
    source = similarity_source(StoredVectors(str(broken)), lambda q: pytest.fail("nothing to compare with"))

    assert source("q", ["a", "b"]) is None
    assert StoredVectors(str(tmp_path / "missing.json")).lookup(["a"]) == [None]


def test_a_passage_that_stands_out_and_holds_the_questions_words_is_a_confident_match():
    documents = ["Quotas limit the disk space of a user.", "Printers are set up in CUPS.", "The canteen menu.", "DNS zones."]
    standing_out = match_confidence("limit disk space per user", documents, [0.90, 0.80, 0.79, 0.78])
    flat = match_confidence("vegetarian lunch options", documents, [0.81, 0.80, 0.79, 0.78])

    assert standing_out > flat
    assert word_coverage("disk space of a user", documents) == 1.0
    assert word_coverage("disk space per user", documents) < 0.8  # "per": in none of them, the rarest word
    assert word_coverage("zxqv blorft", documents) == 0.0
    assert match_confidence("q", documents, [None] * 4) is None


# --- through the model endpoint, as LightRAG calls it ------------------------


@pytest.fixture(scope="module")
def endpoint_with_vectors(tmp_path_factory):
    working = tmp_path_factory.mktemp("rag_storage")
    proc, base, log = start_endpoint(["--quiet", "--no-calibrate", "--lightrag-working-dir", str(working)])
    try:
        yield base, working
    finally:
        stop_endpoint(proc)
        log.close()


def test_the_rerank_returns_each_stored_passages_similarity_to_the_query(endpoint_with_vectors):
    base, working = endpoint_with_vectors
    passages = [
        "The canteen on the ground floor serves lunch from noon to two.",
        "To limit the disk space each user may fill, enable quotas in /etc/fstab.",
    ]
    status, _, body = endpoint_request(base, "/v1/embeddings", {"model": "m", "input": passages, "input_type": "passage"})
    assert status == 200
    vectors = [d["embedding"] for d in json.loads(body)["data"]]
    _write_vdb(working / "vdb_chunks.json", list(zip(passages, vectors)))

    documents = [*passages, "A chunk LightRAG never stored."]
    query = "how do I cap a user's storage"
    status, _, body = endpoint_request(base, "/v1/rerank", {"model": "m", "query": query, "documents": documents})
    results = {r["index"]: r for r in json.loads(body)["results"]}

    assert status == 200
    assert [r["index"] for r in json.loads(body)["results"]][0] == 1
    assert results[1]["query_similarity"] > results[0]["query_similarity"]
    assert results[2]["query_similarity"] is None
    assert rerank.RERANK_MODEL == json.loads(body)["model"]


def test_the_rerank_knows_the_passages_it_embedded_for_lightrag_whatever_its_vector_storage(endpoint_with_vectors):
    base, working = endpoint_with_vectors
    # A flush of LightRAG's chunks (no vector file of LightRAG's is written:
    # PostgreSQL, say, keeps them).
    passages = [
        "Re-aluminise the primary and secondary mirrors every 24 months in the coating plant.",
        "The azimuth bearing oil pressure must stay between 2 and 3 bar while the telescope slews.",
        "Clean the mirror with carbon dioxide snow, never when the dome humidity is above 80 percent.",
        "Report every accident or near miss to the safety officer on the same day.",
    ]
    status, _, _ = endpoint_request(base, "/v1/embeddings", {"model": "m", "input": passages})
    assert status == 200

    status, _, body = endpoint_request(base, "/v1/rerank", {"model": "m", "query": "how often is the mirror recoated",
                                                      "documents": passages})
    results = json.loads(body)["results"]

    assert status == 200
    assert all(isinstance(r["query_similarity"], float) for r in results)
    assert (working / rerank.PassageVectors.FILE_NAME).is_file()
