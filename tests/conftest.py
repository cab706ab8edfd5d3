import dataclasses
import json
import os
import shutil
from pathlib import Path

import dj_database_url
import httpx
import pytest

from mnote.lightrag import load_config
from mnote.stack.processes import EmbeddedStack, StackConfig, free_port
from tests.paths import FIXTURES, REPO_DIR

# Playwright's sync API keeps an event loop in the test thread; Django's ORM
# refuses to run beside one unless told the (test-only) setup is deliberate.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")



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
        """``response``: a recording's file name, an (status, body) pair, an
        exception to raise, or a function of the request returning such a pair.
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
        if callable(response):
            response = response(request)
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
    if os.environ.get("MNOTE_TEST_DATABASE") == "postgresql":
        from mnote.env import postgres_options

        # The PostgreSQL run of `make test`: this session's database is a real
        # PostgreSQL of its own, started here (the fixture below shares it).
        global _session_postgres
        _session_postgres = _start_postgres()
        # In place: Django has already filled in this dict's defaults (TEST, …).
        parsed = dj_database_url.parse(_session_postgres.url)
        default.update({key: parsed[key] for key in ("ENGINE", "NAME", "USER", "PASSWORD", "HOST", "PORT")})
        default["OPTIONS"] = postgres_options()  # as settings.py gives a DATABASE_URL on PostgreSQL
        default.setdefault("TEST", {})["NAME"] = None
        # A connection object made from the SQLite settings (at set-up) is dropped, not reused.
        from django.db import connections

        try:
            del connections["default"]
        except AttributeError:
            pass  # none made yet
    elif default["ENGINE"].endswith("sqlite3"):
        default.setdefault("TEST", {})["NAME"] = str(settings.DATA_DIR / "test-db.sqlite3")


_session_postgres = None


def _start_postgres():
    from mnote.stack.postgres import TemporaryPostgres

    return TemporaryPostgres.in_temporary_folder(free_port()).start()


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL with pgvector (`make install-postgres`) for
    the tests of several processes on one database: this session's own when
    the session runs on PostgreSQL, else one started for them."""
    if _session_postgres is not None:
        yield _session_postgres
        return
    server = _start_postgres()
    yield server
    server.remove()


@pytest.fixture(scope="session")
def _migrated_postgres_template(postgres_server):
    """A PostgreSQL database with MNote's migrations applied once, copied for
    each test that needs a database of its own."""
    import subprocess
    import sys

    import psycopg

    url = postgres_server.url.rsplit("/", 1)[0] + "/mnote_template"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS mnote_template")
        conn.execute("CREATE DATABASE mnote_template")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mnote.settings", "DATABASE_URL": url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=REPO_DIR, check=True, timeout=300)
    return url


@pytest.fixture
def postgres_database(postgres_server, _migrated_postgres_template):
    """The URL of a fresh, migrated PostgreSQL database for processes a test
    starts (workers, syncs): each test its own, dropped afterwards."""
    import uuid

    import psycopg

    name = f"mnote_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE mnote_template')
    yield postgres_server.url.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pytest_unconfigure(config):
    from django.conf import settings

    if _session_postgres is not None:
        _session_postgres.remove()
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


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


# --- the real embedded stack, for integration tests -----------------------


def copy_tiktoken_cache(data_dir: Path) -> None:
    """Give a test LightRAG the tiktoken cache `make install-lightrag` seeded
    (or `make run` built), when there is one: fetching it from npm again
    costs ~15 s of a session."""
    for cache in (REPO_DIR / ".venv-lightrag" / "tiktoken", REPO_DIR / "data" / "tiktoken"):
        if cache.is_dir():
            shutil.copytree(cache, data_dir / "tiktoken", ignore=shutil.ignore_patterns(".seeded"))
            return


@pytest.fixture(scope="session")
def embedded_stack(tmp_path_factory):
    """A real lightrag-server and the local model endpoint, on free loopback
    ports, with their data in a temporary folder. Started once per session."""
    data_dir = tmp_path_factory.mktemp("stack")
    copy_tiktoken_cache(data_dir)
    stack = EmbeddedStack(
        StackConfig(data_dir=data_dir, lightrag_port=free_port(), model_port=free_port(), test_answers=True, test_knobs=True)
    )
    stack.start()
    yield stack
    stack.stop()


@pytest.fixture(scope="session")
def answering_stack(embedded_stack, tmp_path_factory):
    """A second real lightrag-server whose LLM is the deterministic test
    answering model, served by the session's model endpoint: LightRAG's
    /query/stream runs for real, and its ingest builds a knowledge graph (the
    stand-in's ``graph_extraction``). Its answer cache is off, so an answer
    always comes from the context of this test's documents."""
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
def live_lightrag(embedded_stack, settings, library_dir):
    """Point the app at the session's real LightRAG, reading its key and
    folders from LightRAG's own .env as a deployment would."""
    yield from _point_app_at(embedded_stack, settings)


def _point_app_at(stack, settings):
    _use_lightrag_of(stack, settings)
    # Each test starts from an empty LightRAG: the database is per test, and
    # LightRAG would otherwise call a later test's files duplicates (a shelf's
    # documents stay there after its tests, see below).
    empty_lightrag(stack, settings.MNOTE_LIGHTRAG)
    yield stack
    if stack.model_endpoint is not None and stack.model_endpoint.alive():
        stack.set_test_knobs(ingest_delay=0, fail_ingest=0)
    empty_lightrag(stack, settings.MNOTE_LIGHTRAG)


def _use_lightrag_of(stack, settings) -> None:
    """The app's settings pointed at the stack's LightRAG (restarted first if a
    test killed it), its key and folders read from LightRAG's own .env."""
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


def empty_lightrag(stack, config, timeout: float = 240) -> None:
    """Leave LightRAG with no document and idle, so the next test never meets
    this one's documents (LightRAG would call its files duplicates). Our input
    links go first, or a scan could take a file in again. On a loaded machine a
    long ingest can outlast the wait, and a test may have killed LightRAG: then
    LightRAG starts again on empty storage."""
    import time

    from mnote.lightrag import LightRAGBusy, LightRAGError, LightRAGRejected, make_client

    _unlink_inputs(config.input_dir)
    deadline = time.monotonic() + timeout
    with make_client(config) as client:
        while time.monotonic() < deadline:
            try:
                ids = [d.id for d in client.iter_documents()]
                if not ids and not client.health().pipeline_busy:
                    return
                if ids:
                    client.delete_documents(ids)
            except (LightRAGBusy, LightRAGRejected):
                pass  # still working on a document: asked again
            except LightRAGError:
                break  # killed by the test
            time.sleep(0.5)
    stack.lightrag.stop()
    shutil.rmtree(stack.config.working_dir, ignore_errors=True)
    stack.config.working_dir.mkdir(parents=True)
    shutil.rmtree(config.input_dir / "__parsed__", ignore_errors=True)
    _unlink_inputs(config.input_dir)
    stack.restart_lightrag()


def _unlink_inputs(input_dir: Path) -> None:
    for entry in input_dir.iterdir():
        if entry.is_symlink():
            entry.unlink()  # our own links, never a user's file


# --- shelves: files indexed once, kept in LightRAG between tests -------------
#
# Indexing takes from seconds (one small file) to a minute (the demo library)
# on a busy machine, so the files several tests search are indexed once, into
# a LightRAG that keeps them: each test gets the database rows indexing made,
# loaded again (its database is its own). A test that changes what is shared
# — the shelf's files, the documents in LightRAG — makes the next test index
# again; a killed LightRAG is restarted. ``live_lightrag`` and
# ``live_answering`` empty their LightRAG before and after a test, so a shelf
# on those stacks lasts while its tests follow one another.


@dataclasses.dataclass
class Shelf:
    """One root's files, built by ``fill(folder)`` in a folder of the session,
    and once indexed, the rows and LightRAG documents indexing made."""

    stack: EmbeddedStack
    base_dir: Path
    name: str
    path: str
    fill: object  # fill(folder): writes the shelf's files
    rows: list = dataclasses.field(default_factory=list)  # (model label, serialized rows), parents first
    doc_ids: frozenset = frozenset()
    built: dict = dataclasses.field(default_factory=dict)  # relative path -> (size, mtime) of each file as built

    @property
    def folder(self) -> Path:
        return self.base_dir / self.path

    def files(self) -> dict[str, tuple[int, int]]:
        return {p.relative_to(self.folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
                for p in sorted(self.folder.rglob("*")) if p.is_file()}  # fmt: skip

    def build(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        self.fill(self.folder)
        self.built = self.files()

    def intact(self, config) -> bool:
        """The files as built, and LightRAG holding exactly the documents indexing left."""
        if not self.rows or self.files() != self.built:
            return False
        from mnote.lightrag import LightRAGError, make_client

        try:
            with make_client(config) as client:
                documents = list(client.iter_documents())
        except LightRAGError:
            return False
        return {d.id for d in documents if d.status == "processed"} == self.doc_ids == {d.id for d in documents}


def make_shelf(stack, tmp_path_factory, name: str, path: str, fill) -> Shelf:
    return Shelf(stack, tmp_path_factory.mktemp(f"shelf-{path}"), name, path, fill)


def use_shelf(shelf: Shelf, settings):
    """The shelf's root for this test, indexed (again only when something
    changed it); the app's library and LightRAG are the shelf's."""
    from mnote.library.models import IndexedRoot

    settings.MNOTE_LIBRARY_BASE_DIR = shelf.base_dir
    _use_lightrag_of(shelf.stack, settings)
    if shelf.intact(settings.MNOTE_LIGHTRAG):
        _load_rows(shelf.rows)
    else:
        _index_shelf(shelf, settings.MNOTE_LIGHTRAG)
    return IndexedRoot.objects.get(path=shelf.path)


def _snapshot_models():
    """The app's own models (not users, permissions or sessions), parents first."""
    from django.apps import apps
    from django.core import serializers

    own = [(config, None) for config in apps.get_app_configs() if config.name.startswith("mnote.")]
    return serializers.sort_dependencies(own)


def _index_shelf(shelf: Shelf, config) -> None:
    from django.core import serializers

    from mnote.library.ingest import wait_until_settled
    from mnote.library.models import IndexedRoot
    from mnote.library.sync import sync_root
    from mnote.lightrag import make_client

    models = _snapshot_models()
    assert not any(m._default_manager.exists() for m in models), "request a shelf before fixtures that add library rows"
    empty_lightrag(shelf.stack, config)
    shelf.build()
    root = IndexedRoot.objects.create(name=shelf.name, path=shelf.path)
    sync_root(root)
    with make_client(config) as client:
        # Transient failures on a loaded machine are retried by the ledger; allow for a retry or two.
        # A ceiling, not a wait: at the 10-19 s a chunk measured at load average 16-19, the
        # demo's 29 chunks take 5-9 minutes.
        assert wait_until_settled(client, timeout=900, interval=0.5)
    statuses = list(root.sources.values_list("relative_path", "status", "last_error"))
    assert statuses and all(status == "indexed" for _, status, _ in statuses), statuses
    shelf.rows = [(m._meta.label, serializers.serialize("json", m._default_manager.order_by("pk"))) for m in models]
    shelf.doc_ids = frozenset(root.sources.values_list("lightrag_doc_id", flat=True))


def _load_rows(rows) -> None:
    from django.core import serializers
    from django.db import transaction

    with transaction.atomic():  # SQLite checks foreign keys at commit: a row may name a later one
        for _label, data in rows:
            for row in serializers.deserialize("json", data):
                row.save()


@pytest.fixture(scope="session")
def demo_stack(embedded_stack, tmp_path_factory):
    """A second lightrag-server configured as the session's one (same models,
    rerank and embedding limits, served by the session's model endpoint), for
    the demo library alone: no other test empties it."""
    data_dir = tmp_path_factory.mktemp("demo-stack")
    shutil.copytree(embedded_stack.config.tiktoken_dir, data_dir / "tiktoken")
    stack = EmbeddedStack(dataclasses.replace(embedded_stack.config, data_dir=data_dir, lightrag_port=free_port()))
    stack.prepare()
    stack.start_lightrag()
    yield stack
    stack.stop()


@pytest.fixture(scope="session")
def demo_shelf(demo_stack, tmp_path_factory):
    def fill(folder):
        shutil.copytree(REPO_DIR / "mnote" / "demo" / "library", folder, dirs_exist_ok=True)

    return make_shelf(demo_stack, tmp_path_factory, "Demo", "demo", fill)


@pytest.fixture
def demo_library(demo_shelf, settings):
    """Our demo documents in a root, indexed by a real LightRAG (once per session)."""
    return use_shelf(demo_shelf, settings)


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
