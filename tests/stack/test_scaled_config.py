"""What `make run-scaled` tells its processes: LightRAG on PostgreSQL
storage in several processes, and one cache for all web processes."""

import os
import subprocess
import sys
from pathlib import Path

from mnote.stack.processes import StackConfig, lightrag_server_env
from tests.paths import REPO_DIR as REPO



def test_lightrag_keeps_every_store_in_postgresql(tmp_path):
    config = StackConfig(data_dir=tmp_path, api_key="k", lightrag_postgres="postgres://mnote@127.0.0.1:9623/mnote_lightrag")
    env = lightrag_server_env(config)
    assert env["LIGHTRAG_KV_STORAGE"] == "PGKVStorage"
    assert env["LIGHTRAG_DOC_STATUS_STORAGE"] == "PGDocStatusStorage"
    assert env["LIGHTRAG_GRAPH_STORAGE"] == "PGTableGraphStorage"
    assert env["LIGHTRAG_VECTOR_STORAGE"] == "PGVectorStorage"
    assert (env["POSTGRES_HOST"], env["POSTGRES_PORT"], env["POSTGRES_USER"], env["POSTGRES_DATABASE"]) == (
        "127.0.0.1", "9623", "mnote", "mnote_lightrag"
    )
    assert env["POSTGRES_PASSWORD"]  # LightRAG refuses to start without one


def test_make_run_keeps_lightrag_on_its_json_files(tmp_path):
    env = lightrag_server_env(StackConfig(data_dir=tmp_path, api_key="k"))
    assert not any(key.startswith(("LIGHTRAG_KV", "POSTGRES_")) for key in env)


def settings_value(expression: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); from django.conf import settings; print({expression})"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "mnote.settings", **env}, cwd=REPO, capture_output=True, text=True,
    )


def test_several_web_processes_can_share_the_database_cache(tmp_path):
    shared = settings_value("settings.CACHES['default']['BACKEND']", MNOTE_CACHE="database", MNOTE_DATA_DIR=str(tmp_path))
    assert shared.stdout.strip() == "django.core.cache.backends.db.DatabaseCache"
    wrong = settings_value("1", MNOTE_CACHE="redis", MNOTE_DATA_DIR=str(tmp_path))
    assert wrong.returncode != 0 and "MNOTE_CACHE='redis'" in wrong.stderr


def test_postgresql_connections_prepare_what_they_run_again_unless_a_pooler_forbids_it(tmp_path):
    options = "settings.DATABASES['default']['OPTIONS']"
    url = "postgres://mnote@127.0.0.1:9623/mnote"
    prepared = settings_value(options, DATABASE_URL=url, MNOTE_DATA_DIR=str(tmp_path))
    assert prepared.stdout.strip() == "{'server_side_binding': True, 'prepare_threshold': 5}", prepared.stderr
    pooled = settings_value(options, DATABASE_URL=url, MNOTE_DATABASE_PREPARED="false", MNOTE_DATA_DIR=str(tmp_path))
    assert pooled.stdout.strip() == "{}", pooled.stderr


PREPARED = """
from mnote.api.models import ApiToken
from django.db import connection
for _ in range(6):
    ApiToken.objects.filter(key_hash="x").select_related("user").first()
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM pg_prepared_statements")
    print(cursor.fetchone()[0])
"""


def test_a_web_process_on_postgresql_plans_a_repeated_query_once(postgres_database, tmp_path):
    """A search's token lookup, run again on one connection, is a prepared
    statement: PostgreSQL parses and plans it once, not on every request."""
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + PREPARED],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "mnote.settings", "DATABASE_URL": postgres_database,
             "MNOTE_DATA_DIR": str(tmp_path)},
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) >= 1


def test_a_postgresql_without_pgvector_is_refused_with_what_to_install(tmp_path, monkeypatch):
    import pytest

    from mnote.stack import postgres
    from mnote.stack.processes import EmbeddedStack
    from mnote.stack.managed import StackError

    monkeypatch.setattr(postgres, "pgvector_available", lambda url: False)
    config = StackConfig(data_dir=tmp_path, api_key="k", lightrag_postgres="postgres://mnote@127.0.0.1:1/mnote_lightrag",
                         lightrag_python=Path(sys.executable))  # fmt: skip
    with pytest.raises(StackError, match="no pgvector.*postgresql-17-pgvector.*make install-postgres"):
        EmbeddedStack(config).prepare()
