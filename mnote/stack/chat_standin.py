"""The chat half of the local model endpoint: there is NO language model here.

LightRAG 1.5.7 sends three kinds of prompt to ``/v1/chat/completions``; the
reply is chosen from the kind (phrases taken from ``lightrag/prompt.py``):

* entity/relation extraction -> ``<|COMPLETE|>`` ("no entities"; the JSON
  extraction mode gets ``{"entities": [], "relationships": []}``);
* keyword extraction -> a JSON object built from the query's own words;
* anything else (answer generation) -> a fixed sentence saying retrieval only.

For the tests' answering LightRAG, :func:`graph_extraction` replies to an
extraction prompt with entities and relations read from the chunk, so that
LightRAG builds a knowledge graph as it would with a real LLM.

Stdlib only: the Django side imports it (tests, the stack's config).
"""
from __future__ import annotations

import json
import re
from typing import Any

try:
    # config.py is stdlib-only by design, so this pulls no Django.
    from mnote.lightrag.config import NO_LLM_MODEL
except Exception:  # pragma: no cover - missing or broken config must not stop the endpoint
    # Must equal mnote.lightrag.config.NO_LLM_MODEL (the LightRAG server is
    # started with LLM_MODEL set to this name).
    NO_LLM_MODEL = "mnote-no-llm"

NO_LLM_ANSWER = (
    "No language model is configured on this server; it provides retrieval "
    "only, so no answer was generated."
)
# LightRAG's completion delimiter (PROMPTS["DEFAULT_COMPLETION_DELIMITER"]):
# a reply holding only this line means "no entities, no relations".
EXTRACTION_DONE = "<|COMPLETE|>"
# The same "nothing found" answer for entity_extraction_use_json mode.
EXTRACTION_DONE_JSON = '{"entities": [], "relationships": []}'

# ---------------------------------------------------------------------------
# Prompt classification (phrases taken from lightrag/prompt.py, 1.5.7)
# ---------------------------------------------------------------------------

# entity_extraction_system_prompt and entity_extraction_json_system_prompt
_EXTRACT_SYSTEM = "Knowledge Graph Specialist responsible for extracting entities and relationships"
# entity_extraction_(json_)user_prompt / entity_continue_extraction_(json_)user_prompt
_EXTRACT_USER = (
    "Extract entities and relationships from the `---Input Text---` section",
    "identify and extract any missed or incorrectly formatted entities and relationships",
    "identify and extract any **missed or incorrectly described** entities and relationships",
)
# Only in the JSON-mode extraction prompts.
_EXTRACT_JSON_MARK = "`entities` and `relationships` arrays"
# keywords_extraction
_KEYWORDS_ROLE = "You are an expert keyword extractor"
_KEYWORDS_QUERY = "User Query:"
_KEYWORDS_QUERY_END = "---Output---"
# Role lines sit at the start of a prompt; looking only at a prompt's head
# keeps document text quoted further down from changing the classification.
_HEAD = 400


def _message_text(message: Any) -> str:
    """Text of one chat message (string content or a list of text parts)."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def classify_messages(messages: list, response_format: Any = None) -> str:
    """Return "extract", "extract_json", "keywords" or "answer"."""
    system = "\n".join(
        _message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "system"
    )
    users = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    last_user = users[-1] if users else ""
    wants_json = isinstance(response_format, dict) and response_format.get("type") == "json_object"

    if _EXTRACT_SYSTEM in system[:_HEAD] or any(p in last_user[:_HEAD] for p in _EXTRACT_USER):
        if wants_json or _EXTRACT_JSON_MARK in system or _EXTRACT_JSON_MARK in last_user[:2000]:
            return "extract_json"
        return "extract"
    if _KEYWORDS_ROLE in last_user[:_HEAD] or _KEYWORDS_ROLE in system[:_HEAD]:
        return "keywords"
    return "answer"


def keyword_query(prompt: str) -> str:
    """The user query embedded in a keywords_extraction prompt."""
    start = prompt.rfind(_KEYWORDS_QUERY)
    if start < 0:
        return ""
    rest = prompt[start + len(_KEYWORDS_QUERY):]
    end = rest.rfind(_KEYWORDS_QUERY_END)
    if end >= 0:
        rest = rest[:end]
    return rest.strip()


# Han, kana, Hangul: written without spaces, so a run of them is one token
# (no dictionary segmentation here -- the run is kept as a phrase).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(
    r"([%s]+)|((?:(?![%s])[^\W_])+(?:[-'.](?:(?![%s])[^\W_])+)*)" % (_CJK, _CJK, _CJK)
)
_STOPWORDS = frozenset(
    """a an and are as at be by can could did do does for from had has have how i
    in is it its me my of on or our should that the their them there these they
    this to was we were what when where which who whom whose why will with would
    you your about into than then so if not no yes please tell show give find""".split()
)
MAX_KEYWORDS = 16


def query_keywords(query: str) -> list[str]:
    """Low-level keywords from the query's own words, in order, deduplicated.

    Latin-script words minus a few English stop words and single letters; CJK
    runs kept whole. Never empty for a non-blank query: LightRAG gives up on
    queries of 50+ characters when both keyword lists are empty.
    """
    out: list[str] = []
    seen: set[str] = set()
    for cjk, word in _TOKEN_RE.findall(query):
        token = cjk or word
        key = token.casefold()
        if not cjk and (key in _STOPWORDS or (len(token) < 2 and not token.isdigit())):
            continue
        if key in seen:
            continue
        seen.add(key)
        out.append(token)
        if len(out) >= MAX_KEYWORDS:
            break
    if not out and query.strip():
        out = [query.strip()]
    return out


def chat_reply(messages: list, response_format: Any = None) -> tuple[str, str]:
    """(kind, reply text) for a chat request."""
    kind = classify_messages(messages, response_format)
    if kind == "extract":
        return kind, EXTRACTION_DONE
    if kind == "extract_json":
        return kind, EXTRACTION_DONE_JSON
    if kind == "keywords":
        users = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        query = keyword_query(users[-1] if users else "")
        payload = {"high_level_keywords": [], "low_level_keywords": query_keywords(query)}
        return kind, json.dumps(payload, ensure_ascii=False)
    return kind, NO_LLM_ANSWER


def _rough_tokens(text: str) -> int:
    """Crude token estimate for the usage block (there is no tokenizer here)."""
    return len(re.findall(r"[%s]|[^\s%s]+" % (_CJK, _CJK), text))


# The chunk's text in an extraction prompt (entity_extraction_(json_)user_prompt):
#     ---Input Text---\n```\n{input_text}\n```\n\n---Output---
_INPUT_START = "---Input Text---\n```\n"
_INPUT_END = "\n```\n\n---Output---"


def extraction_input(messages: list) -> str | None:
    """The chunk text an entity-extraction prompt quotes (None for a gleaning
    follow-up, which quotes none). LightRAG quotes the stored chunk without
    its tables', drawings' and equations' ids and asset paths."""
    users = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    prompt = users[-1] if users else ""
    start = prompt.find(_INPUT_START)
    end = prompt.rfind(_INPUT_END)
    if start < 0 or end < start + len(_INPUT_START):
        return None
    text = prompt[start + len(_INPUT_START):end]
    return text if text.strip() else None


# --- a graph for the tests' answering LightRAG --------------------------------

_TUPLE = "<|#|>"
# Capitalised words (and codes such as 4471-ZETA) name the entities.
_NAME = re.compile(r"\b(?:[A-Z][a-z]{2,}|[0-9A-Z]+(?:-[0-9A-Z]+)+)\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_NOT_NAMES = frozenset(w.capitalize() for w in _STOPWORDS) | {"Every", "Each", "After", "Before", "Copy"}
MAX_ENTITIES = 8


def graph_extraction(chunk: str, as_json: bool = False) -> str:
    """Entities and relations of one chunk, deterministically: every
    capitalised word is an entity described by the sentences naming it, and
    two entities in one sentence are related by that sentence. A real LLM
    would do better; this is enough for LightRAG to build a graph whose
    entities merge what several files say of them."""
    lines = [line for line in chunk.splitlines() if line.strip() and not line.lstrip().startswith(("#", "|"))]
    sentences = [" ".join(s.split()) for line in lines for s in _SENTENCE_END.split(line) if len(s.split()) >= 3]
    names: dict[str, list[str]] = {}
    for sentence in sentences:
        for name in _NAME.findall(sentence):
            if name not in _NOT_NAMES and (name in names or len(names) < MAX_ENTITIES):
                names.setdefault(name, [])
                if sentence not in names[name]:
                    names[name].append(sentence)
    relations = {}
    for sentence in sentences:
        present = [n for n in dict.fromkeys(_NAME.findall(sentence)) if n in names]
        for first, second in zip(present, present[1:]):
            relations.setdefault((first, second), sentence)
    if as_json:
        return json.dumps({
            "entities": [{"entity_name": n, "entity_type": "Other", "entity_description": " ".join(d)}
                         for n, d in names.items()],
            "relationships": [{"source_entity": a, "target_entity": b, "relationship_keywords": "mentioned together",
                               "relationship_description": d} for (a, b), d in relations.items()],
        }, ensure_ascii=False)
    rows = [_TUPLE.join(("entity", n, "Other", " ".join(d))) for n, d in names.items()]
    rows += [_TUPLE.join(("relation", a, b, "mentioned together", d)) for (a, b), d in relations.items()]
    return "\n".join(rows + [EXTRACTION_DONE])
