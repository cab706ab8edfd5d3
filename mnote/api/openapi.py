"""The OpenAPI 3.1 description of the JSON API, served at /api/openapi.json.

Hand-written so it says exactly what the views do; tests check it lists
every endpoint. Keep it beside any change to views.py or forms.py.
"""

from mnote.api.forms import MAX_CHUNK_INDEX, MAX_ID
from mnote.api.openapi_schemas import SCHEMAS, ref
from mnote.citations.context import MAX_CONTEXT


def _json_body(name: str, *, required: bool = True) -> dict:
    return {"required": required, "content": {"application/json": {"schema": ref(name)}}}


def _ok(name: str, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": ref(name)}}}


def _error(description: str, **headers) -> dict:
    response = {"description": description, "content": {"application/json": {"schema": ref("Error")}}}
    if headers:
        response["headers"] = {
            name: {"schema": {"type": "string"}, "description": text} for name, text in headers.items()
        }
    return response


_ERRORS_AUTH = {
    "401": _error("Not authenticated (no session, or an unknown/revoked token, or an inactive user)."),
    "403": _error("A session POST without a valid CSRF token (code csrf_failed)."),
    "405": _error("Wrong HTTP method."),
}
_ERRORS_LIGHTRAG = {
    "503": _error(
        "LightRAG is unreachable or failing (lightrag_unavailable), refused MNote's key (lightrag_unauthorized), "
        "or busy (lightrag_busy, with Retry-After).",
        **{"Retry-After": "Seconds to wait; only when LightRAG is busy."},
    ),
}
_ERROR_400 = {
    "400": _error(
        "Invalid request: a field failed validation (invalid_request; the message names the field), the body is "
        "not a JSON object (invalid_json), or LightRAG rejected the query (lightrag_rejected, with LightRAG's message)."
    )
}
_ADMIN_403 = {"403": _error("Admins only (code forbidden), or a session POST without a valid CSRF token.")}

DESCRIPTION = {
    "openapi": "3.1.0",
    "info": {
        "title": "MNote Library API",
        "version": "1",
        "description": (
            "Status, full-library search, answers and permalinks for agents. Only mapped citations are exposed, "
            "never raw LightRAG chunks; a member only ever sees sources of roots open to them, and no count of "
            "what LightRAG found or dropped. Citations are compact by default (each quote and link once; a search "
            "for 10 citations is about 10 KB); verbose: true gives the whole quotes and LightRAG's raw fields. Links (citationUrl, "
            "previewUrl) are absolute. Errors are "
            '{"error": {"code", "message"}}. The same tools are an MCP server at /mcp (streamable HTTP, the same '
            "bearer tokens; its errors are JSON-RPC error objects) and over stdio (manage.py mcp_stdio)."
        ),
    },
    "servers": [{"url": "/"}],
    "security": [{"bearerToken": []}, {"session": []}],
    "paths": {
        "/api/status": {
            "get": {
                "operationId": "status",
                "summary": "LightRAG health (LLM, embedding, rerank, queue) and registry counts.",
                "description": "Answers 200 even when LightRAG is down (lightrag.healthy false, lightrag.error).",
                "responses": {"200": _ok("Status", "Health and counts."), **_ERRORS_AUTH},
            }
        },
        "/api/search": {
            "post": {
                "operationId": "search",
                "summary": "Full-library search: mapped citations, no answer.",
                "requestBody": _json_body("SearchRequest"),
                "responses": {
                    "200": _ok("SearchResults", "mnote.knowledge_rag.search_results.v1"),
                    **_ERROR_400,
                    "404": _error(
                        "A scope path names no folder or file the user may see (code unknown_scope, with unknownPaths)."
                    ),
                    **_ERRORS_AUTH,
                    **_ERRORS_LIGHTRAG,
                },
            }
        },
        "/api/query": {
            "post": {
                "operationId": "query",
                "summary": "An answer with citation badges, and its citations.",
                "description": "Same parameters as search, from the search's one retrieval; the LLM sees only "
                "the chunks of citations the asker may open. "
                "With stream: application/x-ndjson lines (see QueryRequest.stream).",
                "requestBody": _json_body("QueryRequest"),
                "responses": {
                    "200": {
                        "description": "mnote.knowledge_rag.agent_query_result.v1",
                        "content": {
                            "application/json": {"schema": ref("AgentQueryResult")},
                            "application/x-ndjson": {"schema": {"type": "string"}},
                        },
                    },
                    **_ERROR_400,
                    "404": _error(
                        "A scope path names no folder or file the user may see (code unknown_scope, with unknownPaths)."
                    ),
                    **_ERRORS_AUTH,
                    **_ERRORS_LIGHTRAG,
                },
            }
        },
        "/api/open-reference": {
            "post": {
                "operationId": "openReference",
                "summary": "Resolve a permalink: its source, state, locator and preview URL.",
                "requestBody": _json_body("OpenReferenceRequest"),
                "responses": {
                    "200": _ok("OpenReferenceResult", "The citation."),
                    **_ERROR_400,
                    **_ERRORS_AUTH,
                    "404": _error("No such citation, or not visible to the user (the same answer)."),
                    "409": _error("A search result's link to a source that changed since, never opened before: source_changed."),
                },
            }
        },
        "/api/sources/{sourceId}/chunks": {
            "get": {
                "operationId": "sourceChunks",
                "summary": "A chunk of a source with its neighbours.",
                "parameters": [
                    {
                        "name": "sourceId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                    },
                    {
                        "name": "chunk_index",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 0, "maximum": MAX_CHUNK_INDEX},
                    },
                    {
                        "name": "context",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "default": 2},
                        "description": "Neighbours on each side.",
                    },
                    {
                        "name": "block_id",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "Without a readable chunk store: centre on this sidecar block.",
                    },
                ],
                "responses": {
                    "200": _ok("ChunkContext", "The chunk and its neighbours."),
                    **_ERROR_400,
                    **_ERRORS_AUTH,
                    "404": _error("No such source or chunk, or the source is not visible to the user."),
                    "409": _error("The source is not citable now (stale, deleted, not indexed): source_not_citable."),
                },
            }
        },
        "/api/admin/ingest": {
            "post": {
                "operationId": "adminIngest",
                "summary": "Admins: sync a root, or queue one source for LightRAG (force re-sends it).",
                "requestBody": _json_body("IngestRequest"),
                "responses": {
                    "200": _ok("IngestResult", "What was done."),
                    **_ERROR_400,
                    **_ERRORS_AUTH,
                    **_ADMIN_403,
                    "404": _error("No such source or root."),
                    "409": _error("The source's root is disabled, the source is excluded, or its file is unreadable."),
                },
            }
        },
        "/api/admin/delete-source": {
            "post": {
                "operationId": "adminDeleteSource",
                "summary": "Admins: delete LightRAG's document of a source (the file stays).",
                "requestBody": _json_body("DeleteSourceRequest"),
                "responses": {
                    "200": _ok("DeleteSourceResult", "The source's new status."),
                    **_ERROR_400,
                    **_ERRORS_AUTH,
                    **_ADMIN_403,
                    "404": _error("No such source."),
                },
            }
        },
        "/api/admin/prune-registry": {
            "post": {
                "operationId": "adminPruneRegistry",
                "summary": "Admins: clear removed, failed and stale registry rows.",
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": {"type": "object", "maxProperties": 0}}},
                },
                "responses": {
                    "200": _ok("PruneResult", "How many rows were cleared."),
                    **_ERROR_400,
                    **_ERRORS_AUTH,
                    **_ADMIN_403,
                },
            }
        },
        "/api/admin/retry-failed": {
            "post": {
                "operationId": "adminRetryFailed",
                "summary": "Admins: send the failed files of one root, or of the library, to LightRAG again "
                "(a fresh budget of automatic retries; the worker sends them a few at a time).",
                "requestBody": _json_body("RetryFailedRequest", required=False),
                "responses": {
                    "200": _ok("RetryFailedResult", "How many failed files will be sent again."),
                    **_ERROR_400,
                    **_ERRORS_AUTH,
                    **_ADMIN_403,
                    "404": _error("No such root."),
                },
            }
        },
        "/api/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This description.",
                "security": [],
                "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}},
            }
        },
        "/api/docs/": {
            "get": {
                "operationId": "docs",
                "summary": "This description as a page to read.",
                "security": [],
                "responses": {"200": {"description": "HTML", "content": {"text/html": {}}}},
            }
        },
    },
    "components": {
        "securitySchemes": {
            "bearerToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "A token from the API tokens page (/tokens/) or `manage.py create_api_token USERNAME`. "
                "No CSRF token needed.",
            },
            "session": {
                "type": "apiKey",
                "in": "cookie",
                "name": "sessionid",
                "description": "A logged-in browser session; POSTs also need the X-CSRFToken header.",
            },
        },
        "schemas": SCHEMAS,
    },
}


def _type_label(schema: dict) -> str:
    """A schema's type in a few words, for the documentation page."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if "const" in schema:
        return f"“{schema['const']}”"
    if "enum" in schema:
        return " | ".join(str(v) for v in schema["enum"])
    kind = schema.get("type", "object" if "properties" in schema else "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array" and "items" in schema:
        return f"array of {_type_label(schema['items'])}"
    return kind


def _limits(schema: dict) -> str:
    words = {"minimum": "≥ {}", "maximum": "≤ {}", "minLength": "length ≥ {}", "maxLength": "length ≤ {}",
             "maxItems": "at most {} items", "default": "default {}"}  # fmt: skip
    return ", ".join(text.format(schema[name]) for name, text in words.items() if name in schema)


def _fields(schema: dict) -> list[dict]:
    required = set(schema.get("required", ()))
    return [
        {
            "name": name,
            "type": _type_label(field),
            "ref": _ref_name(field),
            "required": name in required,
            "limits": _limits(field),
            "description": field.get("description", ""),
        }
        for name, field in schema.get("properties", {}).items()
    ]


def _ref_name(schema: dict) -> str:
    """The schema a field (or its items) refers to, for a link; "" for none."""
    target = schema.get("$ref") or (schema.get("items") or {}).get("$ref") or ""
    return target.rsplit("/", 1)[-1]


def _body_schema(content: dict) -> str:
    return _ref_name((content.get("application/json") or {}).get("schema") or {})


def reference() -> dict:
    """DESCRIPTION arranged for the documentation page (/api/docs/): each
    operation with its parameters, body and answers, then each schema."""
    operations = []
    for path, methods in DESCRIPTION["paths"].items():
        for method, operation in methods.items():
            body = operation.get("requestBody") or {}
            operations.append(
                {
                    "id": operation["operationId"],
                    "method": method.upper(),
                    "path": path,
                    "summary": operation["summary"],
                    "description": operation.get("description", ""),
                    "public": operation.get("security") == [],
                    "parameters": [
                        {"name": p["name"], "in": p["in"], "type": _type_label(p["schema"]), "required": p.get("required", False),
                         "limits": _limits(p["schema"]), "description": p.get("description", "")}
                        for p in operation.get("parameters", ())
                    ],  # fmt: skip
                    "body": _body_schema(body.get("content") or {}),
                    "responses": [
                        {"status": status, "description": answer["description"], "schema": _body_schema(answer.get("content") or {})}
                        for status, answer in operation["responses"].items()
                    ],  # fmt: skip
                }
            )
    schemas = [
        {"name": name, "title": schema.get("title", ""), "description": schema.get("description", ""), "fields": _fields(schema)}
        for name, schema in DESCRIPTION["components"]["schemas"].items()
    ]
    return {"info": DESCRIPTION["info"], "operations": operations, "schemas": schemas,
            "security": DESCRIPTION["components"]["securitySchemes"]}  # fmt: skip
