"""Questions as people ask them, asked of a library of real documents
(``search_quality.py --questions bench/questions/handbook.jsonl``).

The question file is JSON Lines, one question a line:

    {"id": "en-001", "lang": "en", "split": "tuned"|"held",
     "question": "...", "file": "handbook/en-US/quotas.txt" | null,
     "gold": "a short verbatim span of that file holding the answer" | null}

``file: null`` marks a question whose answer is not in the library. The
``held`` third is never tuned on: the rerank's weights and the relevance
floor are chosen on ``tuned`` only.

For every question, in one run against the same real LightRAG (embedded
stack, rerank binding on) and the same files:

  - LightRAG's own order: ``/query/data`` with ``enable_rerank: false``,
    its chunks in the order returned, each quoted whole;
  - the page: ``full_library_search`` as the search page calls it, its cards
    in the page's order, each quoted as the card shows it;
  - BM25: plain BM25 (the rerank's tokens) over 1,200-character passages of
    the files themselves, files ordered by their best passage.

Measures, per side and per split: right file first, right file in the first
5, MRR over the first 20, the gold passage inside one of the first 5 quotes;
and for the page, how often its "nothing matches well" floor holds back the
cards of the no-answer questions (should: all) and of answerable ones
(should: none).

The page's highlight: every indexed file's preview is rendered first (as
opening it once would; kept in the data dir), so each card's locator
carries the anchor the preview marks without a request (its TextQuote's
``exact``). ``highlight5``: the gold passage inside the marked words of one
of the first 5 cards of the gold file; ``sameWords``: of the cards whose
preview marks words, the share whose quote is those very words.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from question_library import build
from stack_harness import index_library
from search_quality import REPO_DIR, folded

RESULTS_FILE = REPO_DIR / "bench" / "results" / "search_questions.json"
PASSAGE_CHARS = 1200
SIDES = ("lightrag", "page", "bm25")


def load_questions(path: Path) -> list[dict]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{number}: {e}")
    return out


def file_text(library: Path, rel: str) -> str:
    """A library file's text as the questions' gold passages quote it."""
    if rel.endswith(".docx"):
        from search_quality import docx_paragraphs

        return "\n\n".join(docx_paragraphs(library / rel))
    return (library / rel).read_text(encoding="utf-8", errors="replace")


def gold_problems(questions: list[dict], library: Path) -> list[str]:
    """Questions whose gold passage is not, verbatim, in their gold file."""
    texts: dict[str, str] = {}
    problems = []
    for q in questions:
        if not q.get("file"):
            continue
        path = library / q["file"]
        if not path.is_file():
            problems.append(f"{q['id']}: no file {q['file']}")
            continue
        if q["file"] not in texts:
            texts[q["file"]] = folded(file_text(library, q["file"]))
        if folded(q["gold"]) not in texts[q["file"]]:
            problems.append(f"{q['id']}: gold not in {q['file']}: {q['gold'][:60]}")
    return problems


# --- the BM25 baseline ---------------------------------------------------------


def passages(library: Path, files: list[str]) -> list[tuple[str, str]]:
    """(file, passage) pairs: each file's text cut at blank lines into
    passages of up to PASSAGE_CHARS characters."""
    out = []
    for rel in files:
        text = file_text(library, rel)
        current = ""
        for block in re.split(r"\n\s*\n", text):
            if current and len(current) + len(block) > PASSAGE_CHARS:
                out.append((rel, current))
                current = ""
            current = f"{current}\n\n{block}" if current else block
        if current.strip():
            out.append((rel, current))
    return out


class BM25:
    def __init__(self, docs: list[list[str]], k1: float = 1.5, b: float = 0.75):
        self.docs = [Counter(d) for d in docs]
        self.lengths = [len(d) for d in docs]
        self.avg = sum(self.lengths) / max(len(docs), 1)
        df = Counter(t for d in self.docs for t in d)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: list[str]) -> list[float]:
        out = []
        for d, length in zip(self.docs, self.lengths):
            s = 0.0
            for t in query:
                f = d.get(t)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            out.append(s)
        return out


# --- scoring --------------------------------------------------------------------


def file_order(files: list[str]) -> list[str]:
    return list(dict.fromkeys(files))


def score(files: list[str], quotes: list[str], q: dict, marks: list[str] | None = None) -> dict:
    order = file_order(files)
    rank = next((i + 1 for i, f in enumerate(order[:20]) if f == q["file"]), None)
    gold = folded(q["gold"])
    out = {
        "top1": rank == 1,
        "top5": rank is not None and rank <= 5,
        "rr": 1.0 / rank if rank else 0.0,
        "quote5": any(f == q["file"] and gold in folded(t) for f, t in zip(files[:5], quotes[:5])),
    }
    if marks is not None:
        out["highlight5"] = any(f == q["file"] and gold in folded(m) for f, m in zip(files[:5], marks[:5]))
    return out


def marked_words(locator: dict) -> str:
    """The words a card's preview marks: its anchor's TextQuote (present when
    the preview was rendered before the search)."""
    return str(((locator.get("anchor") or {}).get("textQuote") or {}).get("exact") or "")


def render_previews(user, paths: list[str]) -> int:
    """Render the preview of every file named (the render cache keeps it):
    a search then anchors its cards in them. How many rendered."""
    from django.conf import settings

    from mnote.kinds import kind_of
    from mnote.library.ingest import opened_sha256
    from mnote.library.models import Source
    from mnote.library.source_files import open_source_file
    from mnote.preview.renderers import PreviewContext
    from mnote.preview.rendering import REJECTIONS, rendered

    settings.MNOTE_PREVIEW_RENDERS_PER_MINUTE = 0  # the bench renders the whole library at once
    done = 0
    wanted = set(paths)
    for source in Source.objects.select_related("root"):
        if source.library_path not in wanted:
            continue
        try:
            with open_source_file(source) as handle:
                rendered(user, kind_of(source.file_name), handle, opened_sha256(source, handle),
                         PreviewContext(path=Path(source.absolute_path)))
            done += 1
        except (*REJECTIONS, OSError) as e:
            print(f"no preview of {source.library_path}: {e}")
    return done


def summarise(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["file"]]
    none = [r for r in rows if not r["file"]]
    out = {}
    for side in SIDES:
        n = len(answerable)
        s = {"n": n}
        if n:
            for key, name in (("top1", "first"), ("top5", "top5"), ("rr", "MRR"), ("quote5", "quote5"),
                              ("highlight5", "highlight5")):
                if all(key in r[side] for r in answerable):
                    s[name] = round(sum(r[side][key] for r in answerable) / n, 3)
        if side == "page":
            s["noAnswerFloored"] = round(sum(r["page"]["floored"] for r in none) / len(none), 3) if none else None
            s["answerableFloored"] = round(sum(r["page"]["floored"] for r in answerable) / n, 3) if n else None
            s["noAnswerN"] = len(none)
        if side == "page":
            anchored = sum(r["page"].get("anchored", 0) for r in rows)
            s["sameWords"] = round(sum(r["page"].get("sameWords", 0) for r in rows) / anchored, 3) if anchored else None
        out[side] = s
    return out


def _embed(url: str, texts: list[str], input_type: str):
    import httpx

    from mnote.stack.rerank import unit

    reply = httpx.post(f"{url}/embeddings", json={"model": "e5", "input": texts, "input_type": input_type}, timeout=600)
    reply.raise_for_status()
    return [unit(d["embedding"]) for d in reply.json()["data"]]


def calibrate_floor(rows: list[dict], most_answerable: float = 0.05) -> dict | None:
    """The highest floor (mnote.search.confidence.FLOOR) that holds back at
    most ``most_answerable`` of the answerable questions, from the page's own
    measure of each (``matchConfidence``); None when the page measured none."""
    answerable = sorted(r["page"]["confidence"] for r in rows if r["file"] and r["page"].get("confidence") is not None)
    none = [r["page"]["confidence"] for r in rows if not r["file"] and r["page"].get("confidence") is not None]
    if not answerable:
        return None
    floor = answerable[int(most_answerable * len(answerable))]
    return {"floor": floor, "noAnswer": sum(c < floor for c in none) / (len(none) or 1),
            "answerable": sum(c < floor for c in answerable) / len(answerable)}


# --- the run ----------------------------------------------------------------------


def run_questions(args, data_dir: Path, library: Path, started: float) -> int:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from mnote.lightrag.provider import lightrag_client
    from mnote.search.answers import full_library_search
    from mnote.text.relevance import tokens

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-admin", defaults={"is_staff": True})
    files = build(library)
    indexed, settled, index_seconds = index_library(["handbook", "demo"], args.max_index_seconds)
    by_lightrag_name = {s.lightrag_name: path for path, s in indexed.items()}
    questions = load_questions(args.questions)
    problems = gold_problems(questions, library)
    for problem in problems:
        print("skipped:", problem)
    bad = {p.split(":")[0] for p in problems}
    questions = [q for q in questions if q["id"] not in bad and (not q["file"] or q["file"] in indexed)]
    print(f"{len(indexed)} of {len(files)} files indexed (settled: {settled}, {index_seconds} s); "
          f"{len(questions)} questions", flush=True)

    stored = None
    if args.signals:
        from django.conf import settings

        from mnote.stack.rerank import StoredVectors, cosine

        stored = StoredVectors(Path(settings.MNOTE_LIGHTRAG.working_dir) / "vdb_chunks.json")
    print(f"{render_previews(user, list(indexed))} previews rendered", flush=True)
    pool = passages(library, [f for f in files if f in indexed])
    bm25 = BM25([tokens(text) or ["\x00"] for _, text in pool])
    rows = []
    signals = []
    with lightrag_client() as client:
        for number, q in enumerate(questions, 1):
            # LightRAG's candidates, unreranked: its dense order, as its rerank
            # step receives them; its own order is their first 20 (the
            # default chunk_top_k gives the same 20 in the same order).
            wide = client.query_data(q["question"], mode="mix", chunk_top_k=60, enable_rerank=False)
            found = (wide.get("data") or {}).get("chunks") or []
            if stored is not None:
                texts = [str(c.get("content") or "") for c in found]
                vectors = stored.lookup(texts)
                as_query = _embed(args.model_url, [q["question"]], "query")[0]
                as_passage = _embed(args.model_url, [q["question"]], "passage")[0]
                signals.append({**q, "candidates": [
                    {"file": by_lightrag_name.get(c.get("file_path"), "?"), "content": t,
                     "cosQuery": None if v is None else round(cosine(v, as_query), 4),
                     "cosPassage": None if v is None else round(cosine(v, as_passage), 4)}
                    for c, t, v in zip(found, texts, vectors)]})
                if args.signals_only:
                    if number % 20 == 0:
                        print(f"{number} questions", flush=True)
                    continue
            chunks = found[:20]
            lr_files = [by_lightrag_name.get(c.get("file_path"), "?") for c in chunks]
            lr_quotes = [str(c.get("content") or "") for c in chunks]
            t0 = time.perf_counter()
            page = full_library_search(user, q["question"])
            page_seconds = time.perf_counter() - t0
            page_files = [c.source_path for c in page.citations]
            page_quotes = [c.display_quote for c in page.citations]
            page_marks = [marked_words(c.locator) for c in page.citations]
            scores = bm25.scores(tokens(q["question"]))
            best = sorted(range(len(pool)), key=lambda i: -scores[i])[:40]
            bm_files = [pool[i][0] for i in best]
            bm_quotes = [pool[i][1] for i in best]
            row = {**q, "pageSeconds": round(page_seconds, 3)}
            floored = bool(page.diagnostics.get("lowConfidence"))
            if q["file"]:
                row["lightrag"] = score(lr_files, lr_quotes, q)
                row["page"] = {**score(page_files, page_quotes, q, page_marks), "floored": floored}
                row["cards"] = [{"file": f, "quote": t, "marked": m, "chunk": c.chunk_id}
                                for f, t, m, c in zip(page_files[:5], page_quotes, page_marks, page.citations)]
                row["bm25"] = score(bm_files, bm_quotes, q)
            else:
                row["page"] = {"floored": floored}
            row["page"]["confidence"] = page.diagnostics.get("matchConfidence")
            shown = [(t, m) for t, m in zip(page_quotes[:5], page_marks) if m.strip()]
            row["page"]["anchored"] = len(shown)
            row["page"]["sameWords"] = sum(" ".join(t.split()) == " ".join(m.split()) for t, m in shown)
            row["first"] = {"lightrag": file_order(lr_files)[:3], "page": file_order(page_files)[:3],
                            "bm25": file_order(bm_files)[:3]}
            rows.append(row)
            if number % 20 == 0:
                print(f"{number} questions", flush=True)
    if args.signals:
        args.signals.write_text(json.dumps(signals, ensure_ascii=False))
        print(f"wrote {args.signals}")
    if not rows:
        return 0

    parts = {}
    for split in ("tuned", "held", "all"):
        part = [r for r in rows if split == "all" or r["split"] == split]
        for lang in ("en", "zh", None):
            sub = [r for r in part if lang is None or r["lang"] == lang]
            parts[f"{split} {lang or 'both'}"] = summarise(sub)
    print(f"\n{'part':<12}{'side':<10}{'n':>4}{'first':>7}{'top5':>7}{'MRR':>7}{'quote5':>8}{'marked5':>8}"
          "   floor: no-answer / answerable; same words")
    for name, sides in parts.items():
        for side, s in sides.items():
            if not s["n"]:
                continue
            floor = ""
            if side == "page" and s.get("noAnswerN"):
                floor = f"   {s['noAnswerFloored']:.2f} of {s['noAnswerN']} / {s['answerableFloored']:.2f}"
            elif side == "page":
                floor = f"   - / {s['answerableFloored']:.2f}"
            if side == "page" and s.get("sameWords") is not None:
                floor += f"; {s['sameWords']:.2f}"
            marked = f"{s['highlight5']:>8.3f}" if "highlight5" in s else f"{'':>8}"
            print(f"{name:<12}{side:<10}{s['n']:>4}{s['first']:>7.3f}{s['top5']:>7.3f}{s['MRR']:>7.3f}{s['quote5']:>8.3f}"
                  f"{marked}{floor}")
    calibrated = calibrate_floor([r for r in rows if r["split"] == "tuned"])
    if calibrated:
        print("\nthe floor the tuned part's page measures call for (at most 5 % of answerable held back): "
              f"{calibrated['floor']:.4f} -> no-answer {calibrated['noAnswer']:.2f}, answerable {calibrated['answerable']:.2f}")
    seconds = sorted(r["pageSeconds"] for r in rows)
    print(f"\npage seconds per question: median {seconds[len(seconds) // 2]:.2f}, max {seconds[-1]:.2f}")
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_FILE.write_text(json.dumps({
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "bench/search_quality.py " + " ".join(sys.argv[1:]),
        "filesIndexed": len(indexed),
        "indexSeconds": index_seconds,
        "totalSeconds": round(time.monotonic() - started, 1),
        "parts": parts,
        "questions": rows,
    }, ensure_ascii=False, indent=1))
    print(f"wrote {RESULTS_FILE.relative_to(REPO_DIR)}")
    return 0
