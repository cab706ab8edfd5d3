"""Two syncs at once — the worker's watcher and an admin's "sync now", say —
in two processes against one database: SQLite's file, and a real
PostgreSQL (several web processes and workers on several machines)."""

import json
import os
import subprocess
import sys

import pytest
from tests.paths import REPO_DIR as REPO


SYNC_AND_REPORT = """
import django, json
django.setup()
from mnote.library.models import IndexedRoot
from mnote.library.sync import sync_library
print(json.dumps([s.queued for s in sync_library()]))
"""

REGISTRY = """
import django, json
django.setup()
from collections import Counter
from mnote.library.models import Job, Source
print(json.dumps({
    "rows": Source.objects.count(),
    "paths": len(set(Source.objects.values_list("root_id", "relative_path"))),
    "statuses": Counter(Source.objects.values_list("status", flat=True)),
    "pending_scans": Job.objects.filter(kind="scan", state="pending").count(),
}))
"""


def run(code: str, env: dict) -> str:
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_it_leaves_a_consistent_registry_when_two_syncs_run_at_once(tmp_path, database, request):
    base = tmp_path / "library"
    for folder in range(20):
        (base / "archive" / f"box-{folder:02d}").mkdir(parents=True)
        for i in range(25):
            (base / "archive" / f"box-{folder:02d}" / f"letter-{i:02d}.txt").write_text(f"Letter {folder}-{i}\n" * 20)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mnote.settings",
        "MNOTE_DATA_DIR": str(tmp_path / "data"),
        "MNOTE_LIBRARY_BASE_DIR": str(base),
        "MNOTE_LIGHTRAG_INPUT_DIR": str(tmp_path / "inputs"),
        "MNOTE_BATCH_LIMIT": "1000",
    }
    env.pop("DATABASE_URL", None)
    if database == "postgresql":
        env["DATABASE_URL"] = request.getfixturevalue("postgres_database")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=REPO, check=True)
    run(
        "import django; django.setup()\n"
        "from mnote.library.models import IndexedRoot\n"
        "IndexedRoot.objects.create(name='Archive', path='archive')",
        env,
    )

    syncs = [
        subprocess.Popen([sys.executable, "-c", SYNC_AND_REPORT], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in syncs]
    assert all(p.returncode == 0 for p in syncs), [err for _, err in outputs]
    queued = [json.loads(out)[0] for out, _ in outputs]

    registry = json.loads(run(REGISTRY, env))
    assert registry["rows"] == registry["paths"] == 500
    assert registry["statuses"] == {"queued": 500}
    assert registry["pending_scans"] == 1
    # One sync did the work, the other found it done.
    assert sorted(queued) == [0, 500]
    # No links yet: the worker makes them, a batch per scan, right before it asks LightRAG to scan.
    assert not (tmp_path / "inputs").exists() or not any((tmp_path / "inputs").iterdir())
