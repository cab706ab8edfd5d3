"""Reading untrusted files in a child process: a time limit, an address-space
and CPU limit, and at most ``MAX_WORKERS`` children at a time per web process.
A file that makes a reader hang, balloon or crash costs a child, never a web
worker. Every preview renderer runs through here (``render_child.py``, one
entry for every kind of the table), and the PDF reader (``pdf/child.py``).

No Django in here: the child imports this module under ``python -I``.
"""

import json
import math
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

MAX_WORKERS = 4
# Shared by every reader, so a burst of previews of any kind waits its turn.
render_slots = threading.BoundedSemaphore(MAX_WORKERS)
FD_PATH = "/dev/fd/"
REJECTED_EXIT = 3
MEMORY_EXIT = 4  # a MemoryError the child caught: its parent words the refusal


class ChildFailed(Exception):
    """The child gave no answer; ``reason`` is busy, timeout, start, memory, crash or failed.
    ``cpu_s``: the CPU time a child stopped at its wall-clock limit had used (on a
    loaded machine, far less than its wall time: the file may not be to blame)."""

    def __init__(self, reason: str, cpu_s: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.cpu_s = cpu_s


class ChildRejected(Exception):
    """The child refused the file; ``str(e)`` is its message for users.
    ``remember_s``: how long the refusal holds (None: for this version of the file)."""

    def __init__(self, message: str, remember_s: float | None = None):
        super().__init__(message)
        self.remember_s = remember_s


def run_child(
    script: str,
    op: str,
    path: str,
    params: dict,
    *,
    timeout: float,
    memory: int,
    slots: threading.Semaphore = render_slots,
    log=None,
) -> bytes:
    """Run ``python -I script op path params memory cpu`` and return its
    stdout. ``path`` may be ``/dev/fd/N``: that descriptor is handed to the
    child (the file already opened and checked by the parent)."""
    if not slots.acquire(timeout=timeout):
        raise ChildFailed("busy")
    try:
        # -I: no user site, no PYTHON* variables, no script folder on sys.path.
        limits = [str(memory), str(math.ceil(timeout) + 1)]  # address space, CPU seconds
        command = [sys.executable, "-I", "-B", script, op, path, json.dumps(params), *limits]
        done = _run_measured(command, int(path.removeprefix(FD_PATH)) if path.startswith(FD_PATH) else None, timeout)
    except OSError as e:
        if log:
            log.error("cannot start a reader: %s", e)
        raise ChildFailed("start") from e
    finally:
        slots.release()
    if done.returncode == 0:
        return done.stdout
    if done.returncode == REJECTED_EXIT:
        answer = json.loads(done.stdout)
        raise ChildRejected(answer["rejected"], answer.get("remember_s"))
    if done.returncode == MEMORY_EXIT:
        raise ChildFailed("memory")
    if log:
        log.warning(
            "reader failed on %s (%s, exit %s): %s", path, op, done.returncode, done.stderr[-2000:].decode(errors="replace")
        )
    if done.returncode == -signal.SIGABRT:  # how PDFium ends when an allocation fails
        raise ChildFailed("memory")
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise ChildFailed("timeout")
    if done.returncode < 0:
        raise ChildFailed("crash")
    raise ChildFailed("failed")


def _run_measured(command: list[str], fd: int | None, timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run`` with a wall-clock limit whose failure says how much
    CPU the killed child had used (reaped here, so its usage can be read)."""
    child = subprocess.Popen(
        command,
        pass_fds=(fd,) if fd is not None else (),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"LC_ALL": "C.UTF-8"},
        cwd="/",
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        _pid, _status, usage = os.wait4(child.pid, 0)
        child.returncode = -signal.SIGKILL  # reaped above: Popen must not wait for it again
        child.communicate()
        raise ChildFailed("timeout", cpu_s=usage.ru_utime + usage.ru_stime) from None
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)


def child_main(
    argv: list[str],
    work: dict[str, Callable[..., bytes]],
    rejected: type[Exception] | tuple[type[Exception], ...],
    memory_message: str | None = None,
) -> int:
    """The child's side: limits first, then ``work[op](path, **params)``;
    ``rejected`` exceptions become a refusal message, and so does MemoryError
    (``memory_message``; without one the parent sees ``ChildFailed("memory")``
    and words it in the reader's language)."""
    import resource

    op, path, params, memory, cpu = argv[1], argv[2], json.loads(argv[3]), int(argv[4]), int(argv[5])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    try:
        out, status = work[op](path, **params), 0
    except rejected as e:
        out = json.dumps({"rejected": str(e), "remember_s": getattr(e, "remember_s", None)}).encode()
        status = REJECTED_EXIT
    except MemoryError:
        if memory_message is None:
            return MEMORY_EXIT
        out, status = json.dumps({"rejected": memory_message}).encode(), REJECTED_EXIT
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    return status
