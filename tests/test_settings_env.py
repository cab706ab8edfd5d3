from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from mnote.env import env_base_url, env_bool, env_int, env_list, env_path
from tests.paths import REPO_DIR as REPO


def test_it_reads_booleans_and_refuses_anything_else():
    assert env_bool("X", False, {"X": "yes"}) is True
    assert env_bool("X", True, {"X": "0"}) is False
    assert env_bool("X", True, {}) is True
    with pytest.raises(ImproperlyConfigured, match="X='maybe' is not a boolean"):
        env_bool("X", False, {"X": "maybe"})


def test_it_refuses_a_non_integer_or_too_small_number():
    assert env_int("N", 200, {}) == 200
    assert env_int("N", 200, {"N": "50"}) == 50
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("N", 200, {"N": "lots"})
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("N", 200, {"N": "0"}, minimum=1)


def test_it_splits_lists_on_commas():
    assert env_list("H", ["a"], {"H": "x.example, y.example ,"}) == ["x.example", "y.example"]
    assert env_list("H", ["a"], {}) == ["a"]


def test_it_refuses_a_relative_path():
    assert env_path("P", Path("/d"), {}) == Path("/d")
    with pytest.raises(ImproperlyConfigured, match="must be an absolute path"):
        env_path("P", Path("/d"), {"P": "relative/dir"})


def test_it_reads_a_public_url_as_an_origin_and_refuses_anything_else():
    assert env_base_url("U", {}) == ""
    assert env_base_url("U", {"U": " https://library.example.com/ "}) == "https://library.example.com"
    assert env_base_url("U", {"U": "http://10.0.0.5:8000"}) == "http://10.0.0.5:8000"
    for bad, why in [
        ("library.example.com", "must be an http:// or https:// address"),
        ("ftp://library.example.com", "must be an http:// or https:// address"),
        ("https://user:pw@library.example.com", "must be an http:// or https:// address"),
        ("https://library.example.com/mnote", "without a path"),
        ("https://library.example.com/?x=1", "without a path"),
        ("https://library.example.com:80x", "port that is not a number"),
    ]:
        with pytest.raises(ImproperlyConfigured, match=why):
            env_base_url("U", {"U": bad})


def _clean_env(data: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNOTE_", "DATABASE_URL"))}
    env.update(MNOTE_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="mnote.settings")
    return env




def test_importing_the_settings_writes_nothing(tmp_path):
    """A tool, a test session or a script that loads the settings (and the
    apps) over an empty data folder leaves it empty: no key file, no database."""
    import subprocess
    import sys

    # A data folder not made yet, inside an empty one: neither gains anything.
    empty = tmp_path / "empty"
    empty.mkdir()
    code = "import django; django.setup(); from django.conf import settings; assert len(settings.SECRET_KEY) > 40"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=_clean_env(empty / "data"), check=True, timeout=60)
    assert list(empty.iterdir()) == []


def test_a_first_start_makes_the_data_folder_key_and_database_owner_only(tmp_path):
    """The registry names every file of every root: data/mnote.sqlite3 is
    created 0600 and the data folder 0700, and a migrated database too. The
    first start (make run: migrate, ensure_admin) makes one secret key that
    every later process reads."""
    import subprocess
    import sys

    data = tmp_path / "data"
    env = _clean_env(data)

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=env, check=True, timeout=120, capture_output=True, text=True
        )
        return done.stdout

    manage("migrate", "-v", "0")
    assert "Created the first admin" in manage("ensure_admin")
    assert (data / "mnote.sqlite3").stat().st_size > 0
    assert (data / "mnote.sqlite3").stat().st_mode & 0o777 == 0o600
    assert data.stat().st_mode & 0o777 == 0o700
    key = (data / "secret_key").read_text().strip()
    assert len(key) > 40 and (data / "secret_key").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in data.iterdir()) == ["first-admin.txt", "mnote.sqlite3", "secret_key"]

    # An older install's world-readable files are made private at the next
    # start of a web process (gunicorn mnote.wsgi), which keeps the same key.
    (data / "mnote.sqlite3").chmod(0o644)
    data.chmod(0o755)
    restarted = subprocess.run(
        [sys.executable, "-c", "import mnote.wsgi; from django.conf import settings; print(settings.SECRET_KEY)"],
        cwd=REPO, env=env, check=True, timeout=60, capture_output=True, text=True,
    )
    assert restarted.stdout.strip() == key
    assert (data / "mnote.sqlite3").stat().st_mode & 0o777 == 0o600
    assert data.stat().st_mode & 0o777 == 0o750


def test_a_web_process_started_on_its_own_makes_the_key_it_signs_with(tmp_path):
    import subprocess
    import sys

    data = tmp_path / "data"
    code = "import mnote.wsgi; from django.conf import settings; print(settings.SECRET_KEY)"
    signed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=_clean_env(data), check=True, timeout=60, capture_output=True, text=True
    ).stdout.strip()
    assert signed == (data / "secret_key").read_text().strip()
    with_key = {**_clean_env(tmp_path / "set"), "MNOTE_SECRET_KEY": "from-the-environment", "DATABASE_URL": "postgres://x@127.0.0.1/y"}
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=with_key, check=True, timeout=60, capture_output=True)
    # Production sets its key and database: only the (empty) data folder is made.
    assert list((tmp_path / "set").iterdir()) == []
