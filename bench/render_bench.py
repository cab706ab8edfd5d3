"""Benchmark of ``mnote.preview.docx_render.render_docx`` against mammoth on
the same DOCX files in the same run.

    .venv/bin/python bench/render_bench.py [--corpus DIR] [--mammoth-python PY] [--repeat 3] [--no-json]

mammoth 1.13.0 lives in a throwaway virtualenv, never in the app's:

    python3 -m venv /tmp/mammoth-venv && /tmp/mammoth-venv/bin/pip install mammoth==1.13.0

It runs in a subprocess that gets the same file list and times itself, so
neither side pays for the other's imports or process start. Both sides get one
untimed warm-up pass, then ``--repeat`` timed passes per file; a file's time
is its median over the passes (wall clock and CPU time) and its best wall
time. On a shared machine other processes stretch wall times at random, so
the CPU-time and best-wall ratios are the steadier ones. mammoth is told not to
inline images (``img_element`` with an empty ``src``), as ``render_docx``
does not read image bytes either.

"Rendering more" is counted per file from each side's HTML, parsed with lxml:

  blocks      non-empty innermost p / h1-h6 / li / td / th elements, counted the
              same way on both sides (ours also reports its ``[data-block-index]``
              blocks, where a table cell or a note is one block)
  equations   OMML equations whose content appears: ours ``.docx-math``;
              mammoth: equations whose joined ``m:t`` text appears in its text
  footnotes   ours ``li.docx-note``; mammoth ``li[id^=footnote-|endnote-]``
  text boxes  ours ``aside.docx-textbox``; mammoth: those of our text boxes
              whose text appears in its output
  text chars  visible characters (whitespace ignored)

Plus one generated 10,000-paragraph document (mnote.demo.docx_writer).
With ``--child``, every file is also rendered the way the preview does it:
through ``mnote.preview.render_child`` in a limited child process (start-up,
imports, render and text map), timed as wall and the child's CPU.
Writes bench/results/render_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path

from machine import machine_info  # bench/machine.py, beside this file

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))

import lxml  # noqa: E402
import lxml.etree  # noqa: E402
import lxml.html  # noqa: E402

from mnote.demo.docx_writer import Document, Heading, Paragraph, write_docx  # noqa: E402
from mnote.preview.docx_render import DocxRejected, render_docx  # noqa: E402

RESULTS_FILE = REPO_DIR / "bench" / "results" / "render_bench.json"
DEFAULT_CORPUS = Path(os.environ.get("MNOTE_DOCX_CORPUS", REPO_DIR.parent / "shared" / "corpus" / "docx"))
DEFAULT_MAMMOTH = Path("/tmp/mammoth-venv/bin/python")
M_NS = "http://schemas.openxmlformats.org/officeDocument/2006/math"
BLOCK_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th"}

MAMMOTH_WORKER = textwrap.dedent(
    """
    import json, statistics, sys, time
    from importlib.metadata import version
    from pathlib import Path
    import mammoth

    job = json.load(sys.stdin)
    out_dir = Path(job["out_dir"])
    no_images = mammoth.images.img_element(lambda image: {"src": ""})

    def convert(path):
        with open(path, "rb") as f:
            return mammoth.convert_to_html(f, convert_image=no_images).value

    results = []
    for i, path in enumerate(job["files"]):
        try:
            (out_dir / f"{i}.html").write_text(convert(path))  # warm-up pass, and the HTML to count
        except Exception as e:
            results.append({"error": f"{type(e).__name__}: {e}"[:300]})
            continue
        walls, cpus = [], []
        for _ in range(job["repeat"]):
            w, c = time.perf_counter(), time.process_time()
            convert(path)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        results.append(
            {"wall_s": statistics.median(walls), "best_wall_s": min(walls), "cpu_s": statistics.median(cpus)}
        )
    json.dump({"version": version("mammoth"), "python": sys.version.split()[0], "results": results}, sys.stdout)
    """
)


def run_mammoth(python: Path, files: list[Path], repeat: int, out_dir: Path) -> dict:
    job = {"files": [str(f) for f in files], "repeat": repeat, "out_dir": str(out_dir)}
    done = subprocess.run(
        [str(python), "-c", MAMMOTH_WORKER], input=json.dumps(job), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def run_ours(files: list[Path], repeat: int) -> list[dict]:
    results = []
    for path in files:
        try:
            rendered = render_docx(path, image_url=lambda part: "")  # warm-up pass, and the HTML to count
        except DocxRejected as e:
            results.append({"error": e.message})
            continue
        walls, cpus = [], []
        for _ in range(repeat):
            w, c = time.perf_counter(), time.process_time()
            render_docx(path, image_url=lambda part: "")
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        results.append(
            {
                "wall_s": statistics.median(walls),
                "best_wall_s": min(walls),
                "cpu_s": statistics.median(cpus),
                "html": rendered.html,
            }
        )
    return results


def _squash(text: str) -> str:
    return "".join(text.split())


def equation_texts(path: Path) -> list[str]:
    """Joined m:t text of each equation in the main part (for mammoth's count)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.startswith("word/document") and n.endswith(".xml")]
            if not names:
                return []
            parser = lxml.etree.XMLParser(resolve_entities=False, no_network=True)
            root = lxml.etree.fromstring(archive.read(names[0]), parser)
    except (zipfile.BadZipFile, lxml.etree.XMLSyntaxError, KeyError):
        return []
    found = []
    for omath in root.iter(f"{{{M_NS}}}oMath"):
        found.append(_squash("".join(t.text or "" for t in omath.iter(f"{{{M_NS}}}t"))))
    return [t for t in found if t]


def leaf_blocks(root) -> int:
    return sum(
        1
        for el in root.iter(*BLOCK_TAGS)
        if el.text_content().strip() and not any(d is not el for d in el.iter(*BLOCK_TAGS))
    )


def count_ours(html: str) -> dict:
    root = lxml.html.fragment_fromstring(html)
    return {
        "blocks": leaf_blocks(root),
        "indexed_blocks": sum(1 for el in root.iter() if el.get("data-block-index") is not None),
        "equations": len(root.find_class("docx-math")),
        "footnotes": len(root.find_class("docx-note")),
        "text_boxes": len(root.find_class("docx-textbox")),
        "text_chars": len(_squash(root.text_content())),
        "_text_boxes": [_squash(el.text_content()) for el in root.find_class("docx-textbox")],
    }


def count_mammoth(html: str, equations: list[str], our_text_boxes: list[str]) -> dict:
    if not html.strip():
        return {"blocks": 0, "equations": 0, "footnotes": 0, "text_boxes": 0, "text_chars": 0}
    root = lxml.html.fragment_fromstring(html, create_parent="div")
    text = _squash(root.text_content())
    return {
        "blocks": leaf_blocks(root),
        "equations": sum(1 for e in equations if e in text),
        "footnotes": sum(1 for li in root.iter("li") if (li.get("id") or "").startswith(("footnote-", "endnote-"))),
        "text_boxes": sum(1 for box in our_text_boxes if box and box in text),
        "text_chars": len(text),
    }


def long_document(tmp: Path) -> Path:
    blocks = [
        Heading(f"Section {i // 500}", 1)
        if i % 500 == 0
        else Paragraph(f"Paragraph {i}: the mirror was re-aluminised.")
        for i in range(10_000)
    ]
    return write_docx(Document(title="10,000 paragraphs", blocks=blocks), tmp / "long-10000.docx")


def render_machine(repeat: int, corpus: Path, mammoth: dict) -> dict:
    return machine_info(
        dirty=("mnote/preview",),
        corpus=str(corpus),
        repeat=repeat,
        lxml=".".join(map(str, lxml.etree.LXML_VERSION[:3])),
        libxml2=".".join(map(str, lxml.etree.LIBXML_VERSION)),
        mammoth=mammoth["version"],
        mammoth_python=mammoth["python"],
    )


def summarise(names, ours, theirs, counts) -> dict:
    both = [i for i in range(len(names)) if "error" not in ours[i] and "error" not in theirs[i]]

    def total(side, key):
        return sum(side[i][key] for i in both)

    def median(side, key):
        return statistics.median(side[i][key] for i in both) if both else 0.0

    timing = {
        "files_both_rendered": len(both),
        "ours_total_wall_s": total(ours, "wall_s"),
        "mammoth_total_wall_s": total(theirs, "wall_s"),
        "ours_total_best_wall_s": total(ours, "best_wall_s"),
        "mammoth_total_best_wall_s": total(theirs, "best_wall_s"),
        "ours_total_cpu_s": total(ours, "cpu_s"),
        "mammoth_total_cpu_s": total(theirs, "cpu_s"),
        "ours_median_wall_ms": 1000 * median(ours, "wall_s"),
        "mammoth_median_wall_ms": 1000 * median(theirs, "wall_s"),
    }
    timing["ratio_total_wall"] = timing["mammoth_total_wall_s"] / timing["ours_total_wall_s"]
    timing["ratio_total_best_wall"] = timing["mammoth_total_best_wall_s"] / timing["ours_total_best_wall_s"]
    timing["ratio_total_cpu"] = timing["mammoth_total_cpu_s"] / timing["ours_total_cpu_s"]
    timing["ratio_median_wall"] = timing["mammoth_median_wall_ms"] / timing["ours_median_wall_ms"]
    per_file_ratios = [theirs[i]["cpu_s"] / ours[i]["cpu_s"] for i in both if ours[i]["cpu_s"] > 0]
    timing["per_file_ratio_min"] = min(per_file_ratios)
    timing["per_file_ratio_median"] = statistics.median(per_file_ratios)

    keys = ("blocks", "equations", "footnotes", "text_boxes", "text_chars")
    rendering = {"indexed_blocks_ours": sum(counts[i]["ours"]["indexed_blocks"] for i in both)}
    for key in keys:
        ours_sum = sum(counts[i]["ours"][key] for i in both)
        theirs_sum = sum(counts[i]["mammoth"][key] for i in both)
        more = sum(1 for i in both if counts[i]["ours"][key] > counts[i]["mammoth"][key])
        fewer = [names[i] for i in both if counts[i]["ours"][key] < counts[i]["mammoth"][key]]
        rendering[key] = {"ours": ours_sum, "mammoth": theirs_sum, "files_ours_more": more, "files_ours_fewer": fewer}
    return {"timing": timing, "rendering": rendering}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--mammoth-python", type=Path, default=DEFAULT_MAMMOTH)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-json", action="store_true", help="do not write bench/results/render_bench.json")
    parser.add_argument("--kinds", action="store_true", help="also every other kind against its peer (render_kinds.py)")
    parser.add_argument("--kinds-only", action="store_true", help="only the other kinds, not DOCX against mammoth")
    parser.add_argument("--per-kind", type=int, default=40, help="at most this many files of each other kind")
    parser.add_argument("--peers-path", type=Path, default=Path("/tmp/render-peers"), help="where bs4 and striprtf are installed")
    parser.add_argument("--child", action="store_true", help="also each file through the preview's child process")
    args = parser.parse_args(argv)
    if args.kinds or args.kinds_only:
        kinds_bench(args, argv)
        if args.kinds_only:
            return 0

    files = sorted(args.corpus.glob("*.docx"))
    if not files:
        parser.error(f"no .docx files in {args.corpus}")
    if not args.mammoth_python.exists():
        parser.error(f"{args.mammoth_python} not found; create it with: python3 -m venv /tmp/mammoth-venv && "
                     "/tmp/mammoth-venv/bin/pip install mammoth==1.13.0")  # fmt: skip

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        long_doc = long_document(tmp)
        print(f"{len(files)} files from {args.corpus}, {args.repeat} timed passes each (plus one warm-up)")
        ours = run_ours(files, args.repeat)
        (tmp / "mammoth").mkdir()
        mammoth = run_mammoth(args.mammoth_python, files, args.repeat, tmp / "mammoth")
        counts = []
        for i, path in enumerate(files):
            if "error" in ours[i] or "error" in mammoth["results"][i]:
                counts.append(None)
                continue
            mine = count_ours(ours[i].pop("html"))
            html = (tmp / "mammoth" / f"{i}.html").read_text()
            theirs = count_mammoth(html, equation_texts(path), mine.pop("_text_boxes"))
            counts.append({"ours": mine, "mammoth": theirs})
        for result in ours:
            result.pop("html", None)

        long_ours = run_ours([long_doc], args.repeat)[0]
        long_ours.pop("html")
        (tmp / "long").mkdir()
        long_mammoth = run_mammoth(args.mammoth_python, [long_doc], 1, tmp / "long")["results"][0]

    names = [f.name for f in files]
    summary = summarise(names, ours, mammoth["results"], counts)
    timing, rendering = summary["timing"], summary["rendering"]
    ours_errors = {names[i]: r["error"] for i, r in enumerate(ours) if "error" in r}
    mammoth_errors = {names[i]: r["error"] for i, r in enumerate(mammoth["results"]) if "error" in r}

    print(f"\nboth rendered: {timing['files_both_rendered']} files; rejected by ours: {len(ours_errors)}; "
          f"mammoth failed: {len(mammoth_errors)}")  # fmt: skip

    def row(label: str, mine: float, theirs: float, digits: int = 3) -> None:
        print(f"{label:28}{mine:12.{digits}f}{theirs:12.{digits}f}{theirs / mine:8.1f}×")

    print(f"{'':28}{'ours':>12}{'mammoth':>12}{'ratio':>9}")
    row("total wall s (medians)", timing["ours_total_wall_s"], timing["mammoth_total_wall_s"])
    row("total wall s (best)", timing["ours_total_best_wall_s"], timing["mammoth_total_best_wall_s"])
    row("total CPU s", timing["ours_total_cpu_s"], timing["mammoth_total_cpu_s"])
    row("per-file median wall ms", timing["ours_median_wall_ms"], timing["mammoth_median_wall_ms"], 2)
    row("10,000 paragraphs wall s", long_ours["wall_s"], long_mammoth["wall_s"])
    row("10,000 paragraphs CPU s", long_ours["cpu_s"], long_mammoth["cpu_s"])
    print(
        f"per-file speed-up (CPU): min {timing['per_file_ratio_min']:.1f}×, median {timing['per_file_ratio_median']:.1f}×"
    )
    slowest = max((r["cpu_s"], names[i]) for i, r in enumerate(ours) if "error" not in r)
    print(f"slowest file (ours, CPU): {slowest[0]:.3f} s, {slowest[1]}")
    timing["ours_slowest_file_cpu_s"] = slowest[0]
    if args.child:
        summary["child"] = child_bench(files)
    print(f"\n{'rendered (sum over files)':28}{'ours':>12}{'mammoth':>12}{'ours more':>11}{'ours fewer':>12}")
    rows = {key: row for key, row in rendering.items() if isinstance(row, dict)}
    for key, row in rows.items():
        print(
            f"{key:28}{row['ours']:12}{row['mammoth']:12}{row['files_ours_more']:11}{len(row['files_ours_fewer']):12}"
        )
    print(f"{'ours: [data-block-index]':28}{rendering['indexed_blocks_ours']:12}")
    for key, row in rows.items():
        if row["files_ours_fewer"]:
            print(f"  fewer {key} than mammoth: {', '.join(row['files_ours_fewer'])}")

    if not args.no_json:
        RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "benchmark": "render_bench",
            "command": "python bench/render_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": render_machine(args.repeat, args.corpus, mammoth),
            "summary": summary,
            "long_document": {"paragraphs": 10_000, "ours": long_ours, "mammoth": long_mammoth},
            "rejected_by_ours": ours_errors,
            "mammoth_errors": mammoth_errors,
            "files": {
                names[i]: {"ours": ours[i], "mammoth": mammoth["results"][i], "counts": counts[i]}
                for i in range(len(names))
            },
        }
        RESULTS_FILE.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"\nwrote {RESULTS_FILE.relative_to(REPO_DIR)}")
    return 0


def child_bench(files: list[Path]) -> dict:
    """Each file rendered as the preview renders it: in render_child's limited child process."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mnote.settings")
    django.setup()
    from mnote.kinds import KINDS
    from mnote.preview import render_child
    from mnote.preview.renderers import PreviewContext

    walls, cpus, refused = [], [], {}
    for path in files:
        before, started = os.times(), time.perf_counter()
        try:
            with open(path, "rb") as handle:
                render_child.render_pages(KINDS["docx"], handle, PreviewContext(path=path, asset_base="/preview/1/image/"))
        except render_child.PreviewRejected as e:
            refused[path.name] = e.message
        after = os.times()
        walls.append(time.perf_counter() - started)
        cpus.append((after.children_user + after.children_system) - (before.children_user + before.children_system))
    result = {"files": len(files), "total_wall_s": sum(walls), "total_child_cpu_s": sum(cpus),
              "median_wall_ms": 1000 * statistics.median(walls), "slowest_child_cpu_s": max(cpus),
              "slowest_file": files[cpus.index(max(cpus))].name, "refused": refused}  # fmt: skip
    print(f"\nthrough the preview's child process: {len(files)} files, total wall {result['total_wall_s']:.2f} s, "
          f"child CPU {result['total_child_cpu_s']:.2f} s, median wall {result['median_wall_ms']:.0f} ms, slowest child "
          f"CPU {result['slowest_child_cpu_s']:.2f} s ({result['slowest_file']}); refused {len(refused)}")  # fmt: skip
    return result


def kinds_bench(args, argv) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mnote.settings")
    django.setup()  # the renderers use gettext
    sys.path.insert(0, str(args.peers_path))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import render_kinds

    corpus = args.corpus.parent if args.corpus.name == "docx" else args.corpus
    with tempfile.TemporaryDirectory() as tmp_name:
        report = render_kinds.run(corpus, Path(tmp_name), args.repeat, args.per_kind)
    render_kinds.print_report(report)
    if not args.no_json:
        out = RESULTS_FILE.with_name("render_kinds_bench.json")
        command = "python bench/render_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
        out.write_text(json.dumps({"benchmark": "render_bench --kinds", "command": command,
                                   "machine": render_machine(args.repeat, corpus, {"version": "n/a", "python": "n/a"}),
                                   "kinds": report}, indent=2, ensure_ascii=False) + "\n")  # fmt: skip
        print(f"wrote {out.relative_to(REPO_DIR)}")


if __name__ == "__main__":
    sys.exit(main())
