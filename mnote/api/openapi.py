"""The OpenAPI 3.1 description of the JSON API, served at /api/openapi.json.

Hand-written so it says exactly what the views do; tests check it lists
every endpoint. Keep it beside any change to views.py or forms.py.
"""

from mnote.api.forms import MAX_CHUNK_INDEX, MAX_ID, QUERY_PATTERN
from mnote.citations.context import MAX_CONTEXT
from mnote.kinds import RESOURCE_KINDS
from mnote.library.forms import LIBRARY_PATH_PATTERN, MAX_SCOPE_PATHS
from mnote.library.models import Source
from mnote.search.answers import MODES

_REF = "#/components/schemas/"


def _ref(name: str) -> dict:
    return {"$ref": _REF + name}


def _nullable(schema_type: str, **extra) -> dict:
    return {"type": [schema_type, "null"], **extra}


def _json_body(name: str, *, required: bool = True) -> dict:
    return {"required": required, "content": {"application/json": {"schema": _ref(name)}}}


def _ok(name: str, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": _ref(name)}}}


def _error(description: str, **headers) -> dict:
    response = {"description": description, "content": {"application/json": {"schema": _ref("Error")}}}
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

_STRINGS = {"type": "array", "items": {"type": "string"}}

SCHEMAS = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "examples": ["invalid_request", "lightrag_unavailable", "not_found"]},
                    "message": {"type": "string"},
                    "fields": {
                        "type": "object",
                        "description": "Per-field validation errors (invalid_request only).",
                        "additionalProperties": {"type": "array"},
                    },
                    "sourceStatus": {
                        "type": "string",
                        "description": "The source's registry status (source_not_citable only).",
                    },
                },
            }
        },
    },
    "SearchRequest": {
        "type": "object",
        "required": ["query"],
        "additionalProperties": False,
        "properties": {
            "query": {
                "type": "string",
                "minLength": 2,
                "maxLength": 1000,
                "pattern": QUERY_PATTERN,
                "description": "At least 3 characters after trimming, a Chinese, Japanese or Korean character "
                "counting as 2 (LightRAG's own minimum).",
            },
            "mode": {
                "type": "string",
                "enum": list(MODES),
                "default": "mix",
                "description": "hybrid is sent to LightRAG as mix.",
            },
            "topK": {"type": "integer", "minimum": 1, "maximum": 200},
            "chunkTopK": {"type": "integer", "minimum": 1, "maximum": 100},
            "sourcePaths": {
                "type": "array",
                "maxItems": MAX_SCOPE_PATHS,
                "items": {"type": "string", "pattern": LIBRARY_PATH_PATTERN},
                "description": "Library paths of files or folders (e.g. papers/2024); results are limited to them.",
            },
            "enableRerank": {
                "type": "boolean",
                "description": "Passed to LightRAG's own reranker; absent means LightRAG's default.",
            },
        },
    },
    "Locator": {
        "type": "object",
        "description": "Where the cited passage is. page and bbox only from a real bbox; never guessed.",
        "required": ["precision", "degraded", "resourceKind", "sourceId", "sourcePath", "headingPath"],
        "properties": {
            "precision": {"type": "string", "enum": ["bbox", "paragraph", "file"]},
            "degraded": {"type": "boolean"},
            "resourceKind": {"type": "string", "enum": list(RESOURCE_KINDS)},
            "sourceId": {"type": "integer"},
            "sourcePath": {"type": "string"},
            "page": {"type": "integer"},
            "bbox": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 4,
                "maxItems": 4,
                "description": "[x0, y0, x1, y1] as fractions of the page, top-left origin.",
            },
            "blockId": {"type": "string"},
            "paraIds": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
            "headingPath": _STRINGS,
            "evidenceText": {"type": "string"},
            "searchQuery": {"type": "string"},
            "displayQuote": {"type": "string"},
            "chunkId": {"type": "string"},
            "chunkIndex": {"type": "integer"},
        },
    },
    "Citation": {
        "type": "object",
        "description": "A mapped citation. Raw LightRAG chunk text is never included.",
        "properties": {
            "citationId": {"type": "string", "pattern": "^(IMG-)?[0-9a-z]{4}$"},
            "provider": {"type": "string", "const": "lightrag"},
            "sourceId": {"type": "integer"},
            "sourcePath": {"type": "string"},
            "fileName": {"type": "string"},
            "lightragDocId": {"type": "string"},
            "lightragFilePath": {"type": "string"},
            "chunkId": {"type": "string"},
            "blockId": _nullable("string"),
            "headingPath": _STRINGS,
            "displayQuote": {"type": "string"},
            "locatorEvidenceText": {"type": "string"},
            "searchQuery": {"type": "string"},
            "locatorPrecision": {"type": "string", "enum": ["bbox", "paragraph", "file"]},
            "locatorDegraded": {"type": "boolean"},
            "locator": _ref("Locator"),
            "citationUrl": {"type": "string", "description": "Link to the cited place, /c/r/<reference>: it becomes a permalink /c/<token> when first opened."},
            "citationMarkdown": {"type": "string"},
            "relevance": {
                "type": "object",
                "properties": {
                    "score": {"type": "number"},
                    "kind": {
                        "type": "string",
                        "description": "mnote_lexical: MNote's own lexical score, not a rerank.",
                    },
                    "providerRank": {"type": "integer"},
                },
            },
            "diagnostics": {"type": "object"},
        },
    },
    "SearchResults": {
        "title": "mnote.knowledge_rag.search_results.v1",
        "type": "object",
        "required": ["schema", "query", "mode", "results", "notInLightRAG", "diagnostics"],
        "properties": {
            "schema": {"const": "mnote.knowledge_rag.search_results.v1"},
            "query": {"type": "string"},
            "mode": {"type": "string", "description": "As requested; diagnostics.mode is what LightRAG was sent."},
            "results": {"type": "array", "items": _ref("Citation")},
            "notInLightRAG": {
                "type": "array",
                "description": "Files whose path matches the query but that LightRAG cannot cite, and why.",
                "items": {
                    "type": "object",
                    "properties": {
                        "sourceId": {"type": "integer"},
                        "sourcePath": {"type": "string"},
                        "status": {"type": "string"},
                        "reason": {"type": "string"},
                    },
                },
            },
            "diagnostics": {
                "type": "object",
                "properties": {
                    "references": {"type": "integer"},
                    "chunks": {"type": "integer"},
                    "referencesBuiltFromChunks": {"type": "boolean"},
                    "providerRerankRequested": _nullable("boolean"),
                    "providerRerankAvailable": _nullable("boolean"),
                    "providerStatus": _nullable("string"),
                    "llmAvailable": {"type": "boolean"},
                    "mode": {"type": "string"},
                    "dropped": {
                        "type": "object",
                        "description": "References not cited, counted by reason (stale, unmapped, outside the "
                        "search scope). "
                        "A member gets references to files they may not see and unmapped ones together, as "
                        "\"not citable\", so the count never tells that hidden documents matched.",
                        "additionalProperties": {"type": "integer"},
                    },
                },
            },
        },
    },
    "CompactCitation": {
        "type": "object",
        "required": ["citationId", "sourcePath", "fileName", "locatorPrecision", "headingPath", "displayQuote",
                     "citationUrl", "citationMarkdown"],
        "properties": {
            "citationId": {"type": "string"},
            "sourcePath": {"type": "string"},
            "fileName": {"type": "string"},
            "locatorPrecision": {"type": "string", "enum": ["bbox", "paragraph", "file"]},
            "page": {"type": "integer", "description": "Only for a bbox locator."},
            "headingPath": _STRINGS,
            "displayQuote": {"type": "string"},
            "citationUrl": {"type": "string"},
            "citationMarkdown": {"type": "string"},
        },
    },
    "AgentQueryResult": {
        "title": "mnote.knowledge_rag.agent_query_result.v1",
        "type": "object",
        "required": ["schema", "query", "mode", "answer", "citations", "contextUsed"],
        "properties": {
            "schema": {"const": "mnote.knowledge_rag.agent_query_result.v1"},
            "query": {"type": "string"},
            "mode": {"type": "string"},
            "answer": {
                "type": "object",
                "required": ["kind", "text", "sentences", "notes"],
                "properties": {
                    "kind": {"type": "string", "enum": ["llm", "extractive"]},
                    "text": {"type": "string", "description": "The answer with [citationId] badges after sentences."},
                    "sentences": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string"},
                                "citationIds": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
                            },
                        },
                    },
                    "notes": _STRINGS,
                },
            },
            "citations": {"type": "array", "items": _ref("CompactCitation")},
            "contextUsed": {"type": "integer", "description": "How many citations the answer drew on."},
        },
    },
    "Status": {
        "title": "mnote.library.status.v1",
        "type": "object",
        "required": ["schema", "lightrag", "registry"],
        "properties": {
            "schema": {"const": "mnote.library.status.v1"},
            "lightrag": {
                "type": "object",
                "properties": {
                    "healthy": {"type": "boolean"},
                    "error": _nullable("string"),
                    "coreVersion": _nullable("string"),
                    "apiVersion": _nullable("string"),
                    "llm": {
                        "type": "object",
                        "properties": {
                            "available": {"type": "boolean"},
                            "binding": _nullable("string"),
                            "model": _nullable("string"),
                        },
                    },
                    "embedding": {
                        "type": "object",
                        "properties": {"binding": _nullable("string"), "model": _nullable("string")},
                    },
                    "rerank": {
                        "type": "object",
                        "properties": {
                            "enabled": {"type": "boolean"},
                            "binding": _nullable("string"),
                            "model": _nullable("string"),
                        },
                    },
                    "queue": {
                        "type": "object",
                        "properties": {
                            "pipelineBusy": _nullable("boolean"),
                            "rerankQueueAvailable": _nullable("boolean"),
                        },
                    },
                    "webuiUrl": {"type": "string", "description": "Admins only."},
                },
            },
            "registry": {
                "type": "object",
                "description": "Sources per status: those the user may see (all, for admins).",
                "properties": {
                    "total": {"type": "integer"},
                    "counts": {
                        "type": "object",
                        "properties": {value: {"type": "integer"} for value, _ in Source.Status.choices},
                    },
                },
            },
            "lightragDocuments": {
                "type": "object",
                "description": "Admins only: LightRAG's documents and how many no registry row maps to.",
                "properties": {
                    "total": _nullable("integer"),
                    "counts": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
                    "unmapped": _nullable("integer"),
                    "error": _nullable("string"),
                },
            },
        },
    },
    "OpenReferenceRequest": {
        "type": "object",
        "additionalProperties": False,
        "description": "Exactly one of citationUrl and token.",
        "properties": {
            "citationUrl": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2048,
                "pattern": "\\S",
                "description": "/c/<token>, or a search result's /c/r/<reference> (its permalink is made now), relative or absolute.",
            },
            "token": {"type": "string", "minLength": 1, "maxLength": 24, "pattern": "\\S"},
        },
        "oneOf": [{"required": ["citationUrl"]}, {"required": ["token"]}],
    },
    "OpenReferenceResult": {
        "type": "object",
        "required": ["token", "sourceId", "sourcePath", "state", "locator", "previewUrl", "citationUrl"],
        "properties": {
            "token": {"type": "string"},
            "sourceId": _nullable("integer"),
            "sourcePath": {"type": "string"},
            "state": {
                "type": "string",
                "enum": ["current", "changed", "gone"],
                "description": "changed: the file's content moved on since the citation was made; gone: deleted.",
            },
            "precision": {"type": "string", "enum": ["bbox", "paragraph", "file"]},
            "locator": _ref("Locator"),
            "headingPath": _STRINGS,
            "displayQuote": {"type": "string"},
            "previewUrl": _nullable(
                "string", description="/preview/<sourceId>/?c=<token>; null once the source is pruned."
            ),
            "citationUrl": {"type": "string"},
        },
    },
    "ContextChunk": {
        "type": "object",
        "required": ["chunkIndex", "text", "headingPath", "isTarget", "blockIds"],
        "properties": {
            "chunkIndex": {
                "type": "integer",
                "description": "LightRAG's chunk order index, or the block index (unit sidecar_blocks).",
            },
            "text": {"type": "string", "description": "Clean display text."},
            "headingPath": _STRINGS,
            "page": {"type": "integer", "description": "Only when known from a bbox."},
            "isTarget": {"type": "boolean"},
            "blockIds": _STRINGS,
        },
    },
    "ChunkContext": {
        "type": "object",
        "required": ["sourceId", "sourcePath", "chunkIndex", "context", "unit", "chunks"],
        "properties": {
            "sourceId": {"type": "integer"},
            "sourcePath": {"type": "string"},
            "chunkIndex": {"type": "integer"},
            "context": {"type": "integer"},
            "unit": {
                "type": "string",
                "enum": ["lightrag_chunks", "sidecar_blocks"],
                "description": "lightrag_chunks when LightRAG's chunk store is readable, else the sidecar's blocks.",
            },
            "chunks": {"type": "array", "items": _ref("ContextChunk")},
        },
    },
    "IngestRequest": {
        "type": "object",
        "additionalProperties": False,
        "description": "Exactly one of sourceId and rootId; force only with sourceId.",
        "properties": {
            "sourceId": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
            "rootId": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
            "force": {"type": "boolean", "default": False},
        },
        "oneOf": [
            {"required": ["sourceId"], "not": {"required": ["rootId"]}},
            {"required": ["rootId"], "not": {"required": ["sourceId"]}, "properties": {"force": {"const": False}}},
        ],
    },
    "IngestResult": {
        "oneOf": [
            {
                "type": "object",
                "title": "source",
                "required": ["sourceId", "sourcePath", "result", "status"],
                "properties": {
                    "sourceId": {"type": "integer"},
                    "sourcePath": {"type": "string"},
                    "result": {"type": "string", "enum": ["queued", "already_registered"]},
                    "status": {"type": "string"},
                },
            },
            {
                "type": "object",
                "title": "root",
                "required": ["rootId", "root", "summary", "message"],
                "properties": {
                    "rootId": {"type": "integer"},
                    "root": {"type": "string"},
                    "summary": {
                        "type": "object",
                        "properties": {
                            **{k: {"type": "integer"} for k in ("new", "changed", "missing", "unchanged", "excluded",
                                                                "queued", "capped", "held")},
                            "refused": _STRINGS,
                            "error": _nullable("string"),
                        },
                    },
                    "message": {"type": "string"},
                },
            },
        ]
    },
    "DeleteSourceRequest": {
        "type": "object",
        "required": ["sourceId"],
        "additionalProperties": False,
        "properties": {"sourceId": {"type": "integer", "minimum": 1, "maximum": MAX_ID}},
    },
    "DeleteSourceResult": {
        "type": "object",
        "properties": {"sourceId": {"type": "integer"}, "sourcePath": {"type": "string"}, "status": {"type": "string"}},
    },
    "PruneResult": {"type": "object", "properties": {"pruned": {"type": "integer"}}},
    "RetryFailedRequest": {
        "type": "object",
        "additionalProperties": False,
        "description": "With rootId: that root's failed files; without: every failed file of the library.",
        "properties": {"rootId": {"type": "integer", "minimum": 1, "maximum": MAX_ID}},
    },
    "RetryFailedResult": {
        "type": "object",
        "required": ["rootId", "root", "retried", "message"],
        "properties": {
            "rootId": _nullable("integer"),
            "root": _nullable("string"),
            "retried": {"type": "integer", "description": "Failed files sent back to LightRAG."},
            "message": {"type": "string"},
        },
    },
}

SCHEMAS["QueryRequest"] = {
    **SCHEMAS["SearchRequest"],
    "properties": {
        **SCHEMAS["SearchRequest"]["properties"],
        "stream": {
            "type": "boolean",
            "description": "Answer as NDJSON while it is written: a context line with the citations, "
            "sentences lines as each sentence completes (with its citation ids), then a done line "
            "holding the whole agent_query_result.v1 (or an error line).",
        },
        "conversationHistory": {
            "type": "array",
            "maxItems": 20,
            "description": "Earlier turns, passed to LightRAG's LLM (not used for retrieval).",
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "additionalProperties": False,
                "properties": {"role": {"type": "string", "enum": ["user", "assistant"]}, "content": {"type": "string", "maxLength": 8000}},
            },
        },
    },
}

DESCRIPTION = {
    "openapi": "3.1.0",
    "info": {
        "title": "MNote Library API",
        "version": "1",
        "description": (
            "Status, full-library search, answers and permalinks for agents. Only mapped citations are exposed, "
            "never raw LightRAG chunks; a member only ever sees sources of roots open to them. Errors are "
            '{"error": {"code", "message"}}.'
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
                "description": "Same parameters as search, from one LightRAG /query/stream retrieval. "
                "With stream: application/x-ndjson lines (see QueryRequest.stream).",
                "requestBody": _json_body("QueryRequest"),
                "responses": {
                    "200": {
                        "description": "mnote.knowledge_rag.agent_query_result.v1",
                        "content": {
                            "application/json": {"schema": _ref("AgentQueryResult")},
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
    },
    "components": {
        "securitySchemes": {
            "bearerToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "A token from `manage.py create_api_token USERNAME`. No CSRF token needed.",
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
