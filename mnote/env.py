"""Typed readers for settings that come from the environment.

Each helper fails loudly on a value it cannot use: a typo in a deployment's
environment must stop the app at start-up, not silently fall back.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "", environ: Mapping[str, str] = os.environ) -> str:
    return environ.get(name, default).strip()


def env_bool(name: str, default: bool, environ: Mapping[str, str] = os.environ) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off).")


def env_int(name: str, default: int, environ: Mapping[str, str] = os.environ, *, minimum: int | None = None) -> int:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError as e:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from e
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_list(name: str, default: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    raw = environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_path(name: str, default: Path, environ: Mapping[str, str] = os.environ) -> Path:
    raw = environ.get(name, "").strip()
    path = Path(raw).expanduser() if raw else default
    if not path.is_absolute():
        raise ImproperlyConfigured(f"{name}={raw!r} must be an absolute path.")
    return path


def env_base_url(name: str, environ: Mapping[str, str] = os.environ) -> str:
    """An origin, ``http(s)://host[:port]`` without a path (a trailing slash is
    dropped); "" when unset. Links are built as this plus the app's own paths."""
    raw = environ.get(name, "").strip()
    if not raw:
        return ""
    parts = urlsplit(raw)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as e:
        raise ImproperlyConfigured(f"{name}={raw!r} has a port that is not a number.") from e
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise ImproperlyConfigured(f"{name}={raw!r} must be an http:// or https:// address, e.g. https://library.example.com.")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ImproperlyConfigured(
            f"{name}={raw!r} must be the site's address without a path (the app's own paths are added to it)."
        )
    return f"{parts.scheme}://{parts.netloc}"


def postgres_options(environ: Mapping[str, str] = os.environ) -> dict:
    """Connection options for PostgreSQL. Server-side binding lets psycopg
    prepare a statement a connection runs again and again (each search's token
    and visibility queries): PostgreSQL then skips parsing and planning it,
    1.26 ms of its CPU per query down to 0.19 ms (bench/scale_bench.py's
    search query, measured). A pooler that cannot keep prepared statements
    (PgBouncer in transaction mode) needs MNOTE_DATABASE_PREPARED=false."""
    if not env_bool("MNOTE_DATABASE_PREPARED", True, environ):
        return {}
    # Django turns psycopg's prepared statements off unless told a threshold
    # (runs of one statement on a connection before it is prepared).
    return {"server_side_binding": True, "prepare_threshold": 5}
