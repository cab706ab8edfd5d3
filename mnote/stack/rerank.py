"""The embedded LightRAG's rerank provider: BM25 (``bm25s``) fused with the
embedding order LightRAG retrieved the candidates in.

LightRAG calls it as its ``cohere`` rerank binding (``RERANK_BINDING=cohere``,
``RERANK_BINDING_HOST=<model endpoint>/v1/rerank``): a POST of ``{model,
query, documents[, top_n]}`` answered with ``{"results": [{"index",
"relevance_score"}]}``, best first. The documents arrive in LightRAG's dense
order, so their position is the embedding score's rank; re-embedding them
here would cost seconds per query on two cores and say nothing new.

Why lexical: a dense model of this size ranks a tiny chunk ("Hello", a file
name) above the paragraph that holds the user's very words; BM25 over the
candidates puts the words back in charge while the dense rank still decides
between paragraphs that share them.

Runs under the LightRAG virtualenv (``bm25s`` and numpy live there); importing
this module needs only the standard library.
"""
from __future__ import annotations

import re

RERANK_MODEL = "mnote-bm25-dense-fusion"
# Weights of the fused score: lexical (BM25, scaled to the best candidate) and
# dense (LightRAG's order). Tuned on the tuned half of bench/search_quality.py.
LEXICAL_WEIGHT = 0.7
DENSE_WEIGHT = 0.3
MAX_DOCUMENTS = 500

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
_CJK_RUN = re.compile(rf"[{_CJK}]")
# Words that say nothing about which paragraph is meant (English; Chinese
# bigrams carry their own weight through IDF).
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with "
    "what which who how when where why do does did can should would could i you we they he she".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased words and their neighbour pairs; Chinese runs as single
    characters and character pairs (no word segmenter ships offline)."""
    out: list[str] = []
    words: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        run = match.group(0)
        if _CJK_RUN.match(run):
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
            words.append(run)
        elif run not in _STOPWORDS:
            out.append(run)
            words.append(run)
    out.extend(f"{a}_{b}" for a, b in zip(words, words[1:]))
    return out


def fused_scores(query: str, documents: list[str]) -> list[float]:
    """One score in [0, 1] per document, in the documents' order."""
    import bm25s  # only the LightRAG virtualenv has it

    n = len(documents)
    if n == 0:
        return []
    dense = [1.0 - i / n for i in range(n)]
    query_tokens = tokens(query)
    corpus = [tokens(d) or ["\x00empty"] for d in documents]
    lexical = [0.0] * n
    if query_tokens:
        retriever = bm25s.BM25()
        retriever.index(corpus, show_progress=False)
        vocab = retriever.vocab_dict
        known = [t for t in query_tokens if t in vocab]
        if known:
            raw = retriever.get_scores(known)
            best = float(max(raw)) if len(raw) else 0.0
            if best > 0:
                lexical = [float(s) / best for s in raw]
    return [round(LEXICAL_WEIGHT * lex + DENSE_WEIGHT * d, 6) for lex, d in zip(lexical, dense)]


class RerankRequestError(ValueError):
    pass


def rerank_response(body: dict) -> dict:
    """The answer to one ``/v1/rerank`` request (Cohere/Jina shape)."""
    query = body.get("query")
    documents = body.get("documents")
    if not isinstance(query, str) or not query.strip():
        raise RerankRequestError("'query' must be a non-empty string")
    if not isinstance(documents, list):
        raise RerankRequestError("'documents' must be a list")
    if len(documents) > MAX_DOCUMENTS:
        raise RerankRequestError("at most %d documents per request" % MAX_DOCUMENTS)
    texts = []
    for doc in documents:
        if isinstance(doc, dict):  # Cohere v1 also accepted {"text": ...}
            doc = doc.get("text")
        if not isinstance(doc, str):
            raise RerankRequestError("each document must be a string")
        texts.append(doc)
    top_n = body.get("top_n")
    if top_n is not None and (not isinstance(top_n, int) or top_n < 1):
        raise RerankRequestError("'top_n' must be a positive integer")
    scores = fused_scores(query, texts)
    order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
    if top_n is not None:
        order = order[:top_n]
    return {
        "model": RERANK_MODEL,
        "results": [{"index": i, "relevance_score": scores[i]} for i in order],
    }
