"""A reader's recent questions, kept in their session (newest first), so the
home page can offer them again. Nothing else about a search is stored."""

KEY = "mnote_recent_queries"
LIMIT = 8


def remember(request, kind: str, query: str, scope: list[str] | None = None) -> None:
    """``kind`` is "search" or "ask"; the same question asked again moves to the top."""
    entry = {"kind": kind, "q": query[:300], "scope": ", ".join(scope or [])[:300]}
    known = request.session.get(KEY, [])
    kept = [e for e in known if (e.get("kind"), e.get("q"), e.get("scope")) != tuple(entry.values())]
    if known[:1] == [entry]:
        return  # already the newest: the session (a row) is not written again
    request.session[KEY] = [entry, *kept][:LIMIT]


def recent(request) -> list[dict]:
    return list(request.session.get(KEY, []))
