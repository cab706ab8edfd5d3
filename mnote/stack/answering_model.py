"""A deterministic answering model, for tests only.

The embedded stack has no language model, so LightRAG's own answer pipeline
(prompt → LLM → ``/query/stream``) would never run in the tests. Started with
``--test-answers``, the model endpoint answers LightRAG's RAG prompts the way
an LLM would, from the context LightRAG put in the prompt:

* the question is the last user message, earlier user messages are the
  conversation (``conversation_history``), and the context is the
  ``Document Chunks`` JSON lines of the system prompt — or, for a prompt
  MNote made itself (sent through LightRAG's ``bypass`` mode, so it is the
  last user message), of that message, whose question follows its
  ``---Question---`` line;
* the ``Knowledge Graph Data`` entities' and relations' descriptions of
  LightRAG's own prompts are read as context too (a real LLM would use them);
* the answer is up to three sentences taken verbatim from that context — the
  ones sharing most words with the question (its words count twice, earlier
  questions' words once, so a follow-up is read in the light of the turn
  before it) — each with LightRAG's reference marker ``[n]``, then a
  ``### References`` list, as LightRAG's prompt asks;
* streamed in small pieces (markers may be split across pieces), at a pace a
  test can slow down to press Stop in time.

Only requests naming :data:`TEST_ANSWER_MODEL` are answered this way, so one
endpoint serves both a no-LLM LightRAG and an answering one. Standard library
only: it runs in LightRAG's virtualenv.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from typing import Any

from mnote.stack import event_stream

TEST_ANSWER_MODEL = "mnote-test-answers"
NO_ANSWER = "I do not have enough information in the provided context to answer that."
MAX_SENTENCES = 3
PIECE_CHARS = 14
DEFAULT_PACE_S = 0.02

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_WORD = re.compile(r"[%s]+|[^\W_]+" % _CJK)
_STOP = frozenset(
    """a an and are as at be by can could did do does for from had has have how i in is it its me my of on or
    our should that the their them there these they this to was we were what when where which who whom whose why
    will with would you your about into than then so if not no yes please tell show give find also and about
    what's much many made""".split()
)
_CHUNKS_BLOCK = re.compile(r"Document Chunks[^\n]*\n+```json\n(.*?)\n```", re.DOTALL)
_REFERENCE_LINE = re.compile(r"^\[(\d+)\]\s+(.+)$", re.MULTILINE)
_REFERENCE_BLOCK = re.compile(r"Reference Document List[^\n]*\n+```\n(.*?)\n```", re.DOTALL)
_TAG = re.compile(r"<(table|equation)\b[^>]*>.*?</\1>|<[^>]+>", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return content if isinstance(content, str) else ""


def context_of(system_prompt: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The (reference id, chunk text) pairs and the reference list of a LightRAG RAG prompt."""
    chunks: list[tuple[str, str]] = []
    block = _CHUNKS_BLOCK.search(system_prompt)
    for line in (block.group(1) if block else "").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("content"):
            chunks.append((str(entry.get("reference_id") or ""), str(entry["content"])))
    listed = _REFERENCE_BLOCK.search(system_prompt)
    references = dict(_REFERENCE_LINE.findall(listed.group(1) if listed else ""))
    return chunks, references


# The line before the question in a prompt MNote made (search/answers.py).
QUESTION_MARK = "---Question---\n"
# LightRAG 1.5.7's Knowledge Graph Data blocks (prompt.py, kg_query_context):
# one JSON object a line, each with a description.
_GRAPH_BLOCK = re.compile(r"Knowledge Graph Data \((?:Entity|Relationship)\)[^\n]*\n+```json\n(.*?)\n```", re.DOTALL)


def graph_context_of(system_prompt: str) -> list[tuple[str, str]]:
    """The entities' and relations' descriptions of a LightRAG RAG prompt, as
    context without a reference id (LightRAG gives them none)."""
    found = []
    for block in _GRAPH_BLOCK.findall(system_prompt):
        for line in block.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("description"), str):
                found.append(("", entry["description"]))
    return found


def _terms(text: str) -> set[str]:
    terms = set()
    for word in _WORD.findall(text.casefold()):
        if re.fullmatch("[%s]+" % _CJK, word):
            terms.update(word[i : i + 2] for i in range(max(len(word) - 1, 1)))
        elif word not in _STOP and (len(word) > 1 or word.isdigit()):
            terms.add(word[:-1] if len(word) > 4 and word.endswith("s") else word)
    return terms


def _sentences(chunk: str) -> list[str]:
    lines = [line for line in _TAG.sub(" ", chunk).splitlines() if not line.lstrip().startswith(("#", "|"))]
    found = []
    for line in lines:
        for piece in _SENTENCE_END.split(line):
            sentence = " ".join(piece.split())
            if len(sentence) >= 12 and not sentence.endswith(("?", "？")):
                found.append(sentence)
    return found


def _with_marker(sentence: str, reference_id: str) -> str:
    if not reference_id:
        return sentence
    if sentence[-1:] in ".!。！":
        return f"{sentence[:-1]} [{reference_id}]{sentence[-1]}"
    return f"{sentence} [{reference_id}]"


def answer(messages: list) -> str:
    """The full answer text for a chat request holding a LightRAG RAG prompt."""
    system = "\n".join(_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "system")
    questions = [_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    question = questions[-1] if questions else ""
    if QUESTION_MARK in question and not _CHUNKS_BLOCK.search(system):
        system, question = question.rsplit(QUESTION_MARK, 1)
        questions[-1] = question
    chunks, references = context_of(system)
    chunks += graph_context_of(system)
    now, before = _terms(question), set().union(*map(_terms, questions[:-1])) if len(questions) > 1 else set()
    scored = []
    order = 0
    for reference_id, chunk in chunks:
        for sentence in _sentences(chunk):
            words = _terms(sentence)
            score = 2 * len(words & now) + len(words & (before - now))
            if score:
                scored.append((-score, order, reference_id, sentence))
            order += 1
    chosen, seen = [], set()
    for _, _, reference_id, sentence in sorted(scored):
        if sentence not in seen:
            seen.add(sentence)
            chosen.append((reference_id, sentence))
        if len(chosen) == MAX_SENTENCES:
            break
    if not chosen:
        return NO_ANSWER
    body = " ".join(_with_marker(sentence, reference_id) for reference_id, sentence in chosen)
    used = list(dict.fromkeys(r for r, _ in chosen if r))
    listing = "\n".join(f"- [{r}] {references.get(r, r)}" for r in used)
    return f"{body}\n\n### References\n\n{listing}" if listing else body


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class TestAnswers:
    """The endpoint's test answering model: answers, pace, and what happened
    to each streamed answer (finished, or cut off by the client)."""

    def __init__(self, pace: float = DEFAULT_PACE_S):
        self.pace = pace
        self._lock = threading.Lock()
        self.counts = {"answered": 0, "streamed": 0, "cancelled": 0}
        self.histories: list[int] = []

    def wants(self, body: dict) -> bool:
        return body.get("model") == TEST_ANSWER_MODEL

    def stats(self) -> dict:
        with self._lock:
            return {**self.counts, "pace": self.pace, "histories": list(self.histories)}

    def configure(self, body: dict) -> dict:
        pace = body.get("pace")
        if isinstance(pace, (int, float)) and 0 <= pace <= 5:
            self.pace = float(pace)
        if body.get("reset"):
            with self._lock:
                self.counts = dict.fromkeys(self.counts, 0)
                self.histories = []
        return self.stats()

    def _count(self, key: str) -> None:
        with self._lock:
            self.counts[key] += 1

    def serve(self, handler, body: dict) -> str:
        """Answer one chat request on ``handler`` (the endpoint's request handler)."""
        messages = body["messages"]
        text = answer(messages)
        with self._lock:
            self.histories.append(sum(1 for m in messages if isinstance(m, dict) and m.get("role") in ("user", "assistant")) - 1)
        cid, created = "chatcmpl-" + uuid.uuid4().hex, int(time.time())
        if not body.get("stream"):
            self._count("answered")
            handler._ok({
                "id": cid, "object": "chat.completion", "created": created, "model": TEST_ANSWER_MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            })
            return "kind=answer test-model"
        event_stream.start(handler)

        def chunk(delta: dict, finish: str | None) -> str:
            return json.dumps({"id": cid, "object": "chat.completion.chunk", "created": created, "model": TEST_ANSWER_MODEL,
                               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}, ensure_ascii=False)

        try:
            event_stream.send(handler, chunk({"role": "assistant", "content": ""}, None))
            for piece in pieces(text):
                time.sleep(self.pace)
                event_stream.send(handler, chunk({"content": piece}, None))
            event_stream.send(handler, chunk({}, "stop"))
            event_stream.end(handler)
        except (BrokenPipeError, ConnectionResetError):
            # LightRAG closed the stream: its client (MNote) stopped the answer.
            handler.close_connection = True
            self._count("cancelled")
            return "kind=answer test-model cancelled"
        self._count("streamed")
        return "kind=answer test-model stream"
