import dataclasses
import json
import os
import shutil
from pathlib import Path

import httpx
import pytest

from mnote.lightrag import load_config
from mnote.stack.processes import EmbeddedStack, StackConfig, free_port

# Playwright's sync API keeps an event loop in the test thread; Django's ORM
# refuses to run beside one unless told the (test-only) setup is deliberate.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

FIXTURES = Path(__file__).parent / "fixtures"
REPO_DIR = Path(__file__).resolve().parent.parent


def recorded(name: str) -> tuple[int, dict]:
    """A real LightRAG 1.5.7 response, as recorded: (HTTP status, body)."""
    data = json.loads((FIXTURES / "lightrag" / name).read_text())
    return data["_http_status"], data["body"]


class RecordedLightRAG:
    """A fake LightRAG at the transport: serves recorded responses for the
    routes a test declares and fails the test on any other request."""

    def __init__(self):
        self.routes: dict[tuple[str, str], object] = {}
        self.requests: list[httpx.Request] = []

    def on(self, method: str, path: str, response):
        """``response``: a recording's file name, an (status, body) pair, or an exception to raise.
        A body that is a list is sent as NDJSON, one line per item (``/query/stream``)."""
        self.routes[(method, path)] = response
        return self

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = (request.method, request.url.path)
        if key not in self.routes:
            raise AssertionError(f"unexpected request to LightRAG: {request.method} {request.url.path}")
        response = self.routes[key]
        if isinstance(response, Exception):
            raise response
        status, body = recorded(response) if isinstance(response, str) else response
        if isinstance(body, list):
            lines = "".join(json.dumps(line) + "\n" for line in body)
            return httpx.Response(status, content=lines.encode(), headers={"Content-Type": "application/x-ndjson"})
        return httpx.Response(status, json=body)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)


def pytest_configure(config):
    """Caches and data the app writes at run time (preview renders, …) go to a
    folder of this test session, never the checkout's data/, so a stale render
    cannot survive from one run into the next."""
    import tempfile

    from django.conf import settings

    settings.DATA_DIR = Path(tempfile.mkdtemp(prefix="mnote-test-data-"))
    # A test database in a file, not in memory: the live server answers each
    # request in a thread of its own, and an in-memory SQLite database would be
    # one connection shared by them all ("bad parameter or other API misuse"
    # under parallel requests).
    default = settings.DATABASES["default"]
    if default["ENGINE"].endswith("sqlite3"):
        default.setdefault("TEST", {})["NAME"] = str(settings.DATA_DIR / "test-db.sqlite3")


def pytest_unconfigure(config):
    from django.conf import settings

    if settings.configured and settings.DATA_DIR.name.startswith("mnote-test-data-"):
        shutil.rmtree(settings.DATA_DIR, ignore_errors=True)


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """PBKDF2 costs over a second per user on a busy 2-core machine; tests
    check who may log in, not the hash's strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def forget_recent_health():
    """Each test sees its own LightRAG's health, not one cached by another."""
    from mnote.lightrag import provider

    provider._recent.clear()


@pytest.fixture(autouse=True)
def forget_document_indexes(settings):
    """Tests reuse content hashes and file names with other sidecars and chunk stores."""
    from mnote.citations.sidecar import forget_doc_indexes

    forget_doc_indexes()
    shutil.rmtree(settings.DATA_DIR / "cache" / "index", ignore_errors=True)


@pytest.fixture(autouse=True)
def forget_render_counts():
    """Each test starts with a fresh preview-render budget (issue 9's per-user
    rate limit counts in the process-wide cache; test users reuse ids)."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def fake_lightrag(settings):
    fake = RecordedLightRAG()
    settings.MNOTE_LIGHTRAG_TRANSPORT = fake.transport
    return fake


@pytest.fixture
def library_dir(tmp_path, settings):
    base = tmp_path / "library"
    base.mkdir()
    settings.MNOTE_LIBRARY_BASE_DIR = base
    return base


@pytest.fixture
def lightrag_dirs(tmp_path, settings):
    """LightRAG's input and working directories, empty, in a temporary folder."""
    inputs, storage = tmp_path / "inputs", tmp_path / "rag_storage"
    inputs.mkdir()
    storage.mkdir()
    settings.MNOTE_LIGHTRAG = dataclasses.replace(settings.MNOTE_LIGHTRAG, input_dir=inputs, working_dir=storage)
    return inputs, storage


@pytest.fixture
def input_dir(lightrag_dirs):
    return lightrag_dirs[0]


@pytest.fixture
def member(django_user_model):
    return django_user_model.objects.create_user("mia", password="member-pass-123")


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_user("ada", password="admin-pass-123", is_staff=True)


@pytest.fixture
def member_client(client, member):
    client.force_login(member)
    return client


# --- the real embedded stack, for integration tests -----------------------


@pytest.fixture(scope="session")
def embedded_stack(tmp_path_factory):
    """A real lightrag-server and the local model endpoint, on free loopback
    ports, with their data in a temporary folder. Started once per session."""
    data_dir = tmp_path_factory.mktemp("stack")
    # Reuse the tiktoken cache `make run` built, when there is one.
    cache = REPO_DIR / "data" / "tiktoken"
    if cache.is_dir():
        shutil.copytree(cache, data_dir / "tiktoken")
    stack = EmbeddedStack(
        StackConfig(data_dir=data_dir, lightrag_port=free_port(), model_port=free_port(), test_answers=True, test_knobs=True)
    )
    stack.start()
    yield stack
    stack.stop()


@pytest.fixture(scope="session")
def answering_stack(embedded_stack, tmp_path_factory):
    """A second real lightrag-server whose LLM is the deterministic test
    answering model, served by the session's model endpoint: LightRAG's own
    answer pipeline and /query/stream run for real. Its answer cache is off,
    so an answer always comes from the context of this test's documents."""
    from mnote.stack.answering_model import TEST_ANSWER_MODEL
    from mnote.stack.processes import EMBEDDING_DIM, EMBEDDING_MODEL, ExternalModel

    data_dir = tmp_path_factory.mktemp("answering-stack")
    shutil.copytree(embedded_stack.config.tiktoken_dir, data_dir / "tiktoken")
    model_url = embedded_stack.config.model_url
    stack = EmbeddedStack(
        StackConfig(
            data_dir=data_dir,
            lightrag_port=free_port(),
            llm=ExternalModel("openai", model_url, TEST_ANSWER_MODEL, "none"),
            embedding=ExternalModel("openai", model_url, EMBEDDING_MODEL, "none", EMBEDDING_DIM),
            llm_cache=False,
        )
    )
    stack.start()
    yield stack
    stack.stop()


@pytest.fixture
def live_answering(answering_stack, settings, library_dir):
    """The app pointed at the answering LightRAG (see ``live_lightrag``)."""
    yield from _point_app_at(answering_stack, settings)


@pytest.fixture
def demo_library(live_lightrag, library_dir):
    """Our demo documents in a root, indexed by the real LightRAG."""
    from mnote.library.ingest import wait_until_settled
    from mnote.library.models import IndexedRoot
    from mnote.lightrag.provider import lightrag_client
    from mnote.library.sync import sync_root

    shutil.copytree(REPO_DIR / "mnote" / "demo" / "library", library_dir / "demo")
    root = IndexedRoot.objects.create(name="Demo", path="demo")
    sync_root(root)
    with lightrag_client() as client:
        # Transient failures on a loaded machine are retried by the ledger; allow for a retry or two.
        assert wait_until_settled(client, timeout=600, interval=0.5)
    assert dict(root.sources.values_list("relative_path", "status")) == {
        path: "indexed" for path in root.sources.values_list("relative_path", flat=True)
    }, list(root.sources.values_list("relative_path", "status", "last_error"))
    return root


@pytest.fixture
def live_lightrag(embedded_stack, settings, library_dir):
    """Point the app at the session's real LightRAG, reading its key and
    folders from LightRAG's own .env as a deployment would."""
    yield from _point_app_at(embedded_stack, settings)


def _point_app_at(stack, settings):
    config = stack.config
    if not stack.lightrag.alive():
        stack.restart_lightrag()
    settings.MNOTE_LIGHTRAG = load_config(
        {"MNOTE_LIGHTRAG_ENV_FILE": str(config.env_file)},
        default_url="http://127.0.0.1:1",
        default_input_dir=config.input_dir,
        default_working_dir=config.working_dir,
    )
    settings.MNOTE_LIGHTRAG_TRANSPORT = None
    yield stack
    if stack.model_endpoint is not None and stack.model_endpoint.alive():
        stack.set_test_knobs(ingest_delay=0, fail_ingest=0)
    # Each test starts from an empty LightRAG: the database is per test, and
    # LightRAG would otherwise call a later test's files duplicates.
    empty_lightrag(settings.MNOTE_LIGHTRAG)


def empty_lightrag(config, timeout: float = 90) -> None:
    import time

    from mnote.lightrag import LightRAGBusy, LightRAGError, make_client

    deadline = time.monotonic() + timeout
    with make_client(config) as client:
        while time.monotonic() < deadline:
            try:
                ids = [d.id for d in client.iter_documents()]
                if not ids:
                    break
                client.delete_documents(ids)
            except LightRAGBusy:
                pass
            except LightRAGError:
                break  # a killed server is restarted by the next test's fixture
            time.sleep(0.5)
    for entry in config.input_dir.iterdir():
        if entry.is_symlink():
            entry.unlink()  # our own links, never a user's file


# --- headless Chromium, for browser tests -----------------------------------

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO_DIR / "artifacts"


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def log_in(browser, base_url: str, username: str, password: str, *, locale: str = "en-US"):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, locale=locale)
    page = context.new_page()
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button.primary")
    page.wait_for_url(f"{base_url}/")
    return page


@pytest.fixture
def logged_in_page(chromium, live_server, member):
    page = log_in(chromium, live_server.url, "mia", "member-pass-123")
    yield page
    page.context.close()
