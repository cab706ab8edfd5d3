"""A child process of the stack: started in its own process group with its
output in a log file, watched through a health URL, stopped in order."""

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx


class StackError(RuntimeError):
    """The embedded stack could not be started; the message says what to do."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class ManagedProcess:
    """A child process with a health URL, its output in a log file."""

    name: str
    argv: list[str]
    health_url: str
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    process: subprocess.Popen | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(
                self.argv,
                env={**os.environ, **self.env},
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                # Its own process group: Ctrl-C reaches us, and we stop it in order.
                start_new_session=True,
            )
        except OSError as e:
            raise StackError(f"could not start {self.name} ({self.argv[0]}): {e}") from e
        finally:
            log.close()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def healthy(self) -> bool:
        try:
            return httpx.get(self.health_url, timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    def wait_healthy(self, timeout: float, *, say=None, every: float = 15) -> None:
        """Wait for the health URL to answer; ``say`` (a callable taking a
        line) hears every ``every`` seconds that it is still starting, so a
        long start-up is never a silent log."""
        started = time.monotonic()
        deadline = started + timeout
        next_word = started + every
        while time.monotonic() < deadline:
            if not self.alive():
                raise StackError(f"{self.name} exited during start-up; see {self.log_path}:\n{self.log_tail()}")
            if self.healthy():
                return
            if say is not None and time.monotonic() >= next_word:
                say(f"  {self.name} is still starting ({time.monotonic() - started:.0f} s; log: {self.log_path})…")
                next_word += every
            time.sleep(0.25)
        raise StackError(f"{self.name} not healthy after {timeout:.0f} s; see {self.log_path}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 15) -> None:
        if not self.alive():
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """Kill abruptly, as a crash would (used by failure tests)."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
