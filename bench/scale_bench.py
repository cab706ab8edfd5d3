"""Does MNote's own search path scale out? One web process on SQLite against
two web processes on PostgreSQL, both behind one port, with LightRAG served
from recorded responses (tests/fixtures/lightrag/, bench/recorded_lightrag.py:
pre-encoded bytes from a bare asyncio server) so the app's scaling is what is
measured, not LightRAG's.

    .venv/bin/python bench/scale_bench.py [--seconds 20] [--clients 8]

Each set-up gets a fresh database (SQLite file / a throwaway PostgreSQL from
Debian's package, started here), one indexed source whose sidecar the
recorded answer maps to, an API token, and gunicorn (4 threads per process).
Then Debian's ``wrk`` (installed when missing) keeps ``--clients`` connections
POSTing /api/search for ``--seconds`` (after a warm-up), checking each answer
holds a citation; same requests, same data, both set-ups in the same run.

On 2 cores the harness must be nearly free or it takes what the second web
process would get: each row prints the CPU seconds of the web processes,
PostgreSQL, the stand-in, wrk and everything else on the machine (other
users) during the measured window, ``harness_cpu_share`` (wrk + stand-in, of
all cores' time) and the web processes' CPU per search (which load does not
distort). Target: 2 processes on PostgreSQL >= 1.8x the throughput of 1 on
SQLite. Ports: 8464 (web), 8465 (LightRAG stand-in), 8466 (PostgreSQL)
unless given.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))



def machine_info() -> dict:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "loadavg_at_end": os.getloadavg(), "python": sys.version.split()[0], "git_head": head}


FIXTURES = REPO / "tests" / "fixtures"
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


def serve(env: dict, processes: int, port: int, log: Path) -> subprocess.Popen:
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "mnote.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(processes),
         "--threads", "4", "--timeout", "120"],
        env=env, cwd=REPO, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=2).status_code == 200:
                return web
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    web.kill()
    raise SystemExit(f"web did not start; see {log}")


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


def machine_busy() -> float:
    """CPU seconds all cores spent busy since boot (everything but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / TICK


def run_wrk(wrk: str, script: Path, port: int, seconds: float, clients: int, env: dict) -> tuple[dict, float]:
    """One wrk run: its JSON summary and the CPU seconds wrk itself used."""
    process = subprocess.Popen(
        [wrk, "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--timeout", "60s", "-s", str(script),
         f"http://127.0.0.1:{port}/api/search"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if process.returncode or not lines:
        raise SystemExit(f"wrk failed:\n{out}")
    return json.loads(lines[-1]), usage.ru_utime + usage.ru_stime


def load(port: int, token: str, seconds: float, clients: int, warmup: float, *, web: int, postgres: int | None,
         standin: int, folder: Path) -> dict:
    """``clients`` connections POST /api/search for ``seconds`` after ``warmup``
    seconds unmeasured; searches per second, latencies, and the CPU each party used."""
    wrk = ensure_wrk()
    script = folder / "search.lua"
    script.write_text(WRK_SCRIPT.replace("BODY", json.dumps({"query": QUERY, "mode": "naive"})))
    env = {**os.environ, "BENCH_TOKEN": token}
    check = httpx.post(f"http://127.0.0.1:{port}/api/search", json={"query": QUERY, "mode": "naive"},
                       headers={"Authorization": f"Bearer {token}"}, timeout=60)  # fmt: skip
    if check.status_code != 200 or not check.json().get("results"):
        raise SystemExit(f"a search did not answer with a citation: {check.status_code} {check.text[:300]}")
    if warmup:
        run_wrk(wrk, script, port, warmup, clients, env)
    parties = {"web": web, "postgres": postgres, "lightrag_stand_in": standin}
    before = {name: tree_cpu(pid) for name, pid in parties.items() if pid}
    busy_before, started = machine_busy(), time.monotonic()
    summary, wrk_cpu = run_wrk(wrk, script, port, seconds, clients, env)
    elapsed, busy = time.monotonic() - started, machine_busy() - busy_before
    cpu = {name: tree_cpu(pid) - before[name] for name, pid in parties.items() if pid}
    cpu["load_generator"] = wrk_cpu
    cpu["everything_else"] = max(0.0, busy - sum(cpu.values()))  # other users of the machine
    searches = summary["requests"] - summary["bad"]
    capacity = (os.cpu_count() or 1) * elapsed
    return {
        "searches": searches,
        "errors": summary["bad"] + summary["socket_errors"],
        "per_second": round(searches / (summary["duration_us"] / 1e6), 1),
        "p50_ms": round(summary["p50_us"] / 1000, 1),
        "p99_ms": round(summary["p99_us"] / 1000, 1),
        "web_cpu_ms_per_search": round(cpu["web"] * 1000 / searches, 2) if searches else None,
        "cpu_seconds": {name: round(value, 2) for name, value in cpu.items()},
        "cpu_share": {name: round(value / capacity, 3) for name, value in cpu.items()},
        "harness_cpu_share": round((cpu["load_generator"] + cpu["lightrag_stand_in"]) / capacity, 3),
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

    from mnote.stack.processes import EmbeddedStack, StackConfig

    name = f"ingest_{workers}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = postgres.url.rsplit("/", 1)[0]
    stack = EmbeddedStack(StackConfig(data_dir=folder / name / "stack", lightrag_port=ports[0], model_port=ports[1]))
    tiktoken = REPO / "data" / "tiktoken"
    if tiktoken.is_dir():
        shutil.copytree(tiktoken, folder / name / "stack" / "tiktoken")
    stack.start()
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


def cpu_capacity_ratio(base: dict, scaled: dict) -> float | None:
    """Searches per second the measured CPU costs allow on ``nproc`` idle
    cores, scaled over base: each set-up is bound by all its parties' CPU on
    all cores, and its web processes by one core each (the GIL; an upper
    bound, a process's C calls can run beside it)."""
    cores = os.cpu_count() or 1

    def capacity(row: dict, processes: int) -> float:
        n = row["searches"]
        everything = sum(v for k, v in row["cpu_seconds"].items() if k != "everything_else") / n
        return min(cores / everything, processes / (row["cpu_seconds"]["web"] / n))

    if not (base["searches"] and scaled["searches"]):
        return None
    return round(capacity(scaled, 2) / capacity(base, 1), 2)


def postgres_pid(postgres) -> int:
    """The postmaster (its first line of postmaster.pid): the server's connections are its children."""
    return int((postgres.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--web-port", type=int, default=8464)
    parser.add_argument("--lightrag-port", type=int, default=8465)
    parser.add_argument("--postgres-port", type=int, default=8466)
    parser.add_argument("--no-json", action="store_true")
    parser.add_argument("--ingest", action="store_true", help="also index the demo library with 1 and then 2 workers")
    parser.add_argument("--ingest-timeout", type=float, default=600)
    parser.add_argument("--stack-ports", type=int, nargs=2, default=[8467, 8468], metavar=("LIGHTRAG", "MODEL"))
    parser.add_argument("--no-search", action="store_true")
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
    results = {}
    try:
        postgres.start()
        lightrag_url = f"http://127.0.0.1:{args.lightrag_port}"
        for name, processes, database_url in (
            () if args.no_search else (("sqlite_1_process", 1, None), ("postgresql_2_processes", 2, postgres.url))
        ):
            case = folder / name
            case.mkdir()
            env = prepare(case, database_url, lightrag_url)
            web = serve(env, processes, args.web_port, case / "web.log")
            try:
                results[name] = load(
                    args.web_port, env["BENCH_TOKEN"], args.seconds, args.clients, args.warmup, web=web.pid,
                    postgres=postgres_pid(postgres) if database_url else None, standin=lightrag.pid, folder=case,
                )
            finally:
                os.killpg(web.pid, 15)
                web.wait(30)
            print(name, json.dumps(results[name]), flush=True)
        if args.ingest:
            for workers in (1, 2):
                results[f"ingest_{workers}_workers"] = ingest(workers, folder, postgres, args.stack_ports, args.ingest_timeout)
                print(f"ingest_{workers}_workers", json.dumps(results[f"ingest_{workers}_workers"]), flush=True)
    finally:
        postgres.stop()
        lightrag.terminate()
        lightrag.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
    summary = {}
    if not args.no_search:
        base, scaled = results["sqlite_1_process"], results["postgresql_2_processes"]
        summary.update(
            throughput_ratio=round(scaled["per_second"] / base["per_second"], 2) if base["per_second"] else None,
            # Not the target: what the CPU each search cost would allow on idle
            # cores, for a busy machine where the wall-clock ratio says little.
            cpu_capacity_ratio_estimate=cpu_capacity_ratio(base, scaled),
            p99_ratio=round(scaled["p99_ms"] / base["p99_ms"], 2) if base["p99_ms"] else None,
            target_throughput_ratio=1.8,
        )
    if args.ingest:
        one, two = results["ingest_1_workers"]["seconds"], results["ingest_2_workers"]["seconds"]
        summary["ingest_speedup_2_workers"] = round(one / two, 2)
    print("summary", json.dumps(summary))
    if not args.no_json:
        out = REPO / "bench" / "results" / "scale_bench.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"args": vars(args), "results": results, "summary": summary,
                                   "machine": machine_info()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
