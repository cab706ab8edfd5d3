"""Our hand-written readers against the well-kept ones, per kind, on the
real-world corpus and on hostile files, in the same run.

    .venv/bin/python bench/reader_compare.py [--corpus ../shared/corpus] [--timeout 10] [--kinds xlsx,rtf] [--no-json]

For each file and each reader, a forked child reads the file (so a reader that
hangs is stopped at ``--timeout`` and none shares a warm cache with another)
and reports its CPU seconds, its peak memory growth and the text it found.

  speed      CPU seconds per file (median, and the slowest file)
  fidelity   share of the file's words the reader recovered: the file's words
             come from an independent extraction, every text node of the
             parts that hold the body (sheets and shared strings, slides and
             notes, the spine's pages, content.xml), parsed with lxml's XML
             parser; words are runs of two or more letters (numbers are left
             out, so a number shown formatted, 17 %, is not counted against
             the reader that formats it)
  refusals   ok / refused with a message (ours: PreviewRejected) / error (an
             exception no one caught: a 500 in the app) / timeout (more than
             ``--timeout`` CPU seconds: the child's RLIMIT_CPU stops it)

The readers:

  xlsx   ours (preview_xlsx, the first page of each sheet: 500 rows), python-calamine, openpyxl (read-only)
  pptx   ours, python-pptx (text frames, tables, notes)
  epub   ours, EbookLib (the spine's documents; it reads, it does not sanitise)
  odt    ours, odfpy (teletype text of paragraphs and headings)
  rtf    ours, ours before this change (git), striprtf; on RTF written from
         the corpus's DOCX text the way Word writes it (see ``word_style_rtf``),
         since no RTF corpus may be used here
  html   ours (lxml + nh3), ours before (lxml + the regex cleaner, from git)

Writes bench/results/reader_compare.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

from machine import machine_info  # bench/machine.py, beside this file

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mnote.settings")

import django  # noqa: E402

django.setup()

import lxml.etree  # noqa: E402
import lxml.html  # noqa: E402

from mnote.kinds import kind_of  # noqa: E402
from mnote.preview.docx.limits import PreviewRejected  # noqa: E402
from mnote.preview.renderers import PreviewContext, renderer_for  # noqa: E402
from mnote.preview.sheet_render import column_name  # noqa: E402

BEFORE = "44f5588"  # the commit this comparison's changes started from
_WORD = re.compile(r"[^\W\d_]{2,}")
_XML = lxml.etree.XMLParser(resolve_entities=False, no_network=True, recover=True, huge_tree=False)


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def html_text(html: str | bytes) -> str:
    """Every text node, spaced (text_content() would run "one</p><p>two" together)."""
    if not html:
        return ""
    return " ".join(lxml.html.fragment_fromstring(html, create_parent="div").itertext())


# --- the readers ---------------------------------------------------------------------


def ours(path: Path) -> str:
    renderer = renderer_for(kind_of(path.name))
    with open(path, "rb") as fp:
        result = renderer(fp, PreviewContext(asset_url=lambda part: "/a/" + part, path=path))
    return html_text(result["html"])


def _module_before(name: str):
    """``mnote.preview.<name>`` as it was at BEFORE, loaded beside today's."""
    source = subprocess.run(
        ["git", "show", f"{BEFORE}:mnote/preview/{name}.py"], cwd=REPO_DIR, capture_output=True, check=True, text=True
    ).stdout
    module = types.ModuleType(f"mnote.preview.{name}_before")
    module.__package__ = "mnote.preview"
    exec(compile(source, f"{name}_before.py", "exec"), module.__dict__)
    return module


def ours_before_rtf(path: Path) -> str:
    module = _module_before("rtf_render")
    with open(path, "rb") as fp:
        html = module.preview_rtf(fp, PreviewContext(path=path))["html"]
    return html_text(html)


def ours_before_html(path: Path) -> str:
    module = _module_before("html_sanitize")
    body = module.parse(module.decode(path.read_bytes()))
    return " ".join(module.sanitise(body).itertext())


def calamine_xlsx(path: Path) -> str:
    from python_calamine import CalamineWorkbook

    book = CalamineWorkbook.from_path(str(path))
    out = []
    for name in book.sheet_names:
        for row in book.get_sheet_by_name(name).to_python():
            out.append("\t".join(str(v) for v in row))
    return "\n".join(out)


def openpyxl_xlsx(path: Path) -> str:
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=True)
    out = []
    for sheet in book.worksheets:
        for row in sheet.iter_rows(values_only=True):
            out.append("\t".join("" if v is None else str(v) for v in row))
    book.close()
    return "\n".join(out)


def python_pptx(path: Path) -> str:
    from pptx import Presentation

    out = []

    def shapes(collection):
        for shape in collection:
            if shape.shape_type == 6:  # a group
                shapes(shape.shapes)
            if shape.has_text_frame:
                out.append(shape.text_frame.text)
            if getattr(shape, "has_table", False) and shape.has_table:
                out.extend(cell.text for row in shape.table.rows for cell in row.cells)

    for slide in Presentation(str(path)).slides:
        shapes(slide.shapes)
        if slide.has_notes_slide:
            out.append(slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else "")
    return "\n".join(out)


def ebooklib_epub(path: Path) -> str:
    import ebooklib
    from ebooklib import epub

    book = epub.read_epub(str(path), {"ignore_ncx": True})
    out = []
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT:
            out.append(" ".join(lxml.html.document_fromstring(item.get_content() or b"<p/>").itertext()))
    return "\n".join(out)


def odfpy_odt(path: Path) -> str:
    from odf import teletype, text
    from odf.opendocument import load

    doc = load(str(path))
    return "\n".join(teletype.extractText(el) for kind in (text.H, text.P) for el in doc.getElementsByType(kind))


def striprtf_rtf(path: Path) -> str:
    from striprtf.striprtf import rtf_to_text

    return rtf_to_text(path.read_bytes().decode("latin-1"), errors="ignore")


READERS = {
    "xlsx": {"ours": ours, "python-calamine": calamine_xlsx, "openpyxl": openpyxl_xlsx},
    "pptx": {"ours": ours, "python-pptx": python_pptx},
    "epub": {"ours": ours, "EbookLib": ebooklib_epub},
    "odt": {"ours": ours, "odfpy": odfpy_odt},
    "rtf": {"ours": ours, "ours before": ours_before_rtf, "striprtf": striprtf_rtf},
    "html": {"ours (nh3)": ours, "ours before (regex)": ours_before_html},
}


# --- the independent extraction ------------------------------------------------------------


def reference_words(path: Path, kind: str) -> set[str] | None:
    """The file's words from its raw XML (None: the file is not readable as such)."""
    if kind == "rtf":
        hidden = path.with_suffix(".words.txt")
        return words(hidden.read_text()) if hidden.exists() else None
    if kind == "html":
        return words(" ".join(lxml.html.document_fromstring(path.read_bytes() or b"<p/>").itertext()))
    patterns = {
        "xlsx": r"xl/(sharedStrings\.xml|worksheets/[^/]+\.xml)$",
        "pptx": r"ppt/(slides|notesSlides)/[^/]+\.xml$",
        "epub": r".+\.(x?html?)$",
        "odt": r"content\.xml$",
    }
    try:
        with zipfile.ZipFile(path) as package:
            found: set[str] = set()
            for name in package.namelist():
                if re.match(patterns[kind], name, re.IGNORECASE):
                    info = package.getinfo(name)
                    if info.file_size > 50_000_000:
                        return None
                    root = lxml.etree.fromstring(package.read(name), _XML)
                    if root is None:
                        continue
                    if kind == "xlsx":
                        # Formulas, page headers and footers, and phonetic guides are not cell text.
                        for el in root.xpath("//*[local-name()='f' or local-name()='headerFooter' or local-name()='rPh']"):
                            el.getparent().remove(el)
                    if kind == "epub":
                        body = root.find(".//{*}body")
                        root = body if body is not None else root
                    if kind == "pptx" and "notesSlides" in name:
                        continue  # slide numbers and pictures' names only, mostly
                    if kind == "pptx":  # DrawingML's text runs; other text nodes are ids (GUIDs)
                        found |= words(" ".join(t.text or "" for t in root.xpath("//*[local-name()='t']")))
                        continue
                    found |= words(" ".join(root.itertext()))
            return found
    except Exception:
        return None


# --- running one reader on one file, in a child ------------------------------------------------


def _child(reader, path, queue, cpu_limit: float) -> None:
    # CPU time, not wall time, is the limit: on a shared machine the wall clock
    # says more about the neighbours than about the reader.
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime)
    resource.setrlimit(resource.RLIMIT_CPU, (spent + int(cpu_limit), spent + int(cpu_limit) + 1))
    start_rss = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    cpu = time.process_time()
    try:
        text = reader(path)
        outcome, detail = "ok", ""
    except PreviewRejected as e:
        text, outcome, detail = "", "refused", str(e)[:160]
    except Exception as e:  # noqa: BLE001 -- what a reader lets through is what is measured
        text, outcome, detail = "", "error", f"{type(e).__name__}: {str(e)[:120]}"
    seconds = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.send((outcome, detail, seconds, max(0, peak - start_rss) / 1024, sorted(words(text))))


def run(reader, path: Path, timeout: float) -> dict:
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(reader, path, sender, timeout))
    started = time.perf_counter()
    child.start()
    sender.close()
    result = None
    backstop = time.monotonic() + timeout * 10  # the CPU limit (SIGXCPU) stops the child first
    while time.monotonic() < backstop:
        if receiver.poll(0.1):
            try:
                result = receiver.recv()
            except EOFError:  # the child died (its CPU limit) without an answer
                pass
            break
        if not child.is_alive() and not receiver.poll(0.1):
            break
    child.kill()
    child.join()
    if result is None:
        return {"outcome": "timeout", "detail": f"> {timeout:g} s CPU", "cpu_s": timeout, "mb": None, "words": set()}
    outcome, detail, seconds, mb, found = result
    return {
        "outcome": outcome,
        "detail": detail,
        "cpu_s": seconds,
        "wall_s": time.perf_counter() - started,
        "mb": mb,
        "words": set(found),
    }


# --- files: the corpus, RTF written from it, hostile ones -----------------------------------------


def _docx_paragraphs(path: Path) -> list[str]:
    W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
    try:
        with zipfile.ZipFile(path) as package:
            root = lxml.etree.fromstring(package.read("word/document.xml"), _XML)
    except Exception:
        return []
    if root is None:
        return []
    return [t for t in ("".join(x.text or "" for x in p.iter(f"{W}t")).strip() for p in root.iter(f"{W}p")) if t]


def _rtf_text(text: str) -> str:
    out = []
    for ch in text:
        if ch in "\\{}":
            out.append("\\" + ch)
        elif ord(ch) < 128:
            out.append(ch)
        else:
            code = ord(ch)
            if code > 0xFFFF:  # a pair of surrogates, as Word writes them
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10) - 65536}?\\u{0xDC00 + (code & 0x3FF) - 65536}?")
            else:
                out.append(f"\\u{code if code < 32768 else code - 65536}?")
    return "".join(out)


def word_style_rtf(paragraphs: list[str], out: Path) -> None:
    """An RTF the way Word writes one: tables of fonts, colours, styles and
    lists, document info, \\uN? characters, list paragraphs with their
    \\listtext label, a run of hidden text now and then, a table with a nested
    table. Beside it ``.words.txt``: the text a reader should show."""
    shown = []
    body = []
    for i, text in enumerate(paragraphs[:400]):
        shown.append(text)
        if i % 7 == 3:
            body.append("{\\listtext\\pard\\plain \\f3 \\u8226\\'b7\\tab}\\pard\\plain \\ls1\\ilvl0 " + _rtf_text(text))
        elif i % 11 == 5:
            body.append("\\pard\\plain " + _rtf_text(text) + "{\\v\\f1 zzhiddenword qqsecretword}")
        else:
            body.append("\\pard\\plain\\s0\\f0\\fs22 " + _rtf_text(text))
        body.append("\\par\n")
    if len(paragraphs) > 2:
        a, b = paragraphs[0][:40], paragraphs[1][:40]
        body.append(
            "\\trowd\\cellx3000\\cellx6000 \\pard\\intbl Outer\\cell \\pard\\intbl\\itap2 "
            + _rtf_text(a)
            + "\\nestcell "
            + _rtf_text(b)
            + "\\nestcell{\\*\\nesttableprops\\trowd\\cellx1000\\cellx2000\\nestrow}\\cell\\row\n"
        )
        shown += ["Outer", a, b]
    head = (
        "{\\rtf1\\adeflang1025\\ansi\\ansicpg1252\\uc1\\adeff0\\deff0{\\fonttbl{\\f0\\froman Times New Roman;}"
        "{\\f1\\fswiss Arial;}{\\f3\\fbidi Symbol;}}{\\colortbl;\\red0\\green0\\blue0;}"
        "{\\stylesheet{\\ql Normal;}}{\\*\\listtable{\\list\\listtemplateid1{\\listlevel\\levelnfc23"
        "{\\leveltext\\'01\\u-3913 ?;}{\\levelnumbers;}}\\listid1}}{\\info{\\title Bench}{\\author Word}}\n"
    )
    out.write_bytes((head + "".join(body) + "}").encode("ascii"))
    out.with_suffix(".words.txt").write_text("\n".join(shown))


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in members.items():
            package.writestr(name, data)
    return path


def hostile_files(folder: Path) -> dict[str, list[Path]]:
    """A few hostile files of each kind, built here (the hostile set of the
    sandbox's bench is larger; these are the ones a reader's choice decides)."""
    from openpyxl import Workbook

    deep = "<div>" * 3000 + "deep" + "</div>" * 3000
    laughs = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    files: dict[str, list[Path]] = {k: [] for k in READERS}

    # HTML
    for name, page in {
        "redos-doctype.html": "<!DOCTYPE %s[\n<p>x</p>\n" % ("[]" * 40),
        "deep.html": f"<p>before</p>{deep}<p>after</p>",
        "laughs.html": f"<!DOCTYPE html [{laughs}]><p>&l9;</p>",
        "big.html": "<p>" + "word " * 2_000_000 + "</p>",
    }.items():
        (folder / name).write_text(page)
        files["html"].append(folder / name)

    # RTF
    rtf = {
        "nul.rtf": b"{\\rtf1\\ansi Outlook\x00 body\\par with\x00 NULs\\par}",
        "deep.rtf": b"{\\rtf1 " + b"{" * 3000 + b"x" + b"}" * 3000 + b"}",
        "big.rtf": b"{\\rtf1\\ansi " + b"word \\par " * 1_500_000 + b"}",
        "hyperlink-redos.rtf": b"{\\rtf1 {\\field{\\*\\fldinst{" + b'HYPERLINK "x" ' * 3000 + b"}",
        "bin.rtf": b"{\\rtf1 before {\\pict\\bin6 }}}{{\\par after}",
        "surrogates.rtf": b"{\\rtf1\\uc1 lone \\u-10179? pair \\u-10179?\\u-8704? end}",
    }
    for name, data in rtf.items():
        (folder / name).write_bytes(data)
        files["rtf"].append(folder / name)

    # XLSX: long, wide, a zip bomb, nested
    book = Workbook()
    book.active.append(["header"])
    book.save(folder / "base.xlsx")
    with zipfile.ZipFile(folder / "base.xlsx") as package:
        base = {name: package.read(name) for name in package.namelist()}
    sheet_head = b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    rows = b"".join(
        b'<row r="%d"><c r="A%d" t="inlineStr"><is><t>row text %d</t></is></c><c r="B%d"><v>%d</v></c></row>'
        % (n, n, n, n, n)
        for n in range(1, 300_001)
    )
    wide = b'<row r="1">' + b"".join(b'<c r="%s1"><v>1</v></c>' % column_name(n).encode() for n in range(16384)) + b"</row>"
    for name, sheet in {
        "long-300k-rows.xlsx": sheet_head + rows + b"</sheetData></worksheet>",
        # As Excel, LibreOffice and openpyxl write it: the sheet's extent stated first.
        "long-300k-rows-dimension.xlsx": sheet_head.replace(b"<sheetData>", b'<dimension ref="A1:B300000"/><sheetData>')
        + rows + b"</sheetData></worksheet>",
        "wide-16384-columns.xlsx": sheet_head + wide + b"</sheetData></worksheet>",
        "deep.xlsx": sheet_head + b"<row>" + b"<x>" * 3000 + b"</x>" * 3000 + b"</row></sheetData></worksheet>",
    }.items():
        files["xlsx"].append(_zip(folder / name, {**base, "xl/worksheets/sheet1.xml": sheet}))
    # A zip bomb: 300 MB of one cell's text that packs into a few hundred KB.
    bomb = folder / "bomb-300mb-cell.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in base.items():
            if name != "xl/worksheets/sheet1.xml":
                package.writestr(name, data)
        with package.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as member:
            member.write(sheet_head + b'<row r="1"><c r="A1" t="inlineStr"><is><t>')
            for _ in range(300):
                member.write(b"a" * 1_000_000)
            member.write(b"</t></is></c></row></sheetData></worksheet>")
    files["xlsx"].append(bomb)

    # PPTX: many slides, a deep group
    from pptx import Presentation

    deck = Presentation()
    for n in range(1500):
        deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = f"Slide title {n}"
    deck.save(folder / "slides-1500.pptx")
    files["pptx"].append(folder / "slides-1500.pptx")
    with zipfile.ZipFile(folder / "slides-1500.pptx") as package:
        small = {n: package.read(n) for n in package.namelist()}
    slide = small["ppt/slides/slide1.xml"]
    nested = slide.replace(b"</p:spTree>", b"<p:grpSp>" * 3000 + b"</p:grpSp>" * 3000 + b"</p:spTree>")
    files["pptx"].append(_zip(folder / "deep-groups.pptx", {**small, "ppt/slides/slide1.xml": nested}))

    # EPUB and ODT, made as the tests make them, then a part made hostile
    from tests.preview_files import make_epub, make_odt

    book = make_epub(folder / "book.epub")
    with zipfile.ZipFile(book) as package:
        members = {n: package.read(n) for n in package.namelist()}
    for name, chapter in {
        "epub-redos-doctype.epub": ("<!DOCTYPE %s[\n<p>x</p>\n" % ("[]" * 40)).encode(),
        "epub-deep.epub": f"<html><body><p>before</p>{deep}</body></html>".encode(),
        "epub-laughs.epub": f'<?xml version="1.0"?><!DOCTYPE html [{laughs}]><html><body>&l9;</body></html>'.encode(),
    }.items():
        files["epub"].append(_zip(folder / name, {**members, "EPUB/chap_1.xhtml": chapter}))
    text = make_odt(folder / "text.odt")
    with zipfile.ZipFile(text) as package:
        members = {n: package.read(n) for n in package.namelist()}
    content = members["content.xml"]
    for name, replaced in {
        "odt-deep.odt": content.replace(b"</office:text>", b"<text:section>" * 3000 + b"</text:section>" * 3000
                                        + b"</office:text>"),
        "odt-laughs.odt": content.replace(b"?>", f"?><!DOCTYPE x [{laughs}]>".encode(), 1),
        "odt-100k-paragraphs.odt": content.replace(b"</office:text>", b"<text:p>paragraph words</text:p>" * 100_000
                                                   + b"</office:text>"),
    }.items():
        files["odt"].append(_zip(folder / name, {**members, "content.xml": replaced}))
    return files


def corpus_files(corpus: Path, folder: Path) -> dict[str, list[Path]]:
    files = {kind: sorted((corpus / kind).glob(f"*.{kind}")) for kind in ("xlsx", "pptx", "epub", "odt")}
    files["rtf"] = []
    for docx in sorted((corpus / "docx").glob("*.docx"))[:80]:
        paragraphs = _docx_paragraphs(docx)
        if len(paragraphs) >= 3:
            out = folder / (docx.stem[:60] + ".rtf")
            word_style_rtf(paragraphs, out)
            files["rtf"].append(out)
    files["html"] = []
    return files


def summarise(rows: list[dict]) -> dict:
    cpu = [r["cpu_s"] for r in rows if r["outcome"] == "ok"]
    recall = [r["recall"] for r in rows if r.get("recall") is not None]
    outcomes: dict[str, int] = {}
    for r in rows:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    return {
        "files": len(rows),
        "outcomes": outcomes,
        "cpu_median_ms": round(statistics.median(cpu) * 1000, 1) if cpu else None,
        "cpu_total_s": round(sum(cpu), 2),
        "cpu_max_s": round(max(cpu), 2) if cpu else None,
        "word_recall_mean": round(statistics.mean(recall), 3) if recall else None,
        "word_recall_min": round(min(recall), 3) if recall else None,
        "slowest": max(rows, key=lambda r: r["cpu_s"])["file"] if rows else None,
        "not_ok": {r["file"]: f"{r['outcome']}: {r['detail'][:90]}" for r in rows if r["outcome"] != "ok"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=REPO_DIR.parent / "shared" / "corpus")
    parser.add_argument("--timeout", type=float, default=10.0, help="CPU seconds a reader may spend on one file")
    parser.add_argument("--kinds", default=",".join(READERS))
    parser.add_argument("--no-json", action="store_true")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    results: dict = {"machine": machine_info(), "kinds": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = corpus_files(args.corpus, folder)
        hostile = hostile_files(folder)
        for kind in kinds:
            results["kinds"][kind] = {}
            for set_name, paths in (("corpus", corpus.get(kind, [])), ("hostile", hostile.get(kind, []))):
                if not paths:
                    continue
                references = {p: reference_words(p, kind) for p in paths} if set_name == "corpus" else {}
                for reader_name, reader in READERS[kind].items():
                    rows = []
                    for path in paths:
                        row = run(reader, path, args.timeout)
                        reference = references.get(path)
                        if row["outcome"] == "ok" and reference:
                            row["recall"] = len(reference & row["words"]) / len(reference)
                        rows.append(
                            {"file": path.name, **{k: v for k, v in row.items() if k != "words"}}
                        )
                    summary = summarise(rows)
                    if set_name == "hostile":
                        summary["per_file"] = {
                            r["file"]: f"{r['outcome']} {r['cpu_s']:.2f}s"
                            + (f" {r['mb']:.0f}MB" if r.get("mb") is not None else "")
                            + (f" ({r['detail'][:70]})" if r["detail"] else "")
                            for r in rows
                        }
                    results["kinds"][kind].setdefault(set_name, {})[reader_name] = summary
                    print(f"{kind:5} {set_name:8} {reader_name:22} {json.dumps(summary, ensure_ascii=False)}")
                    sys.stdout.flush()
    if not args.no_json:
        out = REPO_DIR / "bench" / "results" / "reader_compare.json"
        if out.exists() and set(kinds) != set(READERS):  # a run of some kinds updates those
            earlier = json.loads(out.read_text())
            results["kinds"] = {**earlier.get("kinds", {}), **results["kinds"]}
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
