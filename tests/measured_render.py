"""A render of one file in a process of its own, timed and measured (peak RSS
growth), for the tests that feed the renderers hostile files.

One Django-ready server per test session (started at the first call, ended
with the session) forks a fresh child for each file:
the child's peak RSS is its own (a forked child starts from its current
size, not its parent's peak), so each file is measured alone as with a new
interpreter, without paying Python's and Django's start-up for every file.
"""

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from tests.paths import REPO_DIR


SERVER = r"""
import json, os, resource, sys, time, traceback
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mnote.settings")
django.setup()
from pathlib import Path
from mnote.kinds import kind_of
from mnote.preview.docx.limits import PreviewRejected
from mnote.preview.docx_render import render_docx
from mnote.preview.renderers import PreviewContext, renderer_for


def render(path, how):
    if how == "docx":  # the DOCX renderer itself, in this process (no reader child)
        render_docx(str(path))
        return {"rejected": False}
    with open(path, "rb") as fp:
        result = renderer_for(kind_of(path.name))(fp, PreviewContext(asset_url=lambda p: "/asset/" + p, path=path))
    return {"rejected": False, "html": result["html"]}


def measure(path, how):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    try:
        outcome = render(path, how)
    except PreviewRejected as e:
        outcome = {"rejected": True, "message": e.message}
    outcome["seconds"] = time.monotonic() - started
    outcome["rss_growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return outcome


for line in sys.stdin:
    request = json.loads(line)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            answer = measure(Path(request["path"]), request["how"])
        except BaseException:
            answer = {"error": traceback.format_exc()}
        with os.fdopen(write, "w") as out:
            out.write(json.dumps(answer))
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as result:
        text = result.read()
    os.waitpid(pid, 0)
    print(text or json.dumps({"error": "the render's process died without an answer"}), flush=True)
"""


class RenderMeasurer:
    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO_DIR,
            env={**os.environ, "PYTHONPATH": str(REPO_DIR)},
            start_new_session=True,
        )

    def __call__(self, path: Path, *, how: str = "renderer", timeout: float = 60) -> dict:
        """``how``: "renderer" (the kind's renderer, HTML in the outcome) or "docx" (render_docx)."""
        self.process.stdin.write(json.dumps({"path": str(path), "how": how}) + "\n")
        self.process.stdin.flush()
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                self.stop()
                raise AssertionError(f"no outcome for {path.name} within {timeout} s")
        line = self.process.stdout.readline()
        assert line, "the measuring server stopped"
        outcome = json.loads(line)
        assert "error" not in outcome, outcome["error"]
        return outcome

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


_server: RenderMeasurer | None = None


def measured(path: Path, *, how: str = "renderer", timeout: float = 60) -> dict:
    """The outcome of rendering ``path`` in a fresh process: rejected (and the
    message) or the HTML, its seconds and its peak RSS growth in MB."""
    global _server
    if _server is None or _server.process.poll() is not None:
        _server = RenderMeasurer()
        atexit.register(_server.stop)
    return _server(path, how=how, timeout=timeout)
