"""MNote Library as an MCP server, built on the official ``mcp`` SDK.

Four tools — ``status``, ``search``, ``query``, ``open_reference`` — answer
exactly what the JSON API answers (``mnote.library.status.v1``,
``mnote.knowledge_rag.search_results.v1``, ``…agent_query_result.v1`` and the
open-reference object), through the same functions, for the user an API
token belongs to: only mapped citations the user may see, never raw chunks.

Two transports: streamable HTTP at ``/mcp`` (stateless, JSON responses, the
bearer tokens of the JSON API), served by a Django view that hands each
request to the SDK's session manager; and stdio, by ``manage.py mcp_stdio``.
"""

import contextvars
import json
from typing import Annotated, Any, Literal

import anyio
from asgiref.sync import sync_to_async
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import Field

from mnote.api.endpoint import ApiError, validated
from mnote.api.forms import OpenReferenceForm, QueryForm, SearchForm
from mnote.lightrag import QUERY_MODES, LightRAGError

# The user whose token opened this MCP request or stdio session.
asker: contextvars.ContextVar = contextvars.ContextVar("mnote_mcp_asker")
# What the tools' links start with (``mnote.api.links.link_base``): the
# request's or MNOTE_PUBLIC_URL over HTTP, MNOTE_PUBLIC_URL over stdio.
links_base: contextvars.ContextVar = contextvars.ContextVar("mnote_mcp_links_base", default="")

server = FastMCP(
    "MNote Library",
    instructions=(
        "Search and ask a team's document library. Every result is a citation with a short id, "
        "a quote and a citationUrl that opens the original file at the cited passage; cite those, "
        "never invent ids. search gives citations only; query gives an answer whose sentences carry "
        "citation ids; open_reference tells where a citation URL points now."
    ),
)

Mode = Literal[QUERY_MODES]
VERBOSE = "Also LightRAG's raw fields (ids, locator, evidence text, diagnostics) per citation; several times larger."


def _run(work, *args) -> str:
    """Run one tool's work as the asker; the API's errors become tool errors.
    The result is one compact JSON text: the SDK's structured copy beside it
    would send every quote twice, and its own text is indented."""
    try:
        result = work(asker.get(), *args)
    except ApiError as e:
        raise ToolError(f"{e.code}: {e.message}") from e
    except LightRAGError as e:
        raise ToolError(f"lightrag_unavailable: {e}") from e
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def _arguments(**values) -> dict:
    return {name: value for name, value in values.items() if value is not None}


def _status(user) -> dict:
    from mnote.api.views import status_result

    return status_result(user)


def _search(user, data: dict) -> dict:
    from mnote.api.views import search_result

    return search_result(user, validated(SearchForm, data), links_base.get())


def _query(user, data: dict) -> dict:
    from mnote.api.views import _search_arguments, query_result
    from mnote.search.answers import answer_question

    params = validated(QueryForm, data)
    answer = answer_question(
        user, params["query"], history=params["conversationHistory"] or None, **_search_arguments(params)
    )
    return query_result(answer, links_base.get(), params["verbose"])


def _open_reference(user, data: dict) -> dict:
    from mnote.api.views import reference_result

    return reference_result(user, validated(OpenReferenceForm, data), links_base.get())


# Tools run the ORM through sync_to_async: in the thread of the Django
# request (HTTP) or in asgiref's one worker thread (stdio), never in the event loop.


@server.tool(
    name="status",
    description="LightRAG's health and the library's counts (mnote.library.status.v1).",
    structured_output=False,
)
async def status() -> str:
    return await sync_to_async(_run)(_status)


@server.tool(
    name="search",
    description="Full-library search: LightRAG's references as citations, no answer "
    "(mnote.knowledge_rag.search_results.v1). Each citation has an absolute citationUrl to give the user.",
    structured_output=False,
)
async def search(
    query: Annotated[str, Field(min_length=1, max_length=1000)],
    mode: Mode | None = None,
    topK: Annotated[int | None, Field(ge=1, le=200)] = None,
    chunkTopK: Annotated[int | None, Field(ge=1, le=100)] = None,
    sourcePaths: Annotated[list[str] | None, Field(max_length=50, description="Library paths of files or folders.")] = None,
    enableRerank: bool | None = None,
    verbose: Annotated[bool | None, Field(description=VERBOSE)] = None,
) -> str:
    data = _arguments(
        query=query,
        mode=mode,
        topK=topK,
        chunkTopK=chunkTopK,
        sourcePaths=sourcePaths,
        enableRerank=enableRerank,
        verbose=verbose,
    )
    return await sync_to_async(_run)(_search, data)


@server.tool(
    name="query",
    description="An answer whose sentences carry citation ids, with those citations "
    "(mnote.knowledge_rag.agent_query_result.v1). Pass earlier turns as conversationHistory to follow up.",
    structured_output=False,
)
async def query(
    query: Annotated[str, Field(min_length=1, max_length=1000)],
    mode: Mode | None = None,
    topK: Annotated[int | None, Field(ge=1, le=200)] = None,
    chunkTopK: Annotated[int | None, Field(ge=1, le=100)] = None,
    sourcePaths: Annotated[list[str] | None, Field(max_length=50)] = None,
    enableRerank: bool | None = None,
    conversationHistory: Annotated[
        list[dict[str, str]] | None, Field(max_length=20, description='[{"role": "user"|"assistant", "content": "…"}]')
    ] = None,
    verbose: Annotated[bool | None, Field(description=VERBOSE)] = None,
) -> str:
    data = _arguments(
        query=query,
        mode=mode,
        topK=topK,
        chunkTopK=chunkTopK,
        sourcePaths=sourcePaths,
        enableRerank=enableRerank,
        conversationHistory=conversationHistory,
        verbose=verbose,
    )
    return await sync_to_async(_run)(_query, data)


@server.tool(
    name="open_reference",
    description="Where a citation URL (or its token) points now: source, locator, quote, preview URL, "
    "and whether the source changed or is gone.",
    structured_output=False,
)
async def open_reference(citationUrl: str | None = None, token: str | None = None) -> str:
    return await sync_to_async(_run)(_open_reference, _arguments(citationUrl=citationUrl, token=token))


async def serve_http(
    user, method: str, headers: list[tuple[bytes, bytes]], body: bytes, base: str = ""
) -> tuple[int, list, bytes]:
    """One streamable-HTTP exchange, stateless with a JSON response: the SDK's
    session manager answers it as an ASGI app would; returns status, headers, body."""
    asker.set(user)
    links_base.set(base)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 0),
    }
    received = False

    async def receive():
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()

    response: dict[str, Any] = {"status": 500, "headers": [], "body": b""}

    async def send(message):
        if message["type"] == "http.response.start":
            response["status"], response["headers"] = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            response["body"] += message.get("body", b"")

    manager = StreamableHTTPSessionManager(app=server._mcp_server, json_response=True, stateless=True)
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return response["status"], response["headers"], response["body"]
