"""Does MNote's own search path scale out? One web process on SQLite against
two web processes on PostgreSQL, both behind one port, with LightRAG served
from recorded responses (tests/fixtures/lightrag/, bench/recorded_lightrag.py:
pre-encoded bytes from a bare asyncio server) so the app's scaling is what is
measured, not LightRAG's.

    .venv/bin/python bench/scale_bench.py [--rounds 6] [--seconds 5] [--clients 8]

Each set-up gets a fresh database (SQLite file / a throwaway PostgreSQL from
`make install-postgres`'s build, started here), one indexed source whose sidecar the
recorded answer maps to, an API token, and gunicorn in the layout `make run`
uses (mnote.stack.processes.gunicorn_layout: WEB_THREADS threads a process).
Both stay up; Debian's ``wrk`` (installed when missing) keeps ``--clients``
connections POSTing /api/search, checking each answer holds a citation.

Rounds, not one long run each: ``--rounds`` pairs of ``--seconds`` runs, the
two set-ups back to back, the order swapped every round (A B, B A, …), so a
neighbour's burst or the VM host's steal lands on both alike. Each round gives
one ratio; the target row is the median of the rounds' ratios (target: 2
processes on PostgreSQL >= 1.8x 1 on SQLite), printed with every round's.

Per run, where all cores' time went: the web processes, PostgreSQL, the
stand-in and wrk (harness_cpu_share: wrk + stand-in), other processes (other
users of the machine), interrupts, the host's steal (/proc/stat) and idle;
the web CPU per search (which load does not distort), PostgreSQL's CPU per
search, each web worker's share of a core and the connections each held
(an idle worker beside a busy one means the connections were spread badly).
Each web worker runs in a session of its own (bench/gunicorn_own_session.py:
Linux shares a contended CPU between sessions, not processes, so two workers
in one session got, beside a neighbour's busy session, what one got;
``--one-session`` measures that way again).
Ports: 8464 (SQLite web), 8469 (PostgreSQL web), 8465 (LightRAG stand-in),
8466 (PostgreSQL) unless given.

``--lightrag-pair`` measures LightRAG scaled out too, in the same rounds'
fashion: two "machines", each a real lightrag-server with its own model
endpoint (query embedding and rerank) started on one core of its own
(``sched_setaffinity``, inherited by the processes and their threads: a 1-core
machine), every LightRAG store in this PostgreSQL (pgvector), against the first
machine alone on its one core. MNote is indexed once through the first; two
gunicorns on its database, ``MNOTE_LIGHTRAG_URL`` naming one server or both
(queries take turns). The web tier, PostgreSQL and wrk run on whatever core is
free and are accounted, not hidden. wrk asks the question set's 320 distinct
questions (bench/questions/handbook.jsonl) in turn, so no cache of a repeated
question flatters it. Per round: searches/s, each machine's share of its core
(server and endpoint apart), the web's, PostgreSQL's and wrk's CPU, the load
average; the summary gives the median of the rounds' ratios (target: 2 machines
>= 1.6x 1) beside two CPU-capacity estimates: each machine on a core of its own
with the web tier elsewhere (what the ratio could be), and everything on this
machine's cores (what it can be here). Then the LightRAG tier alone, the same
rounds: wrk asks the servers' ``/query/data`` straight (one wrk a server, the
clients shared out) with the body a search sends — the rerank candidates'
width and LightRAG's own rerank step on the machine's endpoint — so the two
machines are the two CPU-bound halves of the 2-core machine with no web tier
beside them on the same cores; both rows are printed. Ports ``--pair-ports`` (8470-8473) and
``--pair-web-ports`` (8474, 8475).

    .venv/bin/python bench/scale_bench.py --no-search --lightrag-pair [--rounds 4 --seconds 5 --clients 8]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mnote.stack.processes import WEB_THREADS, gunicorn_layout  # noqa: E402 (after the path)
from stack_harness import gunicorn, new_stack, seed_tiktoken, start_stack  # noqa: E402 (bench/stack_harness.py, beside this file)



def machine_info() -> dict:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "loadavg_at_end": os.getloadavg(), "python": sys.version.split()[0], "git_head": head}


FIXTURES = REPO / "tests" / "fixtures"
TARGET = 1.8
QUERY = "mirror re-aluminised coating chamber"

SEED = """
import django; django.setup()
from django.contrib.auth import get_user_model
from mnote.api.models import ApiToken
from mnote.library.models import IndexedRoot, Source
root = IndexedRoot.objects.create(name="Manuals", path="manuals")
Source.objects.create(root=root, relative_path="gamma.docx", absolute_path="/library/manuals/gamma.docx",
    sha256="a" * 64, lightrag_name="gamma.docx", lightrag_doc_id="doc-b7cf006581394ea318c700a870cecd9f",
    status=Source.Status.INDEXED)
user = get_user_model().objects.create_user("bench", password="bench-pass-123")
print(ApiToken.objects.create_token(user, "bench")[1])
"""


def prepare(folder: Path, database_url: str | None, lightrag_url: str) -> dict:
    inputs, storage = folder / "inputs", folder / "rag_storage"
    parsed = inputs / "__parsed__" / "gamma.docx.parsed"
    parsed.mkdir(parents=True)
    storage.mkdir()
    shutil.copy(FIXTURES / "mapper" / "server_gamma.blocks.jsonl", parsed / "gamma.blocks.jsonl")
    shutil.copy(FIXTURES / "mapper" / "sdk_kv_store_text_chunks.json", storage / "kv_store_text_chunks.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNOTE_", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="mnote.settings",
        MNOTE_DATA_DIR=str(folder / "data"),
        MNOTE_SECRET_KEY="scale-bench",
        MNOTE_LIBRARY_BASE_DIR=str(folder / "library"),
        MNOTE_LIGHTRAG_URL=lightrag_url,
        MNOTE_LIGHTRAG_INPUT_DIR=str(inputs),
        MNOTE_LIGHTRAG_WORKING_DIR=str(storage),
        MNOTE_LOG_LEVEL="WARNING",
    )
    if database_url:
        env.update(DATABASE_URL=database_url, MNOTE_CACHE="database")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=REPO, check=True)
    if database_url:
        subprocess.run([sys.executable, "manage.py", "createcachetable"], env=env, cwd=REPO, check=True)
    seeded = subprocess.run([sys.executable, "-c", SEED], env=env, cwd=REPO, check=True, capture_output=True, text=True)
    env["BENCH_TOKEN"] = seeded.stdout.strip().splitlines()[-1]
    return env


def serve(env: dict, processes: int, threads: int, port: int, log: Path, *, own_sessions: bool) -> subprocess.Popen:
    # Each worker in a session of its own unless asked not to (see bench/gunicorn_own_session.py).
    sessions = ["-c", str(REPO / "bench" / "gunicorn_own_session.py")] if own_sessions else []
    return gunicorn(env, port, log, *gunicorn_layout(processes, threads), "--timeout", "120", *sessions)


# wrk (C, one thread, epoll) drives the load: a Python load generator costs
# more CPU per request than it leaves the app to scale into on 2 cores. Each
# response is checked (200 and a citation in it); ``done`` prints one JSON line.
WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = [[BODY]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"citationId"', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local failed = 0
  for _, thread in ipairs(threads) do failed = failed + thread:get("bad") end
  local e = summary.errors
  io.write(string.format('{"requests": %d, "duration_us": %d, "bad": %d, "socket_errors": %d, "p50_us": %d, "p99_us": %d}\\n',
    summary.requests, summary.duration, failed, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def ensure_wrk() -> str:
    """Debian's wrk, installed when missing (as the Makefile installs chromium and postgresql)."""
    found = shutil.which("wrk")
    if found:
        return found
    print("Installing Debian's wrk for the load…", flush=True)
    installed = subprocess.run("apt-get update -qq && apt-get install -y -qq wrk", shell=True, capture_output=True)
    if installed.returncode or not shutil.which("wrk"):
        raise SystemExit("scale_bench needs wrk (Debian: apt-get install wrk, as root with Debian's registry).")
    return shutil.which("wrk")


# --- CPU accounting: who used the two cores while the load ran ---------------

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[1].split()
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / TICK


def tree_cpu(root: int) -> float:
    """CPU seconds used by ``root`` and every process below it (a process that
    ended moved its time into its parent's children's time when reaped)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := _stat(int(entry.name))):
            stats[int(entry.name)] = found
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
            todo += children.get(pid, [])
    return total


CORES = os.cpu_count() or 1


def machine_times() -> dict[str, float]:
    """CPU seconds, summed over all cores since boot, by what the kernel spent
    them on (/proc/stat's first line: user nice system idle iowait irq softirq
    steal …; guest time is already inside user)."""
    v = [int(x) / TICK for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return {"processes": v[0] + v[1] + v[2], "interrupts": v[5] + v[6], "steal": v[7], "idle": v[3] + v[4]}


def connections_per_worker(port: int, workers: list[int]) -> list[int]:
    """How many of the load's connections each web worker holds (``ss``): a
    keep-alive connection stays with the worker that accepted it."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", "sport", "=", f":{port}"],
                         capture_output=True, text=True).stdout  # fmt: skip
    held = [int(pid) for pid in re.findall(r"pid=(\d+)", out)]
    return [held.count(pid) for pid in workers]


def start_wrk(wrk: str, script: Path, url: str, seconds: float, clients: int, env: dict) -> subprocess.Popen:
    """One wrk process POSTing to ``url`` with ``clients`` connections."""
    return subprocess.Popen(
        [wrk, "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--timeout", "60s", "-s", str(script), url],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def finish_wrk(process: subprocess.Popen) -> tuple[dict, float]:
    """A wrk run's JSON summary and the CPU seconds wrk itself used."""
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if process.returncode or not lines:
        raise SystemExit(f"wrk failed:\n{out}")
    return json.loads(lines[-1]), usage.ru_utime + usage.ru_stime


def run_wrk(wrk: str, script: Path, targets: list[str], seconds: float, clients: int, env: dict, *,
            sample=None) -> tuple[dict, float]:  # fmt: skip
    """One wrk run per target URL at once, the clients shared out among them:
    their summaries added up (latency percentiles: the slowest target's) and
    the CPU seconds wrk used; ``sample`` is called once, halfway through."""
    shares = [clients // len(targets) + (1 if n < clients % len(targets) else 0) for n in range(len(targets))]
    processes = [start_wrk(wrk, script, url, seconds, share, env) for url, share in zip(targets, shares)]
    if sample:
        time.sleep(seconds / 2)
        sample()
    runs = [finish_wrk(process) for process in processes]
    summary = {key: sum(run[0][key] for run in runs) for key in ("requests", "bad", "socket_errors")}
    summary.update({key: max(run[0][key] for run in runs) for key in ("duration_us", "p50_us", "p99_us")})
    return summary, sum(run[1] for run in runs)


def process_cpu(pids: list[int]) -> dict[int, float]:
    """CPU seconds of each of ``pids`` (its own and its reaped children's)."""
    return {pid: found[1] for pid in pids if (found := _stat(pid))}


def worker_pids(master: int) -> list[int]:
    """gunicorn's workers: the master's children."""
    pids = (int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit())
    return sorted(pid for pid in pids if (found := _stat(pid)) and found[0] == master)


class Case:
    """One set-up under test: its web server (gunicorn master pid), port,
    API token and the database server's pid when it has one."""

    def __init__(self, name: str, port: int, web: subprocess.Popen, token: str, postgres: int | None, folder: Path,
                 *, query: str = QUERY, others: dict[str, int] | None = None, questions: list[str] | None = None):  # fmt: skip
        self.name, self.port, self.web, self.token, self.postgres = name, port, web, token, postgres
        self.query = questions[0] if questions else query
        # Where wrk sends its requests (one wrk per URL, the clients shared out).
        self.targets = [f"http://127.0.0.1:{port}/api/search"]
        # The other processes whose CPU a round counts (name -> pid of the process tree).
        self.others = others or {}
        self.script = folder / f"search-{name}.lua"
        if questions:
            self.script.write_text(questions_script([{"query": q, "mode": "naive"} for q in questions]))
        else:
            self.script.write_text(WRK_SCRIPT.replace("BODY", json.dumps({"query": query, "mode": "naive"})))
        self.env = {**os.environ, "BENCH_TOKEN": token}

    def check(self) -> None:
        answer = httpx.post(f"http://127.0.0.1:{self.port}/api/search", json={"query": self.query, "mode": "naive"},
                            headers={"Authorization": f"Bearer {self.token}"}, timeout=60)  # fmt: skip
        if answer.status_code != 200 or not answer.json().get("results"):
            raise SystemExit(f"{self.name}: no citation in a search's answer: {answer.status_code} {answer.text[:300]}")


def questions_script(requests: list[dict], script: str = WRK_SCRIPT) -> str:
    """``script`` sending the JSON ``requests`` in turn, one a request: each
    pre-built once in ``init`` (Lua long strings hold the JSON bodies, which
    json.dumps keeps ASCII), so wrk's CPU a request stays that of one body."""
    bodies = ",\n".join(f"[==[{json.dumps(request)}]==]" for request in requests)
    return script.replace("wrk.body = [[BODY]]", f"""local bodies = {{
{bodies}
}}
local prepared, turn = {{}}, 0
function request()
  turn = turn % #prepared + 1
  return prepared[turn]
end""").replace("function init(args) bad = 0 end", """function init(args)
  bad = 0
  for i, body in ipairs(bodies) do prepared[i] = wrk.format(nil, nil, nil, body) end
end""")


def measure(case: Case, seconds: float, clients: int) -> dict:
    """One round: ``clients`` connections POST /api/search for ``seconds``;
    searches per second, latencies, and who used the cores meanwhile."""
    wrk = ensure_wrk()
    parties = {"web": case.web.pid if case.web else None, "postgres": case.postgres, **case.others}
    workers = worker_pids(case.web.pid) if case.web else []
    before = {name: tree_cpu(pid) for name, pid in parties.items() if pid}
    workers_before, machine_before = process_cpu(workers), machine_times()
    held = []
    summary, wrk_cpu = run_wrk(wrk, case.script, case.targets, seconds, clients, case.env,
                               sample=lambda: held.extend(connections_per_worker(case.port, workers)))  # fmt: skip
    machine = {k: v - machine_before[k] for k, v in machine_times().items()}
    workers_after = process_cpu(workers)
    cpu = {name: tree_cpu(pid) - before[name] for name, pid in parties.items() if pid}
    cpu["load_generator"] = wrk_cpu
    # What the machine did besides: other users' processes (the other
    # engineers, the VM's own services), interrupts (loopback networking ends
    # up partly here), and time the VM's host gave to other guests (steal).
    cpu["other_processes"] = max(0.0, machine["processes"] - sum(cpu.values()))
    cpu["interrupts"], cpu["steal"], cpu["idle"] = machine["interrupts"], machine["steal"], machine["idle"]
    searches = summary["requests"] - summary["bad"]
    capacity = sum(machine.values())  # all cores' seconds in the window, as the kernel counted them
    return {
        "searches": searches,
        "errors": summary["bad"] + summary["socket_errors"],
        "per_second": round(searches / (summary["duration_us"] / 1e6), 1),
        "p50_ms": round(summary["p50_us"] / 1000, 1),
        "p99_ms": round(summary["p99_us"] / 1000, 1),
        "web_cpu_ms_per_search": per_search(cpu.get("web"), searches),
        "postgres_cpu_ms_per_search": per_search(cpu.get("postgres"), searches),
        # Each web worker's share of one core: an idle worker beside a busy one
        # means the connections were spread unevenly.
        "web_worker_core_share": [round((workers_after.get(p, 0) - t) * CORES / capacity, 2) if capacity else None
                                  for p, t in workers_before.items()],  # fmt: skip
        "connections_per_worker": held,
        "cpu_seconds": {name: round(value, 2) for name, value in cpu.items()},
        "cpu_share": {name: round(value / capacity, 3) for name, value in cpu.items()} if capacity else {},
        "harness_cpu_share": round((cpu["load_generator"] + cpu.get("lightrag_stand_in", 0)) / capacity, 3)
        if capacity else None,
        # The machine's 1-minute load average as the run ended (other users' work included).
        "load_average": round(os.getloadavg()[0], 2),
    }


def per_search(seconds: float | None, searches: int) -> float | None:
    """Milliseconds per search."""
    return round(seconds * 1000 / searches, 2) if seconds is not None and searches else None


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def round_median(values: list[float]) -> float:
    return round(median(values), 2)


def interleave(base: Case, scaled: Case, *, rounds: int, seconds: float, clients: int, warmup: float,
               capacity_ratio=None) -> dict:  # fmt: skip
    """``rounds`` pairs of short runs, base and scaled back to back, the order
    swapped every round (A B, B A, …) so a neighbour's burst or the host's
    steal lands on both set-ups alike; each pair gives one ratio."""
    for case in (base, scaled):
        case.check()
        if warmup:
            run_wrk(ensure_wrk(), case.script, case.targets, warmup, clients, case.env)
    rows = []
    for n in range(rounds):
        order = (base, scaled) if n % 2 == 0 else (scaled, base)
        row = {case.name: measure(case, seconds, clients) for case in order}
        a, b = row[base.name]["per_second"], row[scaled.name]["per_second"]
        row["ratio"] = round(b / a, 2) if a else None
        row["cpu_capacity_ratio"] = (capacity_ratio or cpu_capacity_ratio)(row[base.name], row[scaled.name])
        rows.append(row)
        print(round_line(n, row, base.name, scaled.name), flush=True)
    return {"rounds": rows}


def round_line(n: int, row: dict, base: str, scaled: str) -> str:
    def part(r: dict) -> str:
        c = r["cpu_share"]
        # A process's share of one core (its CPU seconds over the window's wall seconds).
        core = {k: v * CORES for k, v in c.items()}
        machines = "".join(f" {m} {sum(core.get(p, 0) for p in parts):.2f} core" for m, parts in MACHINES.items()
                           if any(p in core for p in parts))  # fmt: skip
        web = r["web_cpu_ms_per_search"]
        return (f"{r['per_second']:6.1f}/s p99 {r['p99_ms']:5.0f} ms web {web if web is None else f'{web:5.1f}'} ms/search "
                f"workers {r['web_worker_core_share']} conns {r['connections_per_worker']} "
                f"steal {c['steal']:.0%} other {c['other_processes']:.0%} "
                f"irq {c['interrupts']:.0%} idle {c['idle']:.0%} load {r['load_average']}" + machines)
    capacity = row["cpu_capacity_ratio"]
    estimate = " ".join(f"{k} {v}x" for k, v in capacity.items()) if isinstance(capacity, dict) else capacity
    return (f"round {n + 1}: {base} {part(row[base])} | {scaled} {part(row[scaled])} | ratio {row['ratio']} "
            f"(CPU-capacity estimate {estimate})")


def total(rows: list[dict], name: str) -> dict:
    """One set-up's rounds together: medians and CPU over all its windows."""
    mine = [row[name] for row in rows]
    seconds: dict[str, float] = {}
    for r in mine:
        for k, v in r["cpu_seconds"].items():
            seconds[k] = seconds.get(k, 0) + v
    capacity = sum(seconds.values())  # every row's parts add up to its window's cores' time
    searches = sum(r["searches"] for r in mine)
    return {
        "median_per_second": median([r["per_second"] for r in mine]),
        "median_p99_ms": median([r["p99_ms"] for r in mine]),
        "searches": searches,
        "errors": sum(r["errors"] for r in mine),
        "web_cpu_ms_per_search": per_search(seconds.get("web"), searches),
        "postgres_cpu_ms_per_search": per_search(seconds.get("postgres"), searches),
        "cpu_share": {k: round(v / capacity, 3) for k, v in seconds.items()} if capacity else {},
        "cpu_ms_per_search": {k: per_search(v, searches) for k, v in seconds.items()
                              if k not in ("idle", "steal", "interrupts", "other_processes")},  # fmt: skip
        # Each process's share of one core over the set-up's windows (1.0: it kept a core busy).
        "core_share": {k: round(v / capacity * CORES, 2) for k, v in seconds.items()
                       if k not in ("idle", "steal", "interrupts", "other_processes")} if capacity else {},  # fmt: skip
        "load_averages": [r.get("load_average") for r in mine],
    }


INGEST_STATUS = """
import django, json; django.setup()
from collections import Counter
from mnote.library.models import Source
print(json.dumps(Counter(Source.objects.values_list("status", flat=True))))
"""


def ingest(workers: int, folder: Path, postgres, ports: tuple[int, int], timeout: float) -> dict:
    """The demo library indexed by a fresh embedded LightRAG (JSON storage)
    with ``workers`` job workers on PostgreSQL: seconds from the workers'
    start (the leader's first full sync queues every file) until every file
    is indexed or failed."""
    import psycopg

    name = f"ingest_{workers}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = postgres.url.rsplit("/", 1)[0]
    stack = start_stack(folder / name / "stack", lightrag_port=ports[0], model_port=ports[1])
    processes = []
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MNOTE_", "DATABASE_URL"))}
        env.update(
            DJANGO_SETTINGS_MODULE="mnote.settings", DATABASE_URL=f"{base}/{name}", MNOTE_SECRET_KEY="scale-bench",
            MNOTE_DATA_DIR=str(folder / name / "data"), MNOTE_LIBRARY_BASE_DIR=str(folder / name / "library"),
            MNOTE_LIGHTRAG_URL=stack.config.lightrag_url, MNOTE_LIGHTRAG_ENV_FILE=str(stack.config.env_file),
        )
        shutil.copytree(REPO / "mnote" / "demo" / "library", folder / name / "library" / "demo")
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=REPO, check=True)
        subprocess.run(
            [sys.executable, "-c", "import django; django.setup()\nfrom mnote.library.models import IndexedRoot\n"
             "IndexedRoot.objects.create(name='Demo library', path='demo')"], env=env, cwd=REPO, check=True,
        )
        started = time.monotonic()
        for n in range(workers):
            processes.append(subprocess.Popen(
                [sys.executable, "manage.py", "run_worker", "--interval", "0.5"], env=env, cwd=REPO,
                stdout=open(folder / name / f"worker-{n}.log", "wb"), stderr=subprocess.STDOUT, start_new_session=True,
            ))
        counts = {}
        while time.monotonic() - started < timeout:
            counts = json.loads(subprocess.run([sys.executable, "-c", INGEST_STATUS], env=env, cwd=REPO,
                                               capture_output=True, text=True, check=True).stdout)
            if counts and set(counts) <= {"indexed", "failed", "duplicate"}:
                break
            time.sleep(1)
        return {"seconds": round(time.monotonic() - started, 1), "statuses": counts}
    finally:
        for process in processes:
            os.killpg(process.pid, 15)
            process.wait(30)
        stack.stop()


OWN_PARTIES = ("web", "postgres", "lightrag_stand_in", "load_generator")


def cpu_capacity_ratio(base: dict, scaled: dict) -> float | None:
    """Searches per second the measured CPU costs allow on ``nproc`` idle
    cores, scaled over base: each set-up is bound by all its parties' CPU on
    all cores, and its web processes by one core each (the GIL; an upper
    bound, a process's C calls can run beside it)."""
    cores = os.cpu_count() or 1

    def capacity(row: dict, processes: int) -> float:
        n = row["searches"]
        everything = sum(v for k, v in row["cpu_seconds"].items() if k in OWN_PARTIES) / n
        return min(cores / everything, processes / (row["cpu_seconds"]["web"] / n))

    if not (base["searches"] and scaled["searches"]):
        return None
    return round(capacity(scaled, 2) / capacity(base, 1), 2)


# --- two LightRAG machines on one PostgreSQL, against one --------------------
#
# The scaled LightRAG: every store in PostgreSQL (pgvector for the vectors), so
# a second lightrag-server with a working folder of its own (a second machine)
# serves the same library. A machine here is what a LightRAG machine runs: its
# lightrag-server and its own model endpoint (the query's embedding and the
# rerank are computed per search, next to the server), both started on one core
# of their own, so each is a CPU-bound 1-core machine and the pair are the two
# halves of a 2-core one. One MNote database, indexed once through the first
# server; two gunicorns on it, one with MNOTE_LIGHTRAG_URL naming the first
# server, one naming both (queries take turns).

PAIR_TARGET = 1.6
QUESTIONS = REPO / "bench" / "questions" / "handbook.jsonl"
PAIR_INDEX = """
import django; django.setup()
from django.contrib.auth import get_user_model
from mnote.api.models import ApiToken
from mnote.library.worker import wait_until_settled
from mnote.library.models import IndexedRoot
from mnote.library.sync import sync_root
from mnote.lightrag.provider import lightrag_client
root = IndexedRoot.objects.create(name="Demo", path="demo")
sync_root(root)
with lightrag_client() as client:
    assert wait_until_settled(client, timeout=900, interval=0.5)
statuses = set(root.sources.values_list("status", flat=True))
assert statuses == {"indexed"}, statuses
user = get_user_model().objects.create_user("bench", password="bench-pass-123")
print(ApiToken.objects.create_token(user, "bench")[1])
"""


def pair_questions() -> list[str]:
    """The question set's distinct questions, English and Chinese (39 of them
    about the demo library, the rest about a library it is not: LightRAG's work
    per search is the same, and searches for what is not there are asked too)."""
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(json.loads(line)["question"] for line in lines if line.strip()))


@contextmanager
def on_cores(cores: set[int] | None):
    """Processes started inside run on ``cores`` only: the affinity of the
    calling thread is inherited by what it starts (and their threads), as if
    the machine had those cores; OpenMP and the like size themselves to it.
    ``None``: no pinning."""
    before = os.sched_getaffinity(0)
    if cores is not None:
        os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def machine_cores(pinned: bool) -> list[set[int] | None]:
    """Each machine's core: the first two of the bench's own."""
    cores = sorted(os.sched_getaffinity(0))
    if not pinned:
        return [None, None]
    if len(cores) < 2:
        raise SystemExit("--lightrag-pair pins each machine to a core of its own: it needs two cores")
    return [{cores[0]}, {cores[1]}]


def lightrag_pair(folder: Path, postgres, ports: list[int], stacks: list, *, pinned: bool) -> None:
    """Two machines (a lightrag-server and its model endpoint each, each pair on
    a core of its own) on one PostgreSQL database, appended to ``stacks`` as
    they start."""
    import psycopg

    from mnote.stack.processes import EmbeddedStack

    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute('CREATE DATABASE "pair_lightrag"')
        conn.execute('CREATE DATABASE "pair_mnote"')
    first_dir, second_dir = folder / "lightrag-1", folder / "lightrag-2"
    seed_tiktoken(second_dir)
    cores = machine_cores(pinned)
    first = new_stack(first_dir, lightrag_port=ports[0], model_port=ports[2],
                      lightrag_postgres=postgres.url.rsplit("/", 1)[0] + "/pair_lightrag")  # fmt: skip
    stacks.append(first)
    with on_cores(cores[0]):
        first.start()
    # The second machine: its own working folder and model endpoint; the
    # database, input folder (a shared mount) and key are the first's.
    second = EmbeddedStack(replace(first.config, data_dir=second_dir, lightrag_port=ports[1], model_port=ports[3],
                                   embedding_limits=None, shared_input_dir=first.config.input_dir,
                                   api_key=first.config.resolved_api_key()))  # fmt: skip
    stacks.append(second)
    with on_cores(cores[1]):
        second.start()


def machine_pids(stacks: list) -> dict[str, int]:
    """Each machine's server and endpoint, whose CPU a round counts."""
    first, second = stacks
    return {"lightrag_server_1": first.lightrag.process.pid, "model_endpoint_1": first.model_endpoint.process.pid,
            "lightrag_server_2": second.lightrag.process.pid, "model_endpoint_2": second.model_endpoint.process.pid}  # fmt: skip


def pair_cases(folder: Path, postgres, stacks: list, web_ports: list[int], threads: int, own_sessions: bool,
               webs: list) -> tuple[Case, Case]:  # fmt: skip
    """MNote indexed once through the first server, and its two gunicorns."""
    first, second = stacks
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNOTE_", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="mnote.settings", MNOTE_SECRET_KEY="scale-bench", MNOTE_LOG_LEVEL="WARNING",
        DATABASE_URL=postgres.url.rsplit("/", 1)[0] + "/pair_mnote", MNOTE_CACHE="database",
        MNOTE_DATA_DIR=str(folder / "pair-data"), MNOTE_LIBRARY_BASE_DIR=str(folder / "pair-library"),
        MNOTE_LIGHTRAG_ENV_FILE=str(first.config.env_file), MNOTE_LIGHTRAG_URL=first.config.lightrag_url,
    )  # fmt: skip
    shutil.copytree(REPO / "mnote" / "demo" / "library" / "en", folder / "pair-library" / "demo")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=REPO, check=True)
    subprocess.run([sys.executable, "manage.py", "createcachetable"], env=env, cwd=REPO, check=True)
    started = time.monotonic()
    indexed = subprocess.run([sys.executable, "-c", PAIR_INDEX], env=env, cwd=REPO, capture_output=True, text=True)
    if indexed.returncode:
        raise SystemExit(f"indexing the demo library failed:\n{indexed.stderr[-2000:]}")
    print(f"demo library (en) indexed through the first LightRAG in {time.monotonic() - started:.0f} s", flush=True)
    token = indexed.stdout.strip().splitlines()[-1]
    others = machine_pids(stacks)
    questions = pair_questions()
    cases = []
    for name, urls, port in (
        ("lightrag_1_machine", first.config.lightrag_url, web_ports[0]),
        ("lightrag_2_machines", f"{first.config.lightrag_url},{second.config.lightrag_url}", web_ports[1]),
    ):
        case_dir = folder / name
        case_dir.mkdir()
        webs.append(serve({**env, "MNOTE_LIGHTRAG_URL": urls}, 2, threads, port, case_dir / "web.log",
                          own_sessions=own_sessions))  # fmt: skip
        cases.append(Case(name, port, webs[-1], token, postgres_pid(postgres), case_dir, questions=questions,
                          others=others))  # fmt: skip
    return cases[0], cases[1]


# The LightRAG tier alone: wrk asks the servers' /query/data straight, with
# the body a search sends (the rerank candidates' width, LightRAG's own rerank
# step on the machine's model endpoint), so the two machines are measured
# without MNote's web tier sharing their cores; the same rounds' fashion.
# The candidates a search asks LightRAG for (mnote.search.answers.RERANK_CANDIDATES;
# importing it here would need Django set up in the bench's own process).
SEARCH_CHUNK_TOP_K = 60
LIGHTRAG_WRK_SCRIPT = WRK_SCRIPT.replace(
    'wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")', 'wrk.headers["X-API-Key"] = os.getenv("BENCH_TOKEN")'
).replace('\'"citationId"\'', '\'"chunk_id"\'')


class LightRAGCase(Case):
    """wrk straight at one or more LightRAG servers (one wrk each)."""

    def __init__(self, name: str, urls: list[str], api_key: str, postgres: int | None, folder: Path, *,
                 questions: list[str], others: dict[str, int]):  # fmt: skip
        self.name, self.port, self.web, self.token, self.postgres = name, None, None, api_key, postgres
        self.query, self.others = questions[0], others
        self.targets = [f"{url}/query/data" for url in urls]
        self.requests = [{"query": q, "mode": "naive", "include_references": True, "include_chunk_content": True,
                          "chunk_top_k": SEARCH_CHUNK_TOP_K, "enable_rerank": True} for q in questions]  # fmt: skip
        self.script = folder / f"query-data-{name}.lua"
        self.script.write_text(questions_script(self.requests, LIGHTRAG_WRK_SCRIPT))
        self.env = {**os.environ, "BENCH_TOKEN": api_key}

    def check(self) -> None:
        for url in self.targets:
            answer = httpx.post(url, json=self.requests[0], headers={"X-API-Key": self.token}, timeout=60)
            if answer.status_code != 200 or not (answer.json().get("data") or {}).get("chunks"):
                raise SystemExit(f"{self.name}: no chunk in {url}'s answer: {answer.status_code} {answer.text[:300]}")


def lightrag_cases(folder: Path, postgres, stacks: list) -> tuple[Case, Case]:
    """The LightRAG tier alone: the first machine against both."""
    first, second = stacks
    others = machine_pids(stacks)
    questions, key = pair_questions(), first.config.resolved_api_key()
    cases = []
    for name, urls in (("lightrag_tier_1_machine", [first.config.lightrag_url]),
                       ("lightrag_tier_2_machines", [first.config.lightrag_url, second.config.lightrag_url])):  # fmt: skip
        case_dir = folder / name
        case_dir.mkdir()
        cases.append(LightRAGCase(name, urls, key, postgres_pid(postgres), case_dir, questions=questions, others=others))
    return cases[0], cases[1]


MACHINES = {"machine_1": ("lightrag_server_1", "model_endpoint_1"), "machine_2": ("lightrag_server_2", "model_endpoint_2")}
PAIR_PARTIES = ("web", "postgres", *MACHINES["machine_1"], *MACHINES["machine_2"], "load_generator")


def machine_seconds(row: dict) -> dict[str, float]:
    """CPU seconds of each machine (its server and its endpoint) in a row."""
    cpu = row["cpu_seconds"]
    return {machine: sum(cpu.get(part, 0) for part in parts) for machine, parts in MACHINES.items()}


def pair_capacity(row: dict, *, here: bool) -> float:
    """Searches per second a row's CPU costs allow: each machine busy on one
    core at most (a machine that computed next to nothing is no bound); with
    ``here``, also every party on all of this machine's cores (the web tier,
    PostgreSQL and wrk beside the machines) and each web process on one core."""
    n, cpu = row["searches"], row["cpu_seconds"]
    bounds = [n / seconds for seconds in machine_seconds(row).values() if seconds > 0.05]
    if here:
        bounds.append(CORES * n / sum(cpu.get(k, 0) for k in PAIR_PARTIES))
        if cpu.get("web"):
            bounds.append(2 * n / cpu["web"])
    return min(bounds)


def pair_capacity_ratio(base: dict, scaled: dict) -> dict | None:
    """Two CPU-capacity estimates of a round, two machines over one: each
    machine on a core of its own and the web tier elsewhere (``machines``:
    what the ratio could be), and everything on this machine's cores
    (``here``: what it can be on this box)."""
    if not (base["searches"] and scaled["searches"]):
        return None
    return {key: round(pair_capacity(scaled, here=here) / pair_capacity(base, here=here), 2)
            for key, here in (("machines", False), ("here", True))}  # fmt: skip


def postgres_pid(postgres) -> int:
    """The postmaster (its first line of postmaster.pid): the server's connections are its children."""
    return int((postgres.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6, help="pairs of runs, base and scaled back to back")
    parser.add_argument("--seconds", type=float, default=5, help="seconds of load per set-up per round")
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--threads", type=int, default=WEB_THREADS, help="threads per web process (both set-ups)")
    parser.add_argument("--one-session", action="store_true",
                        help="web workers in their master's session (one scheduling group on a shared machine)")
    parser.add_argument("--web-port", type=int, default=8464, help="the SQLite set-up's port")
    parser.add_argument("--scaled-web-port", type=int, default=8469, help="the PostgreSQL set-up's port")
    parser.add_argument("--lightrag-port", type=int, default=8465)
    parser.add_argument("--postgres-port", type=int, default=8466)
    parser.add_argument("--no-json", action="store_true")
    parser.add_argument("--ingest", action="store_true", help="also index the demo library with 1 and then 2 workers")
    parser.add_argument("--ingest-timeout", type=float, default=600)
    parser.add_argument("--stack-ports", type=int, nargs=2, default=[8467, 8468], metavar=("LIGHTRAG", "MODEL"))
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument("--lightrag-pair", action="store_true",
                        help="also search through one LightRAG machine (server + model endpoint, a core of its own) "
                             "against two on one PostgreSQL (pgvector)")
    parser.add_argument("--pair-ports", type=int, nargs=4, default=[8470, 8471, 8472, 8473],
                        metavar=("LIGHTRAG_1", "LIGHTRAG_2", "MODEL_1", "MODEL_2"))
    parser.add_argument("--pair-web-ports", type=int, nargs=2, default=[8474, 8475], metavar=("ONE", "TWO"))
    parser.add_argument("--pair-unpinned", action="store_true",
                        help="the two machines' processes on any core (not each machine on a core of its own)")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mnote.settings")
    from mnote.stack.postgres import TemporaryPostgres

    folder = Path(tempfile.mkdtemp(prefix="mnote-scale-bench-"))
    lightrag = subprocess.Popen(
        [sys.executable, str(REPO / "bench" / "recorded_lightrag.py"), "--port", str(args.lightrag_port)], cwd=REPO,
        stdout=subprocess.DEVNULL, start_new_session=True,
    )
    postgres = TemporaryPostgres(folder / "pg" / "data", args.postgres_port, log_path=folder / "pg" / "postgres.log")
    (folder / "pg").mkdir()
    postgres.own(folder)
    postgres.own(folder / "pg")
    results, webs, stacks = {}, [], []
    try:
        postgres.start()
        lightrag_url = f"http://127.0.0.1:{args.lightrag_port}"
        if not args.no_search:
            # Both set-ups up at once (an idle gunicorn costs nothing), so the
            # rounds can alternate between them within seconds.
            cases = []
            for name, processes, database_url, port in (
                ("sqlite_1_process", 1, None, args.web_port),
                ("postgresql_2_processes", 2, postgres.url, args.scaled_web_port),
            ):
                case = folder / name
                case.mkdir()
                env = prepare(case, database_url, lightrag_url)
                log = case / "web.log"
                webs.append(serve(env, processes, args.threads, port, log, own_sessions=not args.one_session))
                cases.append(Case(name, port, webs[-1], env["BENCH_TOKEN"], postgres_pid(postgres) if database_url else None,
                                  case, others={"lightrag_stand_in": lightrag.pid}))  # fmt: skip
            results = interleave(*cases, rounds=args.rounds, seconds=args.seconds, clients=args.clients,
                                 warmup=args.warmup)  # fmt: skip
            for case in cases:
                results[case.name] = total(results["rounds"], case.name)
        for web in webs:
            os.killpg(web.pid, 15)
            web.wait(30)
        webs = []
        if args.lightrag_pair:
            print(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
            lightrag_pair(folder, postgres, args.pair_ports, stacks, pinned=not args.pair_unpinned)
            pair = pair_cases(folder, postgres, stacks, args.pair_web_ports, args.threads, not args.one_session, webs)
            results["lightrag_pair"] = interleave(*pair, rounds=args.rounds, seconds=args.seconds, clients=args.clients,
                                                  warmup=args.warmup, capacity_ratio=pair_capacity_ratio)  # fmt: skip
            for case in pair:
                results["lightrag_pair"][case.name] = total(results["lightrag_pair"]["rounds"], case.name)
            tier = lightrag_cases(folder, postgres, stacks)
            results["lightrag_tier"] = interleave(*tier, rounds=args.rounds, seconds=args.seconds, clients=args.clients,
                                                  warmup=args.warmup, capacity_ratio=pair_capacity_ratio)  # fmt: skip
            for case in tier:
                results["lightrag_tier"][case.name] = total(results["lightrag_tier"]["rounds"], case.name)
            for web in webs:
                os.killpg(web.pid, 15)
                web.wait(30)
            webs = []
            for stack in reversed(stacks):
                stack.stop()
            stacks = []
        if args.ingest:
            for workers in (1, 2):
                results[f"ingest_{workers}_workers"] = ingest(workers, folder, postgres, args.stack_ports, args.ingest_timeout)
                print(f"ingest_{workers}_workers", json.dumps(results[f"ingest_{workers}_workers"]), flush=True)
    finally:
        for web in webs:
            os.killpg(web.pid, 15)
            web.wait(30)
        for stack in reversed(stacks):
            stack.stop()
        postgres.stop()
        lightrag.terminate()
        lightrag.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
    summary = {}
    if not args.no_search:
        rows = results["rounds"]
        base, scaled = results["sqlite_1_process"], results["postgresql_2_processes"]
        summary.update(
            median_round_ratio=round_median([row["ratio"] for row in rows if row["ratio"]]),
            round_ratios=[row["ratio"] for row in rows],
            ratio_of_medians=round(scaled["median_per_second"] / base["median_per_second"], 2),
            # Not the target: what the CPU each search cost would allow on idle
            # cores, for a busy machine where the wall-clock ratio says little.
            cpu_capacity_ratio_median=round_median([r["cpu_capacity_ratio"] for r in rows if r["cpu_capacity_ratio"]]),
            p99_ratio=round(scaled["median_p99_ms"] / base["median_p99_ms"], 2) if base["median_p99_ms"] else None,
            target_throughput_ratio=TARGET,
        )
        for name in ("sqlite_1_process", "postgresql_2_processes"):
            r = results[name]
            postgres = f", PostgreSQL {r['postgres_cpu_ms_per_search']} ms" if r["postgres_cpu_ms_per_search"] else ""
            print(f"{name}: median {r['median_per_second']}/s, p99 {r['median_p99_ms']} ms, CPU per search: "
                  f"web {r['web_cpu_ms_per_search']} ms{postgres}; all cores' time: {json.dumps(r['cpu_share'])}")
        met = "MET" if summary["median_round_ratio"] >= TARGET else "NOT met"
        print(f"TARGET search throughput, 2 web processes on PostgreSQL / 1 on SQLite: median of {len(rows)} rounds "
              f"{summary['median_round_ratio']}x (rounds {summary['round_ratios']}; target >= {TARGET}x: {met}); "
              f"CPU-capacity estimate {summary['cpu_capacity_ratio_median']}x")  # fmt: skip
    if args.lightrag_pair:
        rows = results["lightrag_pair"]["rounds"]
        one, two = (results["lightrag_pair"][name] for name in ("lightrag_1_machine", "lightrag_2_machines"))
        estimates = [row["cpu_capacity_ratio"] for row in rows if row["cpu_capacity_ratio"]]
        summary.update(
            lightrag_pair_median_round_ratio=round_median([row["ratio"] for row in rows if row["ratio"]]),
            lightrag_pair_round_ratios=[row["ratio"] for row in rows],
            lightrag_pair_capacity_machines_median=round_median([e["machines"] for e in estimates]),
            lightrag_pair_capacity_here_median=round_median([e["here"] for e in estimates]),
            lightrag_pair_target=PAIR_TARGET,
            lightrag_pair_pinned=not args.pair_unpinned,
            load_averages=[row[name]["load_average"] for row in rows for name in ("lightrag_1_machine", "lightrag_2_machines")],
        )  # fmt: skip
        for name, r in (("lightrag_1_machine", one), ("lightrag_2_machines", two)):
            print(f"{name}: median {r['median_per_second']}/s, p99 {r['median_p99_ms']} ms, {r['errors']} errors; "
                  f"CPU ms per search {json.dumps(r['cpu_ms_per_search'])}; "
                  f"share of a core {json.dumps(r['core_share'])}")  # fmt: skip
        tier_rows = results["lightrag_tier"]["rounds"]
        tier_estimates = [row["cpu_capacity_ratio"] for row in tier_rows if row["cpu_capacity_ratio"]]
        summary.update(
            lightrag_tier_median_round_ratio=round_median([row["ratio"] for row in tier_rows if row["ratio"]]),
            lightrag_tier_round_ratios=[row["ratio"] for row in tier_rows],
            lightrag_tier_capacity_machines_median=round_median([e["machines"] for e in tier_estimates]),
        )
        for name in ("lightrag_tier_1_machine", "lightrag_tier_2_machines"):
            r = results["lightrag_tier"][name]
            print(f"{name}: median {r['median_per_second']}/s, p99 {r['median_p99_ms']} ms, {r['errors']} errors; "
                  f"CPU ms per search {json.dumps(r['cpu_ms_per_search'])}; "
                  f"share of a core {json.dumps(r['core_share'])}")  # fmt: skip
        met = "MET" if summary["lightrag_pair_median_round_ratio"] >= PAIR_TARGET else "NOT met"
        print(f"TARGET search throughput, 2 LightRAG machines (server + model endpoint, "
              f"{'a core each' if not args.pair_unpinned else 'unpinned'}) / 1: median of {len(rows)} rounds "
              f"{summary['lightrag_pair_median_round_ratio']}x (rounds {summary['lightrag_pair_round_ratios']}; "
              f"target >= {PAIR_TARGET}x: {met}); CPU-capacity estimate "
              f"{summary['lightrag_pair_capacity_machines_median']}x with each machine on its own core and the web "
              f"tier elsewhere, {summary['lightrag_pair_capacity_here_median']}x with the web tier, PostgreSQL and "
              f"wrk on these {CORES} cores too; load average {summary['load_averages']}")  # fmt: skip
        met = "MET" if summary["lightrag_tier_median_round_ratio"] >= PAIR_TARGET else "NOT met"
        print(f"TARGET the LightRAG tier alone (wrk at /query/data, no web tier on the cores), 2 machines / 1: "
              f"median of {len(tier_rows)} rounds {summary['lightrag_tier_median_round_ratio']}x "
              f"(rounds {summary['lightrag_tier_round_ratios']}; target >= {PAIR_TARGET}x: {met}); CPU-capacity "
              f"estimate {summary['lightrag_tier_capacity_machines_median']}x")  # fmt: skip
    if args.ingest:
        one, two = results["ingest_1_workers"]["seconds"], results["ingest_2_workers"]["seconds"]
        summary["ingest_speedup_2_workers"] = round(one / two, 2)
    print("summary", json.dumps(summary))
    if not args.no_json:
        # The LightRAG pair alone keeps its own file beside the web set-ups' results.
        alone = args.lightrag_pair and args.no_search and not args.ingest
        out = REPO / "bench" / "results" / ("scale_bench_lightrag_pair.json" if alone else "scale_bench.json")
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"args": vars(args), "results": results, "summary": summary,
                                   "machine": machine_info()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
