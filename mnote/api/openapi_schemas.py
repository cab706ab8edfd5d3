"""The JSON API's schemas (components.schemas of /api/openapi.json): what
each request takes and each answer holds, with the limits the forms check.
``openapi.py`` puts them together with the paths."""

from mnote.api.forms import MAX_ID, QUERY_PATTERN
from mnote.citations.models import Citation
from mnote.kinds import RESOURCE_KINDS
from mnote.library.forms import LIBRARY_PATH_PATTERN, MAX_SCOPE_PATHS
from mnote.library.models import Source
from mnote.search.answers import MODES

_REF = "#/components/schemas/"


def ref(name: str) -> dict:
    return {"$ref": _REF + name}


def nullable(schema_type: str, **extra) -> dict:
    return {"type": [schema_type, "null"], **extra}


STRINGS = {"type": "array", "items": {"type": "string"}}
# Named by what the preview shows at the cited words (mnote.citations.models.Citation.Precision).
PRECISIONS = {"type": "string", "enum": list(Citation.Precision.values)}
# Where the cited words are, per kind: the Locator's place fields (CitationView.place).
PLACE = {
    "type": "object",
    "description": "Where the cited words are, by kind: page (PDF), slide and shape (PPTX), sheet, cellRange and "
    "sheetPage (XLSX, CSV), blockIndex and charRange (text, HTML, EPUB, ODT, RTF, Markdown, code; lineStart for "
    "code), blockId and paraIds (DOCX paragraph). Empty when only the file is known.",
}

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
                    "sourceReason": {
                        "type": ["string", "null"],
                        "description": "Why the source is not searchable, in the library's plain words: damaged, "
                        "encrypted, no text, unsupported variant, too large, duplicate of a path (source_not_citable only).",
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
                "description": "Absent: mix when LightRAG has an LLM, naive (vectors only) without one, as it then "
                "builds no knowledge graph. hybrid is sent to LightRAG as mix. The answer's mode is the one used.",
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
            "verbose": {
                "type": "boolean",
                "default": False,
                "description": "Citations with LightRAG's raw fields too (document and chunk ids, the locator, "
                "evidence text, the Markdown link, the mapping's diagnostics): several times larger. Without it "
                "each citation holds its quote and its link once.",
            },
        },
    },
    "Locator": {
        "type": "object",
        "description": "Where the cited passage is, never guessed: bbox only from a real bbox; page, slide, cells "
        "or passage where MNote's place index of the file finds the cited words; file when nothing better is known.",
        "required": ["precision", "degraded", "resourceKind", "sourceId", "sourcePath", "headingPath"],
        "properties": {
            "precision": PRECISIONS,
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
            "headingPath": STRINGS,
            "evidenceText": {"type": "string"},
            "searchQuery": {"type": "string"},
            "displayQuote": {"type": "string"},
            "chunkId": {"type": "string"},
            "chunkIndex": {"type": "integer"},
            "slide": {"type": "integer"},
            "shape": {"type": "string"},
            "sheet": {"type": "string"},
            "cellRange": {"type": "string", "description": "e.g. A7:F9"},
            "sheetPage": {"type": "integer", "description": "The sheet preview's page holding the range."},
            "blockIndex": {"type": "integer"},
            "charRange": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
            "lineStart": {"type": "integer"},
        },
    },
    "Citation": {
        "type": "object",
        "description": "A mapped citation. Raw LightRAG chunk text is never included. By default only the fields "
        "of CompactCitation; the others with verbose: true.",
        "required": ["citationId", "sourceId", "sourcePath", "fileName", "locatorPrecision", "headingPath",
                     "displayQuote", "citationUrl"],
        "properties": {
            "citationId": {"type": "string", "pattern": "^(IMG-)?[0-9a-z]{4}$"},
            "provider": {"type": "string", "const": "lightrag"},
            "sourceId": {"type": "integer"},
            "sourcePath": {"type": "string"},
            "fileName": {"type": "string"},
            "lightragDocId": {"type": "string"},
            "lightragFilePath": {"type": "string"},
            "chunkId": {"type": "string"},
            "blockId": nullable("string"),
            "headingPath": STRINGS,
            "displayQuote": {"type": "string"},
            "locatorEvidenceText": {"type": "string"},
            "searchQuery": {"type": "string"},
            "locatorPrecision": PRECISIONS,
            "locatorDegraded": {"type": "boolean"},
            "locator": ref("Locator"),
            "locatorPlace": PLACE,
            "citationUrl": {
                "type": "string",
                "description": "Absolute link to the cited place, …/c/r/<reference>: it becomes a permalink "
                "…/c/<token> when first opened. It starts with MNOTE_PUBLIC_URL when the server sets it, else "
                "with the request's own scheme and host.",
            },
            "citationMarkdown": {"type": "string", "description": "[file, place](citationUrl); verbose only."},
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
            "mode": {"type": "string", "description": "The mode LightRAG was sent (naive without an LLM unless asked otherwise)."},
            "results": {"type": "array", "items": ref("Citation")},
            "lowConfidence": {
                "type": "boolean",
                "description": "Nothing found matches the query well (below the embedded rerank's relevance "
                "floor): the results are distant and an agent should not build on them. False when unknown.",
            },
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
                "description": "A member gets mode, llmAvailable, providerRerankRequested, providerRerankAvailable "
                "and outsideScope only: counts of what LightRAG found or dropped could tell that documents they "
                "may not see are about the query. Admins get all of them.",
                "properties": {
                    "references": {"type": "integer"},
                    "chunks": {"type": "integer"},
                    "referencesBuiltFromChunks": {"type": "boolean"},
                    "providerRerankRequested": nullable("boolean"),
                    "providerRerankAvailable": nullable("boolean"),
                    "providerStatus": nullable("string"),
                    "llmAvailable": {"type": "boolean"},
                    "mode": {"type": "string"},
                    "outsideScope": {"type": "integer", "description": "Chunks of visible files outside sourcePaths."},
                    "dropped": {
                        "type": "object",
                        "description": "Admins: references not cited, counted by reason (stale, unmapped, not "
                        "visible, outside the search scope).",
                        "additionalProperties": {"type": "integer"},
                    },
                },
            },
        },
    },
    "CompactCitation": {
        "type": "object",
        "description": "A citation as answers give it by default (with verbose: a Citation).",
        "required": ["citationId", "sourceId", "sourcePath", "fileName", "locatorPrecision", "headingPath",
                     "displayQuote", "citationUrl"],
        "properties": {
            "citationId": {"type": "string"},
            "sourceId": {"type": "integer"},
            "sourcePath": {"type": "string"},
            "fileName": {"type": "string"},
            "locatorPrecision": PRECISIONS,
            "page": {"type": "integer", "description": "Only for a bbox or page locator."},
            "locatorPlace": {"type": "object", "description": "slide, sheet and cellRange when the locator has them."},
            "headingPath": STRINGS,
            "displayQuote": {
                "type": "string",
                "description": "The passage around the query's words, about 400 columns (a Chinese, Japanese or "
                "Korean character takes two); with verbose the whole quote (up to 700 characters).",
            },
            "citationUrl": {"type": "string", "description": "Absolute, as Citation.citationUrl."},
        },
    },
    "AgentQueryResult": {
        "title": "mnote.knowledge_rag.agent_query_result.v1",
        "type": "object",
        "required": ["schema", "query", "mode", "answer", "citations", "contextUsed"],
        "properties": {
            "schema": {"const": "mnote.knowledge_rag.agent_query_result.v1"},
            "query": {"type": "string"},
            "mode": {"type": "string", "description": "The mode LightRAG was sent."},
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
                    "notes": STRINGS,
                },
            },
            "citations": {"type": "array", "items": ref("CompactCitation"), "description": "Citations with verbose."},
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
                    "error": nullable("string"),
                    "coreVersion": nullable("string"),
                    "apiVersion": nullable("string"),
                    "llm": {
                        "type": "object",
                        "properties": {
                            "available": {"type": "boolean"},
                            "binding": nullable("string"),
                            "model": nullable("string"),
                        },
                    },
                    "embedding": {
                        "type": "object",
                        "properties": {"binding": nullable("string"), "model": nullable("string")},
                    },
                    "rerank": {
                        "type": "object",
                        "properties": {
                            "enabled": {"type": "boolean"},
                            "binding": nullable("string"),
                            "model": nullable("string"),
                        },
                    },
                    "queue": {
                        "type": "object",
                        "properties": {
                            "pipelineBusy": nullable("boolean"),
                            "rerankQueueAvailable": nullable("boolean"),
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
                    "total": nullable("integer"),
                    "counts": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
                    "unmapped": nullable("integer"),
                    "error": nullable("string"),
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
            "sourceId": nullable("integer"),
            "sourcePath": {"type": "string"},
            "state": {
                "type": "string",
                "enum": ["current", "changed", "gone"],
                "description": "changed: the file's content moved on since the citation was made; gone: deleted.",
            },
            "precision": PRECISIONS,
            "locator": ref("Locator"),
            "headingPath": STRINGS,
            "displayQuote": {"type": "string"},
            "previewUrl": nullable(
                "string", description="Absolute …/preview/<sourceId>/?c=<token>; null once the source is pruned."
            ),
            "citationUrl": {"type": "string", "description": "Absolute …/c/<token>."},
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
            "headingPath": STRINGS,
            "page": {"type": "integer", "description": "Only when known from a bbox."},
            "isTarget": {"type": "boolean"},
            "blockIds": STRINGS,
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
            "chunks": {"type": "array", "items": ref("ContextChunk")},
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
                            "refused": STRINGS,
                            "error": nullable("string"),
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
            "rootId": nullable("integer"),
            "root": nullable("string"),
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
