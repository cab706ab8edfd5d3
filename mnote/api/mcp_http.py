"""The MCP endpoint at /mcp: streamable HTTP (stateless, JSON responses)
for agents with an API token. The SDK answers; this view authenticates, holds
the body to the JSON API's limits, and turns every refusal into a JSON-RPC
error object, keeping the HTTP status."""

import logging

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from mnote.api.endpoint import ApiError, authenticate, parse_json
from mnote.api.links import link_base
from mnote.json_errors import (
    JSONRPC_INTERNAL_ERROR,
    JSONRPC_INVALID_REQUEST,
    JSONRPC_PARSE_ERROR,
    JSONRPC_UNAUTHORIZED,
    jsonrpc_error_response,
)

log = logging.getLogger(__name__)


def _request_id(request) -> str | int | None:
    """The id of a readable JSON-RPC request, for its error to answer; None
    for a body that is not one (JSON-RPC's answer to an unreadable request)."""
    if request.method != "POST":
        return None
    try:
        message = parse_json(request.body)
    except (ApiError, RequestDataTooBig):
        return None
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def _mcp_error(request, e: ApiError) -> HttpResponse:
    rpc_code = {400: JSONRPC_PARSE_ERROR, 401: JSONRPC_UNAUTHORIZED}.get(e.status, JSONRPC_INVALID_REQUEST)
    return jsonrpc_error_response(
        e.status, rpc_code, e.code, e.message, request_id=_request_id(request), headers=e.headers, **e.extra
    )


@login_not_required
@csrf_exempt
def mcp(request):
    """MCP over streamable HTTP (stateless, JSON responses) for agents with an
    API token; the SDK answers, the tools are those of ``mnote.api.mcp_server``.
    Every refusal is a JSON-RPC error object, with the HTTP status kept."""
    from mnote.api.mcp_server import serve_http

    try:
        if request.method != "POST":
            # No server-initiated stream and no sessions to end: the spec's answer is 405.
            raise ApiError(405, "method_not_allowed", "Use POST for /mcp.", headers={"Allow": "POST"})
        scheme, _, _key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            raise ApiError(
                401, "unauthorized", "Send “Authorization: Bearer <token>”.", headers={"WWW-Authenticate": 'Bearer realm="mnote"'}
            )
        authenticate(request)
        # The JSON API's own limits, before the SDK's parser recurses through the body.
        parse_json(request.body)
    except ApiError as e:
        return _mcp_error(request, e)
    except RequestDataTooBig:
        return jsonrpc_error_response(413, JSONRPC_INVALID_REQUEST, "too_large", "The request body is too large.")
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()]
    try:
        status, response_headers, body = async_to_sync(serve_http)(
            request.user, "POST", headers, request.body, link_base(request)
        )
    except Exception:
        log.exception("MCP request failed")
        return jsonrpc_error_response(
            500, JSONRPC_INTERNAL_ERROR, "internal_error", "MNote failed to handle this request; see its log."
        )
    response = HttpResponse(body, status=status)
    for name, value in response_headers:
        if name.lower() not in (b"content-length", b"transfer-encoding"):
            response[name.decode("latin-1")] = value.decode("latin-1")
    return response
