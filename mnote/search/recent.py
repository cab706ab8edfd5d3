"""A reader's recent questions (newest first), so the home page can offer
them again. Nothing else about a search is stored.

They live in a signed cookie bound to the login's session, not in the
session row: remembering a new question then costs the browser a cookie,
not the database a write per search (a search is a GET, and writes nothing).
The signature's salt holds the session key, so after a logout or a new login
the old list is not read; a logged-out browser is told to drop the cookie.
"""

from django.conf import settings
from django.core import signing

KEY = "mnote_recent_queries"  # where sessions from before the cookie kept them
COOKIE = "mnote_recent"
LIMIT = 8
# Browsers drop a cookie over 4 KB without a word: the oldest questions go first.
MAX_COOKIE_CHARS = 3000


def _salt(request) -> str:
    return f"mnote.search.recent:{request.session.session_key}"


def remember(request, kind: str, query: str, scope: list[str] | None = None) -> None:
    """``kind`` is "search" or "ask"; the same question asked again moves to the top."""
    entry = {"kind": kind, "q": query[:300], "scope": ", ".join(scope or [])[:300]}
    known = recent(request)
    if known[:1] == [entry]:
        return  # already the newest: no cookie is sent again
    kept = [e for e in known if (e.get("kind"), e.get("q"), e.get("scope")) != tuple(entry.values())]
    request._mnote_recent = [entry, *kept][:LIMIT]


def recent(request) -> list[dict]:
    pending = getattr(request, "_mnote_recent", None)
    if pending is not None:
        return list(pending)
    raw = request.COOKIES.get(COOKIE)
    if raw and request.session.session_key:
        try:
            value = signing.loads(raw, salt=_salt(request))
        except signing.BadSignature:
            value = None
        if isinstance(value, list):
            return [e for e in value if isinstance(e, dict)][:LIMIT]
    return list(request.session.get(KEY, []))


class RecentQuestionsMiddleware:
    """Sends the cookie when a view remembered a question; clears it once the
    browser is logged out. After the auth middleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        entries = getattr(request, "_mnote_recent", None)
        if entries is not None and request.session.session_key:
            value = signing.dumps(entries, salt=_salt(request), compress=True)
            while len(value) > MAX_COOKIE_CHARS and len(entries) > 1:
                entries = entries[:-1]
                value = signing.dumps(entries, salt=_salt(request), compress=True)
            if len(value) <= MAX_COOKIE_CHARS:
                response.set_cookie(
                    COOKIE,
                    value,
                    max_age=settings.SESSION_COOKIE_AGE,
                    secure=settings.SESSION_COOKIE_SECURE,
                    httponly=True,
                    samesite="Lax",
                )
        elif COOKIE in request.COOKIES and not request.user.is_authenticated:
            response.delete_cookie(COOKIE, samesite="Lax")
        return response
