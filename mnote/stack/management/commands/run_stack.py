import os
import signal
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from mnote.env import env_int, env_str
from mnote.stack.processes import REPO_DIR, EmbeddedStack, ManagedProcess, StackError, config_from_environ, web_process


class Command(BaseCommand):
    help = (
        "Start the local model endpoint, LightRAG (unless MNOTE_LIGHTRAG_URL points at an external one), "
        "the background worker and the web app; stop them all on Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=env_str("MNOTE_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=env_int("MNOTE_PORT", 8000, minimum=1))
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo library")

    def handle(self, *args, host, port, no_demo, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())

        child_env = {}
        stack = None
        try:
            if env_str("MNOTE_LIGHTRAG_URL"):
                self.stdout.write(f"Using the external LightRAG at {settings.MNOTE_LIGHTRAG.base_url}.")
            else:
                stack = EmbeddedStack(config_from_environ(os.environ, settings.DATA_DIR))
                self.stdout.write("Starting the embedded stack (model endpoint, LightRAG)…")
                stack.start()
                self.stdout.write(f"LightRAG healthy at {stack.config.lightrag_url} (logs in {settings.DATA_DIR / 'logs'}).")
                # The web app and the commands read key and folders from LightRAG's own .env.
                child_env["MNOTE_LIGHTRAG_ENV_FILE"] = str(stack.config.env_file)
                child_env["MNOTE_LIGHTRAG_URL"] = stack.config.lightrag_url
            if not no_demo:
                self._manage(["load_demo"], child_env)
            stack_config = stack.config if stack else config_from_environ(os.environ, settings.DATA_DIR)
            worker = ManagedProcess(
                name="worker",
                argv=[sys.executable, str(REPO_DIR / "manage.py"), "run_worker"],
                health_url="",
                log_path=settings.DATA_DIR / "logs" / "worker.log",
                cwd=REPO_DIR,
                env=child_env,
            )
            worker.start()
            web = web_process(stack_config, host, port, child_env)
            web.start()
            web.wait_healthy(60)
        except StackError as e:
            if stack:
                stack.stop()
            raise CommandError(str(e)) from e

        shown_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        self.stdout.write(self.style.SUCCESS(f"\nMNote Library is running: http://{shown_host}:{port}/"))
        self.stdout.write("Press Ctrl-C to stop everything.")
        # A crashed LightRAG, model endpoint or worker is restarted; pages keep
        # rendering (with "LightRAG unavailable") meanwhile. Only the web app
        # itself ending stops everything.
        restartable = [worker] + (stack.processes if stack else [])
        next_try = {p.name: 0.0 for p in restartable}
        while not stop.wait(1):
            if not web.alive():
                self.stderr.write(f"The web app stopped unexpectedly; shutting down (see {web.log_path}).")
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
        self.stdout.write("Stopping…")
        web.stop()
        worker.stop()
        if stack:
            stack.stop()
        self.stdout.write("Stopped.")

    def _manage(self, argv, env):
        result = subprocess.run([sys.executable, str(REPO_DIR / "manage.py"), *argv], env={**os.environ, **env}, cwd=REPO_DIR)
        if result.returncode != 0:
            self.stderr.write(f"manage.py {' '.join(argv)} failed (exit {result.returncode}); continuing.")
