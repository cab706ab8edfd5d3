"""Choose the rerank's fusion and the relevance floor on the tuned part of
the question set, offline, from the candidates a question-set run saved:

    .venv/bin/python bench/search_quality.py --questions bench/questions/handbook.jsonl \
        --keep DIR --signals /tmp/signals.json
    .venv-lightrag/bin/python bench/rerank_tuning.py /tmp/signals.json

For each question the file holds LightRAG's 60 unreranked candidates (its
dense order, as its rerank step receives them) and the query's cosine to each
candidate's stored vector. Every fusion in the grid is replayed with
``mnote.stack.rerank.fused_scores`` itself; reported per split: right file
first, right file in the first 5 files, the gold passage inside one of the
first 5 candidates, and how the floor's signal (the best cosine among the
first candidates) separates the no-answer questions from the answerable ones.
The held-back part is printed for the chosen settings only — never used to
choose.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
sys.path.insert(0, str(REPO_DIR / "bench"))

from mnote.stack.rerank import Fusion, fused_scores, lexical_scores  # noqa: E402
from mnote.text import relevance  # noqa: E402
from search_quality import folded  # noqa: E402

CARDS = 20  # the page shows this many cards (mnote.search.answers.CARDS_SHOWN)


def ranked(q: dict, fusion: Fusion | None, cos_key: str) -> list[dict]:
    cands = q["candidates"]
    if fusion is None:
        return cands
    texts = [c["content"] for c in cands]
    scores = fused_scores(q["question"], texts, [c[cos_key] for c in cands], fusion, lexical=q["_lexical"])
    order = sorted(range(len(cands)), key=lambda i: (-scores[i], i))
    return [cands[i] for i in order]


def measure(questions: list[dict], fusion: Fusion | None, cos_key: str = "cosPassage") -> dict:
    answerable = [q for q in questions if q["file"]]
    first = top5 = quote5 = 0
    for q in answerable:
        order = ranked(q, fusion, cos_key)
        files = list(dict.fromkeys(c["file"] for c in order))
        gold = folded(q["gold"])
        first += bool(files) and files[0] == q["file"]
        top5 += q["file"] in files[:5]
        quote5 += any(c["file"] == q["file"] and gold in folded(c["content"]) for c in order[:5])
    n = len(answerable) or 1
    return {"n": len(answerable), "first": first / n, "top5": top5 / n, "quote5": quote5 / n}


def floor_signal(q: dict, fusion: Fusion | None, cos_key: str) -> float:
    """The floor's measure (``match_confidence``, as the search takes it):
    the first CARDS candidates in the rerank's order stand for the page's
    cards, all 60 for LightRAG's candidates."""
    order = ranked(q, fusion, cos_key)
    cards = order[:CARDS]
    measured = relevance.match_confidence(
        q["question"], [c["content"] for c in cards], [c[cos_key] for c in cards],
        [c["content"] for c in order], [c[cos_key] for c in order])
    return 0.0 if measured is None else measured


def choose_floor(questions: list[dict], fusion, cos_key) -> tuple[float, dict]:
    """The highest threshold that holds back at most 5 % of the answerable
    questions; below it a search is "nothing matches well"."""
    answerable = sorted(floor_signal(q, fusion, cos_key) for q in questions if q["file"])
    allowed = int(0.05 * len(answerable))
    threshold = answerable[allowed] if answerable else 0.0
    return threshold, floor_rates(questions, fusion, cos_key, threshold)


def floor_rates(questions, fusion, cos_key, threshold) -> dict:
    answerable = [floor_signal(q, fusion, cos_key) for q in questions if q["file"]]
    none = [floor_signal(q, fusion, cos_key) for q in questions if not q["file"]]
    separation = sum((a > n) + 0.5 * (a == n) for a in answerable for n in none) / ((len(answerable) * len(none)) or 1)
    return {
        "noAnswerFloored": sum(s < threshold for s in none) / (len(none) or 1),
        "answerableFloored": sum(s < threshold for s in answerable) / (len(answerable) or 1),
        "separation": round(separation, 4),
    }


def tune_floor(tuned: list[dict], fusion, cos_key) -> tuple[dict, float, dict]:
    """The measure's weights: the most no-answer questions held back at 5 %
    of answerable ones, then the best separation (the share of answerable /
    no-answer pairs in the right order). Sets them on the text stage's module."""
    results = []
    for stand_out, coverage, absent in itertools.product((0.0, 0.5, 1.0, 2.0, 3.0), (0.0, 0.1, 0.2, 0.3),
                                                         (0.0, 0.1, 0.2, 0.3)):
        relevance.STAND_OUT_WEIGHT, relevance.COVERAGE_WEIGHT, relevance.ABSENT_WEIGHT = stand_out, coverage, absent
        threshold, rates = choose_floor(tuned, fusion, cos_key)
        results.append(((rates["noAnswerFloored"], rates["separation"], -rates["answerableFloored"]),
                        {"stand_out": stand_out, "coverage": coverage, "absent": absent}, threshold, rates))
    results.sort(key=lambda r: r[0], reverse=True)
    for _, weights, threshold, rates in results[:5]:
        print(f"floor weights {weights}: < {threshold:.4f} {rates}")
    _, weights, threshold, rates = results[0]
    relevance.STAND_OUT_WEIGHT, relevance.COVERAGE_WEIGHT, relevance.ABSENT_WEIGHT = (
        weights["stand_out"], weights["coverage"], weights["absent"])
    return weights, threshold, rates


def jieba_tokens(text: str) -> list[str]:
    """The rerank's tokens with Chinese runs cut into words by jieba (its
    search mode) instead of characters and character pairs: for measuring."""
    import jieba

    from mnote.text import relevance as r

    out, words = [], []
    for match in r._TOKEN.finditer(text.lower()):
        run = match.group(0)
        if r.CJK_CHARACTER.match(run):
            cut = [w for w in jieba.lcut_for_search(run) if w.strip()]
            out.extend(cut)
            words.extend(cut)
        elif run not in r._STOPWORDS:
            out.append(run)
            words.append(run)
    out.extend(f"{a}_{b}" for a, b in zip(words, words[1:]))
    return out


def main(path: str, segmenter: str = "") -> int:
    if segmenter == "jieba":
        from mnote.stack import rerank as r

        r.tokens = jieba_tokens
    questions = json.loads(Path(path).read_text(encoding="utf-8"))
    for q in questions:
        q["_lexical"] = lexical_scores(q["question"], [c["content"] for c in q["candidates"]])
    tuned = [q for q in questions if q["split"] == "tuned"]
    held = [q for q in questions if q["split"] == "held"]
    reach = [q for q in tuned if q["file"]]
    inside = sum(any(c["file"] == q["file"] and folded(q["gold"]) in folded(c["content"]) for c in q["candidates"])
                 for q in reach)
    print(f"tuned: gold passage among LightRAG's 60 candidates: {inside}/{len(reach)}")
    print("tuned, LightRAG's order:", measure(tuned, None))
    print("tuned, today's fusion:  ", measure(tuned, Fusion()))
    results = []
    for lex, sim, words, filler, cos_key in itertools.product(
        (0.3, 0.4, 0.5, 0.6, 0.7), (0.0, 0.2, 0.3, 0.4, 0.5, 0.6), (0, 10, 20, 40), (1.0, 0.3), ("cosPassage", "cosQuery")
    ):
        if lex + sim > 1.0:
            continue
        fusion = Fusion(lexical=lex, rank=round(1.0 - lex - sim, 3), similarity=sim, substance_words=words,
                        filler_factor=filler)
        m = measure(tuned, fusion, cos_key)
        results.append((m["first"] + m["quote5"] + 0.5 * m["top5"], m, fusion, cos_key))
    results.sort(key=lambda r: -r[0])
    for _, m, fusion, cos_key in results[:8]:
        print(f"{m}  {fusion}  {cos_key}")
    _, m, fusion, cos_key = results[0]
    print(f"\nchosen: {fusion} {cos_key}")
    print("floor today (tuned):", choose_floor(tuned, fusion, cos_key))
    weights, threshold, rates = tune_floor(tuned, fusion, cos_key)
    print(f"floor (tuned): match_confidence {weights} < {threshold:.4f}: {rates}")
    print("held, LightRAG's order:", measure(held, None))
    print("held, today's fusion:  ", measure(held, Fusion()))
    print("held, chosen fusion:   ", measure(held, fusion, cos_key))
    print("held floor:", floor_rates(held, fusion, cos_key, threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
