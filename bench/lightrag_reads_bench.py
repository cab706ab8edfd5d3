"""What LightRAG 1.5.7's own extractor reads of each kind, against the text
MNote's preview shows of the same files, in the same run: the measurement
behind ``Kind.mnote_text`` (which kinds LightRAG is given MNote's text of).

    .venv/bin/python bench/lightrag_reads_bench.py --corpus DIR [--per-kind 8]

``DIR``: files of any kinds (sub-folders allowed; kind by suffix). For each
file: LightRAG's legacy ``extract_text`` (its only reader for every kind
but DOCX, which the embedded stack parses natively first; run in
``.venv-lightrag``), and MNote's text (``mnote.preview.plain_text``: the
preview's blocks). Per kind:

  lightrag_failed   files LightRAG's extractor raised on (its words)
  recall            share of the preview's words (counted) in LightRAG's text
  markup_share      share of LightRAG's words that are not the preview's
                    words at all (tags, scripts, styles, control words)

A kind whose files fail or whose markup share is large goes to MNote's text.
Writes bench/results/lightrag_reads_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
RESULTS_FILE = REPO_DIR / "bench" / "results" / "lightrag_reads_bench.json"
WORD = re.compile(r"[\u3400-\u9fff\uac00-\ud7af\u3040-\u30ff]|[^\W\d_]+|\d+", re.UNICODE)

LIGHTRAG_SIDE = r"""
import json, sys
from pathlib import Path
from lightrag.parser.legacy.extractors import extract_text
out = {}
for name in json.load(sys.stdin):
    path = Path(name)
    try:
        out[name] = {"text": extract_text(path.read_bytes(), path.suffix, file_path=path.name)}
    except BaseException as e:  # what the parse stage would record
        out[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
json.dump(out, sys.stdout)
"""


def words(text: str) -> Counter:
    return Counter(w.lower() for w in WORD.findall(text))


def pick(corpus: Path, per_kind: int) -> list[Path]:
    from mnote.kinds import kind_of

    by_kind = defaultdict(list)
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        kind = kind_of(path.name)
        if kind.indexed and kind.renderer:
            by_kind[kind.name].append(path)
    chosen = []
    for files in by_kind.values():
        step = max(1, len(files) // per_kind) if per_kind else 1
        chosen += files[::step][: per_kind or None]
    return chosen


def mnote_text(path: Path) -> tuple[str, str]:
    from mnote.kinds import kind_of
    from mnote.preview.plain_text import rendered_block_texts

    try:
        with open(path, "rb") as handle:
            blocks = rendered_block_texts(handle, path.name, path)
    except Exception as e:  # a refusal: its message
        return "", f"{type(e).__name__}: {e}"[:300]
    return "\n\n".join(blocks or []), ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--per-kind", type=int, default=8, help="files per kind, spread over the sorted list (0: all)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="mnote-reads-bench-"))
    os.environ.update({"DJANGO_SETTINGS_MODULE": "mnote.settings", "MNOTE_DATA_DIR": str(tmp),
                       "MNOTE_SECRET_KEY": "bench-only-not-secret", "MNOTE_LOG_LEVEL": "WARNING"})
    import django

    django.setup()
    from mnote.kinds import kind_of

    files = pick(args.corpus, args.per_kind)
    lightrag_python = REPO_DIR / ".venv-lightrag" / "bin" / "python"
    done = subprocess.run([str(lightrag_python), "-c", LIGHTRAG_SIDE], input=json.dumps([str(p) for p in files]),
                          capture_output=True, text=True, timeout=1800, check=True)
    theirs = json.loads(done.stdout)
    per_kind = defaultdict(lambda: {"files": 0, "lightrag_failed": 0, "mnote_refused": 0, "mnote_no_text": 0,
                                    "preview_words": 0, "found": 0, "lightrag_words": 0, "markup": 0, "errors": Counter()})
    rows = []
    for path in files:
        kind = kind_of(path.name).name
        row = per_kind[kind]
        row["files"] += 1
        ours, refusal = mnote_text(path)
        their = theirs[str(path)]
        if refusal:
            row["mnote_refused"] += 1
        elif not ours.strip():
            row["mnote_no_text"] += 1
        if "error" in their:
            row["lightrag_failed"] += 1
            row["errors"][their["error"].split(":")[0] + ": " + their["error"].split(":", 1)[-1].strip()[:60]] += 1
        mine, lightrags = words(ours), words(their.get("text", ""))
        row["preview_words"] += sum(mine.values())
        row["found"] += sum(min(n, lightrags[w]) for w, n in mine.items())
        row["lightrag_words"] += sum(lightrags.values())
        row["markup"] += sum(n for w, n in lightrags.items() if w not in mine)
        rows.append({"file": path.name, "kind": kind, "lightrag_error": their.get("error", ""), "mnote_refusal": refusal,
                     "preview_words": sum(mine.values()), "lightrag_words": sum(lightrags.values())})
    report = {}
    print(f"{'kind':8} {'files':>5} {'LR failed':>9} {'recall':>7} {'markup':>7} {'MNote refused/no text':>22}  LightRAG's errors")
    for kind, row in sorted(per_kind.items()):
        recall = round(row["found"] / row["preview_words"], 3) if row["preview_words"] else None
        markup = round(row["markup"] / row["lightrag_words"], 3) if row["lightrag_words"] else None
        report[kind] = {**{k: v for k, v in row.items() if k != "errors"}, "recall": recall, "markup_share": markup,
                        "errors": dict(row["errors"].most_common(4))}
        print(f"{kind:8} {row['files']:>5} {row['lightrag_failed']:>9} {recall!s:>7} {markup!s:>7} "
              f"{row['mnote_refused']:>10}/{row['mnote_no_text']:<11}  {dict(row['errors'].most_common(2))}")
    RESULTS_FILE.write_text(json.dumps({"kinds": report, "files": rows}, indent=2, ensure_ascii=False) + "\n")
    print(f"written {RESULTS_FILE.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
