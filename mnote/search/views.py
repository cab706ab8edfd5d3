from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from mnote.citations.citation_text import mark_terms
from mnote.citations.search import UnknownScope, answer_question, full_library_search, not_in_lightrag
from mnote.lightrag import LightRAGBusy, LightRAGError, LightRAGRejected, LightRAGUnavailable
from mnote.search.forms import AskForm, SearchForm
from mnote.search.recent import remember
from mnote.search.workspace import workspace_search


def _lightrag_problem(error: LightRAGError) -> str:
    if isinstance(error, LightRAGRejected):
        return _("LightRAG did not accept this search: %(detail)s") % {"detail": error}
    if isinstance(error, LightRAGBusy):
        return _("LightRAG is busy indexing right now; try again in a moment.")
    if isinstance(error, LightRAGUnavailable):
        return _("LightRAG is unavailable, so the full library cannot be searched right now. Workspace search still works.")
    return _("LightRAG could not answer: %(detail)s") % {"detail": error}


def _unknown_scope(error: UnknownScope) -> str:
    return _("Nothing in the library you can see is called %(paths)s. Check the scope’s spelling; a scope is a folder or file path as shown on the cards.") % {
        "paths": ", ".join(f"“{p}”" for p in error.paths)
    }


def _cards(citations, query):
    return [{"citation": c, "marked": mark_terms(c.display_quote, query)} for c in citations]


@require_GET
@vary_on_headers("HX-Request")
def search(request):
    """One page, two explicit modes that never mix: Workspace (MNote's own
    light index) and Full library (LightRAG citations, no answer)."""
    form = SearchForm(request.GET if "q" in request.GET else None)
    context = {"form": form, "mode": "library", "cards": [], "hits": [], "missing": [], "problem": "", "searched": False}
    if form.is_bound and form.is_valid():
        query, mode, scope = form.cleaned_data["q"], form.cleaned_data["mode"], form.cleaned_data["scope"]
        context.update(mode=mode, query=query, searched=True)
        remember(request, "search", query, scope)
        if mode == "workspace":
            context["hits"] = workspace_search(request.user, query, scope=scope)
        else:
            try:
                mapped = full_library_search(request.user, query, mode=form.cleaned_data["retrieval"], scope=scope)
                context["cards"] = _cards(mapped.citations, query)
                context["diagnostics"] = mapped.diagnostics
            except UnknownScope as e:
                context["problem"] = _unknown_scope(e)
            except LightRAGError as e:
                context["problem"] = _lightrag_problem(e)
            context["missing"] = not_in_lightrag(request.user, query)
            context["scope"] = scope
    template = "search/search.html#results" if request.htmx else "search/search.html"
    return render(request, template, context)


@require_GET
@vary_on_headers("HX-Request")
def ask(request):
    """A question answered from the library, its sentences badged with the
    citations that support them; the context used is listed beside it."""
    form = AskForm(request.GET if "q" in request.GET else None)
    context = {"form": form, "answer": None, "cards": [], "problem": ""}
    if form.is_bound and form.is_valid():
        query = form.cleaned_data["q"]
        remember(request, "ask", query, form.cleaned_data["scope"])
        try:
            answer = answer_question(request.user, query, mode=form.cleaned_data["retrieval"], scope=form.cleaned_data["scope"])
            context["answer"] = answer
            context["cards"] = _cards(answer.mapped.citations, query)
        except UnknownScope as e:
            context["problem"] = _unknown_scope(e)
        except LightRAGError as e:
            context["problem"] = _lightrag_problem(e)
    template = "search/ask.html#answer" if request.htmx else "search/ask.html"
    return render(request, template, context)
