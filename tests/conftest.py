import dataclasses
import os
import shutil
from pathlib import Path

import dj_database_url
import pytest

from mnote.stack.processes import EmbeddedStack, StackConfig
from mnote.stack.managed import free_port
from tests.lightrag_fakes import RecordedLightRAG
from tests.live_stack import copy_tiktoken_cache, empty_lightrag, make_shelf, use_lightrag_of, use_shelf
from tests.paths import DEMO_LIBRARY, REPO_DIR

# Playwright's sync API keeps an event loop in the test thread; Django's ORM
# refuses to run beside one unless told the (test-only) setup is deliberate.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


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
def with_llm(fake_lightrag):
    """LightRAG faked with an LLM: health, /query/data and /query/stream recorded."""
    from tests.lightrag_fakes import query_stream_lines

    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    fake_lightrag.on("POST", "/query/stream", (200, query_stream_lines()))
    return fake_lightrag


@pytest.fixture
def without_llm(fake_lightrag):
    """LightRAG faked with no LLM configured: its search still answers."""
    from tests.lightrag_fakes import no_llm_health

    fake_lightrag.on("GET", "/health", no_llm_health())
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    return fake_lightrag


@pytest.fixture
def shelf(library_dir, settings, tmp_path):
    """A Shelf root on disk; ``shelf(name, make)`` writes a file with
    ``make(path)`` (when given) and registers it as indexed."""
    from mnote.library.models import IndexedRoot, Source

    settings.DATA_DIR = tmp_path / "data"
    folder = library_dir / "shelf"
    folder.mkdir()
    root = IndexedRoot.objects.create(name="Shelf", path="shelf")

    def add(name: str, make=None) -> Source:
        path = folder / name
        if make:
            make(path)
        return Source.objects.create(root=root, relative_path=name, absolute_path=str(path), status="indexed")

    return add


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
def admin_client(admin_user):
    """A client of its own (as pytest-django's), so a test may hold it beside
    ``client`` or ``member_client``."""
    from django.test import Client

    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def manuals(db):
    from mnote.library.models import IndexedRoot

    return IndexedRoot.objects.create(name="Manuals", path="manuals")


@pytest.fixture
def gamma(manuals, lightrag_dirs):
    """The Gamma manual in the Manuals root, with its sidecar and LightRAG's
    chunk store: the source LightRAG's recorded answers are about."""
    from tests.factories import add_gamma

    return add_gamma(manuals, lightrag_dirs)


# --- the real embedded stack, for integration tests -----------------------


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
    use_lightrag_of(stack, settings)
    # Each test starts from an empty LightRAG: the database is per test, and
    # LightRAG would otherwise call a later test's files duplicates (a shelf's
    # documents stay there after its tests, see below).
    empty_lightrag(stack, settings.MNOTE_LIGHTRAG)
    yield stack
    if stack.model_endpoint is not None and stack.model_endpoint.alive():
        stack.set_test_knobs(ingest_delay=0, fail_ingest=0)
    empty_lightrag(stack, settings.MNOTE_LIGHTRAG)


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
        shutil.copytree(DEMO_LIBRARY, folder, dirs_exist_ok=True)

    return make_shelf(demo_stack, tmp_path_factory, "Demo", "demo", fill)


@pytest.fixture
def demo_library(demo_shelf, settings):
    """Our demo documents in a root, indexed by a real LightRAG (once per session)."""
    return use_shelf(demo_shelf, settings)
