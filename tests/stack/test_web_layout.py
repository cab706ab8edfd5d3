"""The web processes' layout (`make run`, `make run-scaled`, the scale
benchmark): a burst of kept-alive connections spreads over the processes
instead of all going to the first one awake, and a single busy process still
answers every connection."""

import http.client
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mnote.stack.processes import gunicorn_layout
from mnote.stack.managed import free_port
from tests.paths import REPO_DIR as REPO

APP_DIR = REPO / "tests" / "fixtures" / "wsgi"


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(processes: int, threads: int, *extra: str) -> int:
        port = free_port()
        log = open(tmp_path / f"gunicorn-{port}.log", "wb")
        web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "pid_app", "--pythonpath", str(APP_DIR), "--chdir", str(REPO),
             "--bind", f"127.0.0.1:{port}", *gunicorn_layout(processes, threads), *extra],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        started.append(web)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if len(worker_pids(web.pid)) == processes and get(http.client.HTTPConnection("127.0.0.1", port), 1):
                    return port
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError((tmp_path / f"gunicorn-{port}.log").read_text())

    yield start
    for web in started:
        web.terminate()
        web.wait(30)


def worker_pids(master: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                found.add(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            pass
    return found


def get(conn: http.client.HTTPConnection, ms: int = 150) -> int:
    conn.request("GET", f"/?ms={ms}")
    response = conn.getresponse()
    assert response.status == 200
    return int(response.read())


def test_a_burst_of_kept_alive_connections_spreads_over_the_processes(serve):
    # The layout's worker class, holding a waiting connection longer than
    # its 0.25 s so that a slow wake-up on a busy machine cannot decide it.
    port = serve(2, 2, "--worker-class", "pid_app.PatientWorker")
    for _ in range(3):  # each burst a new set of connections
        conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(4)]
        with ThreadPoolExecutor(4) as pool:
            for conn in conns:
                conn.connect()  # all four opened at once, as a client pool does
            first = list(pool.map(get, conns))
            # The same connections again: each stays with its process.
            again = list(pool.map(get, conns))
        for conn in conns:
            conn.close()
        assert first == again
        assert sorted(first.count(pid) for pid in set(first)) == [2, 2], first


def test_one_busy_process_still_takes_a_waiting_connection_soon(serve):
    port = serve(1, 1)
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(3)]
    started = time.monotonic()

    def first_answer_after(conn) -> float:
        # Each connection asks again and again, so the one thread is never
        # free: a connection not yet taken must not wait for a lull.
        answers = [(get(conn, 50), time.monotonic() - started) for _ in range(20)]
        return answers[0][1]

    with ThreadPoolExecutor(3) as pool:
        firsts = list(pool.map(first_answer_after, conns))
    # 60 requests of 50 ms on one thread take 3 s; a connection starved until
    # the other two were done would have its first answer after 2 s.
    assert max(firsts) < 1.0, firsts
