import os

from django.core.management.base import BaseCommand, CommandError

from mnote.api.models import ApiToken


class Command(BaseCommand):
    help = (
        "Serve MNote's MCP tools (status, search, query, open_reference) over stdio for a local agent, "
        "as the user of an API token (--token, or MNOTE_API_TOKEN)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--token", default="", help="An API token; prefer MNOTE_API_TOKEN, which ps does not show.")

    def handle(self, *args, token, **options):
        from mnote.api import mcp_server

        key = token or os.environ.get("MNOTE_API_TOKEN", "")
        found = ApiToken.objects.authenticate(key.strip())
        if found is None:
            raise CommandError("Give a valid API token with --token or MNOTE_API_TOKEN (manage.py create_api_token USER).")
        # stdout carries the protocol: nothing else may be written to it.
        mcp_server.asker.set(found.user)
        mcp_server.server.run("stdio")
