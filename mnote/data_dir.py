"""MNote's data folder and the files a local install keeps in it: the
generated secret key and the SQLite database.

Importing the settings only reads them. A process that serves or changes
the library creates them, owner-only, when it starts: ``manage.py`` (every
management command, ``make run``'s ``run_stack`` among them) and
``mnote.wsgi`` (the web processes) call :func:`prepare_data_dir` before
Django loads the settings, so the settings find the key the first start made.
"""

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from mnote.env import env_path, env_str
from mnote.private_files import make_private_dir, make_private_file, write_private_file

BASE_DIR = Path(__file__).resolve().parent.parent


def data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return env_path("MNOTE_DATA_DIR", BASE_DIR / "data", environ)


def sqlite_path(data: Path) -> Path:
    return data / "mnote.sqlite3"


def _secret_key_path(data: Path) -> Path:
    return data / "secret_key"


def stored_secret_key(data: Path) -> str | None:
    """The key the first start generated, or None before there was one."""
    try:
        return _secret_key_path(data).read_text().strip() or None
    except FileNotFoundError:
        return None


def prepare_data_dir(environ: Mapping[str, str] = os.environ) -> None:
    """Create the data folder (0700), a secret key unless MNOTE_SECRET_KEY
    sets one, and the SQLite file unless DATABASE_URL names another database;
    an older install's files that others may read are made owner-only."""
    data = data_dir(environ)
    make_private_dir(data)
    # A local install keeps one generated key so sessions survive restarts
    # and every process of the stack signs alike; production sets MNOTE_SECRET_KEY.
    if not env_str("MNOTE_SECRET_KEY", environ=environ) and stored_secret_key(data) is None:
        _create_secret_key(_secret_key_path(data))
    if not env_str("DATABASE_URL", environ=environ):
        # Created here, owner-only, rather than by SQLite with the umask's 0644.
        make_private_file(sqlite_path(data))


def _create_secret_key(path: Path) -> None:
    # Written whole beside it, then linked into place: of two processes that
    # start at once, the first one's key stays and both read that one.
    draft = path.with_name(f".{path.name}.{os.getpid()}.draft")
    write_private_file(draft, secrets.token_urlsafe(50))
    try:
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        draft.unlink()
