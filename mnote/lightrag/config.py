"""Where MNote finds its LightRAG server, with which key, and where its folders are.

Standard library only: Django settings import this module.

Each value is taken from the first place that sets it (blank counts as unset):

    api key      MNOTE_LIGHTRAG_API_KEY     > .env LIGHTRAG_API_KEY > LIGHTRAG_API_KEY > none
    input dir    MNOTE_LIGHTRAG_INPUT_DIR   > .env INPUT_DIR        > INPUT_DIR        > default
    working dir  MNOTE_LIGHTRAG_WORKING_DIR > .env WORKING_DIR      > WORKING_DIR      > default
    URL          MNOTE_LIGHTRAG_URL         > .env HOST/PORT/SSL                       > default

MNOTE_LIGHTRAG_URL may name several servers sharing one storage, separated by
commas: the first takes the document calls, queries take turns among all.

".env" is the LightRAG server's own file, named by MNOTE_LIGHTRAG_ENV_FILE. It
beats the generic variables because a LIGHTRAG_API_KEY left in MNote's
environment is usually stale, while the file is what the server really reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

NO_LLM_MODEL = "mnote-no-llm"
"""Model name announced by our embedded stack's stub chat endpoint: no LLM, retrieval only."""

LIGHTRAG_DEFAULT_PORT = 9621


class ImproperlyConfiguredLightRAG(ValueError):
    """A LightRAG setting is present but unusable (settings turn it into ImproperlyConfigured)."""


@dataclass(frozen=True)
class LightRAGConfig:
    base_url: str
    api_key: str | None = field(repr=False)
    input_dir: Path
    working_dir: Path
    env_file: Path | None
    sources: dict[str, str]
    """Per field name, where its value came from, e.g. "MNOTE_LIGHTRAG_URL" or "default"."""
    query_urls: tuple[str, ...] = ()
    """Every server queries take turns on, ``base_url`` first; empty: ``base_url`` alone."""


def load_config(
    environ: Mapping[str, str],
    *,
    default_url: str,
    default_input_dir: Path,
    default_working_dir: Path,
) -> LightRAGConfig:
    env_file = _env_file_path(environ)
    server_env = read_dotenv(env_file) if env_file else {}

    def first_set(mnote_name: str, server_name: str) -> tuple[str | None, str, bool]:
        """The value, where it came from, and whether that was LightRAG's .env file."""
        # The generic variable has the same name as the key in LightRAG's .env.
        candidates = (
            (environ.get(mnote_name), mnote_name, False),
            (server_env.get(server_name), f"{env_file}: {server_name}", True),
            (environ.get(server_name), server_name, False),
        )
        for value, source, from_server_env in candidates:
            if value is None or not value.strip():
                continue
            if from_server_env and "${" in value:
                raise ImproperlyConfiguredLightRAG(
                    f"{env_file}: {server_name} uses ${{...}} interpolation, which MNote "
                    f"does not expand; write the value out or set {mnote_name}."
                )
            return value.strip(), source, from_server_env
        return None, "default", False

    def directory(mnote_name: str, server_name: str, default: Path) -> tuple[Path, str]:
        value, source, from_server_env = first_set(mnote_name, server_name)
        if value is None:
            return Path(default), source
        path = Path(value).expanduser()
        # LightRAG reads its .env from its working directory, so relative paths there
        # are relative to the file's folder, not to MNote's.
        if from_server_env and not path.is_absolute():
            path = env_file.parent / path
        return path, source

    api_key, api_key_source, _ = first_set("MNOTE_LIGHTRAG_API_KEY", "LIGHTRAG_API_KEY")
    input_dir, input_dir_source = directory("MNOTE_LIGHTRAG_INPUT_DIR", "INPUT_DIR", default_input_dir)
    working_dir, working_dir_source = directory(
        "MNOTE_LIGHTRAG_WORKING_DIR", "WORKING_DIR", default_working_dir
    )
    query_urls, base_url_source = _base_urls(environ, server_env, env_file, default_url)

    return LightRAGConfig(
        base_url=query_urls[0],
        query_urls=query_urls if len(query_urls) > 1 else (),
        api_key=api_key,
        input_dir=input_dir,
        working_dir=working_dir,
        env_file=env_file,
        sources={
            "base_url": base_url_source,
            "api_key": api_key_source if api_key else "not set",
            "input_dir": input_dir_source,
            "working_dir": working_dir_source,
            "env_file": "MNOTE_LIGHTRAG_ENV_FILE" if env_file else "not set",
        },
    )


def _env_file_path(environ: Mapping[str, str]) -> Path | None:
    value = (environ.get("MNOTE_LIGHTRAG_ENV_FILE") or "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise ImproperlyConfiguredLightRAG(
            f"MNOTE_LIGHTRAG_ENV_FILE is {value!r}, but there is no file at {path}."
        )
    return path


def _base_urls(
    environ: Mapping[str, str],
    server_env: Mapping[str, str],
    env_file: Path | None,
    default_url: str,
) -> tuple[tuple[str, ...], str]:
    explicit = (environ.get("MNOTE_LIGHTRAG_URL") or "").strip()
    if explicit:
        urls = tuple(dict.fromkeys(_checked_url(url.strip(), "MNOTE_LIGHTRAG_URL") for url in explicit.split(",")))
        return urls, "MNOTE_LIGHTRAG_URL"

    host = (server_env.get("HOST") or "").strip()
    port = (server_env.get("PORT") or "").strip()
    if env_file and (host or port):
        source = f"{env_file}: HOST/PORT"
        return (_url_of_server(host, port, server_env.get("SSL", ""), source),), source

    return (_checked_url(default_url, "the default LightRAG URL"),), "default"


def _url_of_server(host: str, port: str, ssl: str, source: str) -> str:
    # A wildcard bind listens on loopback too; we cannot connect to the wildcard itself.
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host in ("::", "[::]"):
        host = "[::1]"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    port = port or str(LIGHTRAG_DEFAULT_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ImproperlyConfiguredLightRAG(f"{source}: PORT must be a number from 1 to 65535, got {port!r}.")
    # Same truthy spellings as LightRAG's get_env_value(..., bool).
    scheme = "https" if ssl.strip().lower() in ("true", "1", "yes", "t", "on") else "http"
    return _checked_url(f"{scheme}://{host}:{port}", source)


def _checked_url(url: str, source: str) -> str:
    example = "such as http://127.0.0.1:9621"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ImproperlyConfiguredLightRAG(f"{source} must be an http(s) URL {example}, got {url!r}.")
    if parts.query or parts.fragment:
        raise ImproperlyConfiguredLightRAG(f"{source} must not have a query or fragment, got {url!r}.")
    try:
        parts.port
    except ValueError as e:
        raise ImproperlyConfiguredLightRAG(f"{source} has an invalid port, got {url!r}.") from e
    return url.rstrip("/")


# --- A small dotenv reader -------------------------------------------------------
#
# Follows python-dotenv, which LightRAG uses to read the same file:
#   KEY=value, optionally prefixed by "export "; blank lines and "# ..." lines ignored;
#   unquoted values end at " #" (whitespace then #) and are stripped;
#   'single' quotes are literal except \' and \\; "double" quotes also understand
#   \" \n \t \r \a \b \f \v (any other backslash is kept); quoted values may span lines;
#   a statement that cannot be parsed is skipped, as python-dotenv skips it;
#   the last assignment of a key wins.
# Not supported: ${VAR} interpolation (python-dotenv expands it; we leave it as is,
# and load_config refuses such a value for the keys it reads).

_ASSIGNMENT = re.compile(r"[ \t]*(?:export[ \t]+)?(?P<key>[A-Za-z_][A-Za-z0-9_.]*)[ \t]*=[ \t]*")
_AFTER_CLOSING_QUOTE = re.compile(r"[ \t]*(?:#[^\n]*)?(?:\n|$)")
_INLINE_COMMENT = re.compile(r"\s+#.*")
_DOUBLE_QUOTED_ESCAPE = re.compile(r"""\\([\\'"abfnrtv])""")
_SINGLE_QUOTED_ESCAPE = re.compile(r"\\([\\'])")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def read_dotenv(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ImproperlyConfiguredLightRAG(f"Cannot read LightRAG's env file {path}: {e}") from e
    return parse_dotenv(text)


def parse_dotenv(text: str) -> dict[str, str]:
    text = text.replace("\r\n", "\n")
    values: dict[str, str] = {}
    position = 0
    while position < len(text):
        line_end = text.find("\n", position)
        if line_end == -1:
            line_end = len(text)
        assignment = _ASSIGNMENT.match(text, position, line_end)
        if assignment is None:
            position = line_end + 1
            continue

        value_start = assignment.end()
        quote = text[value_start : value_start + 1]
        if quote in ("'", '"'):
            closing = _closing_quote(text, value_start + 1, quote)
            rest = _AFTER_CLOSING_QUOTE.match(text, closing + 1) if closing != -1 else None
            if rest is None:
                position = line_end + 1
                continue
            raw = text[value_start + 1 : closing]
            if quote == '"':
                value = _DOUBLE_QUOTED_ESCAPE.sub(lambda escape: _ESCAPES.get(escape[1], escape[1]), raw)
            else:
                value = _SINGLE_QUOTED_ESCAPE.sub(r"\1", raw)
            position = rest.end()
        else:
            value = _INLINE_COMMENT.sub("", text[value_start:line_end]).strip()
            position = line_end + 1
        values[assignment["key"]] = value
    return values


def _closing_quote(text: str, start: int, quote: str) -> int:
    index = start
    while index < len(text):
        character = text[index]
        if character == "\\":
            index += 2
            continue
        if character == quote:
            return index
        index += 1
    return -1
