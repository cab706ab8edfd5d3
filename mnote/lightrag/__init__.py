"""MNote's only way to talk to LightRAG: configuration, one client, typed errors."""

from .client import QUERY_MODES, LightRAGClient, lightrag_mode, make_client
from .config import (
    NO_LLM_MODEL,
    ImproperlyConfiguredLightRAG,
    LightRAGConfig,
    load_config,
)
from .errors import (
    LightRAGBusy,
    LightRAGError,
    LightRAGRejected,
    LightRAGUnauthorized,
    LightRAGUnavailable,
)
from .responses import DeleteResult, Document, DocumentsPage, Health, ScanResult

__all__ = [
    "NO_LLM_MODEL",
    "QUERY_MODES",
    "DeleteResult",
    "Document",
    "DocumentsPage",
    "Health",
    "ImproperlyConfiguredLightRAG",
    "LightRAGBusy",
    "LightRAGClient",
    "LightRAGConfig",
    "LightRAGError",
    "LightRAGRejected",
    "LightRAGUnauthorized",
    "LightRAGUnavailable",
    "ScanResult",
    "lightrag_mode",
    "load_config",
    "make_client",
]
