"""The MCP server, called by the official MCP client (the ``mcp`` SDK) over
streamable HTTP at /mcp and over stdio (``manage.py mcp_stdio``): the JSON
API's tools and schemas, bearer tokens, and a restricted root that stays
invisible to a member's token."""

import json
from contextlib import asynccontextmanager
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from mnote.api.models import ApiToken
from tests.factories import add_gamma, restricted_root
from tests.lightrag_fakes import QUERY
from tests.own_loop import run_on_own_loop
from tests.paths import REPO_DIR

TOOLS = {"status", "search", "query", "open_reference"}


async def _session_calls(open_transport, calls):
    async with open_transport() as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
            return names, results


def run_client(transport, calls):
    """The client's own event loop in a thread of its own: Playwright's sync
    API may keep one running in the test thread."""
    return run_on_own_loop(_session_calls, transport, list(calls), timeout=300)


def over_http(url: str, key: str, *calls):
    @asynccontextmanager
    async def transport():
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                yield streams

    return run_client(transport, calls)


def payload(result) -> dict:
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


@pytest.fixture
def vault(transactional_db, lightrag_dirs):
    root = restricted_root("Vault", "vault", group="facilities")
    return add_gamma(root, lightrag_dirs)


def test_the_tools_answer_over_http_with_the_json_apis_schemas_and_hide_a_restricted_root(
    live_server, with_llm, vault, member, admin_user
):
    url = f"{live_server.url}/mcp"
    _, member_key = ApiToken.objects.create_token(member, "agent")
    _, admin_key = ApiToken.objects.create_token(admin_user, "agent")

    names, (status, found, answered) = over_http(
        url, member_key, ("status", {}), ("search", {"query": QUERY, "mode": "naive"}), ("query", {"query": QUERY})
    )
    assert names == TOOLS
    assert payload(status)["schema"] == "mnote.library.status.v1" and payload(status)["registry"]["total"] == 0
    assert payload(found)["schema"] == "mnote.knowledge_rag.search_results.v1" and payload(found)["results"] == []
    answer = payload(answered)
    assert answer["schema"] == "mnote.knowledge_rag.agent_query_result.v1" and answer["citations"] == []
    assert "gamma" not in json.dumps([payload(found), answer]).lower()

    _, (found, answered) = over_http(url, admin_key, ("search", {"query": QUERY}), ("query", {"query": QUERY}))
    [citation] = payload(found)["results"]
    assert citation["fileName"] == "gamma.docx" and "rawQuote" not in citation
    # A link the agent can hand its user; the result once, as compact JSON text (no structured copy).
    assert citation["citationUrl"].startswith(f"{live_server.url}/c/r/")
    assert found.structuredContent is None and len(found.content) == 1 and "\n" not in found.content[0].text
    assert payload(answered)["answer"]["kind"] == "llm"
    _, (opened, verbose) = over_http(
        url, admin_key, ("open_reference", {"citationUrl": citation["citationUrl"]}), ("search", {"query": QUERY, "verbose": True})
    )
    assert payload(opened)["sourcePath"] == "vault/gamma.docx"
    assert payload(opened)["previewUrl"].startswith(f"{live_server.url}/preview/")
    [raw] = payload(verbose)["results"]
    assert raw["lightragFilePath"] == "gamma.docx" and "lightragFilePath" not in citation
    _, (refused,) = over_http(url, member_key, ("open_reference", {"citationUrl": citation["citationUrl"]}))
    assert refused.isError and "not_found" in refused.content[0].text


def jsonrpc_error(response, request_id=None) -> dict:
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id and set(body["error"]) == {"code", "message", "data"}
    return body["error"]


def test_http_refuses_a_missing_or_revoked_token_with_a_jsonrpc_error(live_server, transactional_db, member, client):
    token, key = ApiToken.objects.create_token(member)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    missing = client.post("/mcp", body, content_type="application/json")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    assert jsonrpc_error(missing, request_id=1)["data"]["code"] == "unauthorized"  # it answers the request
    token.delete()
    refused = client.post("/mcp", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert refused.status_code == 401 and "unknown or revoked" in jsonrpc_error(refused, request_id=1)["message"]
    wrong_method = client.get("/mcp", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert wrong_method.status_code == 405 and wrong_method["Allow"] == "POST"
    assert jsonrpc_error(wrong_method)["data"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("depth", [33, 100_000])
def test_http_refuses_deeply_nested_json_as_the_api_does(transactional_db, member, client, depth):
    _, key = ApiToken.objects.create_token(member)
    nested = "[" * depth + "]" * depth
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": %s}}' % nested
    response = client.post("/mcp", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 400
    error = jsonrpc_error(response)
    assert error["code"] == -32700 and "nested too deeply" in error["message"]
    assert client.post("/api/search", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 400


def _manage(env, *args, stdin: str | None = None):
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO_DIR, env=env, input=stdin, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


SETUP = """
from django.contrib.auth.models import Group, User
from mnote.api.models import ApiToken
from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot, Source

member = User.objects.create_user("mia")
admin = User.objects.create_user("ada", is_staff=True)
root = IndexedRoot.objects.create(name="Vault", path="vault", visible_to_all=False)
root.visible_to_groups.add(Group.objects.create(name="facilities"))
source = Source.objects.create(root=root, relative_path="secret.md", absolute_path="/x/vault/secret.md", sha256="a" * 64,
                               lightrag_name="secret.md", lightrag_doc_id="doc-1", status="indexed")
cited = Citation.objects.create(source=source, source_sha256="a" * 64, chunk_id="doc-1-chunk-000", source_path="vault/secret.md",
                                precision="file", locator={}, display_quote="The vault combination is 4471.")
print(ApiToken.objects.create_token(member)[1], ApiToken.objects.create_token(admin)[1], cited.token)
"""


def test_the_tools_answer_over_stdio_as_the_tokens_user(tmp_path):
    env = {
        **os.environ,
        "MNOTE_DATA_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'mnote.sqlite3'}",
        "MNOTE_LIGHTRAG_URL": "http://127.0.0.1:9",  # nothing listens: status says so
        "MNOTE_LIGHTRAG_ENV_FILE": "",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # the command must not need it
    _manage(env, "migrate", "--no-input")
    member_key, admin_key, citation = _manage(env, "shell", stdin=SETUP).split()[-3:]

    def over_stdio(key, *calls, **more_env):
        parameters = StdioServerParameters(
            command=sys.executable,
            args=[str(REPO_DIR / "manage.py"), "mcp_stdio"],
            env={**env, "MNOTE_API_TOKEN": key, **more_env},
            cwd=str(tmp_path),  # any working folder: the data folder is named
        )
        return run_client(lambda: stdio_client(parameters), calls)

    names, (status, refused) = over_stdio(member_key, ("status", {}), ("open_reference", {"token": citation}))
    assert names == TOOLS
    assert payload(status)["registry"]["total"] == 0 and payload(status)["lightrag"]["healthy"] is False
    assert refused.isError and "4471" not in refused.content[0].text
    _, (status, opened) = over_stdio(
        admin_key, ("status", {}), ("open_reference", {"token": citation}), MNOTE_PUBLIC_URL="https://library.example.com"
    )
    assert payload(status)["registry"]["total"] == 1
    assert payload(opened)["displayQuote"] == "The vault combination is 4471."
    assert payload(opened)["citationUrl"] == f"https://library.example.com/c/{citation}"


def _stdio_refusal(env) -> tuple[str, str]:
    """What the official client is told when the stdio server refuses to
    start, and what the server wrote on stderr."""
    from mcp.shared.exceptions import McpError

    elsewhere = Path(env["MNOTE_DATA_DIR"]).parent
    parameters = StdioServerParameters(
        command=sys.executable, args=[str(REPO_DIR / "manage.py"), "mcp_stdio"], env=env, cwd=str(elsewhere)
    )
    errlog = elsewhere / "stderr.txt"
    with errlog.open("w") as stderr:
        try:
            run_client(lambda: stdio_client(parameters, errlog=stderr), [])
        except BaseException as e:  # the client's task group wraps it
            refused = e
            while isinstance(refused, BaseExceptionGroup) and len(refused.exceptions) == 1:
                refused = refused.exceptions[0]
        else:
            pytest.fail("the server started")
    assert isinstance(refused, McpError), refused
    return str(refused), errlog.read_text()


def test_stdio_without_a_database_says_where_it_looked_and_creates_nothing(tmp_path):
    data = tmp_path / "data"
    env = {**os.environ, "MNOTE_DATA_DIR": str(data), "MNOTE_API_TOKEN": "mnote_x", "MNOTE_LIGHTRAG_ENV_FILE": ""}
    env.pop("DATABASE_URL", None)
    told, stderr = _stdio_refusal(env)
    assert f"No MNote database at {data / 'mnote.sqlite3'}" in told and "MNOTE_DATA_DIR" in told
    assert "No MNote database" in stderr and "Traceback" not in stderr
    assert not data.exists()


def test_stdio_with_a_bad_token_says_so(tmp_path):
    env = {
        **os.environ,
        "MNOTE_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'data' / 'mnote.sqlite3'}",
        "MNOTE_LIGHTRAG_ENV_FILE": "",
    }
    _manage(env, "migrate", "--no-input")
    told, stderr = _stdio_refusal({**env, "MNOTE_API_TOKEN": "mnote_not_a_token"})
    assert "The API token is missing, unknown or revoked" in told and "Traceback" not in stderr
