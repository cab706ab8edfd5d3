"""What can go wrong talking to LightRAG, sorted by what the caller should do next."""


class LightRAGError(Exception):
    """Base for every failure of a LightRAG request."""

    def __init__(self, message: str, *, status_code: int | None = None, detail: str | None = None):
        super().__init__(message)
        self.status_code = status_code
        # LightRAG's own words, when it gave any: often the most useful thing to show.
        self.detail = detail


class LightRAGUnavailable(LightRAGError):
    """Unreachable, too slow, 5xx, or not answering like LightRAG 1.5.7. Try again later."""


class LightRAGBusy(LightRAGError):
    """LightRAG's pipeline is busy and did nothing. Try again later."""

    def __init__(
        self,
        message: str,
        *,
        track_id: str | None = None,
        status_code: int | None = None,
        detail: str | None = None,
    ):
        super().__init__(message, status_code=status_code, detail=detail)
        self.track_id = track_id


class LightRAGRejected(LightRAGError):
    """LightRAG refused this request as given (4xx); sending it again will not help."""


class LightRAGUnauthorized(LightRAGError):
    """LightRAG refused MNote's API key: missing or wrong (401/403)."""
