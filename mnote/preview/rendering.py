"""A version's render: from the render cache, or made now in the render child
(``render_child``) and charged to the user's render budget. A paged kind's
every page comes from that one child run. Needs only the open file, its
hash and the render's context: the stages above find and open the file."""

import json
from dataclasses import replace

from django.conf import settings
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from mnote.preview import render_child
from mnote.preview.docx.limits import PreviewRejected
from mnote.preview.pdf import PdfRejected
from mnote.preview.render_cache import RENDERER_VERSION, cache_file, cached, peek_at, store
from mnote.preview.render_rate import charge_render
from mnote.preview.renderers import PreviewContext, render_cache_key, renderer_for, runs_own_child
from mnote.preview.text_render import TextRejected

# What a preview cannot show, with a message for the user.
REJECTIONS = (PreviewRejected, PdfRejected, TextRejected)


def rendered(user, kind, handle, sha256: str, ctx: PreviewContext) -> dict:
    """The render of this version of the file (of ``ctx.page``, for a paged
    kind), from the cache or made now in a child process, with the text map
    of its blocks (anchoring.py) when it is HTML."""
    language = get_language() or ""
    first = replace(ctx, page=1)

    def render_now() -> dict:
        # Only a render the cache does not hold counts against the user's budget.
        charge_render(user)
        handle.seek(0)
        if runs_own_child(kind):
            return renderer_for(kind)(handle, first)
        pages = render_child.render_pages(kind, handle, first, language=language, locale_paths=settings.LOCALE_PATHS)
        for number, page in enumerate(pages[1:], start=2):
            store(render_cache_key(kind, replace(first, page=number), language), sha256, page)
        return json.loads(pages[0])

    result = cached(render_cache_key(kind, first, language), sha256, render_now, refusals=REJECTIONS)
    if ctx.page == 1:
        return result
    page = peek_at(cache_file(render_cache_key(kind, ctx, language), sha256))
    if page is None:
        raise PreviewRejected(
            _("Page %(n)s is not in this preview: the sheet has fewer pages, or too many for the preview to show.")
            % {"n": ctx.page}
        )
    return page


def render_version(sha256: str, ctx: PreviewContext) -> str:
    """The name of one page's render of one content: a text map and the
    anchors found in it carry it, so a preview of other content ignores them."""
    page = f"-p{ctx.page}" if ctx.page != 1 else ""
    return f"{RENDERER_VERSION}-{sha256[:16]}{page}"
