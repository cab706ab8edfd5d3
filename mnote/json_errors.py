"""The app's one JSON error shape, ``{"error": {"code", "message"}}``, for the
JSON API and the preview's JSON endpoints alike; and its JSON-RPC form for
the MCP endpoint, whose clients read only JSON-RPC error objects."""

from django.http import JsonResponse

# JSON-RPC 2.0's reserved codes, and one of the server range for "not allowed".
JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600
JSONRPC_INTERNAL_ERROR = -32603
JSONRPC_UNAUTHORIZED = -32001


def error_response(status: int, code: str, message: str, *, headers: dict | None = None, **extra) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, **extra}}, status=status, headers=headers)


def jsonrpc_error_response(
    status: int,
    rpc_code: int,
    code: str,
    message: str,
    *,
    request_id: str | int | None = None,
    headers: dict | None = None,
    **extra,
) -> JsonResponse:
    """A JSON-RPC error object answering ``request_id`` (None when it could not
    be read), with the HTTP status kept so a plain HTTP client still sees
    400/401/405; ``data.code`` is the JSON API's code for the same error."""
    error = {"code": rpc_code, "message": message, "data": {"code": code, **extra}}
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return JsonResponse(body, status=status, headers=headers)
