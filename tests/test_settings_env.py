from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from mnote.env import env_bool, env_int, env_list, env_path


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


def test_it_keeps_the_database_and_the_data_folder_from_other_users(tmp_path):
    """The registry names every file of every root: data/mnote.sqlite3 is
    created 0600 and the data folder 0700, and a migrated database too."""
    import os
    import subprocess
    import sys

    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNOTE_", "DATABASE_URL"))}
    env.update(MNOTE_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="mnote.settings")
    repo = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=repo, env=env, check=True, timeout=120)
    assert (data / "mnote.sqlite3").stat().st_size > 0
    assert (data / "mnote.sqlite3").stat().st_mode & 0o777 == 0o600
    assert data.stat().st_mode & 0o777 == 0o700

    # An older install's world-readable files are made private at the next start.
    (data / "mnote.sqlite3").chmod(0o644)
    data.chmod(0o755)
    subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=repo, env=env, check=True, timeout=60)
    assert (data / "mnote.sqlite3").stat().st_mode & 0o777 == 0o600
    assert data.stat().st_mode & 0o777 == 0o750
