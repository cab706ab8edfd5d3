import json
import os
import select
import sys
from typing import NoReturn

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection

from mnote.api.models import ApiToken
from mnote.data_dir import stored_secret_key
from mnote.env import env_str
from mnote.json_errors import JSONRPC_UNAUTHORIZED

# How long a refusing server waits for the client's first request, to answer
# it with the reason (a client shows a JSON-RPC error; a closed pipe it shows
# only as "Connection closed").
FIRST_REQUEST_WAIT_S = 10


class Command(BaseCommand):
    help = (
        "Serve MNote's MCP tools (status, search, query, open_reference) over stdio for a local agent, "
        "as the user of an API token (--token, or MNOTE_API_TOKEN). It reads the library of a running "
        "MNote: set MNOTE_DATA_DIR (or DATABASE_URL) as that MNote has it, and MNOTE_PUBLIC_URL for links "
        "an agent can hand on."
    )

    # The checks open the database, which SQLite would create, empty, if it
    # is not there: the command checks what it needs itself, first.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--token", default="", help="An API token; prefer MNOTE_API_TOKEN, which ps does not show.")

    def handle(self, *args, token, **options):
        from mnote.api import mcp_server

        problem = _database_problem()
        if problem:
            _refuse(problem)
        key = token or os.environ.get("MNOTE_API_TOKEN", "")
        found = ApiToken.objects.authenticate(key.strip())
        if found is None:
            _refuse(
                "The API token is missing, unknown or revoked, or its user is inactive. Give a token from the "
                "API tokens page with MNOTE_API_TOKEN (or --token); `manage.py create_api_token USER` makes one. "
                f"Looked it up in {_database_name()}."
            )
        if not settings.MNOTE_PUBLIC_URL:
            sys.stderr.write(
                "MNote MCP (stdio): MNOTE_PUBLIC_URL is not set, so citation links are relative (/c/…) and an "
                "agent cannot hand them on; set it to the web app's address, e.g. https://library.example.com.\n"
            )
        # stdout carries the protocol: nothing else may be written to it.
        mcp_server.asker.set(found.user)
        mcp_server.links_base.set(settings.MNOTE_PUBLIC_URL)
        mcp_server.server.run("stdio")


def _database_name() -> str:
    return str(settings.DATABASES["default"]["NAME"])


def _database_problem() -> str:
    """Why the library cannot be read here, or "". Never creates a file:
    SQLite would make an empty database just by being opened."""
    where = (
        "Set MNOTE_DATA_DIR to the data folder of the MNote you run (and DATABASE_URL if it uses one), "
        "as in the configuration on its API tokens page."
    )
    if connection.vendor == "sqlite":
        path = _database_name()
        if not os.path.isfile(path):
            return f"No MNote database at {path}. {where}"
    try:
        with connection.cursor() as cursor:
            tables = connection.introspection.table_names(cursor)
    except DatabaseError as e:
        return f"Cannot open MNote's database {_database_name()}: {e}. {where}"
    if ApiToken._meta.db_table not in tables:
        return f"The database {_database_name()} holds no MNote library (never migrated). {where}"
    if not env_str("MNOTE_SECRET_KEY") and stored_secret_key(settings.DATA_DIR) is None:
        return (
            f"No secret key in {settings.DATA_DIR} and no MNOTE_SECRET_KEY: the links this server gives would not "
            f"open in the web app. {where}"
        )
    return ""


def _refuse(message: str) -> NoReturn:
    """Say why on stderr, and as the JSON-RPC error of the client's first
    request on stdout (the client shows it), then stop."""
    sys.stderr.write(f"MNote MCP (stdio): {message}\n")
    sys.stderr.flush()
    ready, _, _ = select.select([sys.stdin], [], [], FIRST_REQUEST_WAIT_S)
    if ready:
        line = sys.stdin.readline()
        try:
            request = json.loads(line)
        except ValueError:
            request = None
        if isinstance(request, dict) and "id" in request:
            error = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": JSONRPC_UNAUTHORIZED, "message": message}}
            sys.stdout.write(json.dumps(error, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    raise SystemExit(2)
