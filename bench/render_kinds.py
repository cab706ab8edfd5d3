"""The rest of ``render_bench.py``: every other kind the preview renders,
each against the common library that does the same job, on the same files,
in the same run (``render_bench.py --kinds`` / ``--kinds-only``).

| kind | our renderer | peer |
|---|---|---|
| pptx | mnote.preview.pptx_render | python-pptx (text frames, tables, groups, notes) |
| xlsx | mnote.preview.sheet_render (first page: 500 rows a sheet) | openpyxl read_only, the same rows |
| csv  | mnote.preview.sheet_render | the csv module + html.escape into a table |
| epub | mnote.preview.epub_render | EbookLib (spine documents) + lxml text |
| html | mnote.preview.html_render | BeautifulSoup 4 (html.parser) get_text |
| odt  | mnote.preview.odt_render | odfpy (teletype.extractText of paragraphs and headings) |
| rtf  | mnote.preview.rtf_render | striprtf |
| code | mnote.preview.code_render | Pygments highlight() with HtmlFormatter(linenos="table") |

Files: the corpus's PPTX/XLSX/EPUB (../shared/corpus), the EPUBs' XHTML
chapters as web pages, this repository's own code (Python, JS, CSS — code we
never tuned the renderer on), generated ODT/RTF/CSV files. Each file: one
untimed warm-up pass, then ``repeat`` timed passes; CPU time medians.

Text completeness: the words (Unicode ``\\w+``, lower-cased; CJK by
character) of the peer's text, counted with multiplicity, and the share of
them also in ours (recall against the peer), per file and summed per kind.
bs4 and striprtf are not app dependencies: install them into a folder of
their own, ``pip install --target /tmp/render-peers beautifulsoup4 striprtf``.
"""

from __future__ import annotations

import csv
import html
import io
import re
import statistics
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

import lxml.html

WORD = re.compile(r"[\u3400-\u9fff\uac00-\ud7af\u3040-\u30ff]|[^\W\d_]+|\d+", re.UNICODE)


def words(text: str) -> Counter:
    return Counter(w.lower() for w in WORD.findall(text))


def html_text(markup: str) -> str:
    if not markup.strip():
        return ""
    # Words of neighbouring elements (cells, paragraphs) kept apart.
    return " ".join(lxml.html.fragment_fromstring(markup, create_parent="div").itertext())


# --- the peers ----------------------------------------------------------------


def peer_pptx(path: Path) -> str:
    from pptx import Presentation

    def shape_texts(shapes):
        for shape in shapes:
            if shape.shape_type == 6:  # group
                yield from shape_texts(shape.shapes)
            if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                yield shape.text_frame.text
            if getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    for cell in row.cells:
                        yield cell.text

    deck = Presentation(str(path))
    out = []
    for slide in deck.slides:
        out.extend(shape_texts(slide.shapes))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            out.append(slide.notes_slide.notes_text_frame.text)
    return "\n".join(out)


def peer_xlsx(path: Path) -> str:
    from openpyxl import load_workbook

    book = load_workbook(str(path), read_only=True, data_only=True)
    out = []
    for sheet in book.worksheets:
        for row in sheet.iter_rows(max_row=500, values_only=True):
            out.append("\t".join("" if v is None else str(v) for v in row))
    book.close()
    return "\n".join(out)


def peer_csv(path: Path) -> str:
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))[:500]
    table = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in rows)
    return html_text(f"<table>{table}</table>")


def peer_epub(path: Path) -> str:
    import ebooklib
    from ebooklib import epub

    book = epub.read_epub(str(path), options={"ignore_ncx": True})
    out = []
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT:
            out.append(lxml.html.document_fromstring(item.get_content()).body.text_content())
    return "\n".join(out)


def peer_html(path: Path) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_bytes(), "html.parser")
    for tag in soup(["script", "style", "head"]):
        tag.decompose()
    return soup.get_text(" ")


def peer_odt(path: Path) -> str:
    from odf import teletype, text
    from odf.opendocument import load

    doc = load(str(path))
    return "\n".join(teletype.extractText(el) for el in doc.getElementsByType(text.P) + doc.getElementsByType(text.H))


def peer_rtf(path: Path) -> str:
    from striprtf.striprtf import rtf_to_text

    return rtf_to_text(path.read_text(encoding="latin-1"))


def peer_code(path: Path) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_for_filename

    code = path.read_text(encoding="utf-8")
    page = lxml.html.fragment_fromstring(
        highlight(code, get_lexer_for_filename(path.name), HtmlFormatter(linenos="table")), create_parent="div"
    )
    return " ".join(t for cell in page.xpath("//td[@class='code']") for t in cell.itertext())  # not the line numbers


PEERS = {"pptx": peer_pptx, "xlsx": peer_xlsx, "csv": peer_csv, "epub": peer_epub, "html": peer_html, "odt": peer_odt,
         "rtf": peer_rtf, "code": peer_code}  # fmt: skip
PEER_NAMES = {"pptx": "python-pptx", "xlsx": "openpyxl", "csv": "csv", "epub": "EbookLib", "html": "bs4",
              "odt": "odfpy", "rtf": "striprtf", "code": "Pygments"}  # fmt: skip


# --- the files ----------------------------------------------------------------


def gather(corpus: Path, tmp: Path, per_kind: int) -> dict[str, list[Path]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests import preview_files

    found: dict[str, list[Path]] = {}
    for kind in ("pptx", "xlsx", "epub"):
        found[kind] = sorted((corpus / kind).glob(f"*.{kind}"))[:per_kind]
    pages = tmp / "html"
    pages.mkdir()
    for book in found["epub"]:
        with zipfile.ZipFile(book) as archive:
            chapters = sorted(n for n in archive.namelist() if n.endswith((".xhtml", ".html")))
            for n, name in enumerate(chapters[:4]):
                (pages / f"{book.stem}-{n}.html").write_bytes(archive.read(name))
    found["html"] = sorted(pages.iterdir())[:per_kind]
    repo = Path(__file__).resolve().parent.parent
    code = (
        sorted((repo / "mnote").rglob("*.py"))
        + sorted((repo / "static" / "js").glob("*.js"))
        + [repo / "static/css/mnote.css"]
    )
    found["code"] = [p for p in code if p.stat().st_size > 2_000][:per_kind]
    generated = tmp / "generated"
    generated.mkdir()
    found["odt"] = [preview_files.make_odt(generated / "report.odt")]
    found["rtf"] = [preview_files.make_rtf(generated / "menu.rtf")]
    long_rtf = generated / "long.rtf"
    long_rtf.write_text(
        "{\\rtf1\\ansi\\ansicpg1252{\\fonttbl{\\f0 Arial;}}"
        + "".join(f"\\pard Line {i} of the caf\\'e9 log\\par\n" for i in range(3000))
        + "}"
    )
    found["rtf"].append(long_rtf)
    big_csv = generated / "log.csv"
    big_csv.write_text(
        "when,who,what\n" + "".join(f"2024-03-{i % 28 + 1:02d},observer {i % 7},clear night {i}\n" for i in range(400))
    )
    found["csv"] = [big_csv]
    return found


def timed(function, path: Path, repeat: int) -> tuple[float, object]:
    result = function(path)  # warm-up
    cpus = []
    for _ in range(repeat):
        started = time.process_time()
        function(path)
        cpus.append(time.process_time() - started)
    return statistics.median(cpus), result


def run(corpus: Path, tmp: Path, repeat: int, per_kind: int) -> dict:
    from mnote.kinds import kind_of
    from mnote.preview.docx.limits import PreviewRejected
    from mnote.preview.renderers import PreviewContext, renderer_for

    report: dict = {}
    for kind, paths in gather(corpus, tmp, per_kind).items():
        rows = []
        for path in paths:
            renderer = renderer_for(kind_of(path.name))

            def ours(p=path, renderer=renderer):
                with open(p, "rb") as fp:
                    return renderer(fp, PreviewContext(asset_url=lambda part: "/a/" + part, path=p))

            try:
                our_cpu, rendered = timed(lambda p: ours(p), path, repeat)
            except PreviewRejected as e:
                rows.append({"file": path.name, "ours_error": e.message[:200]})
                continue
            try:
                peer_cpu, peer_text = timed(PEERS[kind], path, repeat)
            except Exception as e:  # noqa: BLE001 (a peer's own failure is a result, not a crash of the benchmark)
                rows.append({"file": path.name, "ours_cpu_s": our_cpu, "peer_error": f"{type(e).__name__}: {e}"[:200]})
                continue
            mine, theirs = words(html_text(rendered["html"])), words(peer_text)
            shared = sum((mine & theirs).values())
            rows.append({
                "file": path.name, "ours_cpu_s": our_cpu, "peer_cpu_s": peer_cpu,
                "peer_words": sum(theirs.values()), "ours_words": sum(mine.values()), "shared_words": shared,
            })  # fmt: skip
        both = [r for r in rows if "peer_cpu_s" in r]
        peer_words = sum(r["peer_words"] for r in both)
        report[kind] = {
            "peer": PEER_NAMES[kind],
            "files": len(rows),
            "compared": len(both),
            "ours_rejected": sum(1 for r in rows if "ours_error" in r),
            "peer_failed": sum(1 for r in rows if "peer_error" in r),
            "ours_total_cpu_s": sum(r["ours_cpu_s"] for r in both),
            "peer_total_cpu_s": sum(r["peer_cpu_s"] for r in both),
            "recall_vs_peer": (sum(r["shared_words"] for r in both) / peer_words) if peer_words else None,
            "lowest_recall": sorted(
                ((r["shared_words"] / r["peer_words"], r["file"]) for r in both if r["peer_words"]), key=lambda x: x[0]
            )[:3],
            "rows": rows,
        }
    return report


def print_report(report: dict) -> None:
    print(f"\n{'kind':6}{'peer':>13}{'files':>7}{'ours CPU s':>12}{'peer CPU s':>12}{'peer/ours':>11}{'recall':>9}")
    for kind, row in report.items():
        ratio = row["peer_total_cpu_s"] / row["ours_total_cpu_s"] if row["ours_total_cpu_s"] else float("nan")
        recall = f"{row['recall_vs_peer']:.3f}" if row["recall_vs_peer"] is not None else "—"
        print(f"{kind:6}{row['peer']:>13}{row['compared']:>7}{row['ours_total_cpu_s']:12.3f}{row['peer_total_cpu_s']:12.3f}"
              f"{ratio:10.1f}×{recall:>9}")  # fmt: skip
        if row["ours_rejected"] or row["peer_failed"]:
            print(f"      rejected by ours: {row['ours_rejected']}, peer failed: {row['peer_failed']}")
