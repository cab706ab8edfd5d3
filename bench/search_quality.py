"""Search quality: does the page put the right file first? (issue 15)

    .venv/bin/python bench/search_quality.py [--corpus ../shared/corpus/docx] [--files 40]
        [--per-file 3] [--keep DIR] [--max-index-seconds 900]
    .venv/bin/python bench/search_quality.py --questions bench/questions/handbook.jsonl [--keep DIR]
        [--signals FILE [--signals-only]] [--ports LIGHTRAG,MODEL]

With ``--questions``: questions as people ask them over real documents, the
page against LightRAG's own order and a BM25 baseline, and the relevance
floor (see bench/question_set.py; writes bench/results/search_questions.json).
Without it:

Known-item queries, built from paragraphs of the real corpus (DOCX files
nobody here wrote) and of the demo library:

  - verbatim spans: 7 consecutive words (English) or 16 consecutive Chinese
    characters of one paragraph; a span found in more than one file's text
    is skipped (it has no single right answer);
  - paraphrased questions about the demo library, written by hand (below).

Ground truth is the paragraph's file and position, read from the DOCX XML
(``word/document.xml``'s ``w:p`` elements, ``w:t`` text) or from the text
file's blank-line paragraphs — never from MNote's or LightRAG's parsing.

Files are split by a hash of their name into a tuned part and a held-back
part (every third file): the rerank weights in mnote/stack/rerank.py were
chosen on the tuned part only. Paraphrases are split the same way (odd ones
held back).

For every query, in the same run against the same real LightRAG (embedded
stack, local model endpoint, rerank binding on):

  - LightRAG's own order: ``/query/data`` with ``enable_rerank: false``, the
    chunks in the order LightRAG returns them (its dense order);
  - the page: ``mnote.search.answers.full_library_search`` as the search
    page calls it (rerank on, unreadable quotes dropped), the cards in the
    order the page shows them.

Reported per part: right file first (top-1), recall@5 (right file among the
first 5 chunks / cards), MRR over the first 20, the right passage (the
span's words inside the first card's quote), and junk (empty or Word field
residue quotes) among the first 5. Writes bench/results/search_quality.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import unicodedata
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from stack_harness import index_library  # bench/stack_harness.py, beside this file

REPO_DIR = Path(__file__).resolve().parent.parent
RESULTS_FILE = REPO_DIR / "bench" / "results" / "search_quality.json"
DEMO_DIR = REPO_DIR / "mnote" / "demo" / "library"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
SPAN_WORDS = 7
SPAN_CJK = 16
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{2,}")

# Hand-written paraphrases of demo-library passages: (question, library path).
PARAPHRASES = [
    ("How long does recoating the main mirror take and how often is it done?", "demo/en/gamma-telescope-manual.docx"),
    ("How do you clean the primary mirror, and when must you not?", "demo/en/gamma-telescope-manual.docx"),
    ("What pressure range should the azimuth bearing oil stay in?", "demo/en/gamma-telescope-manual.docx"),
    ("TES 保护基在酸性条件下怎样脱除？", "demo/zh/实验室安全手册.docx"),
    ("哪些人员不能使用 NMP？", "demo/zh/实验室安全手册.docx"),
    ("废液桶装到多少就要更换？", "demo/zh/实验室安全手册.docx"),
    ("What is a flat field exposure used for?", "demo/en/glossary.txt"),
    ("What is a bias frame?", "demo/en/glossary.txt"),
    ("会上讨论了中文检索的哪些问题？", "demo/zh/会议纪要-2026-10.md"),
    ("这次例会的记录人是谁？", "demo/zh/会议纪要-2026-10.md"),
    ("通风橱多久校准一次？", "demo/zh/设备清单.txt"),
    ("设备坏了应该怎么报修？", "demo/zh/设备清单.txt"),
    ("What should I do on my first day on the team?", "demo/en/onboarding-notes.md"),
    ("How do I start the app on my own machine?", "demo/en/onboarding-notes.md"),
    ("Who has to be told about an accident or a near miss at the telescope?", "demo/en/gamma-telescope-manual.docx"),
    ("What does an embedding represent?", "demo/en/glossary.txt"),
]


# --- ground truth, from the files themselves ---------------------------------


def docx_paragraphs(path: Path) -> list[str]:
    from lxml import etree

    try:
        with zipfile.ZipFile(path) as package:
            xml = package.read("word/document.xml")
        root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    except (zipfile.BadZipFile, KeyError, etree.XMLSyntaxError):
        return []
    out = []
    for p in root.iter(f"{{{W}}}p"):
        text = "".join((n.text or "") if n.tag == f"{{{W}}}t" else " " for n in p.iter(f"{{{W}}}t", f"{{{W}}}tab"))
        out.append(" ".join(text.split()))
    return out


def text_paragraphs(path: Path) -> list[str]:
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))]


def paragraphs(path: Path) -> list[str]:
    return docx_paragraphs(path) if path.suffix.lower() == ".docx" else text_paragraphs(path)


def eligible(paragraph: str) -> bool:
    return len(LATIN_WORD.findall(paragraph)) >= 12 or len(CJK.findall(paragraph)) >= SPAN_CJK + 8


def folded(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if ch.isalnum())


def span_of(paragraph: str, seed: str) -> str:
    """A verbatim span from the middle part of the paragraph, chosen by a hash."""
    pick = int(hashlib.sha1(seed.encode()).hexdigest(), 16)
    if len(CJK.findall(paragraph)) >= SPAN_CJK + 8:
        runs = [m for m in re.finditer(r"[\u3400-\u4dbf\u4e00-\u9fff，、：；（）0-9A-Za-z]{%d,}" % SPAN_CJK, paragraph)]
        if runs:
            run = runs[pick % len(runs)].group(0)
            start = (pick // 7) % (len(run) - SPAN_CJK + 1)
            return run[start : start + SPAN_CJK]
    words = paragraph.split()
    if len(words) < SPAN_WORDS + 2:
        return ""
    start = 1 + (pick // 7) % (len(words) - SPAN_WORDS - 1)
    return " ".join(words[start : start + SPAN_WORDS])


def held_back(name: str) -> bool:
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % 3 == 0


# --- the run -------------------------------------------------------------------


def choose_corpus(corpus: Path, files: int, max_paragraphs: int) -> list[Path]:
    chosen = []
    for path in sorted(corpus.glob("*.docx")):
        count = sum(1 for p in docx_paragraphs(path) if eligible(p))
        if 1 <= count <= max_paragraphs:
            chosen.append(path)
    return chosen[:files]


def build_queries(library: Path, per_file: int) -> list[dict]:
    texts = {}
    for path in sorted(p for p in library.rglob("*") if p.is_file()):
        rel = path.relative_to(library).as_posix()
        texts[rel] = paragraphs(path)
    whole = {rel: folded(" ".join(ps)) for rel, ps in texts.items()}
    queries = []
    for rel, ps in texts.items():
        picked = 0
        for index, paragraph in enumerate(ps):
            if picked >= per_file:
                break
            if not eligible(paragraph) or (index % 2 and len(ps) > 2 * per_file):
                continue
            span = span_of(paragraph, f"{rel}#{index}")
            key = folded(span)
            if len(key) < 12 or sum(key in text for text in whole.values()) != 1:
                continue
            queries.append(
                {
                    "kind": "verbatim",
                    "query": span,
                    "file": rel,
                    "paragraph": index,
                    "heldBack": held_back(Path(rel).name),
                }
            )
            picked += 1
    for i, (question, rel) in enumerate(PARAPHRASES):
        queries.append(
            {"kind": "paraphrase", "query": question, "file": rel, "paragraph": None, "heldBack": bool(i % 2)}
        )
    return queries


def score(order: list[str], quotes: list[str], target: str, span: str) -> dict:
    rank = next((i + 1 for i, f in enumerate(order[:20]) if f == target), None)
    return {
        "top1": rank == 1,
        "recall5": rank is not None and rank <= 5,
        "rr": 1.0 / rank if rank else 0.0,
        "passage": bool(quotes) and order[0] == target and folded(span) in folded(quotes[0]),
    }


def summarise(rows: list[dict], side: str) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    return {
        "n": n,
        "top1": round(sum(r[side]["top1"] for r in rows) / n, 3),
        "recall@5": round(sum(r[side]["recall5"] for r in rows) / n, 3),
        "MRR": round(sum(r[side]["rr"] for r in rows) / n, 3),
        "passageFirst": round(sum(r[side]["passage"] for r in rows) / n, 3),
        "junkInTop5": sum(r[side]["junk"] for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO_DIR.parent.parent / "shared" / "corpus" / "docx")
    parser.add_argument("--files", type=int, default=30, help="most corpus files to index")
    parser.add_argument("--max-paragraphs", type=int, default=40, help="skip corpus files with more readable paragraphs")
    parser.add_argument("--per-file", type=int, default=3, help="verbatim queries per file")
    parser.add_argument("--keep", type=Path, help="data dir to keep (and reuse: an indexed library is not re-indexed)")
    parser.add_argument("--max-index-seconds", type=float, default=900)
    parser.add_argument(
        "--candidates", type=Path, help="also write LightRAG's unreranked candidates per query here (for tuning)"
    )
    parser.add_argument(
        "--questions",
        type=Path,
        help="a question set (bench/questions/*.jsonl): ask it of the library bench/question_library.py builds, "
        "instead of the known-item queries",
    )
    parser.add_argument("--ports", help="LIGHTRAG,MODEL ports for the embedded stack (default: free ones)")
    parser.add_argument("--signals", type=Path,
                        help="with --questions: write each question's 60 unreranked candidates and their cosines here "
                        "(for bench/rerank_tuning.py)")
    parser.add_argument("--signals-only", action="store_true", help="with --signals: only gather them")
    args = parser.parse_args(argv)
    if args.questions is None and not args.corpus.is_dir():
        for candidate in (Path("/work/shared/corpus/docx"), REPO_DIR.parent / "shared" / "corpus" / "docx"):
            if candidate.is_dir():
                args.corpus = candidate
                break
        else:
            parser.error(f"no corpus at {args.corpus}; pass --corpus")

    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="mnote-quality-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    library = data_dir / "library"
    os.environ.update(
        MNOTE_DATA_DIR=str(data_dir),
        MNOTE_LIBRARY_BASE_DIR=str(library),
        MNOTE_LIGHTRAG_ENV_FILE=str(data_dir / "lightrag" / ".env"),
        MNOTE_SECRET_KEY="bench-only-not-secret",
        DJANGO_SETTINGS_MODULE="mnote.settings",
        # One embedding call at a time with a long timeout: on a busy 2-core
        # machine LightRAG's defaults (8 at once, 30 s) fail documents.
        EMBEDDING_FUNC_MAX_ASYNC="1",
        EMBEDDING_TIMEOUT="600",
    )
    sys.path.insert(0, str(REPO_DIR))
    from mnote.stack.processes import EmbeddedStack, StackConfig
    from mnote.stack.managed import free_port

    tiktoken = REPO_DIR / "data" / "tiktoken"
    if tiktoken.is_dir() and not (data_dir / "tiktoken").exists():
        shutil.copytree(tiktoken, data_dir / "tiktoken")
    lightrag_port, model_port = (int(p) for p in args.ports.split(",")) if args.ports else (free_port(), free_port())
    stack = EmbeddedStack(StackConfig(data_dir=data_dir, lightrag_port=lightrag_port, model_port=model_port))
    started = time.monotonic()
    try:
        stack.start()
        if args.questions is not None:
            from question_set import run_questions

            args.model_url = stack.config.model_url
            return run_questions(args, data_dir, library, started)
        return run(args, data_dir, library, started)
    finally:
        stack.stop()
        if args.keep is None:
            shutil.rmtree(data_dir, ignore_errors=True)


def run(args, data_dir: Path, library: Path, started: float) -> int:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from mnote.citations.sidecar import load_chunk_store
    from mnote.text import clean_display_text, is_unreadable
    from mnote.search.answers import full_library_search
    from mnote.library.models import IndexedRoot
    from mnote.lightrag.provider import lightrag_client

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-admin", defaults={"is_staff": True})
    if not IndexedRoot.objects.exists():
        (library / "corpus").mkdir(parents=True, exist_ok=True)
        for path in choose_corpus(args.corpus, args.files, args.max_paragraphs):
            shutil.copy(path, library / "corpus" / path.name)
        shutil.copytree(DEMO_DIR, library / "demo")
    indexed, settled, index_seconds = index_library(["corpus", "demo"], args.max_index_seconds)
    by_lightrag_name = {s.lightrag_name: path for path, s in indexed.items()}
    queries = [q for q in build_queries(library, args.per_file) if q["file"] in indexed]
    print(f"{len(indexed)} files indexed (settled: {settled}, {index_seconds} s); {len(queries)} queries", flush=True)

    store = load_chunk_store(settings.MNOTE_LIGHTRAG.working_dir) or {}
    rows = []
    candidates = []
    with lightrag_client() as client:
        for q in queries:
            raw = client.query_data(q["query"], mode="mix", enable_rerank=False)
            chunks = (raw.get("data") or {}).get("chunks") or []
            base_order = [by_lightrag_name.get(c.get("file_path"), "?") for c in chunks]
            base_quotes = [clean_display_text(str(c.get("content") or "")) for c in chunks]
            pool = [{"file": f, "content": str(c.get("content") or "")} for f, c in zip(base_order, chunks)]
            candidates.append({**q, "chunks": pool})
            page = full_library_search(user, q["query"])
            page_order = [c.source_path for c in page.citations]
            # The whole chunk each card was cut from, as LightRAG stores it.
            page_quotes = [store[c.chunk_id].content if c.chunk_id in store else "" for c in page.citations]
            rows.append(
                {
                    **q,
                    "lightrag": {
                        **score(base_order, base_quotes, q["file"], q["query"]),
                        "junk": sum(is_unreadable(t) for t in base_quotes[:5]),
                        "first": base_order[:3],
                    },
                    "page": {
                        **score(page_order, page_quotes, q["file"], q["query"]),
                        "junk": sum(is_unreadable(c.display_quote) for c in page.citations[:5]),
                        "first": page_order[:3],
                    },
                }
            )

    parts = {}
    for kind in ("verbatim", "paraphrase"):
        for held in (False, True):
            part = [r for r in rows if r["kind"] == kind and r["heldBack"] == held]
            name = f"{kind} {'held-back' if held else 'tuned'}"
            parts[name] = {"lightrag": summarise(part, "lightrag"), "page": summarise(part, "page")}
        part = [r for r in rows if r["kind"] == kind]
        parts[f"{kind} all"] = {"lightrag": summarise(part, "lightrag"), "page": summarise(part, "page")}

    print(f"\n{'part':<24}{'side':<10}{'n':>4}{'top1':>7}{'R@5':>7}{'MRR':>7}{'passage':>9}{'junk':>6}")
    for name, sides in parts.items():
        for side, s in sides.items():
            if s["n"]:
                print(
                    f"{name:<24}{side:<10}{s['n']:>4}{s['top1']:>7.3f}{s['recall@5']:>7.3f}{s['MRR']:>7.3f}"
                    f"{s['passageFirst']:>9.3f}{s['junkInTop5']:>6}"
                )
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_FILE.write_text(
        json.dumps(
            {
                "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "command": "bench/search_quality.py " + " ".join(sys.argv[1:]),
                "filesIndexed": len(indexed),
                "indexSeconds": index_seconds,
                "totalSeconds": round(time.monotonic() - started, 1),
                "parts": parts,
                "queries": rows,
            },
            ensure_ascii=False,
            indent=1,
        )
    )
    print(f"\nwrote {RESULTS_FILE.relative_to(REPO_DIR)}")
    if args.candidates:
        args.candidates.write_text(json.dumps(candidates, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
