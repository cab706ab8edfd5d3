"""The real embedded stack in tests: pointing the app at a stack's LightRAG,
emptying it between tests, and shelves (files indexed once per session and
kept in LightRAG while the tests that read them follow one another)."""

import dataclasses
import shutil
from pathlib import Path

import httpx

from mnote.lightrag import load_config
from mnote.stack.processes import EmbeddedStack
from tests.paths import REPO_DIR


def copy_tiktoken_cache(data_dir: Path) -> None:
    """Give a test LightRAG the tiktoken cache `make install-lightrag` seeded
    (or `make run` built), when there is one: fetching it from npm again
    costs ~15 s of a session."""
    for cache in (REPO_DIR / ".venv-lightrag" / "tiktoken", REPO_DIR / "data" / "tiktoken"):
        if cache.is_dir():
            shutil.copytree(cache, data_dir / "tiktoken", ignore=shutil.ignore_patterns(".seeded"))
            return


def use_lightrag_of(stack, settings) -> None:
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
    use_lightrag_of(shelf.stack, settings)
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

    from mnote.library.worker import wait_until_settled
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


# --- a small manual indexed by a live LightRAG, and the model endpoint's test knobs

GAMMA = """# Gamma Telescope

The Gamma telescope has a 4.2 metre primary mirror made of Zerodur glass. The mirror is re-aluminised every three years in the on-site coating chamber.

## Dome

The dome opens thirty minutes after sunset when the humidity is below 85 percent.
"""


def index(root):
    from mnote.library.worker import wait_until_settled
    from mnote.library.sync import sync_root
    from mnote.lightrag.provider import lightrag_client

    sync_root(root)
    with lightrag_client() as client:
        assert wait_until_settled(client, timeout=240, interval=0.5)
    assert set(root.sources.values_list("status", flat=True)) == {"indexed"}


def model_endpoint(stack, method="GET", body=None) -> dict:
    base = stack.config.model_url.removesuffix("/v1")
    return httpx.request(method, f"{base}/test/answers", json=body, timeout=10).json()
