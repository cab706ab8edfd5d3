"""What every API view shares: authentication (session with CSRF, or a
bearer token without), the admin check, JSON bodies validated by a Form, and
errors as ``{"error": {"code", "message"}}`` with the right status — LightRAG
down or busy is a 503, LightRAG refusing the request a 400, never a 500
page or a redirect to the login form."""

import json
import logging
from functools import wraps

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponseNotAllowed, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from mnote.accounts.roles import is_admin
from mnote.api.models import ApiToken
from mnote.json_errors import error_response
from mnote.lightrag import LightRAGBusy, LightRAGError, LightRAGRejected, LightRAGUnauthorized

log = logging.getLogger(__name__)

# Seconds an agent should wait when LightRAG's pipeline is busy.
BUSY_RETRY_AFTER = 10
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="mnote"'}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, *, headers: dict | None = None, **extra):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}
        self.extra = extra

    def response(self) -> JsonResponse:
        return error_response(self.status, self.code, self.message, headers=self.headers, **self.extra)


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason


def _csrf_failure(request) -> str | None:
    """Django's own CSRF check, run for session-authenticated requests only."""
    check = _CsrfCheck(lambda request: None)
    check.process_request(request)
    return check.process_view(request, None, (), {})


def authenticate(request) -> None:
    """Set ``request.user`` from a bearer token or the session; ApiError 401/403 otherwise."""
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        token = ApiToken.objects.authenticate(key.strip())
        if token is None:
            raise ApiError(
                401, "unauthorized", "The API token is unknown or revoked, or its user is inactive.", headers=_CHALLENGE
            )
        # A browser never sends this header on its own, so no CSRF check.
        request.user = token.user
        return
    user = request.user
    if not (user.is_authenticated and user.is_active):
        raise ApiError(401, "unauthorized", "Log in, or send “Authorization: Bearer <token>”.", headers=_CHALLENGE)
    if request.method not in _SAFE_METHODS:
        # Read the body first: the CSRF check parses request.POST, after which
        # a multipart body could no longer be read as raw bytes.
        request.body  # noqa: B018
        reason = _csrf_failure(request)
        if reason:
            raise ApiError(
                403, "csrf_failed", f"CSRF check failed: {reason} Send the X-CSRFToken header, or use an API token."
            )


# No field of the API or of an MCP request nests deeper than a few levels
# (a tool call's conversationHistory is five): a body nested deeper is refused
# before any parser downstream recurses through it.
MAX_JSON_DEPTH = 32


def _nesting_depth_exceeds(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def parse_json(body: bytes):
    """A request body parsed as JSON, nested at most ``MAX_JSON_DEPTH`` deep and
    holding only text that can be encoded; ApiError 400 (invalid_json) otherwise.
    The one check of the JSON API and the MCP endpoint."""
    too_deep = ApiError(400, "invalid_json", f"The request body is nested too deeply (at most {MAX_JSON_DEPTH} levels).")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise ApiError(400, "invalid_json", f"The request body is not valid JSON: {e}") from e
    except RecursionError as e:
        # Thousands of nested [[[…]]] exhaust the parser's stack.
        raise too_deep from e
    if _nesting_depth_exceeds(data, MAX_JSON_DEPTH):
        raise too_deep
    try:
        # JSON may carry "\ud800", which is no character: nothing downstream
        # (the database, LightRAG) can encode it, so it is refused here, once.
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError as e:
        raise ApiError(
            400, "invalid_json", "The request body contains a lone surrogate (such as \\ud800), which is not text."
        ) from e
    return data


def read_json(request) -> dict:
    if not request.body.strip():
        return {}
    data = parse_json(request.body)
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_json", "The request body must be a JSON object.")
    return data


def _form_message(form) -> str:
    parts = []
    for name, errors in form.errors.items():
        text = " ".join(errors)
        parts.append(text if name == "__all__" else f"{name}: {text}")
    return "; ".join(parts)


def validated(form_class, data, *, allow_unknown: bool = False) -> dict:
    """``cleaned_data`` of ``form_class`` bound to ``data``; ApiError 400 naming the fields otherwise."""
    if not allow_unknown:
        unknown = sorted(set(data) - set(form_class.base_fields))
        if unknown:
            expected = ", ".join(form_class.base_fields) or "no fields"
            raise ApiError(400, "invalid_request", f"Unknown field(s): {', '.join(unknown)} (expected: {expected}).")
    form = form_class(data)
    if not form.is_valid():
        raise ApiError(400, "invalid_request", _form_message(form), fields=form.errors.get_json_data())
    return form.cleaned_data


def _lightrag_error(e: LightRAGError) -> JsonResponse:
    if isinstance(e, LightRAGBusy):
        return error_response(
            503,
            "lightrag_busy",
            f"LightRAG is busy: {e} Try again later.",
            headers={"Retry-After": str(BUSY_RETRY_AFTER)},
        )
    if isinstance(e, LightRAGUnauthorized):
        return error_response(503, "lightrag_unauthorized", f"LightRAG refused MNote's API key: {e}")
    if isinstance(e, LightRAGRejected):
        # LightRAG's own words (e.g. "query is too short") tell the caller what to change.
        return error_response(400, "lightrag_rejected", e.detail or str(e))
    return error_response(503, "lightrag_unavailable", f"LightRAG is unavailable: {e}")


def api_endpoint(method: str, *, admin: bool = False, public: bool = False):
    """Make a function view an API endpoint for ``method`` ("GET" or "POST")."""
    require = {"GET": require_GET, "POST": require_POST}[method]

    def decorate(view):
        @wraps(view)
        def handle(request, *args, **kwargs):
            try:
                if not public:
                    authenticate(request)
                    if admin and not is_admin(request.user):
                        raise ApiError(403, "forbidden", "Only admins may do this.")
                return view(request, *args, **kwargs)
            except ApiError as e:
                return e.response()
            except LightRAGError as e:
                return _lightrag_error(e)
            except RequestDataTooBig:
                return error_response(413, "too_large", "The request body is too large.")
            except Exception:
                # Logged with its traceback here; the caller gets JSON, not a debug page.
                log.exception("API %s %s failed", request.method, request.path)
                return error_response(500, "internal_error", "MNote failed to handle this request; see its log.")

        guarded = require(handle)

        @wraps(view)
        def endpoint(request, *args, **kwargs):
            response = guarded(request, *args, **kwargs)
            if isinstance(response, HttpResponseNotAllowed):
                return error_response(
                    405, "method_not_allowed", f"Use {method} for {request.path}.", headers={"Allow": response["Allow"]}
                )
            return response

        # Auth and CSRF are checked in `handle`, answering JSON rather than a login redirect.
        return login_not_required(csrf_exempt(endpoint))

    return decorate
