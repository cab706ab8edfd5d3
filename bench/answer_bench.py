"""Time to the first citation card and to the first word of a streamed answer
on the ask page, against the bare LightRAG ``/query/stream`` it wraps, in the
same run (issue 14; target: first card <= 1.15 x LightRAG's references line).

    .venv/bin/python bench/answer_bench.py [--n 8] [--keep] [--no-json]

Everything real, on free loopback ports, in a temporary data dir: the local
model endpoint with the deterministic test answering model (``--test-answers``;
there is no real LLM here) and a ``lightrag-server`` using it as its LLM, with
its answer cache off so every answer is generated; the app's DB migrated
there, one member, ``manage.py load_demo``; the web app under gunicorn as
production runs it (``mnote.stack.processes.web_process``).

Per question, interleaved, after one untimed warm-up round:

  (a) bare   ``POST {lightrag}/query/stream`` as LightRAG answers alone
             (naive, include_references, include_chunk_content; the app now
             retrieves with /query/data and sends the LLM its own context in
             bypass mode): time to the references line, and to the first
             response line;
  (b) app    ``POST /ask/`` with ``Accept: text/event-stream`` (logged in,
             retrieval naive): time to the ``context`` event (the cards), and
             to the first ``text`` event carrying words.

Medians and p90; the ratios app card / bare references and app first word /
bare first word. Writes bench/results/answer_bench.json. The web app and the
stack are always stopped and the temporary dir removed (unless --keep).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR / "bench"))
sys.path.insert(0, str(REPO_DIR))

from machine import machine_info  # noqa: E402
from stack_harness import (  # noqa: E402
    CREATE_USER,
    app_env,
    clean_environ,
    logged_in_client,
    manage,
    start_stack,
)

RESULTS_FILE = REPO_DIR / "bench" / "results" / "answer_bench.json"
# Questions about the demo library, English and Chinese; none was used to tune anything.
QUESTIONS = [
    "How often is the primary mirror re-aluminised?",
    "How is the telescope calibrated every night?",
    "What should a new member do in the first week?",
    "吡咯烷应该如何储存？",
    "市场内卫生清洁有什么要求？",
    "How many flat-field frames should be taken per filter?",
]


def bare(client: httpx.Client, question: str) -> tuple[float, float | None]:
    body = {"query": question, "mode": "naive", "include_references": True, "include_chunk_content": True}
    start = time.perf_counter()
    references = word = None
    with client.stream("POST", "/query/stream", json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.strip():
                continue
            item = json.loads(line)
            if "references" in item and references is None:
                references = time.perf_counter() - start
            if item.get("response") and word is None:
                word = time.perf_counter() - start
    if references is None:
        raise SystemExit(f"LightRAG sent no references line for {question!r}")
    return references, word


def app(client: httpx.Client, question: str) -> tuple[float, float | None]:
    token = client.cookies.get("csrftoken")
    start = time.perf_counter()
    card = word = None
    buffer = ""
    with client.stream(
        "POST",
        "/ask/",
        data={"q": question, "retrieval": "naive", "csrfmiddlewaretoken": token},
        headers={"Accept": "text/event-stream", "Referer": str(client.base_url) + "/ask/"},
    ) as response:
        response.raise_for_status()
        for text in response.iter_text():
            buffer += text
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                name, _, data = block.partition("\n")
                now = time.perf_counter() - start
                if name == "event: context" and card is None:
                    card = now
                elif name == "event: text" and word is None:
                    event = json.loads(data.removeprefix("data: "))
                    if event.get("html") or event.get("pending"):
                        word = now
                elif name == "event: problem":
                    raise SystemExit(f"the app could not answer {question!r}: {data}")
    if card is None:
        raise SystemExit(f"the app sent no context event for {question!r}")
    return card, word


def summary(values: list[float]) -> dict:
    values = sorted(v for v in values if v is not None)
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "median_ms": round(statistics.median(values) * 1000, 1),
        "p90_ms": round(values[min(len(values) - 1, int(0.9 * len(values)))] * 1000, 1),
    }


def profile_first_card(env: dict[str, str]) -> None:
    """Where the app's time to the first card goes: answer_stream up to its
    context event, in this process, against the same DB and LightRAG."""
    import cProfile
    import pstats

    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from mnote.search.answers import answer_stream

    user = get_user_model().objects.get(username="bench-member")
    profiler = cProfile.Profile()
    for question in QUESTIONS * 2:
        profiler.enable()
        events = answer_stream(user, question, mode="naive")
        next(events)
        profiler.disable()
        events.close()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=8, help="rounds over the questions (default 8)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary dir")
    parser.add_argument("--no-json", action="store_true", help="do not write bench/results/answer_bench.json")
    parser.add_argument("--profile", action="store_true", help="also cProfile the app's path to the first card, in-process")
    args = parser.parse_args(argv)
    clean_environ()
    from mnote.stack.answering_model import TEST_ANSWER_MODEL
    from mnote.stack.processes import ExternalModel, web_process
    from mnote.stack.managed import free_port

    tmp = Path(tempfile.mkdtemp(prefix="mnote-answer-bench-"))
    stack = web = None
    try:
        (tmp / "library").mkdir()
        model_port = free_port()
        print(f"starting the stack with the test answering model in {tmp} …", flush=True)
        stack = start_stack(
            tmp,
            model_port=model_port,
            llm=ExternalModel("openai", f"http://127.0.0.1:{model_port}/v1", TEST_ANSWER_MODEL, "none"),
            test_answers=True,
            llm_cache=False,
        )
        env = app_env(tmp, stack)
        manage(["migrate", "--verbosity", "0"], env)
        manage(["shell", "-c", CREATE_USER], env)
        print("  " + manage(["load_demo"], env).strip().replace("\n", "\n  "), flush=True)
        port = free_port()
        web = web_process(stack.config, "127.0.0.1", port, env)
        web.start()
        web.wait_healthy(60)
        client = logged_in_client(f"http://127.0.0.1:{port}")
        client.get("/ask/").raise_for_status()
        lightrag = httpx.Client(
            base_url=stack.config.lightrag_url,
            headers={"X-API-Key": stack.config.resolved_api_key()},
            timeout=httpx.Timeout(120.0, connect=5.0),
        )
        for question in QUESTIONS:  # warm-up, untimed
            bare(lightrag, question)
            app(client, question)
        rows = {"bare_references": [], "bare_first_word": [], "app_first_card": [], "app_first_word": []}
        for round_number in range(args.n):
            for index, question in enumerate(QUESTIONS):
                # Alternate which goes first, so neither always meets a warmer LightRAG.
                order = (bare, app) if (round_number + index) % 2 == 0 else (app, bare)
                for kind in order:
                    first, word = kind(lightrag if kind is bare else client, question)
                    prefix = "bare" if kind is bare else "app"
                    rows[f"{prefix}_references" if kind is bare else "app_first_card"].append(first)
                    rows[f"{prefix}_first_word"].append(word)
        result = {name: summary(values) for name, values in rows.items()}
        card_ratio = result["app_first_card"]["median_ms"] / result["bare_references"]["median_ms"]
        word_ratio = (
            result["app_first_word"]["median_ms"] / result["bare_first_word"]["median_ms"]
            if result["app_first_word"].get("n") and result["bare_first_word"].get("n")
            else None
        )
        print(f"{'':28}{'median ms':>12}{'p90 ms':>10}{'n':>5}")
        for name, row in result.items():
            print(f"{name:28}{row.get('median_ms', '—'):>12}{row.get('p90_ms', '—'):>10}{row['n']:>5}")
        print(f"first card / references line: {card_ratio:.2f}x (target <= 1.15x)")
        if word_ratio is not None:
            print(f"first word / bare first word:  {word_ratio:.2f}x")
        if args.profile:
            profile_first_card(env)
        if not args.no_json:
            RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
            RESULTS_FILE.write_text(
                json.dumps(
                    {
                        "bench": "answer_bench",
                        "questions": QUESTIONS,
                        "rounds": args.n,
                        "results": result,
                        "ratios": {"first_card_vs_references": round(card_ratio, 3), "first_word_vs_bare": word_ratio and round(word_ratio, 3)},
                        "target": {"first_card_vs_references": 1.15},
                        "machine": machine_info(dirty=("mnote/search", "mnote/citations", "mnote/lightrag", "templates/search")),
                    },
                    indent=2,
                    ensure_ascii=False,
                )
                + "\n"
            )
        return 0
    finally:
        if web is not None:
            web.stop()
        if stack is not None:
            stack.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
