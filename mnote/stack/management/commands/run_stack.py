import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from mnote.env import env_int, env_str
from mnote.stack.postgres import TemporaryPostgres
from mnote.stack.managed import ManagedProcess, StackError
from mnote.stack.processes import REPO_DIR, EmbeddedStack, config_from_environ, web_process


class Command(BaseCommand):
    help = (
        "Start the local model endpoint, LightRAG (unless MNOTE_LIGHTRAG_URL points at an external one), "
        "the background worker and the web app; stop them all on Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=env_str("MNOTE_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=env_int("MNOTE_PORT", 8000, minimum=1))
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo library")
        parser.add_argument(
            "--scaled",
            action="store_true",
            help="PostgreSQL (DATABASE_URL, else a local one started here), a shared database cache, "
            "MNOTE_JOB_WORKERS job workers (default 2) and LightRAG on PostgreSQL storage with 2 processes.",
        )

    def handle(self, *args, host, port, no_demo, scaled, **options):
        stop = threading.Event()
        started = threading.Event()

        def on_signal(*_):
            stop.set()
            # During start-up (LightRAG may take minutes, the web app already
            # answers): stop now, not once everything is up.
            if not started.is_set():
                raise KeyboardInterrupt

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, on_signal)

        running = _Running()
        try:
            self._start(running, host=host, port=port, no_demo=no_demo, scaled=scaled)
        except (StackError, KeyboardInterrupt) as e:
            # The web app and workers start first: they go too.
            self.stdout.write("Stopping…")
            running.stop()
            if isinstance(e, KeyboardInterrupt):
                self.stdout.write("Stopped.")
                return
            raise CommandError(str(e)) from e
        started.set()

        self.stdout.write("Press Ctrl-C to stop everything.")
        self._supervise(running, stop)
        self.stdout.write("Stopping…")
        running.stop()
        self.stdout.write("Stopped.")

    def _start(self, running: "_Running", *, host, port, no_demo, scaled):
        """Start everything, recording each process in ``running`` as it
        starts (so a failure or Ctrl-C part way stops what did)."""
        child_env = {}
        job_workers = 1
        config = config_from_environ(os.environ, settings.DATA_DIR)
        if scaled:
            running.postgres, database_url = self._postgres()
            job_workers = env_int("MNOTE_JOB_WORKERS", 2, minimum=1)
            # Every process reads the same database and the same cache.
            child_env.update(DATABASE_URL=database_url, MNOTE_CACHE="database")
            for argv in (["migrate", "--noinput"], ["createcachetable"], ["ensure_admin"]):
                self._manage(argv, child_env, required=True)
            config = replace(config, lightrag_postgres=self._lightrag_database(database_url), lightrag_workers=2)
        stack = None
        if env_str("MNOTE_LIGHTRAG_URL"):
            self.stdout.write(f"Using the external LightRAG at {settings.MNOTE_LIGHTRAG.base_url}.")
        else:
            stack = running.stack = EmbeddedStack(config)
            # LightRAG's .env first (key, folders): the web app and the
            # workers read it, and they start before LightRAG so the web
            # answers within seconds while LightRAG and the demo start.
            stack.write_env()
            child_env["MNOTE_LIGHTRAG_ENV_FILE"] = str(stack.config.env_file)
            child_env["MNOTE_LIGHTRAG_URL"] = stack.config.lightrag_url
        running.workers = _workers(job_workers, child_env)
        web = running.web = web_process(stack.config if stack else config, host, port, child_env)
        self.stdout.write("Starting the web app…")
        web.start()
        # The workers' start-up after the web's: on a busy machine every
        # process starting at once delays the first page.
        web.wait_healthy(60, say=self.stdout.write)
        for worker in running.workers:
            worker.start()
        shown_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        self.stdout.write(self.style.SUCCESS(f"\nMNote Library is running: http://{shown_host}:{port}/"))
        if not no_demo:
            # Queued now, so the home page shows the demo on its way in
            # while LightRAG starts; the worker sends it once LightRAG is up.
            self._manage(["load_demo", "--queue-only"], child_env)
        if stack:
            self.stdout.write(
                "LightRAG is starting; until it is ready the pages say it is unavailable and searches wait for it."
            )
            stack.start(say=self.stdout.write)
            logs = settings.DATA_DIR / "logs"
            self.stdout.write(f"LightRAG healthy at {stack.config.lightrag_url} (logs in {logs}).")
        if not no_demo:
            # In the background: the worker indexes it, the dashboard
            # shows each file's stage, and load_demo logs its progress.
            self.stdout.write(
                "The worker sends LightRAG the demo library; its progress follows here and on the home page."
            )
            running.demo = subprocess.Popen(
                [sys.executable, str(REPO_DIR / "manage.py"), "load_demo", "--follow"],
                env={**os.environ, **child_env},
                cwd=REPO_DIR,
                stdin=subprocess.DEVNULL,
            )

    def _supervise(self, running: "_Running", stop: threading.Event):
        """Until ``stop``: a crashed LightRAG, model endpoint or worker is
        restarted; pages keep rendering (with "LightRAG unavailable")
        meanwhile. Only the web app itself ending stops everything."""
        restartable = running.workers + (running.stack.processes if running.stack else [])
        next_try = {p.name: 0.0 for p in restartable}
        while not stop.wait(1):
            if not running.web.alive():
                self.stderr.write(f"The web app stopped unexpectedly; shutting down (see {running.web.log_path}).")
                break
            for process in restartable:
                if process.alive() or time.monotonic() < next_try[process.name]:
                    continue
                self.stderr.write(f"{process.name} stopped (exit {process.process.returncode}); restarting it.")
                try:
                    process.start()
                    if process.health_url:
                        process.wait_healthy(120)
                    self.stdout.write(f"{process.name} is back.")
                except StackError as e:
                    self.stderr.write(f"{e}\nTrying again in 30 s.")
                    next_try[process.name] = time.monotonic() + 30

    def _manage(self, argv, env, *, required=False):
        result = subprocess.run([sys.executable, str(REPO_DIR / "manage.py"), *argv], env={**os.environ, **env}, cwd=REPO_DIR)
        if result.returncode != 0:
            if required:
                raise StackError(f"manage.py {' '.join(argv)} failed (exit {result.returncode}).")
            self.stderr.write(f"manage.py {' '.join(argv)} failed (exit {result.returncode}); continuing.")

    def _postgres(self):
        """DATABASE_URL's PostgreSQL, else a local one in the data folder (as
        root, which PostgreSQL refuses to run as, in /var/tmp for "nobody")."""
        url = env_str("DATABASE_URL")
        if url:
            if not url.startswith(("postgres://", "postgresql://")):
                raise StackError("--scaled needs PostgreSQL: DATABASE_URL must be a postgres:// URL, or unset.")
            return None, url
        port = env_int("MNOTE_POSTGRES_PORT", 9623, minimum=1)
        if os.geteuid() == 0:
            import hashlib

            folder = Path("/var/tmp") / f"mnote-postgres-{hashlib.sha256(str(settings.DATA_DIR).encode()).hexdigest()[:10]}"
        else:
            folder = settings.DATA_DIR / "postgres"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        server = TemporaryPostgres(folder / "data", port, log_path=folder / "postgres.log")
        server.own(folder)
        self.stdout.write(f"Starting PostgreSQL on 127.0.0.1:{port} (data in {folder})…")
        server.start()
        return server, server.url

    def _lightrag_database(self, database_url: str) -> str:
        """LightRAG's storage: a database of its own beside MNote's."""
        import psycopg

        base, _, name = database_url.rpartition("/")
        lightrag_url = f"{base}/{name}_lightrag"
        try:
            with psycopg.connect(database_url, autocommit=True) as conn:
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [f"{name}_lightrag"]).fetchone():
                    conn.execute(f'CREATE DATABASE "{name}_lightrag"')
        except psycopg.Error as e:
            raise StackError(f"could not create LightRAG's database {name}_lightrag: {e}") from e
        return lightrag_url


def _workers(count: int, child_env: dict) -> list[ManagedProcess]:
    """Any number of workers share the ledger: each claims its jobs, one at a
    time leads (watcher, full sync, reconcile; see library/jobs.py)."""
    return [
        ManagedProcess(
            name="worker" if count == 1 else f"worker {n + 1}",
            argv=[sys.executable, str(REPO_DIR / "manage.py"), "run_worker"],
            health_url="",
            log_path=settings.DATA_DIR / "logs" / ("worker.log" if count == 1 else f"worker-{n + 1}.log"),
            cwd=REPO_DIR,
            env=child_env,
        )
        for n in range(count)
    ]


@dataclass
class _Running:
    """What the command started, each set once it is started."""

    web: ManagedProcess | None = None
    workers: list[ManagedProcess] = field(default_factory=list)
    stack: EmbeddedStack | None = None
    postgres: TemporaryPostgres | None = None
    demo: subprocess.Popen | None = None

    def stop(self) -> None:
        """The demo's follower, the web app and the workers first, then
        LightRAG and the model endpoint, then the database they all use."""
        if self.demo is not None and self.demo.poll() is None:
            self.demo.terminate()
            self.demo.wait(15)
        for process in ([self.web] if self.web else []) + self.workers:
            process.stop()
        if self.stack:
            self.stack.stop()
        if self.postgres:
            self.postgres.stop()
