"""Absolute links for agents. An agent hands its user a link, so the API's
``citationUrl`` and ``previewUrl`` carry a scheme and host: MNOTE_PUBLIC_URL's
when it is set (behind a proxy that renames the host, and for the stdio MCP
server, which has no request), else the request's own."""

from django.conf import settings

from mnote.citations.references import precision_label


def link_base(request=None) -> str:
    """``scheme://host[:port]`` for the API's links; "" (links stay relative)
    only without a setting and without a request."""
    if settings.MNOTE_PUBLIC_URL:
        return settings.MNOTE_PUBLIC_URL
    if request is not None:
        return f"{request.scheme}://{request.get_host()}"
    return ""


def absolute(base: str, url: str | None) -> str | None:
    return base + url if url and url.startswith("/") else url


def citation_markdown(citation, base: str) -> str:
    """The citation's Markdown link, to its absolute URL."""
    return f"[{citation.file_name}, {precision_label(citation.precision, citation.page, citation.locator)}]({absolute(base, citation.citation_url)})"
