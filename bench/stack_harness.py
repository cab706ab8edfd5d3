"""The one way a bench brings up what it measures: an environment the caller
cannot redirect, the embedded stack (LightRAG and the local model endpoint)
with tiktoken's cache seeded, the app's environment pointed at it,
``manage.py``, the web processes, and a logged-in member.

A bench imports this module from beside it (``bench/`` is on ``sys.path``
when a bench runs as ``python bench/x.py``); it puts the checkout on
``sys.path`` so that ``mnote`` imports."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    sys.path.insert(0, str(REPO_DIR))

SECRET_KEY = "bench-only-not-secret"
USERNAME = "bench-member"
PASSWORD = "bench-member-pass-123"
CREATE_USER = (
    "from django.contrib.auth import get_user_model; "
    f"get_user_model().objects.create_user({USERNAME!r}, password={PASSWORD!r})"
)


def clean_environ() -> None:
    """Nothing from the caller's environment may redirect the DB or LightRAG
    (ManagedProcess children inherit os.environ)."""
    for name in list(os.environ):
        if name == "DATABASE_URL" or name.startswith("MNOTE_") or name in (
            "INPUT_DIR",
            "WORKING_DIR",
            "LIGHTRAG_API_KEY",
            "DJANGO_SETTINGS_MODULE",
        ):
            del os.environ[name]


# --- the embedded stack -----------------------------------------------------------


def seed_tiktoken(data_dir: Path) -> None:
    """Give the stack's LightRAG the tiktoken cache `make install-lightrag`
    seeded (or `make run` built), when there is one: without it LightRAG
    fetches it from npm on its first start."""
    for cache in (REPO_DIR / ".venv-lightrag" / "tiktoken", REPO_DIR / "data" / "tiktoken"):
        if cache.is_dir():
            shutil.copytree(cache, data_dir / "tiktoken", ignore=shutil.ignore_patterns(".seeded"))
            return


def new_stack(data_dir: Path, *, lightrag_port: int | None = None, model_port: int | None = None, **config):
    """An embedded stack in ``data_dir`` (tiktoken's cache seeded), on the
    ports given or free ones, not started; ``config``: more StackConfig fields."""
    from mnote.stack.processes import EmbeddedStack, StackConfig
    from mnote.stack.managed import free_port

    seed_tiktoken(data_dir)
    return EmbeddedStack(
        StackConfig(
            data_dir=data_dir,
            lightrag_port=lightrag_port or free_port(),
            model_port=model_port or free_port(),
            **config,
        )
    )


def start_stack(data_dir: Path, **kwargs):
    """``new_stack(...)``, started; stopped again if it fails to start, so no
    half-started process outlives the bench."""
    stack = new_stack(data_dir, **kwargs)
    try:
        stack.start()
    except BaseException:
        stack.stop()
        raise
    return stack


# --- the app in front of it ---------------------------------------------------------


def app_env(data_dir: Path, stack=None, *, library_dir: Path | None = None) -> dict[str, str]:
    """The app's environment: its data in ``data_dir``, its library in
    ``library_dir`` (``data_dir/library`` unless given), LightRAG the stack's
    when there is one."""
    env = {
        "DJANGO_SETTINGS_MODULE": "mnote.settings",
        "MNOTE_DATA_DIR": str(data_dir),
        "MNOTE_LIBRARY_BASE_DIR": str(library_dir or data_dir / "library"),
        "MNOTE_SECRET_KEY": SECRET_KEY,
        "MNOTE_DEBUG": "0",  # DEBUG would keep every query in memory
        "MNOTE_LOG_LEVEL": "WARNING",
    }
    if stack is not None:
        env.update(MNOTE_LIGHTRAG_ENV_FILE=str(stack.config.env_file), MNOTE_LIGHTRAG_URL=stack.config.lightrag_url)
    return env


def in_process_app(data_dir: Path, library_dir: Path, **extra: str) -> dict[str, str]:
    """The app's environment (no stack) set in this process, before Django
    reads its settings, for a bench that runs Django in-process; ``extra``:
    more variables."""
    clean_environ()
    env = {**app_env(data_dir, library_dir=library_dir), **extra}
    os.environ.update(env)
    return env


def in_process_app_in(tmp: Path, root: str = "", **extra: str) -> tuple[dict[str, str], Path, Path]:
    """``tmp/data`` and ``tmp/library`` (with the folder ``root`` in it) made,
    and ``in_process_app`` pointed at them: (environment, data dir, library dir)."""
    data_dir, library_dir = tmp / "data", tmp / "library"
    (library_dir / root).mkdir(parents=True)
    data_dir.mkdir()
    return in_process_app(data_dir, library_dir, **extra), data_dir, library_dir


def manage(argv: list[str], env: dict[str, str], timeout: float = 900) -> str:
    result = subprocess.run(
        [sys.executable, str(REPO_DIR / "manage.py"), *argv],
        env={**os.environ, **env},
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(argv)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def register_indexed(root_name: str, root_path: str, files: dict[str, Path]) -> dict[str, int]:
    """In-process, once Django is set up: migrate, the bench's member, a root,
    and one indexed Source row for each relative path's file (no LightRAG
    needed: the previews render from the file). Returns each relative path's
    Source id."""
    import hashlib

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections

    from mnote.library.models import IndexedRoot, Source

    call_command("migrate", verbosity=0, interactive=False)
    get_user_model().objects.create_user(USERNAME, password=PASSWORD)
    root = IndexedRoot.objects.create(name=root_name, path=root_path)
    ids = {}
    for relative, path in files.items():
        stat = path.stat()
        ids[relative] = Source.objects.create(
            root=root,
            relative_path=relative,
            absolute_path=str(path),
            sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
            size=stat.st_size,
            mtime=stat.st_mtime,
            status="indexed",
        ).pk
    connections.close_all()
    return ids


def gunicorn(env: dict, port: int, log: Path, *args: str) -> subprocess.Popen:
    """The app under gunicorn on ``port`` (``args``: its layout and options),
    once its login page answers; its output goes to ``log``."""
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "mnote.wsgi", "--bind", f"127.0.0.1:{port}", *args],
        env=env, cwd=REPO_DIR, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
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


def log_in_page(page, base_url: str) -> None:
    """Log a Playwright page in as the member ``CREATE_USER`` (or
    ``register_indexed``) made, through the login form."""
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(f"{base_url}/", timeout=60_000)


def logged_in_client(base_url: str) -> httpx.Client:
    """A client logged in as the member ``CREATE_USER`` made."""
    client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(120.0, connect=5.0))
    client.get("/accounts/login/").raise_for_status()
    token = client.cookies.get("csrftoken")
    if not token:
        raise SystemExit("the login page set no csrftoken cookie")
    response = client.post(
        "/accounts/login/",
        data={"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base_url}/accounts/login/"},
    )
    if response.status_code != 302 or "sessionid" not in client.cookies:
        raise SystemExit(f"login failed: HTTP {response.status_code}")
    return client


def index_library(root_names: list[str], max_seconds: float) -> tuple[dict, bool, float]:
    """Register each root (folders of the app's library) unless a kept data
    folder has them already, and wait until LightRAG has indexed them. Returns
    (the citable sources by library path, whether LightRAG settled, seconds)."""
    from mnote.library.models import IndexedRoot, Source
    from mnote.library.sync import sync_root
    from mnote.library.worker import wait_until_settled
    from mnote.lightrag.provider import lightrag_client

    if not IndexedRoot.objects.exists():
        for name in root_names:
            sync_root(IndexedRoot.objects.create(name=name, path=name))
    started = time.monotonic()
    with lightrag_client() as client:
        settled = wait_until_settled(client, timeout=max_seconds, interval=2)
    indexed = {s.library_path: s for s in Source.objects.citable().select_related("root")}
    return indexed, settled, round(time.monotonic() - started, 1)
