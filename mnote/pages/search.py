"""The search and ask pages: a question over the full library (LightRAG's
citations, with an answer streamed when a model is connected) or the
workspace's own light index; the conversation that follows it."""

import json
from types import SimpleNamespace

from django.contrib import messages
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from mnote.search.badges import AnsweredSentence
from mnote.search.cards import cards_html
from mnote.citations.permalinks import persist
from mnote.search.answers import (
    WITHHELD_NOTE,
    UnknownScope,
    answer_question,
    answer_stream,
    check_scope,
    default_mode,
    full_library_search,
    not_in_lightrag,
)
from mnote.library.models import IndexedRoot, Source
from mnote.lightrag.provider import lightrag_client, recent_health
from mnote.lightrag import LightRAGBusy, LightRAGError, LightRAGRejected, LightRAGUnavailable
from mnote.pages.search_forms import AskForm, SearchForm
from mnote.search.models import Conversation, Turn
from mnote.search.recent import remember
from mnote.workspace.index import workspace_search


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
            # The visible roots read once, for the mapper and the name matches.
            roots = IndexedRoot.objects.visible_ids(request.user)
            sources = Source.objects.filter(root_id__in=roots)
            try:
                mapped = full_library_search(
                    request.user, query, mode=form.cleaned_data["retrieval"], scope=scope, sources=sources
                )
                context["cards"] = cards_html(mapped.citations, query)
                context["diagnostics"] = mapped.diagnostics
                # Below the relevance floor the cards are folded away, not dropped.
                context["weak_match"] = bool(mapped.diagnostics.get("lowConfidence")) and bool(mapped.citations)
            except UnknownScope as e:
                context["problem"] = _unknown_scope(e)
            except LightRAGError as e:
                context["problem"] = _lightrag_problem(e)
            context["missing"] = not_in_lightrag(request.user, query, root_ids=roots)
            context["scope"] = scope
    status = 200
    if form.is_bound and not form.is_valid():
        # A malformed search is refused with its message. htmx swaps only a 2xx
        # answer into the results, so there the message comes as the results.
        if _partial_wanted(request):
            context["problem"] = " ".join(str(e) for errors in form.errors.values() for e in errors)
        else:
            status = 400
    template = "search/search.html#results" if _partial_wanted(request) else "search/search.html"
    return render(request, template, context, status=status)


def _partial_wanted(request) -> bool:
    # A history restore (Back after the page left htmx's history cache) asks
    # for the whole page even though htmx sends it.
    return bool(request.htmx) and not request.htmx.history_restore_request


# --- ask: answers, streamed, in conversations ------------------------------


def _provider_health():
    try:
        with lightrag_client() as client:
            return recent_health(client)
    except LightRAGError:
        return None


def _stored_card(item: dict) -> SimpleNamespace:
    """A card saved with a turn, with the attributes `cards_html` reads."""
    locator = item.get("locator") or {}
    relevance = item.get("relevance") or {}
    return SimpleNamespace(
        citation_id=item["citationId"],
        source_id=item["sourceId"],
        source_path=item["sourcePath"],
        file_name=item["fileName"],
        precision=item["locatorPrecision"],
        page=locator.get("page"),
        heading_path=item.get("headingPath") or [],
        display_quote=item.get("displayQuote") or "",
        locator=locator,
        locator_json=json.dumps(locator, ensure_ascii=False),
        relevance_score=relevance.get("score") or 0,
        provider_rank=relevance.get("providerRank"),
        citation_url=item.get("citationUrl") or "",
    )


def _cited_first(citations, sentences, query) -> tuple[list, list]:
    """Cards of the passages the answer cites, in citing order, then the rest
    of the context (shown folded)."""
    order = list(dict.fromkeys(cid for s in sentences for cid in s.citation_ids))
    by_id = {c.citation_id: c for c in citations}
    cited = [by_id[cid] for cid in order if cid in by_id]
    rest = [c for c in citations if c.citation_id not in set(order)]
    return cards_html(cited, query), cards_html(rest, query)


def _turn(question, answer=None, *, kind="", sentences=(), citations=(), notes=(), problem="", streaming=False) -> dict:
    if answer is not None:
        kind, sentences, citations, notes = answer.kind, answer.sentences, answer.mapped.citations, answer.notes
    cited, rest = _cited_first(list(citations), list(sentences), question)
    if streaming:
        cited, rest = cards_html(list(citations), question), []
    return {
        "question": question,
        "kind": kind,
        "sentences": list(sentences),
        "cited_cards": cited,
        "other_cards": rest,
        "notes": [_(n) for n in notes],
        "problem": problem,
        "streaming": streaming,
        "withheld": WITHHELD_NOTE in notes,
    }


def _stored_turn(turn: Turn, visible_ids: set[int]) -> dict:
    # Visibility can change after a turn was saved: a card whose root the
    # user may no longer see is not shown again.
    citations = [_stored_card(c) for c in turn.citations if c.get("sourceId") in visible_ids]
    shown = {c.citation_id for c in citations}
    sentences = [
        AnsweredSentence(s["text"], [cid for cid in s.get("citationIds", []) if cid in shown], s.get("spaceBefore", ""))
        for s in turn.sentences
    ]
    return _turn(turn.question, kind=turn.kind, sentences=sentences, citations=citations, notes=turn.notes)


def _save_turn(user, conversation: Conversation | None, question: str, answer) -> Conversation:
    if conversation is None:
        conversation = Conversation.objects.create(user=user, title=question[:200])
    # A saved answer must last: its citations become permalink rows now.
    persist(answer.mapped.citations)
    citations = []
    for c in answer.mapped.citations:
        item = c.as_json()
        item.pop("diagnostics", None)
        citations.append(item)
    Turn.objects.create(
        conversation=conversation,
        question=question,
        kind=answer.kind,
        sentences=[{"text": s.text, "citationIds": list(s.citation_ids), "spaceBefore": s.space_before} for s in answer.sentences],
        citations=citations,
        notes=list(answer.notes),
    )
    conversation.save(update_fields=["updated_at"])
    return conversation


def _ask_arguments(form, health) -> dict:
    return {
        "mode": form.cleaned_data["retrieval"] or default_mode(health),
        "scope": form.cleaned_data["scope"],
    }


def _page(request, form, *, conversation=None, turns=(), problem="") -> dict:
    health = _provider_health()
    mode = default_mode(health)
    form.fields["retrieval"].initial = mode
    return {
        "provider_note": (
            _("This LightRAG has a knowledge graph (an LLM extracts entities at ingest): retrieval defaults to mix.")
            if mode == "mix"
            else _("This LightRAG has no LLM, so no knowledge graph: retrieval defaults to naive (vectors only).")
        ),
        "form": form,
        "turns": list(turns),
        "problem": problem,
        "conversation": conversation,
        "conversations": Conversation.objects.of(request.user)[:30],
    }


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _streamed_answer(request, question: str, arguments: dict, conversation: Conversation | None):
    """Server-sent events of one answer: the turn with its cards before any
    word, then completed sentences with their badges and the text still being
    written, then the cards re-ordered cited first. Closing the response (the
    Stop button, a closed tab) closes the answer stream to LightRAG."""
    history = conversation.history() if conversation else None
    events = answer_stream(request.user, question, history=history, **arguments)
    shown = None  # ids of the cards already on the page
    try:
        for event in events:
            if event.kind in ("cards", "context") and shown is None:
                turn = _turn(question, event.answer, streaming=True)
                shown = {c.citation_id for c in event.answer.mapped.citations}
                yield _sse("context", {"html": render_to_string("search/ask.html#turn", {"turn": turn}, request)})
            elif event.kind == "context":
                rest = [c for c in event.answer.mapped.citations if c.citation_id not in shown]
                html = render_to_string("search/ask.html#more_cards", {"cards": cards_html(rest, question)}, request)
                yield _sse("cards", {"html": html})
            elif event.kind == "text":
                html = render_to_string("search/ask.html#sentences", {"sentences": event.sentences}, request)
                yield _sse("text", {"html": html, "pending": event.pending})
            else:
                conversation = _save_turn(request.user, conversation, question, event.answer)
                turn = _turn(question, event.answer)
                yield _sse(
                    "done",
                    {
                        "html": render_to_string("search/ask.html#turn", {"turn": turn}, request),
                        "conversation": conversation.pk,
                        "url": conversation.get_absolute_url(),
                    },
                )
    except LightRAGError as e:
        yield _sse("problem", {"html": render_to_string("search/ask.html#problem", {"problem": _lightrag_problem(e)}, request)})
    finally:
        events.close()


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request", "Accept")
def ask(request):
    """A question answered from the library, its sentences badged with the
    citations that support them. GET with ``q`` answers once (a link); POST
    asks in a conversation — streamed as server-sent events to the page's
    script, or answered whole and redirected to the conversation without it."""
    data = request.POST if request.method == "POST" else (request.GET if "q" in request.GET else None)
    form = AskForm(data)
    if not form.is_bound or not form.is_valid():
        return render(request, "search/ask.html", _page(request, form), status=400 if form.is_bound else 200)
    question = form.cleaned_data["q"]
    remember(request, "ask", question, form.cleaned_data["scope"])
    arguments = _ask_arguments(form, _provider_health())
    conversation = None
    if form.cleaned_data["conversation"]:
        conversation = get_object_or_404(Conversation.objects.of(request.user), pk=form.cleaned_data["conversation"])
    try:
        check_scope(request.user, arguments["scope"])
    except UnknownScope as e:
        return render(request, "search/ask.html", _page(request, form, conversation=conversation, problem=_unknown_scope(e)))
    if request.method == "POST" and "text/event-stream" in request.headers.get("Accept", ""):
        response = StreamingHttpResponse(
            _streamed_answer(request, question, arguments, conversation), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # a proxy must not hold the stream back
        return response
    try:
        answer = answer_question(request.user, question, history=conversation.history() if conversation else None, **arguments)
    except LightRAGError as e:
        return render(request, "search/ask.html", _page(request, form, conversation=conversation, problem=_lightrag_problem(e)))
    if request.method == "POST":
        conversation = _save_turn(request.user, conversation, question, answer)
        return redirect(conversation)
    context = _page(request, form, turns=[_turn(question, answer)])
    template = "search/ask.html#answer" if _partial_wanted(request) else "search/ask.html"
    return render(request, template, context)


def _visible_source_ids(user) -> set[int]:
    return set(Source.objects.visible_to(user).values_list("pk", flat=True))


@require_GET
def conversation(request, pk: int):
    """A saved conversation, reopened: its turns, and the box for a follow-up."""
    convo = get_object_or_404(Conversation.objects.of(request.user), pk=pk)
    visible = _visible_source_ids(request.user)
    turns = [_stored_turn(t, visible) for t in convo.turns.all()]
    form = AskForm(initial={"conversation": convo.pk})
    return render(request, "search/ask.html", _page(request, form, conversation=convo, turns=turns))


@require_POST
def conversation_delete(request, pk: int):
    convo = get_object_or_404(Conversation.objects.of(request.user), pk=pk)
    convo.delete()
    messages.success(request, _("Conversation deleted."))
    return redirect("ask")
