"""Latency of the app's full-library search against the bare LightRAG
``/query/data`` call it wraps, measured in the same run (issue 6).

    .venv/bin/python bench/search_latency_bench.py [--n 30] [--clients 20] [--total 200] [--max-seconds 60] [--profile]

Everything real, on free loopback ports, in a temporary data dir:

  - the embedded stack (local model endpoint + ``lightrag-server``) from
    ``mnote.stack.processes.EmbeddedStack``;
  - the app's DB migrated there, one member user, and ``manage.py load_demo``
    (the 6 demo documents copied into the library and indexed by LightRAG);
  - the web app under gunicorn exactly as production runs it
    (``mnote.stack.processes.web_process``: ``WEB_PROCESSES`` workers x
    ``WEB_THREADS`` threads).

Measured with httpx over loopback, after one untimed warm-up round:

  (a) bare      ``POST {lightrag}/query/data`` with ``X-API-Key`` and the body
                the app sends (``mnote.lightrag.client._query_request``:
                query, mode "mix", include_references, include_chunk_content,
                and — when LightRAG has a rerank provider, as the embedded
                stack has — ``chunk_top_k`` = ``RERANK_CANDIDATES`` (60), the
                pool the app reranks and shows the first 20 of), on one
                persistent httpx client;
  (b) partial   ``GET /search/?q=…&mode=library&retrieval=mix`` with
                ``HX-Request: true`` (the HTMX results fragment), logged in;
  (c) full      the same without ``HX-Request`` (the whole page);
  info: default  bare ``/query/data`` with LightRAG's default ``chunk_top_k``
                (20): what (a) was before it followed the app's body; with a
                rerank provider LightRAG reranks 20 instead of 60 candidates.

N sequential requests per kind (default 30), the kinds interleaved and their
order rotated every round, queries taken in turn from a fixed list of English
and Chinese questions about the demo library. Median and p95 per kind; ratios
partial / bare and full / bare (medians).

Then C concurrent clients (default 20 threads, each with its own logged-in
httpx client) send a fixed number of requests in total (default 200, capped
at --max-seconds): against the app's partial, and, as the baseline, the same
against bare ``/query/data``. p50, p90, p99, throughput and errors (non-200,
exceptions, and for the app a 200 page that shows a LightRAG error message).
Rounds of the two alternate (bare, then app); the target row is the pooled
throughput ratio, and each round's ratio against the bare round just before it
is printed with their median. The cores' time per run is split into our
processes, other processes, and the VM host's steal (/proc/stat), which on a
shared host can take a fifth of the cores during one round and not the next.

Where the app's time goes: a Django test-client run in a subprocess against
the same DB and LightRAG, with the app's own CPU time per request (this
thread: LightRAG works in its own process; not stretched by other load as
wall time is) and the view's pieces timed (httpx client
construction, /health, /query/data, mapper, "not in LightRAG" lookup, card
marking, template render, SQL) and, when the app's median exceeds 2x the bare
median or with --profile, a cProfile of a round of requests.

Prints a table and the ratios, writes bench/results/search_latency_bench.json.
The web app and the stack are always stopped and the temporary dir removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from machine import machine_info  # bench/machine.py, beside this file
from stack_harness import (  # bench/stack_harness.py, beside this file
    CREATE_USER,
    REPO_DIR,
    USERNAME,
    app_env,
    clean_environ,
    logged_in_client,
    manage,
    start_stack,
)

import httpx

RESULTS_DIR = REPO_DIR / "bench" / "results"
RESULTS_FILE = RESULTS_DIR / "search_latency_bench.json"

# Questions about the demo library (mnote/demo/library/), English and Chinese.
QUERIES = [
    "How often is the primary mirror re-aluminised?",
    "How is the telescope calibrated every night?",
    "signal-to-noise ratio exposure time",
    "What should a new member do in the first week?",
    "glossary definition of bias frame",
    "实验室安全 通风橱 使用",
    "会议纪要 中文检索的分词问题",
    "设备清单 磁力搅拌加热器 校准周期",
    "化学品 储存 规定",
    "吡咯烷 操作",
]
KINDS = ("bare", "partial", "full", "bare_default")
LABELS = {
    "bare": "(a) bare POST /query/data",
    "partial": "(b) app /search/ partial (HX-Request)",
    "full": "(c) app /search/ full page",
    "bare_default": "    info: bare, LightRAG's default chunk_top_k",
}
PROFILE_THRESHOLD = 2.0  # profile when the app's median exceeds this many bare medians


def lightrag_client(stack) -> httpx.Client:
    return httpx.Client(
        base_url=stack.config.lightrag_url,
        headers={"Accept": "application/json", "X-API-Key": stack.config.resolved_api_key()},
        timeout=httpx.Timeout(120.0, connect=5.0),
    )


# Set from LightRAG's /health at start: the chunk_top_k the app asks with.
APP_CHUNK_TOP_K: list[int | None] = [None]


def query_body(query: str, chunk_top_k: int | None = None) -> dict:
    """Exactly the body ``full_library_search`` sends for a search without a
    scope (``mnote.lightrag.client._query_request``)."""
    from mnote.lightrag.client import _query_request

    return _query_request(query, "mix", None, chunk_top_k, None)


def app_chunk_top_k(health: dict, env: dict[str, str]) -> int | None:
    """What ``full_library_search`` asks for: the rerank pool when LightRAG
    reranks, else LightRAG's own default. (The breakdown checks the bodies the
    app really sent against this.)"""
    from mnote.lightrag.responses import Health

    if not Health.from_body(health).rerank_enabled:
        return None
    out = manage(["shell", "-c", "from mnote.search.answers import RERANK_CANDIDATES as n; print(n)"], env)
    return int(out.strip().splitlines()[-1])


def search_params(query: str) -> dict:
    return {"q": query, "mode": "library", "retrieval": "mix"}


class Outcome:
    __slots__ = ("ok", "error", "items", "size")

    def __init__(self, ok: bool, error: str = "", items: int = 0, size: int = 0):
        self.ok, self.error, self.items, self.size = ok, error, items, size


def check_bare(response: httpx.Response) -> Outcome:
    if response.status_code != 200:
        return Outcome(False, f"HTTP {response.status_code}", size=len(response.content))
    body = response.json()
    if body.get("status") != "success":
        return Outcome(False, f"status {body.get('status')!r}", size=len(response.content))
    data = body.get("data") or {}
    return Outcome(True, items=len(data.get("references") or []), size=len(response.content))


def check_app(response: httpx.Response) -> Outcome:
    if response.status_code != 200:
        return Outcome(False, f"HTTP {response.status_code}", size=len(response.content))
    text = response.text
    # LightRAG errors are shown as a message in a 200 page: count them as errors.
    if 'class="alert error"' in text:
        return Outcome(False, "200 with an error message", size=len(response.content))
    return Outcome(True, items=text.count("data-citation-id="), size=len(response.content))


def request_bare(client: httpx.Client, query: str) -> Outcome:
    return check_bare(client.post("/query/data", json=query_body(query, APP_CHUNK_TOP_K[0])))


def request_bare_default(client: httpx.Client, query: str) -> Outcome:
    return check_bare(client.post("/query/data", json=query_body(query)))


def request_partial(client: httpx.Client, query: str) -> Outcome:
    return check_app(client.get("/search/", params=search_params(query), headers={"HX-Request": "true"}))


def request_full(client: httpx.Client, query: str) -> Outcome:
    return check_app(client.get("/search/", params=search_params(query)))


# --- statistics -----------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(times: list[float]) -> dict:
    return {
        "n": len(times),
        "median_s": statistics.median(times) if times else None,
        "p95_s": percentile(times, 95),
        "min_s": min(times) if times else None,
        "max_s": max(times) if times else None,
        "mean_s": statistics.fmean(times) if times else None,
    }


# --- sequential -----------------------------------------------------------------


def sequential(requesters: dict, clients: dict, n: int, groups: dict[str, int]) -> dict:
    kinds = list(requesters)
    print(f"warm-up: {len(QUERIES)} queries x {len(kinds)} kinds …", flush=True)
    for query in QUERIES:
        for kind in kinds:
            outcome = requesters[kind](clients[kind], query)
            if not outcome.ok:
                raise SystemExit(f"warm-up {kind} failed for {query!r}: {outcome.error}")
    print(f"{n} sequential requests per kind, interleaved …", flush=True)
    times = {kind: [] for kind in kinds}
    per_round = []  # {kind: seconds} of each round, for paired differences
    items = {kind: [] for kind in kinds}
    sizes = {kind: [] for kind in kinds}
    errors = Counter()
    cpu_before = cpu_seconds(groups)
    wall_start = time.perf_counter()
    for i in range(n):
        query = QUERIES[i % len(QUERIES)]
        order = kinds[i % len(kinds):] + kinds[: i % len(kinds)]
        per_round.append({})
        for kind in order:
            start = time.perf_counter()
            try:
                outcome = requesters[kind](clients[kind], query)
            except httpx.HTTPError as e:
                outcome = Outcome(False, type(e).__name__)
            elapsed = time.perf_counter() - start
            if outcome.ok:
                times[kind].append(elapsed)
                per_round[-1][kind] = elapsed
                items[kind].append(outcome.items)
                sizes[kind].append(outcome.size)
            else:
                errors[f"{kind}: {outcome.error}"] += 1
    cpu_after = cpu_seconds(groups)
    wall = time.perf_counter() - wall_start
    delta = {k: cpu_after[k] - cpu_before[k] for k in cpu_after}
    foreign = max(delta.pop("_machine_busy") - sum(delta.values()), 0.0) / (wall * (os.cpu_count() or 1))
    app_requests = len(times.get("partial", [])) + len(times.get("full", []))
    web_cpu = cpu_after["web app (gunicorn)"] - cpu_before["web app (gunicorn)"]
    paired = {}
    for kind in kinds[1:]:
        diffs = [r[kind] - r["bare"] for r in per_round if kind in r and "bare" in r]
        paired[f"{kind} - bare"] = {"median_s": statistics.median(diffs) if diffs else None, "n": len(diffs)}
    return {
        kind: {
            **summary(times[kind]),
            "runs_s": times[kind],
            "items_median": statistics.median(items[kind]) if items[kind] else None,
            "bytes_median": statistics.median(sizes[kind]) if sizes[kind] else None,
            "errors": sum(v for k, v in errors.items() if k.startswith(f"{kind}:")),
        }
        for kind in kinds
    } | {
        "errors": dict(errors),
        "paired_differences": paired,
        "web_cpu_ms_per_app_request": web_cpu / app_requests * 1000 if app_requests else None,
        "other_processes_share_of_all_cores": foreign,
    }


# --- CPU accounting (Linux /proc) -------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, user+system CPU seconds) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return table


def cpu_seconds(groups: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by each named process and its descendants;
    "bench client" is this process (its httpx threads)."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _cpu) in table.items():
        children.setdefault(ppid, []).append(pid)
    out = {}
    for name, root in groups.items():
        total, todo = 0.0, [root]
        while todo:
            pid = todo.pop()
            total += table.get(pid, (0, 0.0))[1]
            todo.extend(children.get(pid, []))
        out[name] = total
    times = os.times()
    out["bench client"] = times.user + times.system
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # Busy time of the whole machine: everything but idle and iowait; of it,
    # the VM host's steal (time given to other guests) on its own.
    out["_machine_busy"] = (sum(fields[:8]) - fields[3] - fields[4]) / CLOCK_TICKS
    out["_machine_steal"] = fields[7] / CLOCK_TICKS
    return out


# --- concurrent -----------------------------------------------------------------


def concurrent(label: str, clients: list[httpx.Client], request, total: int, max_seconds: float, groups: dict[str, int]) -> dict:
    lock = threading.Lock()
    issued = 0
    latencies: list[float] = []
    errors = Counter()
    barrier = threading.Barrier(len(clients) + 1)
    deadline = [0.0]

    def worker(client):
        nonlocal issued
        barrier.wait()
        while True:
            with lock:
                if issued >= total or time.monotonic() >= deadline[0]:
                    return
                index = issued
                issued += 1
            query = QUERIES[index % len(QUERIES)]
            start = time.perf_counter()
            try:
                outcome = request(client, query)
            except Exception as e:  # noqa: BLE001 - every failure is counted
                outcome = Outcome(False, type(e).__name__)
            elapsed = time.perf_counter() - start
            with lock:
                if outcome.ok:
                    latencies.append(elapsed)
                else:
                    errors[outcome.error] += 1

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in clients]
    for thread in threads:
        thread.start()
    print(f"{label}: {len(clients)} concurrent clients, {total} requests (max {max_seconds:.0f} s) …", flush=True)
    cpu_before = cpu_seconds(groups)
    deadline[0] = time.monotonic() + max_seconds
    start = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join(max_seconds + 180)
    wall = time.perf_counter() - start
    cpu_after = cpu_seconds(groups)
    done = len(latencies) + sum(errors.values())
    cpu = {name: cpu_after[name] - cpu_before[name] for name in cpu_after}
    busy, steal = cpu.pop("_machine_busy"), cpu.pop("_machine_steal")
    # Anything else on the machine competes for the same 2 cores: say how
    # much, the host's steal apart from other processes.
    foreign = max(busy - steal - sum(cpu.values()), 0.0)
    return {
        "clients": len(clients),
        "requests": done,
        "ok": len(latencies),
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "capped_by_time": done < total,
        "wall_s": wall,
        "throughput_rps": done / wall if wall else None,
        "p50_s": percentile(latencies, 50),
        "p90_s": percentile(latencies, 90),
        "p99_s": percentile(latencies, 99),
        "max_s": max(latencies) if latencies else None,
        "mean_s": statistics.fmean(latencies) if latencies else None,
        "cpu_s": cpu,
        "cpu_ms_per_request": {name: value / done * 1000 for name, value in cpu.items()} if done else None,
        "cpu_utilisation_of_all_cores": sum(cpu.values()) / (wall * (os.cpu_count() or 1)) if wall else None,
        "other_processes_share_of_all_cores": foreign / (wall * (os.cpu_count() or 1)) if wall else None,
        "steal_share_of_all_cores": steal / (wall * (os.cpu_count() or 1)) if wall else None,
        "latencies_s": latencies,
    }


def pooled(rounds: list[dict]) -> dict:
    """All rounds of one kind together: percentiles over every request."""
    latencies = [x for r in rounds for x in r["latencies_s"]]
    done = sum(r["requests"] for r in rounds)
    wall = sum(r["wall_s"] for r in rounds)
    errors = Counter()
    for r in rounds:
        errors.update(r["error_kinds"])
    cpu = Counter()
    for r in rounds:
        cpu.update(r["cpu_s"])
    return {
        "rounds": len(rounds),
        "clients": rounds[0]["clients"],
        "requests": done,
        "ok": len(latencies),
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "wall_s": wall,
        "throughput_rps": done / wall if wall else None,
        "p50_s": percentile(latencies, 50),
        "p90_s": percentile(latencies, 90),
        "p99_s": percentile(latencies, 99),
        "max_s": max(latencies) if latencies else None,
        "mean_s": statistics.fmean(latencies) if latencies else None,
        "cpu_ms_per_request": {name: value / done * 1000 for name, value in cpu.items()} if done else None,
        "cpu_utilisation_of_all_cores": sum(cpu.values()) / (wall * (os.cpu_count() or 1)) if wall else None,
        "other_processes_share_of_all_cores": statistics.fmean(r["other_processes_share_of_all_cores"] for r in rounds),
        "steal_share_of_all_cores": statistics.fmean(r["steal_share_of_all_cores"] for r in rounds),
        "per_round": [{k: v for k, v in r.items() if k != "latencies_s"} for r in rounds],
    }


# --- where the time goes (a subprocess: Django test client, same DB and LightRAG) ---

BREAKDOWN_SCRIPT = r'''
import cProfile, collections, io, json, pstats, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import django
django.setup()
from django.db import connection
from django.test import Client
from django.contrib.auth import get_user_model
import mnote.lightrag.provider as provider
import mnote.search.answers as csearch
import mnote.pages.search as views
from mnote.lightrag.client import LightRAGClient

queries = json.loads(sys.argv[2])
rounds = int(sys.argv[3])
do_profile = sys.argv[4] == "1"
out_path = sys.argv[5]

pieces = collections.defaultdict(float)
cpu_pieces = collections.defaultdict(float)

def wrap(owner, attr, name):
    # Wall time and this thread's CPU time of each piece: CPU is what load
    # does not stretch, and what throughput on 2 shared cores is made of.
    original = getattr(owner, attr)
    def timed(*args, **kwargs):
        start, cpu_start = time.perf_counter(), time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            pieces[name] += time.perf_counter() - start
            cpu_pieces[name] += time.thread_time() - cpu_start
    setattr(owner, attr, timed)

wrap(views, "full_library_search", "full_library_search (all below)")
wrap(provider, "make_client", "  make_client: httpx.Client()")
wrap(LightRAGClient, "health", "  GET /health")
wrap(LightRAGClient, "query_data", "  POST /query/data (app side: request, JSON decode)")
wrap(LightRAGClient, "close", "  client.close()")
wrap(csearch, "map_query_data", "  map_query_data (mapper)")
import mnote.citations.mapper as mapper
wrap(mapper, "_match_block", "    mapper: _match_block (block of each chunk)")
wrap(mapper, "doc_index", "    mapper: doc_index (sidecar + chunks of a document)")
from mnote.library.models import IndexedRootQuerySet
wrap(IndexedRootQuerySet, "visible_ids", "visible_ids (visible roots, once per page)")
wrap(views, "not_in_lightrag", "not_in_lightrag (files matching by name)")
wrap(views, "cards_html", "cards_html (the cards' HTML, made in Python)")
wrap(views, "render", "render (template)")

# The bodies the app really sends to /query/data, to compare with the bench's bare one.
import mnote.lightrag.client as lightrag_client_module
sent_bodies = []
_query_request = lightrag_client_module._query_request
def recording_query_request(*args, **kwargs):
    body = _query_request(*args, **kwargs)
    sent_bodies.append({**body, "query": "<query>"})
    return body
lightrag_client_module._query_request = recording_query_request

sql = {"count": 0, "time": 0.0, "writes": 0}
def sql_wrapper(execute, query, params, many, context):
    start = time.perf_counter()
    try:
        return execute(query, params, many, context)
    finally:
        sql["count"] += 1
        sql["time"] += time.perf_counter() - start
        sql["writes"] += query.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))

client = Client()
client.force_login(get_user_model().objects.get(username=sys.argv[6]))

cpu_of_last = [0.0]

def one(query, htmx=True):
    headers = {"HX-Request": "true"} if htmx else {}
    start, cpu_start = time.perf_counter(), time.thread_time()
    response = client.get("/search/", {"q": query, "mode": "library", "retrieval": "mix"}, headers=headers)
    elapsed = time.perf_counter() - start
    # The app's own CPU: LightRAG works in its own process, so this thread's
    # time is the view, the client's JSON decoding, middleware and template.
    cpu_of_last[0] = time.thread_time() - cpu_start
    assert response.status_code == 200, response.status_code
    assert b'class="alert error"' not in response.content
    return elapsed

for query in queries:  # warm-up
    one(query)

rows = collections.defaultdict(list)
cpu_rows = collections.defaultdict(list)
for _ in range(rounds):
    for query in queries:
        pieces.clear()
        cpu_pieces.clear()
        sql["count"] = 0
        sql["time"] = 0.0
        sql["writes"] = 0
        with connection.execute_wrapper(sql_wrapper):
            total = one(query)
        rows["total (test client, in-process)"].append(total)
        rows["app CPU of the request (this thread, load-independent)"].append(cpu_of_last[0])
        for name, value in pieces.items():
            rows[name].append(value)
        for name, value in cpu_pieces.items():
            cpu_rows[name].append(value)
        rows["SQL time (all queries)"].append(sql["time"])
        rows["SQL queries (count)"].append(sql["count"])
        rows["SQL queries that write (count)"].append(sql["writes"])
        view = sum(v for k, v in pieces.items() if not k.startswith("  "))
        rows["rest: middleware, session, auth, URL, response"].append(total - view)
        cpu_view = sum(v for k, v in cpu_pieces.items() if not k.startswith("  "))
        cpu_rows["rest: middleware, session, auth, URL, response"].append(cpu_of_last[0] - cpu_view)
        cpu_rows["app CPU of the request"].append(cpu_of_last[0])
        mapper_cpu = cpu_pieces.get("  map_query_data (mapper)", 0.0)
        cpu_rows["app CPU outside the mapper"].append(cpu_of_last[0] - mapper_cpu)

result = {"rounds": rounds, "queries": len(queries), "medians": {k: statistics.median(v) for k, v in rows.items()},
          "means": {k: statistics.fmean(v) for k, v in rows.items()},
          "cpu_medians": {k: statistics.median(v) for k, v in cpu_rows.items()},
          "cpu_means": {k: statistics.fmean(v) for k, v in cpu_rows.items()},
          "bodies_sent": [json.loads(b) for b in sorted({json.dumps(b, sort_keys=True) for b in sent_bodies})]}

# httpx.Client() alone, as make_client builds it (no request).
from mnote.lightrag import make_client
from django.conf import settings
times = []
for _ in range(20):
    start = time.perf_counter()
    make_client(settings.MNOTE_LIGHTRAG).close()
    times.append(time.perf_counter() - start)
result["make_client_alone_median_s"] = statistics.median(times)

if do_profile:
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        one(query)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("cumulative").print_stats(r"mnote/|ssl|certifi|httpx/_client|httpx/_config")
    stats.sort_stats("tottime").print_stats(25)
    result["profile"] = out.getvalue()

with open(out_path, "w") as f:
    json.dump(result, f)
'''


def breakdown(env: dict[str, str], tmp: Path, rounds: int, do_profile: bool) -> dict:
    script = tmp / "breakdown.py"
    script.write_text(BREAKDOWN_SCRIPT)
    out = tmp / "breakdown.json"
    child = {**os.environ, **env, "MNOTE_ALLOWED_HOSTS": "127.0.0.1,localhost,testserver"}
    result = subprocess.run(
        [sys.executable, str(script), str(REPO_DIR), json.dumps(QUERIES), str(rounds), "1" if do_profile else "0", str(out), USERNAME],
        env=child,
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        raise SystemExit(f"breakdown failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return json.loads(out.read_text())


# --- the bench ------------------------------------------------------------------


def ms(seconds) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.1f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30, help="sequential requests per kind (default 30)")
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients (default 20)")
    parser.add_argument("--total", type=int, default=200, help="requests per concurrent run (default 200)")
    parser.add_argument("--max-seconds", type=float, default=60, help="time cap per concurrent run (default 60)")
    parser.add_argument("--rounds", type=int, default=2, help="concurrent rounds per kind, alternated (default 2)")
    parser.add_argument("--breakdown-rounds", type=int, default=3, help="rounds of the query list in the breakdown (default 3)")
    parser.add_argument("--profile", action="store_true", help="always cProfile one round (else only when app > 2x bare)")
    parser.add_argument("--port-base", type=int, default=0,
                        help="use ports BASE (model endpoint), BASE+1 (LightRAG), BASE+2 (web) instead of free ones")
    parser.add_argument("--keep", action="store_true", help="keep the temporary dir (logs) for inspection")
    parser.add_argument("--no-json", action="store_true", help="do not write bench/results/search_latency_bench.json")
    args = parser.parse_args(argv)
    clean_environ()
    from mnote.stack.processes import WEB_PROCESSES, WEB_THREADS, web_process
    from mnote.stack.managed import free_port

    loadavg_start = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="mnote-search-bench-"))
    stack = web = None
    clients: list[httpx.Client] = []
    try:
        (tmp / "library").mkdir()
        ports = [args.port_base + i for i in range(3)] if args.port_base else [free_port() for _ in range(3)]
        print(f"starting the embedded stack in {tmp} …", flush=True)
        t0 = time.perf_counter()
        stack = start_stack(tmp, lightrag_port=ports[1], model_port=ports[0])
        stack_start_s = time.perf_counter() - t0
        env = app_env(tmp, stack)

        print("migrate, member user, load_demo …", flush=True)
        manage(["migrate", "--verbosity", "0"], env)
        manage(["shell", "-c", CREATE_USER], env)
        t0 = time.perf_counter()
        demo_out = manage(["load_demo"], env)
        load_demo_s = time.perf_counter() - t0
        print("  " + "\n  ".join(demo_out.strip().splitlines()), flush=True)

        port = ports[2]
        web = web_process(stack.config, "127.0.0.1", port, env)
        web.start()
        web.wait_healthy(60)
        base_url = f"http://127.0.0.1:{port}"
        print(f"web app (gunicorn {WEB_PROCESSES} workers x {WEB_THREADS} threads) healthy at {base_url}", flush=True)

        groups = {"web app (gunicorn)": web.process.pid, "LightRAG": stack.lightrag.process.pid}
        if stack.model_endpoint is not None:
            groups["model endpoint"] = stack.model_endpoint.process.pid

        # --- sequential ---
        app_client = logged_in_client(base_url)
        bare_client = lightrag_client(stack)
        clients += [app_client, bare_client]
        APP_CHUNK_TOP_K[0] = app_chunk_top_k(bare_client.get("/health").json(), env)
        print(f"the app asks /query/data with chunk_top_k={APP_CHUNK_TOP_K[0] or 'default'}; so does (a)", flush=True)
        requesters = {"bare": request_bare, "partial": request_partial, "full": request_full, "bare_default": request_bare_default}
        seq = sequential(requesters, {"bare": bare_client, "partial": app_client, "full": app_client, "bare_default": bare_client},
                         args.n, groups)

        # --- concurrent ---
        print(f"logging in {args.clients} clients …", flush=True)
        app_clients = [logged_in_client(base_url) for _ in range(args.clients)]
        bare_clients = [lightrag_client(stack) for _ in range(args.clients)]
        clients += app_clients + bare_clients
        runs = {"bare": [], "partial": []}
        for r in range(args.rounds):  # alternated, so drifts and other load hit both alike
            runs["bare"].append(concurrent(f"round {r + 1}, bare /query/data", bare_clients, request_bare,
                                           args.total, args.max_seconds, groups))
            runs["partial"].append(concurrent(f"round {r + 1}, app /search/ partial", app_clients, request_partial,
                                              args.total, args.max_seconds, groups))
        conc = {kind: pooled(rounds) for kind, rounds in runs.items()}

        web.stop()  # the breakdown runs in-process; keep the machine quiet for it
        web = None

        ratio_partial = seq["partial"]["median_s"] / seq["bare"]["median_s"]
        ratio_full = seq["full"]["median_s"] / seq["bare"]["median_s"]
        do_profile = args.profile or max(ratio_partial, ratio_full) > PROFILE_THRESHOLD
        print(f"breakdown of the view ({args.breakdown_rounds} rounds{', with cProfile' if do_profile else ''}) …", flush=True)
        parts = breakdown(env, tmp, args.breakdown_rounds, do_profile)

        ratios = {
            "partial / bare (median)": ratio_partial,
            "full / bare (median)": ratio_full,
            "partial - bare (median, ms)": (seq["partial"]["median_s"] - seq["bare"]["median_s"]) * 1000,
            "partial - bare (paired median, ms)": seq["paired_differences"]["partial - bare"]["median_s"] * 1000,
            "full - bare (paired median, ms)": seq["paired_differences"]["full - bare"]["median_s"] * 1000,
            "in-process: view time outside /query/data (median, ms)": (
                parts["medians"]["total (test client, in-process)"] - parts["medians"]["  POST /query/data (app side: request, JSON decode)"]) * 1000,
            "in-process: total / POST /query/data (median)": (
                parts["medians"]["total (test client, in-process)"] / parts["medians"]["  POST /query/data (app side: request, JSON decode)"]),
            "bare default chunk_top_k / bare (median)": seq["bare_default"]["median_s"] / seq["bare"]["median_s"],
            "concurrent p50 app / bare": conc["partial"]["p50_s"] / conc["bare"]["p50_s"],
            "concurrent p99 app / bare": conc["partial"]["p99_s"] / conc["bare"]["p99_s"],
            "concurrent throughput app / bare": conc["partial"]["throughput_rps"] / conc["bare"]["throughput_rps"],
            # Each round of the app against the bare round run just before it
            # (same minute, same neighbours): the spread the pooled ratio hides.
            "concurrent throughput app / bare, median of rounds": statistics.median(
                a["throughput_rps"] / b["throughput_rps"] for a, b in zip(conc["partial"]["per_round"], conc["bare"]["per_round"])),
            "concurrent p99 / p50, app": conc["partial"]["p99_s"] / conc["partial"]["p50_s"],
            "concurrent p99 / p50, bare": conc["bare"]["p99_s"] / conc["bare"]["p50_s"],
        }
        # Issue 17's targets, each against the baseline of this same run.
        targets = {
            "partial / bare (median) <= 1.15": ratios["partial / bare (median)"] <= 1.15,
            f"{args.clients} clients: app p99 <= 3 x app p50": ratios["concurrent p99 / p50, app"] <= 3,
            f"{args.clients} clients: app throughput >= 0.95 x bare": ratios["concurrent throughput app / bare"] >= 0.95,
        }

        info = machine_info(dirty=("mnote/search", "mnote/citations", "mnote/lightrag", "templates/search"), httpx=httpx.__version__)
        info["loadavg_start"] = loadavg_start
        info["loadavg_end"] = os.getloadavg()
        print()
        print(f"load average at start {loadavg_start[0]:.2f}, at end {info['loadavg_end'][0]:.2f} (1 min); "
              "other processes on this machine add noise to LightRAG's latency")
        print(f"nproc={info['nproc']}; python {info['python']}; django {info['django']}; "
              f"{len(QUERIES)} queries (EN+ZH), mode mix; N={args.n} sequential per kind")
        print(f"{'sequential':<44} {'median ms':>10} {'p95 ms':>9} {'min ms':>8} {'items':>6} {'bytes':>8}")
        for kind in KINDS:
            r = seq[kind]
            print(f"{LABELS[kind]:<44} {ms(r['median_s']):>10} {ms(r['p95_s']):>9} {ms(r['min_s']):>8} "
                  f"{r['items_median'] or 0:>6.0f} {r['bytes_median'] or 0:>8.0f}")
        if seq["errors"]:
            print(f"  sequential errors: {seq['errors']}")
        print(f"  web app CPU per app request (gunicorn processes, /proc): {seq['web_cpu_ms_per_app_request']:.1f} ms; "
              f"other processes used {seq['other_processes_share_of_all_cores'] * 100:.0f}% of the cores meanwhile")
        print("  paired (same query, same round) medians: "
              + "; ".join(f"{k} {ms(v['median_s'])} ms" for k, v in seq["paired_differences"].items()))
        print()
        print(f"concurrent: {args.clients} clients, {args.rounds} rounds of {args.total} requests per kind "
              "(alternated), pooled")
        print(f"{'concurrent (' + str(args.clients) + ' clients)':<28} {'reqs':>5} {'errors':>6} {'p50 ms':>8} {'p90 ms':>8} "
              f"{'p99 ms':>8} {'max ms':>8} {'req/s':>7}")
        for kind, label in (("bare", "bare /query/data"), ("partial", "app /search/ partial")):
            r = conc[kind]
            print(f"{label:<28} {r['requests']:>5} {r['errors']:>6} {ms(r['p50_s']):>8} {ms(r['p90_s']):>8} "
                  f"{ms(r['p99_s']):>8} {ms(r['max_s']):>8} {r['throughput_rps']:>7.1f}")
            if r["error_kinds"]:
                print(f"  errors: {r['error_kinds']}")
            print("  CPU ms per request: " + ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_ms_per_request"].items())
                  + f"; cores {r['cpu_utilisation_of_all_cores'] * 100:.0f}% busy with ours, "
                  f"{r['other_processes_share_of_all_cores'] * 100:.0f}% with other processes, "
                  f"{r['steal_share_of_all_cores'] * 100:.0f}% stolen by the VM host")
            for k, rr in enumerate(r["per_round"]):
                print(f"    round {k + 1}: {rr['requests']} reqs, p50 {ms(rr['p50_s'])} ms, p99 {ms(rr['p99_s'])} ms, "
                      f"{rr['throughput_rps']:.1f} req/s, other processes {rr['other_processes_share_of_all_cores'] * 100:.0f}%, "
                      f"steal {rr['steal_share_of_all_cores'] * 100:.0f}%")
        print()
        print("ratios:")
        for key, value in ratios.items():
            print(f"  {key:<34} {value:>8.2f}")
        print()
        target_rows = [
            ("/search/ partial vs bare /query/data (median)", ratios["partial / bare (median)"], "<= 1.15", targets["partial / bare (median) <= 1.15"]),
            (f"{args.clients} clients: app p99 / app p50", ratios["concurrent p99 / p50, app"], "<= 3", targets[f"{args.clients} clients: app p99 <= 3 x app p50"]),
            (f"{args.clients} clients: app throughput / bare", ratios["concurrent throughput app / bare"], ">= 0.95",
             targets[f"{args.clients} clients: app throughput >= 0.95 x bare"]),
        ]
        print("TARGETS (issue 17), each against the bare baseline of this run:")
        for label, value, target, met in target_rows:
            print(f"  {label:<48} {value:>6.2f}   target {target:<8} {'met' if met else 'NOT met'}")
        print()
        # With the embedded rerank LightRAG reranks the app's candidates as it does
        # the bare baseline's (rerank included); the app then asks the endpoint for
        # the candidates' cosines by key (the relevance floor).
        bare = query_body("<query>", APP_CHUNK_TOP_K[0])
        body_ok = [{k: v for k, v in b.items() if k != "enable_rerank"} for b in parts["bodies_sent"]] == [bare]
        print(f"the app's /query/data body {'is' if body_ok else 'is NOT'} the bare baseline's but for "
              f"enable_rerank: {parts['bodies_sent']}")
        print()
        print(f"where the partial's time goes (Django test client in-process, medians over "
              f"{parts['rounds']} x {parts['queries']} requests; CPU = this thread's, LightRAG and the model endpoint "
              "work in their own processes):")
        order = ["total (test client, in-process)", "app CPU of the request (this thread, load-independent)",
                 "full_library_search (all below)", "  make_client: httpx.Client()",
                 "  GET /health", "  POST /query/data (app side: request, JSON decode)", "  client.close()",
                 "  map_query_data (mapper)",
                 "    mapper: _match_block (block of each chunk)", "    mapper: doc_index (sidecar + chunks of a document)",
                 "visible_ids (visible roots, once per page)", "not_in_lightrag (files matching by name)",
                 "cards_html (the cards' HTML, made in Python)", "render (template)",
                 "rest: middleware, session, auth, URL, response"]
        keys = [k for k in order if k in parts["medians"]] + [k for k in parts["medians"] if k not in order]
        cpu = parts["cpu_medians"]
        print(f"  {'piece':<56} {'wall':>10} {'CPU':>10}")
        for key in keys:
            value = parts["medians"][key]
            if key.startswith("SQL queries"):
                print(f"  {key:<56} {value:>10.0f}")
                continue
            shown_cpu = f"{cpu[key] * 1000:.1f} ms" if key in cpu else ""
            print(f"  {key:<56} {value * 1000:>7.1f} ms {shown_cpu:>10}")
        print(f"  {'httpx.Client() via make_client, alone':<56} {parts['make_client_alone_median_s'] * 1000:>7.1f} ms")
        print(f"  app CPU per search {cpu['app CPU of the request'] * 1000:.1f} ms, of which the mapper "
              f"{cpu.get('  map_query_data (mapper)', 0) * 1000:.1f} ms and everything else (view, template, middleware, "
              f"LightRAG client) {cpu['app CPU outside the mapper'] * 1000:.1f} ms")
        if parts.get("profile"):
            print("\n--- cProfile: one round of partial searches ---\n" + parts["profile"])

        if not args.no_json:
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            result = {
                "benchmark": "search_latency_bench",
                "command": " ".join([".venv/bin/python", "bench/search_latency_bench.py", *(argv if argv is not None else sys.argv[1:])]),
                "machine": info,
                "setup": {
                    "stack_start_s": stack_start_s,
                    "load_demo_s": load_demo_s,
                    "load_demo_output": demo_out.strip().splitlines(),
                    "web": f"gunicorn mnote.wsgi, {WEB_PROCESSES} workers x {WEB_THREADS} threads (mnote.stack.processes.web_process)",
                    "queries": QUERIES,
                    "bare_body": query_body("<query>", APP_CHUNK_TOP_K[0]),
                    "app_url": "/search/?q=<query>&mode=library&retrieval=mix",
                },
                "sequential": seq,
                "concurrent": conc,
                "ratios": ratios,
                "targets": targets,
                "breakdown": {k: v for k, v in parts.items() if k != "profile"},
                "profile": parts.get("profile"),
            }
            RESULTS_FILE.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
            print(f"\nwrote {RESULTS_FILE.relative_to(REPO_DIR)}")
    finally:
        for client in clients:
            client.close()
        if web is not None:
            web.stop()
        if stack is not None:
            stack.stop()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
