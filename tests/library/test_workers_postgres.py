"""Several job workers — real `manage.py run_worker` processes — sharing one
real PostgreSQL database and one LightRAG (a stand-in over HTTP that counts
what reached it): every job is carried out once, a job whose worker is killed
mid-request is claimed again after its lease, and when the leader is killed
another worker takes over the watcher within the leader's lease."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.lightrag_server import LightRAGServer
from tests.paths import REPO_DIR as REPO

# Generous for a busy 2-core machine: several Django processes start at once.
SETTLE_TIMEOUT = 240

pytestmark = pytest.mark.postgres_only


@pytest.fixture
def lightrag():
    with LightRAGServer() as server:
        yield server


@pytest.fixture
def worker_env(tmp_path, postgres_database, lightrag):
    (tmp_path / "library").mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MNOTE_", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="mnote.settings",
        DATABASE_URL=postgres_database,
        MNOTE_DATA_DIR=str(tmp_path / "data"),
        MNOTE_SECRET_KEY="test-workers",
        MNOTE_LIBRARY_BASE_DIR=str(tmp_path / "library"),
        MNOTE_LIGHTRAG_URL=lightrag.url,
        MNOTE_LIGHTRAG_INPUT_DIR=str(tmp_path / "inputs"),
        MNOTE_LIGHTRAG_WORKING_DIR=str(tmp_path / "rag_storage"),
    )
    return env


def django(code: str, env: dict) -> str:
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + code],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def query(env: dict, sql: str, params=()) -> list[tuple]:
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        return conn.execute(sql, params).fetchall()


class Workers:
    def __init__(self, env: dict, log_dir: Path):
        self.env, self.log_dir, self.processes = env, log_dir, []

    def start(self, count: int = 1, *args: str, **extra_env: str) -> list[subprocess.Popen]:
        started = []
        for _ in range(count):
            log = open(self.log_dir / f"worker-{len(self.processes)}.log", "wb")
            process = subprocess.Popen(
                [sys.executable, "manage.py", "run_worker", "--interval", "0.2", *args],
                env={**self.env, **extra_env}, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            log.close()
            self.processes.append(process)
            started.append(process)
        return started

    def by_id(self, worker: str) -> subprocess.Popen:
        pid = int(worker.rsplit(":", 1)[1])
        return next(p for p in self.processes if p.pid == pid)

    def kill(self, process: subprocess.Popen) -> None:
        """As a crash would: no clean-up, no lease given back."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(self.log_dir.glob("worker-*.log")))


@pytest.fixture
def workers(worker_env, tmp_path):
    pool = Workers(worker_env, tmp_path)
    yield pool
    pool.stop_all()


def wait_for(condition, timeout: float, what: str, workers: Workers | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout:.0f} s: {what}\n{workers.logs() if workers else ''}")


def queue_deletes(env: dict, doc_ids: list[str]) -> None:
    django(
        "from mnote.library.models import Job\n"
        f"Job.objects.bulk_create([Job(kind='delete', payload={{'doc_ids': [d]}}) for d in {doc_ids!r}])",
        env,
    )


def pending_jobs(env: dict) -> int:
    return query(env, "SELECT count(*) FROM library_job WHERE state = 'pending'")[0][0]


@pytest.mark.parametrize("worker_count", [2, 4])
def test_each_of_500_queued_jobs_is_carried_out_once_by_several_workers(worker_env, workers, lightrag, worker_count):
    doc_ids = [f"doc-{i:04d}" for i in range(500)]
    lightrag.documents.update(doc_ids)
    queue_deletes(worker_env, doc_ids)

    workers.start(worker_count, "--no-watch", "--full-sync-every", "0")
    wait_for(lambda: pending_jobs(worker_env) == 0, SETTLE_TIMEOUT, "all jobs carried out", workers)

    # LightRAG was asked to delete each document exactly once, and each went.
    assert lightrag.delete_requests == {doc_id: 1 for doc_id in doc_ids}
    assert lightrag.documents == set()
    done = query(worker_env, "SELECT state, attempts, claimed_by FROM library_job")
    assert len(done) == 500 and {(state, attempts) for state, attempts, _ in done} == {("done", 1)}
    # The work was shared, not done by one worker while the others waited.
    assert len({worker for *_, worker in done}) > 1


def test_a_job_whose_worker_is_killed_mid_request_is_claimed_again_after_its_lease_and_done_once(
    worker_env, workers, lightrag
):
    lease = 5
    lightrag.documents.add("doc-slow")
    lightrag.slow_deletes["doc-slow"] = 60  # the first request hangs: its worker is killed meanwhile
    queue_deletes(worker_env, ["doc-slow"])
    workers.start(2, "--no-watch", "--full-sync-every", "0", MNOTE_JOB_LEASE_SECONDS=str(lease))

    wait_for(lambda: lightrag.delete_requests["doc-slow"] == 1, 120, "the first worker sent the delete", workers)
    (claimed_by,) = query(worker_env, "SELECT claimed_by FROM library_job")[0]
    first = workers.by_id(claimed_by)
    workers.kill(first)
    killed_at = time.monotonic()

    wait_for(lambda: pending_jobs(worker_env) == 0, 120, "the job carried out by the other worker", workers)
    state, attempts, last_worker = query(worker_env, "SELECT state, attempts, claimed_by FROM library_job")[0]
    assert state == "done" and attempts == 1  # finished once; the killed attempt left no trace but its lease
    assert last_worker != claimed_by and workers.by_id(last_worker).poll() is None
    # Not taken from the (dead, but for all anyone knew working) first worker before its lease ran out…
    first_sent, second_sent = lightrag.request_times["doc-slow"]
    assert second_sent - first_sent >= lease - 0.5
    # …and the document went once: the second request did it, LightRAG saw no second effect.
    assert lightrag.delete_requests["doc-slow"] == 2 and lightrag.deleted["doc-slow"] == 1
    assert second_sent > killed_at


def leader(env: dict) -> str:
    rows = query(env, "SELECT holder FROM library_workerlease WHERE name = 'leader' AND expires_at > now()")
    return rows[0][0] if rows and rows[0][0] else ""


def test_when_the_leader_is_killed_another_worker_takes_over_the_watcher_within_the_lease(
    worker_env, workers, tmp_path
):
    lease = 4
    notes = tmp_path / "library" / "notes"
    notes.mkdir()
    django("from mnote.library.models import IndexedRoot\nIndexedRoot.objects.create(name='Notes', path='notes')", worker_env)
    # No periodic full sync: a file found after the take-over was found by the new leader's watcher.
    workers.start(2, "--full-sync-every", "0", MNOTE_LEADER_LEASE_SECONDS=str(lease))

    first = wait_for(lambda: leader(worker_env), 120, "a leader", workers)
    workers.kill(workers.by_id(first))
    killed_at = time.monotonic()
    second = wait_for(lambda: (h := leader(worker_env)) and h != first and h, 60, "another leader", workers)
    took_over_after = time.monotonic() - killed_at
    # The dead leader's lease runs out, then the next round of the other worker takes it.
    assert took_over_after <= lease + 5, took_over_after
    assert workers.by_id(second).poll() is None

    last_write = [0.0]

    def registered():
        # The watch starts a moment after the take-over; a file written before it is missed
        # (the full sync would catch it), so write another now and then until one is seen.
        if time.monotonic() - last_write[0] > 2:
            (notes / f"note-{time.monotonic_ns()}.md").write_text("A note written after the take-over.\n")
            last_write[0] = time.monotonic()
        return query(worker_env, "SELECT relative_path FROM library_source")

    rows = wait_for(registered, 60, "a file written after the take-over registered", workers)
    assert all(path.startswith("note-") for (path,) in rows)
    # Only one leader watched: one row per file, never two.
    paths = [path for (path,) in query(worker_env, "SELECT relative_path FROM library_source")]
    assert len(paths) == len(set(paths))
