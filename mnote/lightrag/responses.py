"""What LightRAG's answers mean to MNote: typed, read-only views of its JSON
bodies (health, the documents list, scan and delete), as observed on 1.5.7."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .config import NO_LLM_MODEL


@dataclass(frozen=True)
class Health:
    healthy: bool
    authenticated: bool
    """False when LightRAG hid its configuration: our API key is missing or wrong."""
    core_version: str | None
    api_version: str | None
    webui_available: bool
    pipeline_busy: bool
    llm_binding: str | None
    llm_model: str | None
    has_llm: bool
    embedding_binding: str | None
    embedding_model: str | None
    rerank_enabled: bool
    rerank_binding: str | None
    rerank_model: str | None
    rerank_queue_available: bool | None
    working_directory: str | None
    input_directory: str | None
    # How LightRAG uses its embedding service (None when not reported).
    embedding_max_async: int | None = None
    embedding_batch: int | None = None
    embedding_timeout: int | None = None
    max_parallel_insert: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Health:
        # /health answers 200 to anyone, but only shows `configuration` to a valid key.
        configuration = body.get("configuration") or {}
        rerank_queue = body.get("rerank_queue_status")
        llm_binding = configuration.get("llm_binding") or None
        llm_model = configuration.get("llm_model") or None
        rerank_binding = configuration.get("rerank_binding")
        return cls(
            healthy=body.get("status") == "healthy",
            authenticated="configuration" in body,
            core_version=body.get("core_version"),
            api_version=body.get("api_version"),
            webui_available=bool(body.get("webui_available")),
            pipeline_busy=bool(body.get("pipeline_busy")),
            llm_binding=llm_binding,
            llm_model=llm_model,
            has_llm=llm_binding is not None and llm_model != NO_LLM_MODEL,
            embedding_binding=configuration.get("embedding_binding") or None,
            embedding_model=configuration.get("embedding_model") or None,
            rerank_enabled=bool(configuration.get("enable_rerank")),
            rerank_binding=None if rerank_binding in (None, "", "null") else rerank_binding,
            rerank_model=configuration.get("rerank_model") or None,
            rerank_queue_available=(
                bool(rerank_queue["available"])
                if isinstance(rerank_queue, dict) and "available" in rerank_queue
                else None
            ),
            # 1.5.7 puts the directories at the top level, not under `configuration`.
            working_directory=body.get("working_directory") or configuration.get("working_directory"),
            input_directory=body.get("input_directory") or configuration.get("input_directory"),
            embedding_max_async=_int_or_none(configuration.get("embedding_func_max_async")),
            embedding_batch=_int_or_none(configuration.get("embedding_batch_num")),
            embedding_timeout=_int_or_none(configuration.get("embedding_timeout")),
            max_parallel_insert=_int_or_none(configuration.get("max_parallel_insert")),
            raw=body,
        )


@dataclass(frozen=True)
class Document:
    id: str
    file_path: str
    """The basename LightRAG knows the file by (for us, the symlink's name)."""
    status: str
    chunks_count: int
    error_msg: str | None
    parse_engine: str | None
    is_duplicate: bool
    original_doc_id: str | None
    track_id: str | None
    created_at: datetime | None
    updated_at: datetime | None
    content_summary: str
    metadata: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_body(cls, item: dict[str, Any]) -> Document:
        metadata = item.get("metadata") or {}
        return cls(
            id=item["id"],
            file_path=item.get("file_path") or "",
            status=item.get("status") or "",
            chunks_count=item.get("chunks_count") or 0,
            error_msg=item.get("error_msg") or None,
            parse_engine=metadata.get("parse_engine"),
            is_duplicate=bool(metadata.get("is_duplicate")),
            original_doc_id=metadata.get("original_doc_id"),
            track_id=item.get("track_id"),
            created_at=_timestamp(item.get("created_at")),
            updated_at=_timestamp(item.get("updated_at")),
            content_summary=item.get("content_summary") or "",
            metadata=metadata,
        )


@dataclass(frozen=True)
class DocumentsPage:
    documents: list[Document]
    total: int
    page: int
    page_size: int
    has_next: bool
    status_counts: dict[str, int]


@dataclass(frozen=True)
class ScanResult:
    track_id: str
    status: str
    message: str


@dataclass(frozen=True)
class DeleteResult:
    status: str
    message: str
    doc_ids: list[str]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
