"""MNote's only way to talk to LightRAG: configuration, one client, typed errors."""

from .client import (
    Document,
    DocumentsPage,
    DeleteResult,
    Health,
    LightRAGClient,
    ScanResult,
    make_client,
)
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

__all__ = [
    "NO_LLM_MODEL",
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
    "load_config",
    "make_client",
]
