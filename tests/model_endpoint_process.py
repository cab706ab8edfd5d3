"""The local model endpoint as its own process, for the tests that talk to it
over HTTP: started on a free port, asked, and stopped."""

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from mnote.stack.managed import free_port
from tests.paths import REPO_DIR

# `make test` installs the LightRAG virtualenv first; without it these tests fail, never skip.
LIGHTRAG_PYTHON = os.environ.get("MNOTE_LIGHTRAG_PYTHON", str(REPO_DIR / ".venv-lightrag" / "bin" / "python"))


def start_endpoint(extra_args=()) -> tuple[subprocess.Popen, str, object]:
    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [LIGHTRAG_PYTHON, "-m", "mnote.stack.model_endpoint", "--host", "127.0.0.1", "--port", str(port), *extra_args],
        cwd=str(REPO_DIR),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = "http://127.0.0.1:%d" % port
    # Loading and timing the engine take a while on a busy 2-core machine.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            pytest.fail("endpoint exited with %s:\n%s" % (proc.returncode, log.read().decode(errors="replace")))
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base, log
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail("endpoint did not become healthy within 120 s")


def stop_endpoint(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def endpoint_request(base: str, path: str, body=None, *, raw: bytes | None = None, method: str | None = None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()
