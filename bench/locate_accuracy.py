"""Jump accuracy of citations in every kind of file: does the preview
highlight exactly the cited words?

    .venv/bin/python bench/locate_accuracy.py [--kinds pdf,pptx,…] [--files-per-kind 8] [--per-kind 2] [--held-per-kind N]
                                              [--corpus ../shared/corpus/docx] [--show-failures tuned|held] [--no-json]
                                              [--page-fast-path] [--port-base N]

Kinds: pdf, pptx, xlsx, csv, html, epub, odt, rtf, markdown, text, code,
docx. Files: the shared corpus (../shared/corpus: PDF, PPTX, XLSX, EPUB,
ODT, DOCX), Debian's TeX Live manuals (``texlive-humanities-doc``,
``texlive-lang-chinese``: English and Chinese PDFs), and real text written as
each kind the corpus lacks: the debian-handbook package's en-US and zh-CN
section pages (fetched by bench/question_library.py) as HTML (the pages
themselves), Markdown and text (its conversion), ODT (odfpy), RTF (written
here), PPTX (python-pptx), XLSX (openpyxl) and CSV; code is the ``.py``
files of a few installed libraries. ``--files-per-kind N`` takes up to N
tuned and N held-back files per kind (spread by hash; files with next to no
text, such as chart decks and scans, are passed over).

Ground truth per kind comes from the format's own structure, never from the
renderer or the locator: PDF pages' text from pdfium (pypdfium2), PPTX
shapes' paragraphs, table cells and speaker notes from python-pptx, XLSX
cells and rows from openpyxl, CSV from the csv module, HTML and EPUB blocks
by lxml over the (X)HTML of the spine, ODT paragraphs/headings/list
items/cells by lxml over content.xml, RTF the paragraphs it was written
from, Markdown/text/code the raw text. Targets that fit each kind: a window
of a paragraph (of a PDF page, a shape, a long cell or row), one whole
sentence, the same window cut inside its first and last words (as a chunk
cut at a token boundary starts) — exact only when the whole words are
marked —, the window with one inner word changed (close text, aligned
fuzzily), a heading with its section, a list item, a cell, a sheet row, a
sentence of a long cell, a slide shape's paragraph, a speaker note, lines of
code, Chinese text, and absent evidence (another file's passage). A PDF
target is exact only on its own page. Locators carry a chunk id (one the
bench has not), as a citation does, so the server anchors them
(``--page-fast-path``: without, so the page anchors verbatim quotes itself).
A sheet's target past the first page (500 rows) is opened through its
permalink, the server choosing the page, as the app opens a citation.

The DOCX part (issue 10), as before:
Ground truth comes straight from each file's XML (lxml over the main part
and footnotes.xml), never from the renderer or the locator under test. Target
kinds: a short window of a body paragraph, a heading + its section (up to
~1,500 characters, sent as ``"<heading> — <text>"`` with the heading path,
as the mapper does), a table cell, a cell of a nested table, one sentence
inside a long (> 1,000 character) cell, a numbered/bulleted list item, a
text-box paragraph, a footnote, Chinese text, near-duplicate decoys (in
adversarial documents written here) and *absent* evidence (a passage of
another document that this one does not contain). A target is used only
when its text occurs once in its document, so a highlight that holds it is
at the right place.

Each document is opened in the real preview (gunicorn, as production) in
headless Chromium; a parent page of the same origin sends ``mnote:locate``
to the preview in its frame and times the answer (``mnote:located``). In
the same page and run the naive baseline — the first block whose text
contains the bare query (the target's first three words, or four CJK
characters) — is tried on the same targets.

Scoring (skeletons: NFKC, case-folded letters and digits only) of the
marked words of the file — the renderer's own list labels, note numbers and
image placeholders are left out, as the XML has none:
  top-1 exact   found, and the highlight starts at the target (≤ 4 characters
                before it: a list label) and covers it, ending ≤ 4 characters
                after it and no more than 15 % + 12 characters longer;
  landed        found and the highlight holds the target's start and end;
  landed, not exact  the highlight holds the cited words but starts early or runs long;
  wrong jump    found, but the cited words are not in the highlight;
  honest not-found  "not_found" on a target that is in the document;
  absent refused    "not_found" on evidence that is not in the document.

The corpus is split BEFORE any tuning by a hash of each file name: files
whose sha256(name) starts with 0, 5 or a (about a fifth; see
``held_back``). Held-back files were never looked at while tuning; their
failures are not printed unless ``--show-failures held``. ``--held-per-kind``
draws more targets per held-back file (with a generator of its own, so the
tuned part's targets stay the same) for a measurement wide enough for a
99 % bar. Results go to bench/results/locate_accuracy.json.

Where a locate's time goes is reported too: anchored by the locator itself
(``given``), by the page (a verbatim quote found once, or evidence the page
refuses), or by the server (``/anchor``, whose Server-Timing gives the view's
wall and CPU time); and CPU time per locate — Chromium's renderer main
thread (``TaskDuration``) and the web app's processes (/proc) — which a
loaded machine distorts less than wall time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import unicodedata
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from urllib.parse import urlencode

from lxml import etree
from stack_harness import PASSWORD, USERNAME, in_process_app_in, log_in_page, register_indexed  # bench/stack_harness.py, beside this file

REPO_DIR = Path(__file__).resolve().parent.parent
RESULTS_FILE = REPO_DIR / "bench" / "results" / "locate_accuracy.json"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
W_STRICT = "http://purl.oclc.org/ooxml/wordprocessingml/main"
MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
KINDS = ["window", "heading_section", "table_cell", "nested_table", "long_cell", "list_item", "text_box", "footnote", "chinese", "decoy", "absent"]


# Held-back files whose failures were looked at (to understand a miss):
# tuned from then on, so the held-back part stays unseen.
LOOKED_AT = frozenset({
    "plutext__docx4j-samples-docx-export-fo_sample-docs_word_Symbols.docx",  # session 19: a symbol-font table (see PRIVATE_USE)
})


def held_back(name: str) -> bool:
    """About a fifth of the corpus (first hex digit of the name's sha256 in 0, 5, a), chosen before any tuning."""
    return name not in LOOKED_AT and hashlib.sha256(name.encode()).hexdigest()[0] in "05a"


# --- text, independent of the code under test ---------------------------------


def skel(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", text).casefold() if c.isalnum())


def is_cjk(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


# --- ground truth from the DOCX XML --------------------------------------------


@dataclass
class Para:
    text: str
    tables: int = 0  # table nesting depth
    text_box: bool = False
    numbered: bool = False
    heading: bool = False
    note: bool = False
    cell: object = None  # the w:tc element it sits in (innermost)


@dataclass
class Truth:
    name: str
    paras: list[Para]
    cells: list[tuple[str, int, bool]]  # (text, nesting depth, holds a nested table)
    full: str  # skeleton of all the text


def _read(z: zipfile.ZipFile, name: str) -> etree._Element | None:
    try:
        info = z.getinfo(name)
    except KeyError:
        return None
    if info.file_size > 64 * 1024 * 1024:
        return None
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        return etree.fromstring(z.read(name), parser)
    except etree.XMLSyntaxError:
        return None


def _main_part(z: zipfile.ZipFile) -> str:
    rels = _read(z, "_rels/.rels")
    if rels is not None:
        for rel in rels:
            if (rel.get("Type") or "").endswith("/officeDocument"):
                return (rel.get("Target") or "word/document.xml").lstrip("/")
    return "word/document.xml"


def _heading_styles(styles: etree._Element | None, ns: str) -> set[str]:
    if styles is None:
        return set()
    by_id, based, heading = {}, {}, set()
    for style in styles.iter(f"{{{ns}}}style"):
        sid = style.get(f"{{{ns}}}styleId")
        name = style.find(f"{{{ns}}}name")
        name = (name.get(f"{{{ns}}}val") if name is not None else "") or ""
        lvl = style.find(f"{{{ns}}}pPr/{{{ns}}}outlineLvl")
        base = style.find(f"{{{ns}}}basedOn")
        by_id[sid] = name
        based[sid] = base.get(f"{{{ns}}}val") if base is not None else None
        if (lvl is not None and (lvl.get(f"{{{ns}}}val") or "9").isdigit() and int(lvl.get(f"{{{ns}}}val")) < 9) or re.match(
            r"(heading|title)\b", name.strip().lower()
        ):
            heading.add(sid)
    # Styles based on a heading style are headings too.
    for sid in list(by_id):
        seen, cur = set(), sid
        while cur and cur not in seen:
            if cur in heading:
                heading.add(sid)
                break
            seen.add(cur)
            cur = based.get(cur)
    return heading


def _para_text(p: etree._Element, ns: str) -> str:
    out = []
    for el in p.iter():
        if el is p:
            continue
        # Skip text that is not this paragraph's: text boxes, deleted text, fallbacks.
        anc = el.getparent()
        skip = False
        while anc is not None and anc is not p:
            tag = anc.tag
            if tag in (f"{{{ns}}}txbxContent", f"{{{ns}}}del", f"{{{ns}}}moveFrom", MC_FALLBACK):
                skip = True
                break
            anc = anc.getparent()
        if skip:
            continue
        tag = el.tag
        if tag == f"{{{ns}}}t":
            out.append(el.text or "")
        elif tag in (f"{{{ns}}}tab", f"{{{ns}}}br", f"{{{ns}}}cr"):
            out.append(" ")
        elif tag == f"{{{ns}}}noBreakHyphen":
            out.append("-")
    return " ".join("".join(out).split())


def read_truth(path: Path) -> Truth | None:
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return None
    with z:
        main = _main_part(z)
        document = _read(z, main)
        if document is None:
            return None
        ns = W_STRICT if document.tag == f"{{{W_STRICT}}}document" else W
        folder = str(PurePosixPath(main).parent)
        styles = _read(z, f"{folder}/styles.xml")
        heading_ids = _heading_styles(styles, ns)
        notes = _read(z, f"{folder}/footnotes.xml")
    body = document.find(f"{{{ns}}}body")
    if body is None:
        return None
    paras: list[Para] = []
    for p in body.iter(f"{{{ns}}}p"):
        tables, text_box, cell, fallback = 0, False, None, False
        anc = p.getparent()
        while anc is not None:
            if anc.tag == f"{{{ns}}}tbl":
                tables += 1
            elif anc.tag == f"{{{ns}}}tc" and cell is None:
                cell = anc
            elif anc.tag == f"{{{ns}}}txbxContent":
                text_box = True
            elif anc.tag == MC_FALLBACK:
                fallback = True
            anc = anc.getparent()
        if fallback:
            continue
        ppr = p.find(f"{{{ns}}}pPr")
        style = ppr.find(f"{{{ns}}}pStyle") if ppr is not None else None
        outline = ppr.find(f"{{{ns}}}outlineLvl") if ppr is not None else None
        numbered = ppr is not None and ppr.find(f"{{{ns}}}numPr") is not None
        heading = (style is not None and style.get(f"{{{ns}}}val") in heading_ids) or (
            outline is not None and (outline.get(f"{{{ns}}}val") or "9") < "9"
        )
        paras.append(Para(_para_text(p, ns), tables, text_box, numbered, heading, False, cell))
    if notes is not None:
        for note in notes.iter(f"{{{ns}}}footnote"):
            if note.get(f"{{{ns}}}type") in ("separator", "continuationSeparator", "continuationNotice"):
                continue
            for p in note.iter(f"{{{ns}}}p"):
                paras.append(Para(_para_text(p, ns), note=True))
    cells = []
    for tc in body.iter(f"{{{ns}}}tc"):
        if any(a.tag == MC_FALLBACK for a in tc.iterancestors()):
            continue
        depth = sum(1 for a in tc.iterancestors() if a.tag == f"{{{ns}}}tbl")
        nested = tc.find(f".//{{{ns}}}tbl") is not None
        text = " ".join(x.text for x in paras if x.cell is tc and x.text) if not nested else ""
        cells.append((text, depth, nested))
    full = skel(" ".join(x.text for x in paras))
    return Truth(path.name, paras, cells, full)


# --- targets -----------------------------------------------------------------------


@dataclass
class Target:
    doc: str
    kind: str
    evidence: str
    target: str  # the text that must be highlighted ("" for absent)
    heading: str = ""
    query: str = ""
    result: dict = field(default_factory=dict)
    baseline: dict = field(default_factory=dict)
    file_kind: str = "docx"  # the kind of file (KIND_ORDER); ``kind`` is the kind of target
    where: int = 0  # the PDF page (1-based) or sheet row that holds the target


def _window(text: str, rng: random.Random, lo: int = 60, hi: int = 200) -> str:
    if len(text) <= hi:
        return text
    words = text.split(" ")
    start = rng.randrange(0, max(1, len(words) - 8))
    out = []
    for word in words[start:]:
        if len(" ".join(out + [word])) > hi:
            break
        out.append(word)
    window = " ".join(out)
    return window if len(window) >= lo else text[:hi]


def _cjk_window(text: str, rng: random.Random, n: int = 60) -> str:
    if len(text) <= n:
        return text
    start = rng.randrange(0, len(text) - n)
    end = start + n
    # Never inside a word of Latin letters or digits (CJK text has no word edges to keep).
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum() and not (is_cjk(text[start - 1]) or is_cjk(text[start])):
        start -= 1
    while end < len(text) and text[end - 1].isalnum() and text[end].isalnum() and not (is_cjk(text[end - 1]) or is_cjk(text[end])):
        end += 1
    return text[start:end]


def _query(text: str) -> str:
    if sum(is_cjk(c) for c in text) > len(text) / 3:
        run = re.search(r"[\u3400-\u9fff]{4}", text)
        return run.group() if run else text[:4]
    return " ".join(text.split()[:3])


# Private-use characters: a symbol font's glyphs (Symbol, Wingdings). The XML
# cannot say which character the reader sees (Symbol's U+F06E is "ν"), so the
# cited words cannot be compared with the marked ones: no such target.
PRIVATE_USE = re.compile("[\ue000-\uf8ff]")


def _unique(truth: Truth, text: str) -> bool:
    s = skel(text)
    return len(s) >= 8 and truth.full.count(s) == 1 and not PRIVATE_USE.search(text)


def targets_of(truth: Truth, others: list[Truth], per_kind: int, rng: random.Random) -> list[Target]:
    found: dict[str, list[Target]] = defaultdict(list)

    def add(kind: str, evidence: str, target: str, heading: str = "") -> None:
        if len(found[kind]) >= per_kind or not _unique(truth, target):
            return
        if any(t.target == target for t in found[kind]):
            return
        found[kind].append(Target(truth.name, kind, evidence, target, heading, _query(target)))

    paras = [p for p in truth.paras if p.text]
    order = list(range(len(paras)))
    rng.shuffle(order)
    for i in order:
        p = paras[i]
        cjk = sum(is_cjk(c) for c in p.text) > len(p.text) * 0.3
        if cjk and len(p.text) >= 12:
            window = _cjk_window(p.text, rng)
            add("chinese", window, window)
        if p.note and len(p.text) >= 10:
            add("footnote", p.text, p.text)
        elif p.text_box and len(p.text) >= 8:
            add("text_box", p.text, p.text)
        elif p.numbered and not p.heading and len(p.text) >= 15 and not p.tables:
            add("list_item", p.text, p.text)
        elif not p.tables and not p.text_box and not p.heading and not p.note and len(p.text) >= 80 and not cjk:
            window = _window(p.text, rng)
            add("window", window, window)
        if p.heading and not p.tables and not p.text_box and not p.note:
            section = []
            for q in paras[i + 1 :]:
                if q.heading or q.tables or q.text_box or q.note:
                    break
                section.append(q.text)
                if len(" ".join(section)) > 1500:
                    break
            text = " ".join(section)
            if len(text) > 1500:
                text = text[:1500].rsplit(" ", 1)[0]
            if len(text) >= 40:
                add("heading_section", f"{p.text} — {text}", f"{p.text} {text}", p.text)
    for text, depth, nested in truth.cells:
        if nested or not text:
            continue
        if len(text) > 1000:
            sentences = [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*", text) if 40 <= len(s.strip()) <= 300]
            if sentences:
                sentence = sentences[len(sentences) // 2]
                add("long_cell", sentence, sentence)
        elif len(text) >= 15 and len(text) <= 400:
            add("nested_table" if depth >= 2 else "table_cell", text, text)
    # Absent: a passage of another document that is not in this one.
    for other in rng.sample(others, min(len(others), 6)):
        candidates = [p.text for p in other.paras if len(p.text) >= 60]
        if not candidates:
            continue
        window = _window(rng.choice(candidates), rng)
        if skel(window) and skel(window) not in truth.full and len(found["absent"]) < max(1, per_kind // 2):
            found["absent"].append(Target(truth.name, "absent", window, "", "", _query(window)))
    return [t for kind in KINDS for t in found[kind]]


# --- adversarial documents of our own ------------------------------------------------

DECOY_PAIRS = [
    ("吡咯烷应密封储存于阴凉通风处，远离火源。", "N-甲基吡咯烷酮应密封储存于阴凉通风处，远离火源。"),
    ("Check the seals of pump A every week and log the pressure.", "Check the seals of pump AB every week and log the pressure."),
    ("The primary mirror was recoated in March 2024 with aluminium.", "The primary mirror was recoated in March 2014 with aluminium."),
    ("乙醇废液倒入有机废液桶，禁止倒入下水道。", "甲醇废液倒入有机废液桶，禁止倒入下水道。"),
    ("Nitrogen purge flow is 12 litres per minute at the dewar.", "Nitrogen purge flow is 12 litres per minute at the dewar inlet valve."),
]


def write_adversarial(folder: Path) -> list[tuple[Path, list[Target]]]:
    sys.path.insert(0, str(REPO_DIR))
    from tests.docx_factory import heading, make_docx, para, table  # noqa: F401
    from tests.locate_documents import PASSAGES, TARGET_SENTENCE, write_locate_document

    out = []
    path = write_locate_document(folder / "own-locate-kinds.docx")
    own = [
        Target(path.name, "window", PASSAGES["window"], PASSAGES["window"]),
        Target(path.name, "heading_section", f"2. Coatings — {PASSAGES['section']}", f"2. Coatings {PASSAGES['section']}", "2. Coatings"),
        Target(path.name, "table_cell", PASSAGES["cell"], PASSAGES["cell"]),
        Target(path.name, "nested_table", PASSAGES["nested"], PASSAGES["nested"]),
        Target(path.name, "long_cell", TARGET_SENTENCE, TARGET_SENTENCE),
        Target(path.name, "list_item", PASSAGES["list"], PASSAGES["list"]),
        Target(path.name, "text_box", PASSAGES["textbox"], PASSAGES["textbox"]),
        Target(path.name, "footnote", PASSAGES["footnote"], PASSAGES["footnote"]),
        Target(path.name, "chinese", PASSAGES["chinese"], PASSAGES["chinese"]),
        Target(path.name, "decoy", PASSAGES["decoy"], PASSAGES["decoy"]),
    ]
    for t in own:
        t.query = _query(t.target)
    out.append((path, own))
    body = [heading("Decoys")]
    for a, b in DECOY_PAIRS:
        body += [para(b), para(a)]  # the decoy first: a first-match locator falls for it
    body.append(table([["Pump", "Seal check"], ["B", "Check the seals of pump B every day and log the pressure."]]))
    path = make_docx(folder / "own-decoys.docx", body)
    decoys = []
    for a, b in DECOY_PAIRS:
        for text in (a, b):
            decoys.append(Target(path.name, "decoy", text, text, "", _query(text)))
    out.append((path, decoys))
    return out


# --- every other kind: ground truth from each format's own structure ---------------
#
# Each reader gives the file's text as *units* (a paragraph, a heading, a list
# item, a cell, a row, a shape's paragraph, a page of a PDF, lines of code),
# read with the format's own library or its XML — never with the renderer or
# the locator under test. Targets are drawn from the units the same way for
# every kind (see ``targets_from_units``).

KIND_ORDER = ["pdf", "pptx", "xlsx", "csv", "html", "epub", "odt", "rtf", "markdown", "text", "code", "docx"]
# Kinds whose preview is paged (a sheet's rows past the first page): a target
# past the first page is opened through its permalink, as the app opens a citation.
PAGED_KINDS = {"xlsx", "csv"}
PAGE_ROWS = 500  # mnote/preview/sheet_render.py's page size, for choosing how a target is opened
# Kinds with few types of target draw more of each per file.
FEW_TARGET_TYPES = {"pdf": 3, "xlsx": 2, "csv": 2, "code": 3, "pptx": 2}
HANDBOOK_HTML = "usr/share/doc/debian-handbook/html"
# Blocks of (X)HTML that hold text of their own; a block holding another block is left to its children.
HTML_BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th", "dt", "dd", "blockquote", "figcaption", "caption", "pre"}
HTML_ROLES = {"h1": "heading", "h2": "heading", "h3": "heading", "h4": "heading", "h5": "heading", "h6": "heading",
              "li": "item", "td": "cell", "th": "cell", "pre": "code_block"}


@dataclass
class Unit:
    text: str
    role: str  # para | heading | item | cell | row | shape | note | page | code
    where: int = 0  # the PDF page (1-based), the sheet row


@dataclass
class KindTruth:
    name: str
    kind: str
    units: list[Unit]
    full: str  # skeleton of all the text


def _squash(text: str) -> str:
    return " ".join(text.split())


def _kind_truth(name: str, kind: str, units: list[Unit]) -> KindTruth | None:
    units = [u for u in units if u.text]
    if not units:
        return None
    # A row repeats its cells' words: the text is the cells'.
    return KindTruth(name, kind, units, skel(" ".join(u.text for u in units if u.role != "row")))


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _html_units(root) -> list[Unit]:
    """Blocks of an (X)HTML tree: elements of ``HTML_BLOCKS`` (and the
    handbook's ``div.para``) holding no other block, with their text."""
    units = []
    skip = {"script", "style", "head", "title", "nav"}
    nested = HTML_BLOCKS | {"div", "pre", "ul", "ol", "table", "dl"}

    def own_text(el) -> str:
        # The element's text outside the blocks it holds (a paragraph holding a list keeps its words).
        out = [el.text or ""]
        for child in el:
            if isinstance(child.tag, str) and _local(child.tag) not in nested and _local(child.tag) not in skip:
                out.append(own_text(child))
            out.append(child.tail or "")
        return "".join(out)

    for el in root.iter():
        tag = _local(el.tag)
        is_block = tag in HTML_BLOCKS or (tag == "div" and "para" in (el.get("class") or "").split())
        if not is_block or any(_local(a.tag) in skip for a in el.iterancestors()):
            continue
        text = _squash(own_text(el))
        if text:
            units.append(Unit(text, HTML_ROLES.get(tag, "para")))
    return units


def read_html_truth(path: Path) -> KindTruth | None:
    from lxml import html as lxml_html

    try:
        root = lxml_html.parse(str(path)).getroot()
    except (etree.XMLSyntaxError, OSError, ValueError):
        return None
    return _kind_truth(path.name, "html", _html_units(root)) if root is not None else None


def read_epub_truth(path: Path) -> KindTruth | None:
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return None
    units: list[Unit] = []
    with z:
        container = _read(z, "META-INF/container.xml")
        if container is None:
            return None
        rootfile = next((el.get("full-path") for el in container.iter() if _local(el.tag) == "rootfile"), None)
        opf = _read(z, rootfile) if rootfile else None
        if opf is None:
            return None
        folder = str(PurePosixPath(rootfile).parent)
        manifest = {el.get("id"): el.get("href") for el in opf.iter() if _local(el.tag) == "item"}
        parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True)
        for ref in (el.get("idref") for el in opf.iter() if _local(el.tag) == "itemref"):
            href = manifest.get(ref)
            if not href:
                continue
            part = str(PurePosixPath(folder) / href.split("#")[0]).lstrip("./") if folder != "." else href.split("#")[0]
            from urllib.parse import unquote

            try:
                data = z.read(unquote(part))
            except KeyError:
                continue
            root = etree.fromstring(data, parser)
            if root is not None:
                units += _html_units(root)
    return _kind_truth(path.name, "epub", units)


ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
ODF_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"


def _odf_text(el) -> str:
    out = []

    def walk(node) -> None:
        for child in node:
            tag = child.tag
            if tag in (f"{{{ODF_TEXT}}}note", f"{{{ODF_TEXT}}}tracked-changes"):
                pass
            elif tag == f"{{{ODF_TEXT}}}s":
                out.append(" ")
            elif tag in (f"{{{ODF_TEXT}}}tab", f"{{{ODF_TEXT}}}line-break"):
                out.append(" ")
            else:
                out.append(child.text or "")
                walk(child)
            out.append(child.tail or "")

    out.append(el.text or "")
    walk(el)
    return _squash("".join(out))


def read_odt_truth(path: Path) -> KindTruth | None:
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return None
    with z:
        content = _read(z, "content.xml")
    if content is None:
        return None
    units = []
    for el in content.iter(f"{{{ODF_TEXT}}}p", f"{{{ODF_TEXT}}}h"):
        ancestors = {a.tag for a in el.iterancestors()}
        if f"{{{ODF_TEXT}}}note" in ancestors:
            role = "note"
        elif f"{{{ODF_TABLE}}}table-cell" in ancestors:
            role = "cell"
        elif f"{{{ODF_TEXT}}}list-item" in ancestors:
            role = "item"
        else:
            role = "heading" if el.tag == f"{{{ODF_TEXT}}}h" else "para"
        units.append(Unit(_odf_text(el), role))
    return _kind_truth(path.name, "odt", units)


def read_pptx_truth(path: Path) -> KindTruth | None:
    from pptx import Presentation
    from pptx.util import Emu  # noqa: F401 (python-pptx present)

    try:
        deck = Presentation(str(path))
    except Exception:  # a deliberately odd package: the preview's problem, no truth
        return None
    units: list[Unit] = []

    def shapes(collection):
        for shape in collection:
            if getattr(shape, "shape_type", None) == 6 and hasattr(shape, "shapes"):  # a group
                yield from shapes(shape.shapes)
            else:
                yield shape

    try:
        for number, slide in enumerate(deck.slides, 1):
            for shape in shapes(slide.shapes):
                if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                    for p in shape.text_frame.paragraphs:
                        units.append(Unit(_squash("".join(r.text for r in p.runs)), "shape", number))
                if getattr(shape, "has_table", False) and shape.has_table:
                    for row in shape.table.rows:
                        for cell in row.cells:
                            units.append(Unit(_squash(cell.text), "cell", number))
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                for p in slide.notes_slide.notes_text_frame.paragraphs:
                    units.append(Unit(_squash("".join(r.text for r in p.runs)), "note", number))
    except Exception:
        return None
    return _kind_truth(path.name, "pptx", units)


def _sheet_units(rows, kind: str) -> list[Unit]:
    """Cells holding text, and rows whose every value is text (a number's
    shown form is the sheet's format, which the file's values do not say)."""
    units = []
    for number, values in rows:
        values = [v for v in values if v is not None and str(v).strip() != ""]
        texts = [_squash(v) for v in values if isinstance(v, str) and not re.fullmatch(r"[-+]?[\d.,eE%]+", v.strip())]
        for text in texts:
            units.append(Unit(text, "cell", number))
        if len(values) >= 2 and len(texts) == len(values):
            units.append(Unit(" ".join(texts), "row", number))
    return units


def read_xlsx_truth(path: Path) -> KindTruth | None:
    import openpyxl

    try:
        book = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    except Exception:
        return None
    units: list[Unit] = []
    try:
        for sheet in book.worksheets:
            if getattr(sheet, "sheet_state", "visible") != "visible":
                continue
            rows = ((n, row) for n, row in enumerate(sheet.iter_rows(values_only=True, max_row=3000), 1))
            units += _sheet_units(rows, "xlsx")
    except Exception:
        return None
    finally:
        book.close()
    return _kind_truth(path.name, "xlsx", units)


def read_csv_truth(path: Path) -> KindTruth | None:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        rows = list(enumerate(csv.reader(f), 1))[:3000]
    return _kind_truth(path.name, "csv", _sheet_units(rows, "csv"))


def read_pdf_truth(path: Path, max_pages: int = 80) -> KindTruth | None:
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(str(path))
    except Exception:  # a password or a broken file: the preview's problem
        return None
    units = []
    try:
        for number in range(min(len(pdf), max_pages)):
            page = pdf[number]
            textpage = page.get_textpage()
            # PDFium's hyphen at a line end (\x02, U+FFFE) is shown joined.
            text = re.sub("[\x02\ufffe]", "", textpage.get_text_range())
            units.append(Unit(_squash(text), "page", number + 1))
            textpage.close()
            page.close()
    finally:
        pdf.close()
    return _kind_truth(path.name, "pdf", units)


def _md_blocks(text: str) -> list[tuple[str, bool]]:
    """(block, is fenced code) of Markdown text: blank-line paragraphs, a
    fenced code block whole (its blank lines and "#" comments included)."""
    out = []
    for i, part in enumerate(re.split(r"^```[^\n]*$", text, flags=re.M)):
        if i % 2:
            out.append((part.strip("\n"), True))
        else:
            out += [(b.strip("\n"), False) for b in re.split(r"\n\s*\n", part) if b.strip()]
    return out


def read_plain_truth(path: Path, kind: str) -> KindTruth | None:
    """Markdown and text: the raw text's blank-line paragraphs (Markdown's
    headings, list items and table cells by their marks; fenced code left out)."""
    text = path.read_text(encoding="utf-8")
    units = []
    for block, fenced in _md_blocks(text) if kind == "markdown" else [(b.strip("\n"), False) for b in re.split(r"\n\s*\n", text)]:
        if not block.strip():
            continue
        if kind == "markdown":
            if fenced:
                units.append(Unit(_squash(block), "code_block"))
                continue
            if block.startswith("#"):
                units.append(Unit(_squash(block.lstrip("#")), "heading"))
            elif block.startswith("- "):
                units.append(Unit(_squash(block[2:]), "item"))
            elif block.startswith("|"):
                for cell in block.strip("|").split("|"):
                    units.append(Unit(_squash(cell), "cell"))
            else:
                units.append(Unit(_squash(block), "para"))
        else:
            units.append(Unit(_squash(block), "para"))
    return _kind_truth(path.name, kind, units)


def read_rtf_truth(path: Path) -> KindTruth | None:
    """The paragraphs the RTF was written from (``write_rtf``), kept beside it."""
    sidecar = path.with_suffix(".units.json")
    units = [Unit(text, role) for text, role in json.loads(sidecar.read_text(encoding="utf-8"))]
    return _kind_truth(path.name, "rtf", units)


def read_code_truth(path: Path) -> KindTruth | None:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return _kind_truth(path.name, "code", [Unit(line.strip(), "code", n) for n, line in enumerate(lines, 1) if line.strip()])


# --- files of every kind: the shared corpus, and real text written as each format ---


def _handbook_sections(work: Path, languages=("en-US", "zh-CN")) -> list[tuple[str, Path]]:
    """(language, path) of the debian-handbook's section pages (fetched once by
    bench/question_library.py's ``fetch``)."""
    from question_library import fetch  # bench/question_library.py, beside this file

    html = fetch(work)
    return [(lang, p) for lang in languages for p in sorted((html / lang).glob("sect.*.html"))]


def _section_units(path: Path) -> list[Unit]:
    """A handbook section as headings, paragraphs and list items, from its
    Markdown conversion (the question library's), for writing it as ODT/RTF."""
    from question_library import section_markdown

    units = []
    for block, fenced in _md_blocks(section_markdown(path)):
        if fenced:
            units.append(Unit(_squash(block), "para"))
            continue
        if block.startswith("|"):
            continue
        if block.startswith("#"):
            units.append(Unit(_squash(block.lstrip("#")), "heading"))
        elif block.startswith("- "):
            units.append(Unit(_squash(block[2:]), "item"))
        else:
            units.append(Unit(_squash(block), "para"))
    return units


def write_odt(path: Path, units: list[Unit]) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, List, ListItem, P

    doc = OpenDocumentText()
    for unit in units:
        if unit.role == "heading":
            doc.text.addElement(H(outlinelevel=2, text=unit.text))
        elif unit.role == "item":
            items, item = List(), ListItem()
            item.addElement(P(text=unit.text))
            items.addElement(item)
            doc.text.addElement(items)
        else:
            doc.text.addElement(P(text=unit.text))
    doc.save(str(path))
    return path


def _rtf_escape(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\\{}":
            out.append("\\" + ch)
        elif code < 128:
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code if code < 32768 else code - 65536}?")
        else:
            code -= 0x10000
            for unit in (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)):
                out.append(f"\\u{unit - 65536}?")
    return "".join(out)


def write_rtf(path: Path, units: list[Unit]) -> Path:
    """An RTF as a word processor writes one (font table, \\uN characters),
    its paragraphs kept beside it as the ground truth."""
    body = []
    for unit in units:
        if unit.role == "heading":
            body.append(r"\pard\sb240\b\fs32 " + _rtf_escape(unit.text) + r"\b0\fs22\par")
        elif unit.role == "item":
            body.append(r"\pard\fi-360\li720 " + _rtf_escape(unit.text) + r"\par")
        else:
            body.append(r"\pard\sa200 " + _rtf_escape(unit.text) + r"\par")
    path.write_text(r"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\fnil\fcharset0 Calibri;}}\uc1 " + "\n" + "\n".join(body) + "\n}", encoding="ascii")
    path.with_suffix(".units.json").write_text(json.dumps([[u.text, u.role] for u in units], ensure_ascii=False), encoding="utf-8")
    return path


def write_pptx(path: Path, units: list[Unit]) -> Path:
    """A deck as people make one from a text: a slide per heading (and more
    when its text runs long), its paragraphs and list items as the body, every
    third slide's last paragraph as speaker notes."""
    from pptx import Presentation

    deck = Presentation()
    slides: list[tuple[str, list[str]]] = []
    for unit in units:
        if unit.role == "heading" or not slides or len(slides[-1][1]) >= 5:
            title = unit.text if unit.role == "heading" else f"{slides[-1][0] if slides else path.stem} ({len(slides) + 1})"
            slides.append((title, []))
            if unit.role == "heading":
                continue
        slides[-1][1].append(unit.text)
    for n, (title, texts) in enumerate(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        notes = texts.pop() if n % 3 == 2 and len(texts) > 1 else ""
        body = slide.placeholders[1].text_frame
        for i, text in enumerate(texts):
            paragraph = body.paragraphs[0] if i == 0 else body.add_paragraph()
            paragraph.text = text
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    deck.save(str(path))
    return path


def write_xlsx(path: Path, units: list[Unit]) -> Path:
    """A workbook as a team keeps notes in one: a row per paragraph or list
    item (its section's heading, the kind of text, the text), one sheet."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Notes"
    sheet.append(["Section", "Kind", "Text"])
    heading = ""
    for unit in units:
        if unit.role == "heading":
            heading = unit.text
        else:
            sheet.append([heading, "list item" if unit.role == "item" else "paragraph", unit.text[:2000]])
    book.save(str(path))
    return path


TEXLIVE_DOCS = ("texlive-humanities-doc", "texlive-lang-chinese")


def _texlive_pdfs(work: Path) -> list[Path]:
    """Real PDF manuals (English and Chinese) from Debian's TeX Live documentation packages, fetched once."""
    folder = work / "texlive"
    if not (folder / "x").is_dir():
        import subprocess

        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", *TEXLIVE_DOCS], cwd=folder, check=True, capture_output=True)
        for deb in sorted(folder.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(folder / "x")], check=True)
    return [p for p in sorted((folder / "x").rglob("*.pdf")) if 20_000 < p.stat().st_size < 2_000_000]


def hash_order(names) -> list[str]:
    """Names in an order that spreads them (by hash), the same every run."""
    return sorted(names, key=lambda n: hashlib.sha256(("pick-" + n).encode()).hexdigest())


CODE_PACKAGES = ("openpyxl", "markdown_it", "pptx", "docx", "pygments/lexers", "lxml/html", "ebooklib", "odf")


def kind_candidates(kind: str, shared: Path, work: Path) -> dict:
    """The files of one kind the bench may use: name → a function writing
    the file into a folder (a copy of the shared corpus, or real text written
    as this kind) and returning its path."""
    corpus = shared / "corpus"

    def copy(source: Path):
        return lambda folder: Path(shutil.copy(source, folder / source.name))

    if kind == "pdf":
        out = {p.name: copy(p) for p in sorted((corpus / kind).glob("*.pdf"))}
        for p in _texlive_pdfs(work):
            name = f"texlive-{p.parent.name}-{p.name}"
            out[name] = (lambda source, name: lambda folder: Path(shutil.copy(source, folder / name)))(p, name)
        return out
    if kind in ("pptx", "xlsx", "epub", "docx"):
        out = {p.name: copy(p) for p in sorted((corpus / kind).glob(f"*.{kind}"))}
        if kind in ("pptx", "xlsx"):
            # The corpus's decks and workbooks are test files with little text: real text written as both too.
            writer = write_pptx if kind == "pptx" else write_xlsx
            for lang, p in _handbook_sections(work):
                name = f"handbook-{lang}-{p.stem}.{kind}"
                out[name] = (lambda source, name: lambda folder: writer(folder / name, _section_units(source)))(p, name)
        return out
    if kind == "csv":
        # Real tables: the first sheet of each XLSX of the corpus, as CSV.
        def as_csv(source: Path):
            def write(folder: Path) -> Path | None:
                import csv

                import openpyxl

                try:
                    book = openpyxl.load_workbook(str(source), read_only=True, data_only=True)
                    rows = list(book.worksheets[0].iter_rows(values_only=True, max_row=3000))
                    book.close()
                except Exception:
                    return None
                dest = folder / (source.stem + ".csv")
                with open(dest, "w", newline="", encoding="utf-8") as f:
                    csv.writer(f).writerows(["" if v is None else str(v) for v in row] for row in rows)
                return dest
            return write

        out = {p.stem + ".csv": as_csv(p) for p in sorted((corpus / "xlsx").glob("*.xlsx"))}

        def handbook_csv(source: Path, name: str):
            def write(folder: Path) -> Path:
                import csv

                rows, heading = [["Section", "Kind", "Text"]], ""
                for unit in _section_units(source):
                    if unit.role == "heading":
                        heading = unit.text
                    else:
                        rows.append([heading, "list item" if unit.role == "item" else "paragraph", unit.text])
                with open(folder / name, "w", newline="", encoding="utf-8") as f:
                    csv.writer(f).writerows(rows)
                return folder / name
            return write

        # Real text kept as a table too (the corpus's sheets hold little text).
        for lang, p in _handbook_sections(work):
            name = f"handbook-{lang}-{p.stem}.csv"
            out[name] = handbook_csv(p, name)
        return out
    if kind in ("html", "markdown", "text", "odt", "rtf"):
        from question_library import section_markdown

        suffix = {"html": ".html", "markdown": ".md", "text": ".txt", "odt": ".odt", "rtf": ".rtf"}[kind]

        def written(source: Path, name: str):
            def write(folder: Path) -> Path:
                dest = folder / name
                if kind == "html":
                    shutil.copy(source, dest)
                elif kind in ("markdown", "text"):
                    dest.write_text(section_markdown(source), encoding="utf-8")
                elif kind == "odt":
                    write_odt(dest, _section_units(source))
                else:
                    write_rtf(dest, _section_units(source))
                return dest
            return write

        out = {}
        for lang, p in _handbook_sections(work):
            name = f"handbook-{lang}-{p.stem}{suffix}"
            out[name] = written(p, name)
        if kind == "odt":
            out |= {p.name: copy(p) for p in sorted((corpus / "odt").glob("*.odt"))}
        return out
    if kind == "code":
        site = next((REPO_DIR / ".venv" / "lib").glob("python3*/site-packages"))
        out = {}
        for package in CODE_PACKAGES:
            for p in sorted((site / package).glob("*.py")):
                if 2_000 < p.stat().st_size < 200_000:
                    name = f"{package.replace('/', '-')}-{p.name}"
                    out[name] = (lambda source, name: lambda folder: Path(shutil.copy(source, folder / name)))(p, name)
        return out
    return {}


def read_kind_truth(kind: str, path: Path):
    readers = {"pdf": read_pdf_truth, "pptx": read_pptx_truth, "xlsx": read_xlsx_truth, "csv": read_csv_truth,
               "html": read_html_truth, "epub": read_epub_truth, "odt": read_odt_truth, "rtf": read_rtf_truth,
               "code": read_code_truth, "docx": read_truth}
    try:
        if kind in ("markdown", "text"):
            return read_plain_truth(path, kind)
        return readers[kind](path)
    except Exception as e:  # a reader's failure leaves the file out, and says so
        print(f"  no ground truth for {path.name}: {type(e).__name__}: {str(e)[:100]}", flush=True)
        return None


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s+|(?<=[。！？])", text) if s.strip()]


def _cut_words(window: str, rng: random.Random) -> str:
    """The window with its first and last words cut short (1 to 3 letters
    off each), as a chunk cut at a token boundary starts; "" when a word is too short."""
    words = window.split(" ")
    if len(words) < 6 or len(words[0]) < 5 or len(words[-1]) < 5 or not words[0][:3].isalpha() or not words[-1][-3:].isalpha():
        return ""
    return " ".join([words[0][rng.randint(1, 3):]] + words[1:-1] + [words[-1][: -rng.randint(1, 3)]])


def _altered(window: str, rng: random.Random) -> str:
    """The window with one inner word (of letters, five or more) written backwards."""
    words = window.split(" ")
    inner = [i for i in range(2, len(words) - 2) if len(words[i]) >= 5 and words[i].isalpha() and words[i] != words[i][::-1]]
    if len(words) < 10 or not inner:
        return ""
    i = rng.choice(inner)
    return " ".join(words[:i] + [words[i][::-1]] + words[i + 1 :])


def targets_from_units(truth: KindTruth, others: list[KindTruth], per_kind: int, rng: random.Random) -> list[Target]:
    """Targets that fit the kind: a window of a paragraph (or of a PDF page),
    one whole sentence, a heading with its section, a list item, a cell, a
    sheet row, a slide shape's paragraph, a speaker note, lines of code,
    Chinese text; and absent evidence from another file of the same kind."""
    found: dict[str, list[Target]] = defaultdict(list)

    def add(kind: str, evidence: str, target: str, heading: str = "", where: int = 0) -> None:
        if len(found[kind]) >= per_kind or not _unique(truth, target) or any(t.target == target for t in found[kind]):
            return
        found[kind].append(Target(truth.name, kind, evidence, target, heading, _query(target), file_kind=truth.kind, where=where))

    units = truth.units
    order = list(range(len(units)))
    rng.shuffle(order)
    for i in order:
        u = units[i]
        cjk = sum(is_cjk(c) for c in u.text) > len(u.text) * 0.3
        if cjk and len(u.text) >= 12 and u.role != "code":
            window = _cjk_window(u.text, rng)
            add("chinese", window, window, where=u.where)
        if u.role in ("para", "page", "shape", "note", "item", "cell", "row") and not cjk:
            if len(u.text) >= 80 and (u.role not in ("cell", "row") or rng.random() < 0.5):
                window = _window(u.text, rng)
                add("window", window, window, where=u.where)
                # As a chunk cut by tokens gives it: the first and last words cut short.
                window = _window(u.text, rng)
                cut = _cut_words(window, rng)
                if cut:
                    add("cut_window", cut, window, where=u.where)
                # Text that differs a little (another extraction, a typo): one word changed.
                window = _window(u.text, rng)
                altered = _altered(window, rng)
                if altered:
                    add("altered", altered, window, where=u.where)
            sentences = [s for s in _sentences(u.text) if 40 <= len(s) <= 300]
            if len(sentences) >= 2:
                sentence = rng.choice(sentences)
                add("sentence", sentence, sentence, where=u.where)
        if u.role == "item" and 15 <= len(u.text) <= 600 and not cjk:
            add("list_item", u.text, u.text)
        elif u.role == "shape" and 15 <= len(u.text) <= 600 and not cjk:
            add("shape_para", u.text, u.text, where=u.where)
        elif u.role == "note" and truth.kind == "pptx" and 15 <= len(u.text) <= 600:
            add("speaker_note", u.text, u.text, where=u.where)
        elif u.role == "cell" and 10 <= len(u.text) <= 400:
            add("cell", u.text, u.text, where=u.where)
        elif u.role == "cell" and len(u.text) > 400 and not cjk:
            sentences = [x for x in _sentences(u.text) if 40 <= len(x) <= 300]
            if sentences:
                sentence = rng.choice(sentences)
                add("long_cell", sentence, sentence, where=u.where)
        elif u.role == "row" and 20 <= len(u.text) <= 400:
            add("row", u.text, u.text, where=u.where)
        elif u.role == "code" and i + 2 < len(units):
            lines = [units[j].text for j in range(i, i + rng.choice((1, 2, 3)))]
            text = "\n".join(lines)
            if 30 <= len(text) <= 300 and all(units[j].where == u.where + (j - i) for j in range(i, i + len(lines))):
                add("code_lines", text, text, where=u.where)
        if u.role == "heading" and not cjk:
            section = []
            for q in units[i + 1 :]:
                if q.role == "heading":
                    break
                section.append(q.text)
                if len(" ".join(section)) > 1500:
                    break
            text = " ".join(section)
            if len(text) > 1500:
                text = text[:1500].rsplit(" ", 1)[0]
            if len(text) >= 40:
                add("heading_section", f"{u.text} — {text}", f"{u.text} {text}", u.text)
    for other in rng.sample(others, min(len(others), 6)):
        candidates = [u.text for u in other.units if len(u.text) >= 60 and u.role != "code"]
        if other.kind == "code":
            candidates = ["\n".join(x.text for x in other.units[j : j + 3]) for j in range(0, max(0, len(other.units) - 3), 7)]
            candidates = [c for c in candidates if len(c) >= 40]
        if not candidates:
            continue
        window = _window(rng.choice(candidates), rng)
        if skel(window) and skel(window) not in truth.full and len(found["absent"]) < max(1, per_kind // 2):
            found["absent"].append(Target(truth.name, "absent", window, "", "", _query(window), file_kind=truth.kind))
    return [t for ts in found.values() for t in ts]


# --- the app -------------------------------------------------------------------------


NO_RENDER_BUDGET = {
    "MNOTE_LIGHTRAG_URL": "http://127.0.0.1:9",  # no LightRAG: the preview renders from the file
    # The bench opens hundreds of previews a minute: no per-user render budget.
    "MNOTE_PREVIEW_RENDERS_PER_MINUTE": "0",
}


# The parent page: opens the preview in a frame (LOAD), sends each locator
# and times the answer (LOCATE); then runs the naive baseline on the frame's
# document (BASELINE) — apart, so the browser's CPU time counted around
# LOCATE is the locator's alone.
LOAD = """async (url) => {
  document.querySelectorAll("#bench-frame").forEach((f) => f.remove());
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("preview not ready")), 60000);
    window.addEventListener("message", function onReady(e) {
      if (e.data && e.data.type === "mnote:ready") { clearTimeout(timer); window.removeEventListener("message", onReady); resolve(); }
    });
  });
  const frame = document.createElement("iframe");
  frame.id = "bench-frame";
  frame.style.width = "1000px";
  frame.style.height = "700px";
  frame.src = url;
  document.body.prepend(frame);
  await ready;
  // Fully loaded and drawn (pictures too), so the time counted around LOCATE is the locator's.
  if (frame.contentDocument.readyState !== "complete") await new Promise((resolve) => frame.addEventListener("load", resolve, { once: true }));
  await new Promise((resolve) => frame.contentWindow.requestAnimationFrame(() => frame.contentWindow.requestAnimationFrame(resolve)));
  const problem = (frame.contentDocument.querySelector(".alert.error") || {}).textContent || "";
  return { problem: problem.trim() };
}"""

LOCATE = """async (items) => {
  const SOFT = ".docx-label, .docx-note-label, .docx-image-placeholder, .docx-hf-label";
  const frame = document.getElementById("bench-frame");
  const d = frame.contentDocument;
  const perf = frame.contentWindow.performance;
  const out = [];
  for (const [i, item] of items.entries()) {
    perf.clearResourceTimings();
    const t0 = performance.now();
    const located = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ status: "timeout" }), 30000);
      window.addEventListener("message", function onLocated(e) {
        if (e.data && e.data.type === "mnote:located" && e.data.requestId === `b${i}`) {
          clearTimeout(timer);
          window.removeEventListener("message", onLocated);
          resolve(e.data);
        }
      });
      frame.contentWindow.postMessage({ type: "mnote:locate", requestId: `b${i}`, locator: item.locator }, window.location.origin);
    });
    const ms = performance.now() - t0;
    // Where the time went (locate.js's own measures, the anchor request's Server-Timing).
    const anchor = perf.getEntriesByName("mnote:anchor").pop();
    const draw = perf.getEntriesByName("mnote:draw").pop();
    const request = perf.getEntriesByType("resource").filter((r) => r.name.includes("/anchor?")).pop();
    const server = {};
    for (const st of (request && request.serverTiming) || []) server[st.name] = st.duration;
    const timing = { via: anchor ? anchor.detail : "", anchorMs: anchor ? anchor.duration : null, drawMs: draw ? draw.duration : null,
                     requestMs: request ? request.duration : null, serverMs: server.anchor ?? null, serverCpuMs: server.cpu ?? null };
    const marks = Array.from(d.querySelectorAll("mark.mnote-hit")).map((m) => m.textContent).join("");
    // The words of the file that are marked: list labels, note numbers and
    // image placeholders are the renderer's (the XML has none; LightRAG numbers lists its own way).
    const own = Array.from(d.querySelectorAll("mark.mnote-hit")).filter((m) => !m.closest(SOFT)).map((m) => m.textContent).join("");
    const startBlock = located.blockIndex == null ? null : d.querySelector(`[data-block-index="${located.blockIndex}"]`);
    // A PDF marks boxes on the page image: the page and words of its text
    // match are asked again with the page's own request (the server caches it).
    let pdf = null;
    const docEl = d.getElementById("document");
    if (docEl && docEl.dataset.kind === "pdf" && (located.status === "exact" || located.status === "fuzzy")) {
      const url = new URL(docEl.dataset.findUrl, frame.contentWindow.location.origin);
      url.searchParams.set("evidence", item.locator.evidenceText || "");
      url.searchParams.set("query", item.locator.searchQuery || "");
      const answer = await (await fetch(url, { credentials: "same-origin" })).json();
      pdf = { page: answer.page, text: answer.text || "", pages: located.pages || [] };
    }
    out.push({ status: located.status, error: located.error || "", quote: located.quote || "", marks, own, ms, timing, pdf,
               blockText: startBlock ? startBlock.textContent : "" });
  }
  return out;
}"""

# A permalink's own locate (the preview opened at the passage, the page
# chosen by the server): its answer, once the page has drawn it.
INITIAL = """async () => {
  const frame = document.getElementById("bench-frame");
  const d = frame.contentDocument;
  const SOFT = ".docx-label, .docx-note-label, .docx-image-placeholder, .docx-hf-label";
  const docEl = d.getElementById("document");
  const t0 = performance.now();
  while (!docEl.dataset.initialStatus && performance.now() - t0 < 30000) await new Promise((r) => setTimeout(r, 50));
  const status = docEl.dataset.initialStatus || "timeout";
  const hits = Array.from(d.querySelectorAll("mark.mnote-hit"));
  const marks = hits.map((m) => m.textContent).join("");
  const own = hits.filter((m) => !m.closest(SOFT)).map((m) => m.textContent).join("");
  const first = hits.length ? hits[0].closest("[data-block-index]") : null;
  return [{ status, error: "", quote: marks, marks, own, ms: performance.now() - t0, pdf: null,
            timing: { via: "permalink", anchorMs: null, drawMs: null, requestMs: null, serverMs: null, serverCpuMs: null },
            blockText: first ? first.textContent : "" }];
}"""

# The naive baseline: the first block holding the bare query.
BASELINE = """(items) => {
  const d = document.getElementById("bench-frame").contentDocument;
  return items.map((item) => {
    const t1 = performance.now();
    const q = item.query.toLowerCase().replace(/\\s+/g, " ").trim();
    let hit = null;
    for (const block of d.querySelectorAll("[data-block-index]")) {
      if ((block.textContent || "").toLowerCase().replace(/\\s+/g, " ").includes(q)) { hit = block; break; }
    }
    return { found: !!hit, quote: hit ? hit.textContent : "", blockText: hit ? hit.textContent : "", ms: performance.now() - t1 };
  });
}"""


def _task_seconds(cdp) -> float:
    """The page's renderer main-thread busy time so far (Chromium's TaskDuration), frames included."""
    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children (the web app's gunicorn workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if entry.name == str(pid) or fields[1] == str(pid):
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def run_document(page, cdp, url: str, items: list[dict], web_pid: int | None = None, initial: bool = False) -> dict:
    """Open ``url`` in the bench frame, locate each item (``initial``: take
    the permalink's own locate of its one item), then run the baseline.
    Returns {"problem"} or {"results", "browser_cpu_s", "server_cpu_s"}."""
    loaded = page.evaluate(LOAD, url)
    if loaded.get("problem"):
        return loaded
    task0, cpu0 = _task_seconds(cdp), _cpu_seconds(web_pid) if web_pid else 0.0
    results = page.evaluate(INITIAL) if initial else page.evaluate(LOCATE, items)
    task1, cpu1 = _task_seconds(cdp), _cpu_seconds(web_pid) if web_pid else 0.0
    for r, b in zip(results, page.evaluate(BASELINE, items)):
        r["baseline"] = b
    return {"results": results, "browser_cpu_s": task1 - task0, "server_cpu_s": cpu1 - cpu0}


def judge(target: Target, found: bool, quote: str, block_text: str = "") -> str:
    if target.kind == "absent":
        return "refused" if not found else "wrong_jump"
    if not found:
        return "not_found"
    # A decoy paragraph is the whole target: its look-alike holds the same words.
    if target.kind == "decoy" and skel(block_text) != skel(target.target):
        return "wrong_jump"
    hl, tg = skel(quote), skel(target.target)
    head, tail = tg[:12], tg[-12:]
    start = hl.find(head)
    end = hl.rfind(tail)
    if start < 0 or end < 0 or end + len(tail) <= start:
        if target.kind == "cut_window":
            # The cited words, but not whole words (the highlight starts or ends inside one).
            ev = skel(target.evidence)
            if hl.find(ev[:12]) >= 0 and hl.rfind(ev[-12:]) >= 0:
                return "landed"
        return "wrong_jump"
    exact = start <= 4 and len(hl) - (end + len(tail)) <= 4 and len(hl) <= 1.15 * len(tg) + 12
    return "exact" if exact else "landed"


def summarise(targets: list[Target], key: str) -> dict:
    """Counts per kind for ``result`` (ours) or ``baseline``."""
    by_kind: dict[str, Counter] = defaultdict(Counter)
    ms = []
    for t in targets:
        outcome = getattr(t, key)
        if not outcome:
            continue
        by_kind[t.kind][outcome["verdict"]] += 1
        ms.append(outcome["ms"])
    present = sum(sum(c.values()) for k, c in by_kind.items() if k != "absent")
    return {
        "present_targets": present,
        "top1_exact": sum(c["exact"] for k, c in by_kind.items() if k != "absent"),
        "top1_exact_pct": round(100 * sum(c["exact"] for k, c in by_kind.items() if k != "absent") / present, 1) if present else None,
        "landed": sum(c["exact"] + c["landed"] for k, c in by_kind.items() if k != "absent"),
        # Shown as a hit but the cited words are not in the highlight.
        "wrong_jumps": sum(c["wrong_jump"] for c in by_kind.values()),
        # The highlight holds the cited words but starts early or runs long.
        "landed_not_exact": sum(c["landed"] for k, c in by_kind.items() if k != "absent"),
        "honest_not_found": sum(c["not_found"] for k, c in by_kind.items() if k != "absent"),
        "absent": sum(by_kind["absent"].values()),
        "absent_refused": by_kind["absent"]["refused"],
        "decoys": sum(by_kind["decoy"].values()),
        "decoys_right": by_kind["decoy"]["exact"],
        "median_ms": round(statistics.median(ms), 1) if ms else None,
        "p95_ms": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1) if ms else None,
        "by_kind": {k: dict(c) for k, c in sorted(by_kind.items())},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # ../shared beside a clone (CI), or two levels up from a worktree.
    default_corpus = next((p for p in (REPO_DIR.parent / "shared" / "corpus" / "docx", REPO_DIR.parent.parent / "shared" / "corpus" / "docx")
                           if p.is_dir()), REPO_DIR.parent / "shared" / "corpus" / "docx")
    parser.add_argument("--corpus", type=Path, default=default_corpus)
    parser.add_argument("--per-kind", type=int, default=2, help="targets per kind per document (default 2)")
    parser.add_argument("--held-per-kind", type=int, default=0, help="targets per kind per held-back document (default: --per-kind)")
    parser.add_argument("--kinds", default=",".join(KIND_ORDER), help=f"kinds of file, comma-separated (default: all: {','.join(KIND_ORDER)})")
    parser.add_argument("--files-per-kind", type=int, default=8,
                        help="at most this many tuned and as many held-back files per kind, spread by hash (0: all; default 8)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many files per kind (0: all)")
    parser.add_argument("--page-fast-path", action="store_true",
                        help="send locators without a chunk id, so the page anchors verbatim quotes itself (default: as a citation, by the server)")
    parser.add_argument("--part", choices=["all", "tuned", "held"], default="all", help="only the tuned or the held-back corpus files")
    parser.add_argument("--only", default="", help="only corpus files whose name contains this")
    parser.add_argument("--show-failures", choices=["none", "tuned", "held"], default="none")
    parser.add_argument("--no-json", action="store_true")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--e2e", action="store_true", help="instead: end to end on the real embedded LightRAG (ports 8200-8202)")
    parser.add_argument("--e2e-queries", type=int, default=12, help="e2e: queries per kind")
    parser.add_argument("--e2e-files", type=int, default=3, help="e2e: files per kind in the mixed library")
    parser.add_argument("--e2e-timeout", type=float, default=900, help="seconds to wait for ingest")
    parser.add_argument("--port-base", type=int, default=0, help="loopback port of the web app (e2e: LightRAG, model endpoint, web app from here); default: a free port / 8200-8202")
    parser.add_argument("--tiktoken-cache", default="", help="a folder holding tiktoken's cache files, if not in data/tiktoken")
    args = parser.parse_args(argv)
    if args.e2e:
        report = run_e2e(args)
        if not args.no_json:
            path = RESULTS_FILE.with_name("locate_accuracy_e2e.json")
            path.write_text(json.dumps({"generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                        "command": "bench/locate_accuracy.py " + " ".join(argv or sys.argv[1:]),
                                        "loadavg_end": os.getloadavg(), "report": report}, indent=1, ensure_ascii=False) + "\n")
            print(f"written {path.relative_to(REPO_DIR)}")
        return 0 if not report.get("outside_chunk") else 1
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = set(kinds) - set(KIND_ORDER)
    if unknown:
        raise SystemExit(f"unknown kinds {sorted(unknown)}; choose from {','.join(KIND_ORDER)}")
    if "docx" in kinds and not args.corpus.is_dir():
        raise SystemExit(f"no DOCX corpus at {args.corpus} (give --corpus)")
    rng = random.Random(args.seed)
    loadavg_start = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="mnote-locate-accuracy-"))
    web = None
    try:
        env, data_dir, base_dir = in_process_app_in(tmp, "bench", **NO_RENDER_BUDGET)
        shared = args.corpus.parent.parent
        truths: dict[str, object] = {}  # "kind/name" → its ground truth
        own_docs: set[str] = set()  # "docx/name" of the adversarial documents written here
        all_targets: list[Target] = []
        for kind in kinds:
            folder = base_dir / "bench" / kind
            folder.mkdir(parents=True, exist_ok=True)
            candidates = kind_candidates(kind, shared, Path(tempfile.gettempdir()) / "mnote-question-library")
            if kind == "docx":
                candidates = {p.name: (lambda source: lambda folder: Path(shutil.copy(source, folder / source.name)))(p)
                              for p in sorted(args.corpus.glob("*.docx"))}
            names = [n for n in hash_order(candidates) if args.only in n]
            if args.part != "all":
                names = [n for n in names if held_back(n) == (args.part == "held")]
            kind_truths, taken = {}, Counter()
            cap = args.limit or args.files_per_kind
            for name in names:
                part = "held" if held_back(name) else "tuned"
                if cap and taken[part] >= cap:
                    continue
                path = candidates[name](folder)
                truth = read_kind_truth(kind, path) if path else None
                # A file with next to no text of its own (a chart deck, a scan) gives no targets.
                if truth is None or (kind != "docx" and sum(len(u.text) >= 15 for u in truth.units) < 2):
                    continue
                kind_truths[name] = truth
                taken[part] += 1
            names = sorted(kind_truths)
            for name in names:
                others = [kind_truths[n] for n in names if n != name]
                draw = targets_of if kind == "docx" else targets_from_units
                wider = FEW_TARGET_TYPES.get(kind, 1)
                drawn = draw(kind_truths[name], others, args.per_kind * wider, rng)
                if held_back(name) and args.held_per_kind > args.per_kind:
                    # A wider measurement of the held-back part, drawn with a
                    # generator of its own, so the tuned part's targets stay the same.
                    drawn = draw(kind_truths[name], others, args.held_per_kind * wider, random.Random(f"{args.seed}-held-{name}"))
                for t in drawn:
                    t.file_kind = kind
                all_targets += drawn
                truths[f"{kind}/{name}"] = kind_truths[name]
            if kind == "docx" and not args.only and args.part != "held":
                for path, targets in write_adversarial(folder):
                    for t in targets:
                        t.file_kind = "docx"
                    all_targets += targets
                    own_docs.add(f"docx/{path.name}")
        names = sorted(truths)
        import django

        django.setup()
        from mnote.stack.processes import StackConfig, web_process
        from mnote.stack.managed import free_port

        paths = {key: base_dir / "bench" / key for key in names} | {key: base_dir / "bench" / key for key in own_docs}
        ids = register_indexed("Accuracy bench", "bench", paths)
        print(f"{len(names)} files ({sum(held_back(n.split('/', 1)[1]) for n in names)} held back), {len(all_targets)} targets: "
              f"{dict(Counter(t.file_kind for t in all_targets))}; {dict(Counter(t.kind for t in all_targets))}", flush=True)
        port = args.port_base or free_port()
        web = web_process(StackConfig(data_dir=data_dir), "127.0.0.1", port, env)
        web.start()
        web.wait_healthy(60)
        base_url = f"http://127.0.0.1:{port}"

        from playwright.sync_api import sync_playwright

        # One visit per document; a sheet's target past its first page is a
        # visit of its own, through the permalink (the server picks the page).
        visits: dict[tuple, list[Target]] = defaultdict(list)
        for t in all_targets:
            paged = t.file_kind in PAGED_KINDS and t.where > PAGE_ROWS
            visits[(f"{t.file_kind}/{t.doc}", id(t) if paged else 0)].append(t)
        problems = {}
        cpu_totals, cpu_docs = Counter(), []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 1200, "height": 900}, locale="en-US")
                page = context.new_page()
                cdp = context.new_cdp_session(page)
                cdp.send("Performance.enable")
                log_in_page(page, base_url)
                for n, ((doc, permalink), targets) in enumerate(sorted(visits.items(), key=lambda v: (v[0][0], v[0][1]))):
                    items = [{"locator": {"precision": "paragraph", "evidenceText": t.evidence, "searchQuery": t.query,
                                          "headingPath": [t.heading] if t.heading else []}, "query": t.query} for t in targets]
                    if not args.page_fast_path:
                        # As a citation asks: with its chunk (one the bench has not: the evidence alone), so the
                        # server anchors it; the page's own fast path is for locators without a chunk.
                        for item in items:
                            item["locator"]["chunkId"] = "bench-no-such-chunk"
                    url = f"/preview/{ids[doc]}/"
                    if permalink:
                        url += "?" + urlencode({"locator": json.dumps(items[0]["locator"])})
                    page.goto(f"{base_url}/")
                    try:
                        answer = run_document(page, cdp, url, items, web.process.pid, initial=bool(permalink))
                    except Exception as e:  # a page that never loads is reported, not fatal
                        answer = {"problem": str(e)[:200]}
                    if answer.get("problem"):
                        problems[doc] = answer["problem"]
                        for t in targets:
                            t.result = {"verdict": judge(t, False, ""), "ms": 0.0, "status": "problem"}
                            t.baseline = {"verdict": judge(t, False, ""), "ms": 0.0}
                        continue
                    cpu_totals["browser_s"] += answer["browser_cpu_s"]
                    cpu_totals["server_s"] += answer["server_cpu_s"]
                    cpu_totals["locates"] += len(targets)
                    cpu_docs.append((1000 * answer["browser_cpu_s"] / len(targets), 1000 * answer["server_cpu_s"] / len(targets)))
                    for t, r in zip(targets, answer["results"]):
                        found = r["status"] in ("exact", "fuzzy")
                        if t.file_kind == "pdf":
                            # Boxes on a page image, no text marked: the page and words of the text match drawn.
                            pdf = r.get("pdf") or {}
                            found = found and bool(pdf.get("page"))
                            verdict = judge(t, found, pdf.get("text") or "")
                            if found and t.kind != "absent" and pdf.get("page") != t.where:
                                verdict = "wrong_jump"
                            quote = pdf.get("text") or ""
                        else:
                            verdict, quote = judge(t, found, r["own"], r["blockText"]), r["quote"] or ""
                        t.result = {"verdict": verdict, "ms": r["ms"], "status": r["status"],
                                    "quote": quote[:300], "error": r["error"], "timing": r["timing"]}
                        if r["status"] == "timeout" or r["error"]:
                            print(f"  {doc}: {t.kind} {r['status']} {r['error']}", flush=True)
                        b = r["baseline"]
                        t.baseline = {"verdict": judge(t, b["found"], b["quote"], b["blockText"]), "ms": b["ms"], "quote": b["quote"][:300]}
                    if n % 20 == 0:
                        print(f"  {n + 1}/{len(visits)} visits", flush=True)
                context.close()
            finally:
                browser.close()
        report = {}
        for kind in kinds:
            of_kind = [t for t in all_targets if t.file_kind == kind]
            groups = {
                "tuned": [t for t in of_kind if f"{kind}/{t.doc}" not in own_docs and not held_back(t.doc)],
                "held_back": [t for t in of_kind if f"{kind}/{t.doc}" not in own_docs and held_back(t.doc)],
            }
            if kind == "docx":
                groups["own_adversarial"] = [t for t in of_kind if f"{kind}/{t.doc}" in own_docs]
            report[kind] = {g: {"mnote": summarise(ts, "result"), "naive_baseline": summarise(ts, "baseline")} for g, ts in groups.items()}
        print_kinds(report)
        cost = locate_cost(all_targets, cpu_totals, cpu_docs)
        print_cost(cost)
        if args.show_failures != "none":
            want_held = args.show_failures == "held"
            for t in all_targets:
                own = f"{t.file_kind}/{t.doc}" in own_docs
                if (held_back(t.doc) and not own) != want_held or t.result["verdict"] in ("exact", "refused"):
                    continue
                print(f"- {t.result['verdict']} {t.file_kind}:{t.kind} {t.doc} (at {t.where}): evidence {t.evidence[:150]!r}\n    got {t.result.get('quote', '')[:200]!r}")
        if problems:
            print(f"{len(problems)} documents the preview could not show: " + ", ".join(f"{d} ({m[:60]})" for d, m in list(problems.items())[:8]))
        if not args.no_json:
            RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
            RESULTS_FILE.write_text(json.dumps({
                "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "command": "bench/locate_accuracy.py " + " ".join(argv or sys.argv[1:]),
                "files": dict(Counter(n.split("/", 1)[0] for n in names)),
                "held_back_files": dict(Counter(n.split("/", 1)[0] for n in names if held_back(n.split("/", 1)[1]))),
                "targets": len(all_targets), "preview_problems": problems,
                "loadavg_start": loadavg_start, "loadavg_end": os.getloadavg(), "nproc": os.cpu_count(),
                "report": report, "locate_cost": cost,
            }, indent=1, ensure_ascii=False) + "\n")
            print(f"written {RESULTS_FILE.relative_to(REPO_DIR)}")
        return 0
    finally:
        if web is not None:
            web.stop()
        shutil.rmtree(tmp, ignore_errors=True)



# --- end to end: the real embedded LightRAG ----------------------------------------

E2E_PORTS = (8200, 8201, 8202)  # LightRAG, model endpoint, web app (loopback only); --port-base moves them
E2E_KINDS = ["pdf", "pptx", "xlsx", "csv", "html", "epub", "odt", "rtf", "markdown", "text", "code", "docx"]
SUFFIX_KIND = {".pdf": "pdf", ".pptx": "pptx", ".xlsx": "xlsx", ".csv": "csv", ".html": "html", ".htm": "html",
               ".epub": "epub", ".odt": "odt", ".rtf": "rtf", ".md": "markdown", ".txt": "text", ".py": "code",
               ".sh": "code", ".docx": "docx"}  # fmt: skip


# A list label at the start of an item in LightRAG's text ("7.", "a)", "•"):
# LightRAG numbers lists its own way (it continues a list Word restarts), and
# the marks compared with it leave the preview's own labels out.
LIST_LABEL = re.compile(r"(?:(?<=^)|(?<=\s))(?:\d{1,3}(?:\.\d{1,3})*[.)、]|\(\d{1,3}\)|[a-zA-Z][.)]|[•·▪◦‣○●■□*-])(?=\s)")
# Where a sentence ends (Latin and CJK punctuation), for the evidence sentence of a query.
SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|(?<=[。！？；])|\n+")


def share_inside(marked: str, chunk_text: str, piece: int = 10) -> float:
    """The share of the marked words' pieces that are in the chunk's text.
    Pieces, not the whole: the preview shows a Markdown link's text where the
    chunk holds its URL too, a merged table cell once where LightRAG's JSON
    repeats it, a list label LightRAG leaves out."""
    # Both sides: a text file's "3." is its own text, in the marks and the chunk alike.
    marks, chunk = skel(LIST_LABEL.sub(" ", marked)), skel(LIST_LABEL.sub(" ", chunk_text))
    pieces = [marks[i : i + piece] for i in range(0, max(1, len(marks) - piece + 1), piece)]
    return sum(p in chunk for p in pieces) / len(pieces) if marks else 0.0


def evidence_sentence(text: str, start: int, end: int) -> str:
    """The sentence(s) of ``text`` holding the characters ``start``..``end``."""
    cuts = [0] + [m.end() for m in SENTENCE_END.finditer(text)] + [len(text)]
    first = max(c for c in cuts if c <= start)
    last = min((c for c in cuts if c >= end), default=len(text))
    return text[first:last].strip()


# --- the mixed library: every kind, real text nobody here wrote ---------------------


def _zip_text_chars(path: Path, prefix: str, suffixes: tuple[str, ...] = (".xml",)) -> int:
    """Letters in a package's XML parts under ``prefix`` (how much text a deck or workbook holds)."""
    try:
        with zipfile.ZipFile(path) as z:
            return sum(len(skel(" ".join(etree.fromstring(z.read(n)).itertext()))) for n in z.namelist()
                       if n.startswith(prefix) and n.endswith(suffixes))
    except Exception:  # a deliberately odd test file: not picked
        return 0


def _pdf_text_chars(path: Path) -> int:
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(str(path))
    except Exception:
        return 0
    try:
        return sum(len(skel(pdf[i].get_textpage().get_text_range())) for i in range(len(pdf)))
    finally:
        pdf.close()


# Letters a file of the mixed library may hold at most: ingest without an LLM
# still takes a few seconds a chunk on a loaded machine (a 250-chunk book: 20 min).
MAX_LETTERS = 60_000


def _richest(files: list[Path], measure, n: int, max_bytes: int = 400_000) -> list[Path]:
    """The ``n`` files with the most text (at most ``max_bytes`` and ``MAX_LETTERS`` each: ingest on a loaded machine)."""
    scored = [(score, f.name, f) for f in files if f.stat().st_size <= max_bytes and (score := measure(f)) <= MAX_LETTERS]
    seen, picked = set(), []
    for score, _, f in sorted(scored, reverse=True):
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        if score > 200 and digest not in seen:  # the corpus holds a few files twice under two names
            seen.add(digest)
            picked.append(f)
    return picked[:n]


def _rtf(markdown: str) -> str:
    """A handbook section as RTF (paragraphs; every non-ASCII character as \\uN?)."""
    def escaped(line: str) -> str:
        out = []
        for ch in line:
            if ch in "\\{}":
                out.append("\\" + ch)
            elif ord(ch) > 127:
                code = ord(ch)
                out.append(f"\\u{code if code < 32768 else code - 65536}?")
            else:
                out.append(ch)
        return "".join(out)

    paragraphs = [" ".join(p.lstrip("#-` ").split()) for p in markdown.split("\n\n") if p.strip() and not p.startswith("```")]
    return "{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Times;}}\n" + "".join(f"{{\\pard {escaped(p)}\\par}}\n" for p in paragraphs if p) + "}\n"


def build_mixed_library(dest: Path, corpus_root: Path, per_kind: int) -> dict[str, list[str]]:
    """Real files of every kind in ``dest``: corpus files (PDF, PPTX, XLSX,
    EPUB, ODT, DOCX), the Debian handbook's HTML and its text converted by
    ``bench/question_library.py`` (Markdown, text; RTF and CSV written here
    from real text and a real workbook), and real code (Python's standard
    library). Returns the file names by kind."""
    import question_library  # bench/question_library.py, beside this file

    dest.mkdir(parents=True, exist_ok=True)
    picked: dict[str, list[Path]] = {}
    picked["pdf"] = _richest(sorted((corpus_root / "pdf").glob("*.pdf")), _pdf_text_chars, per_kind)
    picked["pptx"] = _richest(sorted((corpus_root / "pptx").glob("*.pptx")), lambda f: _zip_text_chars(f, "ppt/slides/"), per_kind)
    picked["xlsx"] = _richest(sorted((corpus_root / "xlsx").glob("*.xlsx")), lambda f: _zip_text_chars(f, "xl/"), per_kind)
    picked["epub"] = _richest(sorted((corpus_root / "epub").glob("*.epub")), lambda f: _zip_text_chars(f, "", (".xhtml", ".html")), per_kind, 250_000)
    picked["odt"] = _richest(sorted((corpus_root / "odt").glob("*.odt")), lambda f: _zip_text_chars(f, "content"), per_kind)
    picked["docx"] = _richest(sorted((corpus_root / "docx").glob("*.docx")), lambda f: _zip_text_chars(f, "word/document"), per_kind, 200_000)
    names: dict[str, list[str]] = defaultdict(list)
    for kind, files in picked.items():
        for f in files:
            shutil.copy(f, dest / f.name)
            names[kind].append(f.name)
    html = question_library.fetch(Path(tempfile.gettempdir()) / "mnote-question-library")
    sections = [("en-US", n) for n in question_library.SECTIONS["en-US"]] + [("zh-CN", n) for n in question_library.SECTIONS["zh-CN"]]
    # Disjoint sections per kind, English and Chinese alike.
    rng = random.Random("mixed-library")
    rng.shuffle(sections)
    for kind in ("html", "markdown", "text", "rtf"):
        for lang, section in [sections.pop() for _ in range(per_kind)]:
            source = html / lang / f"{section}.html"
            stem = f"{section.removeprefix('sect.')}-{lang}"
            if kind == "html":
                target, text = dest / f"{stem}.html", source.read_text(encoding="utf-8")
            else:
                markdown = question_library.section_markdown(source)
                suffix = {"markdown": ".md", "text": ".txt", "rtf": ".rtf"}[kind]
                target, text = dest / f"{stem}{suffix}", (_rtf(markdown) if kind == "rtf" else markdown)
            target.write_text(text, encoding="utf-8")
            names[kind].append(target.name)
    # CSV: the rows of real workbooks' first sheets, as a team exports them.
    import csv

    import openpyxl

    for f in _richest(sorted((corpus_root / "xlsx").glob("*.xlsx")), lambda f: _zip_text_chars(f, "xl/"), 2 * per_kind)[per_kind:]:
        try:
            sheets = openpyxl.load_workbook(f, read_only=True, data_only=True).worksheets
            # The sheet with the most rows of text, as exported: no blank screens of commas.
            rows = max(([["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)] for sheet in sheets),
                       key=lambda rows: sum(any(cell.strip() for cell in row) for row in rows), default=[])
            rows = [row for row in rows if any(cell.strip() for cell in row)]
        except Exception:
            continue
        if not rows:
            continue
        target = dest / f"{f.stem}.csv"
        with open(target, "w", newline="", encoding="utf-8") as out:
            csv.writer(out).writerows(rows)
        names["csv"].append(target.name)
    # Code: Python's own standard library, a few modules with docstrings.
    import textwrap, shlex, fnmatch  # noqa: E401

    for module in (textwrap, shlex, fnmatch)[:per_kind]:
        shutil.copy(module.__file__, dest / Path(module.__file__).name)
        names["code"].append(Path(module.__file__).name)
    return dict(names)


# What the e2e parent page asks the preview (as LOCATE, plus what a PDF's
# match says: its text and pages; a PDF marks with rectangles, not <mark>).
E2E_LOCATE = """async (items) => {
  const frame = document.getElementById("bench-frame");
  const d = frame.contentDocument;
  const out = [];
  for (const [i, item] of items.entries()) {
    const t0 = performance.now();
    const located = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ status: "timeout" }), 30000);
      window.addEventListener("message", function onLocated(e) {
        if (e.data && e.data.type === "mnote:located" && e.data.requestId === `e${i}`) {
          clearTimeout(timer);
          window.removeEventListener("message", onLocated);
          resolve(e.data);
        }
      });
      frame.contentWindow.postMessage({ type: "mnote:locate", requestId: `e${i}`, locator: item.locator }, window.location.origin);
    });
    const own = Array.from(d.querySelectorAll("mark.mnote-hit")).filter((m) => !m.closest(".docx-label, .docx-note-label, .docx-image-placeholder, .docx-hf-label")).map((m) => m.textContent).join("");
    out.push({ status: located.status, error: located.error || "", own, text: located.text || "", pages: located.pages || [],
               rects: d.querySelectorAll(".mnote-rect").length, ms: performance.now() - t0 });
  }
  return out;
}"""


def _pdf_pages_holding(path: Path, words: str) -> set[int]:
    """The pages (1-based) whose pdfium text holds ``words`` (skeletons): the truth for a PDF's highlight."""
    import pypdfium2

    wanted = skel(words)
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        return {i + 1 for i in range(len(pdf)) if wanted and wanted in skel(pdf[i].get_textpage().get_text_range())}
    finally:
        pdf.close()


def _query_of(text: str, rng: random.Random) -> tuple[str, int, int] | None:
    """Six words (or ten CJK characters) of a chunk's text, and where they are in it."""
    if sum(is_cjk(c) for c in text) > len(text) / 3:
        start = rng.randrange(0, max(1, len(text) - 12))
        query = text[start : start + 10].strip()
        return (query, start, start + 10) if len(skel(query)) >= 6 else None
    words = list(re.finditer(r"\S+", text))
    if len(words) < 8:
        return None
    first = rng.randrange(0, len(words) - 6)
    start, end = words[first].start(), words[first + 5].end()
    query = text[start:end]
    return (query, start, end) if len(skel(query)) >= 16 else None


def run_e2e(args) -> dict:
    """Index a mixed library of every kind in the real embedded LightRAG,
    search with words taken from its own chunks, and open the citation of
    the chunk the words came from in the preview through the parent-frame
    protocol. Per kind: the highlight must lie inside the cited chunk's text
    and on the sentence holding the query's words; a card labelled "file
    only" whose preview marks the words is counted (the badge would lie)."""
    tmp = Path(tempfile.mkdtemp(prefix="mnote-locate-e2e-"))
    stack = web = None
    try:
        env, data_dir, base_dir = in_process_app_in(tmp, "e2e", **NO_RENDER_BUDGET)
        from mnote.stack.processes import web_process
        from stack_harness import new_stack  # bench/stack_harness.py, beside this file

        ports = tuple(args.port_base + i for i in range(3)) if args.port_base else E2E_PORTS
        stack = new_stack(data_dir / "stack", lightrag_port=ports[0], model_port=ports[1])
        config = stack.config
        if args.tiktoken_cache and not (config.data_dir / "tiktoken").is_dir():
            shutil.copytree(args.tiktoken_cache, config.data_dir / "tiktoken")
        # A shared 2-core machine: fewer, smaller and more patient embedding
        # calls, so ingest does not fail on LightRAG's 60 s worker timeout.
        for name, value in (("EMBEDDING_FUNC_MAX_ASYNC", "1"), ("EMBEDDING_BATCH_NUM", "4"), ("EMBEDDING_TIMEOUT", "150")):
            os.environ.setdefault(name, value)
        names = build_mixed_library(base_dir / "e2e", args.corpus.parent, args.e2e_files)
        print(f"e2e: mixed library: {sum(map(len, names.values()))} files, " + ", ".join(f"{k} {len(v)}" for k, v in sorted(names.items())), flush=True)
        print("e2e: starting the embedded LightRAG …", flush=True)
        stack.start()
        del os.environ["MNOTE_LIGHTRAG_URL"]
        env.pop("MNOTE_LIGHTRAG_URL")
        env["MNOTE_LIGHTRAG_ENV_FILE"] = os.environ["MNOTE_LIGHTRAG_ENV_FILE"] = str(config.env_file)
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        from mnote.citations.sidecar import load_chunk_store
        from mnote.library.models import IndexedRoot, Source
        from mnote.library.place_indexes import write_place_indexes
        from mnote.library.sync import sync_root
        from mnote.library.worker import wait_until_settled
        from mnote.lightrag import LightRAGError
        from mnote.lightrag.provider import lightrag_client
        from mnote.search.answers import full_library_search
        from mnote.text import clean_display_text

        call_command("migrate", verbosity=0, interactive=False)
        user = get_user_model().objects.create_user(USERNAME, password=PASSWORD)
        root = IndexedRoot.objects.create(name="E2E", path="e2e")
        sync_root(root)
        t0 = time.monotonic()
        with lightrag_client() as client:
            settled = wait_until_settled(client, timeout=args.e2e_timeout, interval=1.0)
        statuses = Counter(root.sources.values_list("status", flat=True))
        print(f"e2e: ingest {'settled' if settled else 'NOT settled'} in {time.monotonic() - t0:.0f} s: {dict(statuses)}", flush=True)
        for source in Source.objects.exclude(status="indexed"):
            print(f"  not indexed: {source.relative_path}: {source.last_error[:150]}", flush=True)
        # The place indexes the worker writes a few a round: any left now.
        while write_place_indexes(max_files=50, max_seconds=120):
            pass
        place_cost = place_index_cost(Source.objects.filter(status="indexed").select_related("root"))
        print(f"e2e: a place index's cost per file (read again here; CPU of the reader's child and this process): {place_cost}", flush=True)
        sources = {s.pk: s for s in Source.objects.filter(status="indexed").select_related("root")}
        kind_of_source = {pk: SUFFIX_KIND.get(Path(s.relative_path).suffix.lower(), "other") for pk, s in sources.items()}
        doc_kind = {s.lightrag_doc_id: kind_of_source[pk] for pk, s in sources.items()}
        store = load_chunk_store(config.working_dir) or {}
        rng = random.Random(args.seed)
        by_kind_chunks: dict[str, list] = defaultdict(list)
        for chunk_id, stored in sorted(store.items()):
            kind = doc_kind.get(chunk_id.rsplit("-chunk-", 1)[0])
            if kind and len(clean_display_text(stored.content)) > 80:
                by_kind_chunks[kind].append((chunk_id, stored))
        targets, query_errors, file_only_opened = [], [], []
        for kind in E2E_KINDS:
            chunks = by_kind_chunks.get(kind, [])
            rng.shuffle(chunks)
            for chunk_id, stored in chunks[: args.e2e_queries]:
                text = clean_display_text(stored.content)
                picked = _query_of(text, rng)
                if picked is None:
                    continue
                query, start, end = picked
                try:
                    mapped = full_library_search(user, query, mode="naive")
                except LightRAGError as e:  # a busy machine: count it, go on
                    query_errors.append(str(e)[:120])
                    continue
                cited = next((c for c in mapped.citations if c.chunk_id == chunk_id), None)
                targets.append({"kind": kind, "query": query, "sentence": evidence_sentence(text, start, end), "chunk": text,
                                "citation": cited, "cited_anywhere": bool(mapped.citations)})
                # Every "file only" card of the search is opened too: its preview must not mark the words.
                file_only_opened += [c for c in mapped.citations if c.precision == "file" and c is not cited]
        from django.db import connections

        connections.close_all()
        web = web_process(config, "127.0.0.1", ports[2], env)
        web.start()
        web.wait_healthy(60)
        base_url = f"http://127.0.0.1:{ports[2]}"
        from playwright.sync_api import sync_playwright

        opened: dict[int, list] = defaultdict(list)  # source id → (citation, target or None)
        for t in targets:
            if t["citation"] is not None:
                opened[t["citation"].source_id].append((t["citation"], t))
        for c in file_only_opened:
            opened[c.source_id].append((c, None))
        per_kind: dict[str, Counter] = {k: Counter() for k in E2E_KINDS}
        precisions: dict[str, Counter] = {k: Counter() for k in E2E_KINDS}
        examples: dict[str, list] = defaultdict(list)
        ms = []
        for t in targets:
            per_kind[t["kind"]]["queries"] += 1
            if t["citation"] is None:
                per_kind[t["kind"]]["chunk_not_cited"] += 1
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            try:
                page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
                log_in_page(page, base_url)
                for source_id, items in opened.items():
                    page.goto(f"{base_url}/")
                    loaded = page.evaluate(LOAD, f"/preview/{source_id}/")
                    answers = page.evaluate(E2E_LOCATE, [{"locator": c.locator} for c, _ in items]) if not loaded.get("problem") else []
                    kind = kind_of_source.get(source_id, "other")
                    for (c, t), r in zip(items, answers or [{"status": "problem", "own": "", "text": "", "pages": [], "ms": 0}] * len(items)):
                        ms.append(r["ms"])
                        marked = r["status"] in ("exact", "fuzzy")
                        counts = per_kind.setdefault(kind, Counter())
                        if c.precision == "file":
                            counts["file_only_cards_opened"] += 1
                        if c.precision == "file" and marked:
                            counts["file_only_but_marked"] += 1
                            examples[kind].append({"file_only_but_marked": c.file_name, "query": c.search_query})
                        if t is None:
                            continue
                        precisions[kind][c.precision] += 1
                        counts["opened"] += 1
                        if not marked:
                            counts["not_found"] += 1
                            examples[kind].append({"not_found": c.file_name, "query": t["query"], "status": r["status"]})
                            continue
                        counts["found"] += 1
                        if kind == "pdf":
                            # Rectangles, not marks: the matched text (its first 200 characters) and its pages.
                            words = r["text"]
                            truth = _pdf_pages_holding(base_dir / "e2e" / sources[source_id].relative_path, t["query"])
                            on_sentence = skel(t["query"]) in skel(words) or bool(truth & set(r["pages"] or []))
                        else:
                            words = r["own"]
                            on_sentence = skel(t["query"]) in skel(words)
                        inside = share_inside(words, t["chunk"]) >= 0.85 if skel(words) else False
                        counts["inside_chunk" if inside else "outside_chunk"] += 1
                        counts["on_evidence_sentence" if on_sentence else "off_evidence_sentence"] += 1
                        if skel(t["sentence"]) and skel(t["sentence"]) in skel(words):
                            counts["whole_sentence_marked"] += 1
                        if not (inside and on_sentence):
                            examples[kind].append({"file": c.file_name, "query": t["query"], "inside": inside, "on_sentence": on_sentence,
                                                   "marked": words[:160], "sentence": t["sentence"][:160]})
            finally:
                browser.close()
        by_kind = {}
        for kind in E2E_KINDS:
            counts = per_kind.get(kind, Counter())
            found = counts["found"]
            by_kind[kind] = {**dict(counts), "precision": dict(precisions[kind]),
                             "on_sentence_pct": round(100 * counts["on_evidence_sentence"] / found, 1) if found else None,
                             "examples": examples[kind][:4]}
        report = {"files": statuses.total(), "statuses": dict(statuses), "files_by_kind": {k: len(v) for k, v in names.items()},
                  "targets": len(targets), "query_errors": len(query_errors), "place_index_cost": place_cost,
                  "outside_chunk": sum(c["outside_chunk"] for c in per_kind.values()),
                  "file_only_but_marked": sum(c["file_only_but_marked"] for c in per_kind.values()),
                  "median_ms": round(statistics.median(ms), 1) if ms else None, "by_kind": by_kind}
        print_e2e(report)
        return report
    finally:
        if web is not None:
            web.stop()
        if stack is not None:
            stack.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def place_index_cost(sources) -> dict:
    """What writing a file's place index costs, per kind: each indexed file's
    index built again (not written), timed in wall and CPU seconds (this
    process and the reader's child processes it waited for)."""
    from mnote.kinds import kind_of
    from mnote.library.source_files import open_source_file, source_real_path
    from mnote.preview.place_index import build_place_index, has_places

    per_kind: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for source in sources:
        kind = kind_of(source.file_name)
        if not has_places(kind):
            continue
        cpu0, wall0 = os.times(), time.monotonic()
        try:
            with open_source_file(source) as handle:
                size = len(json.dumps(build_place_index(kind, handle, source_real_path(source))))
        except Exception:  # a refusal: its cost is counted all the same
            size = 0
        cpu1 = os.times()
        per_kind[kind.name].append((time.monotonic() - wall0, sum(cpu1[:4]) - sum(cpu0[:4]), size))
    return {"loadavg": [round(v, 1) for v in os.getloadavg()],
            **{kind: {"files": len(rows), "median_wall_s": round(statistics.median(r[0] for r in rows), 2),
                      "median_cpu_s": round(statistics.median(r[1] for r in rows), 2),
                      "median_kb": round(statistics.median(r[2] for r in rows) / 1024, 1)} for kind, rows in sorted(per_kind.items())}}


def print_e2e(report: dict) -> None:
    columns = ["queries", "chunk_not_cited", "opened", "found", "not_found", "inside_chunk", "outside_chunk",
               "on_evidence_sentence", "on_sentence_pct", "whole_sentence_marked", "file_only_cards_opened", "file_only_but_marked"]
    print(f"{'kind':10}" + "".join(f"{c[:13]:>14}" for c in columns) + "  precision")
    for kind, row in report["by_kind"].items():
        print(f"{kind:10}" + "".join(f"{str(row.get(c, 0) if row.get(c) is not None else '-'):>14}" for c in columns) + f"  {row['precision']}")
    print(f"e2e: {report['targets']} targets, {report['outside_chunk']} highlights outside the cited chunk, "
          f"{report['file_only_but_marked']} 'file only' cards whose preview marks words; place indexes: {report['place_index_cost']}")
    for kind, row in report["by_kind"].items():
        for example in row["examples"]:
            print(f"  {kind}: {example}")


def locate_cost(targets: list[Target], cpu: Counter, per_doc: list[tuple[float, float]]) -> dict:
    """Where a locate's time goes: wall time split into finding the anchor
    (by the page itself, or the server) and drawing it, the server's own time
    for an anchor request, and CPU time per locate (the browser's renderer
    thread and the web app's processes), which a loaded machine distorts less."""
    timed = [t.result for t in targets if t.result.get("timing")]

    def median(values) -> float | None:
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 1) if values else None

    out = {"locates": len(timed), "median_ms": median(r["ms"] for r in timed),
           "browser_cpu_ms_per_locate": round(1000 * cpu["browser_s"] / cpu["locates"], 1) if cpu["locates"] else None,
           "server_cpu_ms_per_locate": round(1000 * cpu["server_s"] / cpu["locates"], 1) if cpu["locates"] else None,
           # The mean is ruled by a few big documents; the median document's share:
           "browser_cpu_ms_per_locate_median_doc": median(b for b, _ in per_doc),
           "server_cpu_ms_per_locate_median_doc": median(w for _, w in per_doc), "via": {}}
    for via in ("given", "page", "server"):
        rs = [r for r in timed if r["timing"]["via"] == via]
        if rs:
            out["via"][via] = {"locates": len(rs), "median_ms": median(r["ms"] for r in rs),
                               "anchor_ms": median(r["timing"]["anchorMs"] for r in rs), "draw_ms": median(r["timing"]["drawMs"] for r in rs),
                               "request_ms": median(r["timing"]["requestMs"] for r in rs), "server_ms": median(r["timing"]["serverMs"] for r in rs),
                               "server_cpu_ms": median(r["timing"]["serverCpuMs"] for r in rs)}
    return out


def print_cost(cost: dict) -> None:
    print(f"locate cost: {cost['locates']} locates, median {cost['median_ms']} ms wall; CPU per locate (all / median document): "
          f"browser {cost['browser_cpu_ms_per_locate']} / {cost['browser_cpu_ms_per_locate_median_doc']} ms, "
          f"web app {cost['server_cpu_ms_per_locate']} / {cost['server_cpu_ms_per_locate_median_doc']} ms")
    for via, c in cost["via"].items():
        print(f"  anchored by {via:6}: {c['locates']:4} locates, median {c['median_ms']} ms (anchor {c['anchor_ms']}, draw {c['draw_ms']}, "
              f"request {c['request_ms']}, server {c['server_ms']} of which CPU {c['server_cpu_ms']})")


KIND_COLUMNS = [("targets", "present_targets"), ("top-1 exact", "top1_exact"), ("%", "top1_exact_pct"), ("landed", "landed"),
                ("wrong", "wrong_jumps"), ("not found", "honest_not_found"), ("absent", "absent"), ("refused", "absent_refused")]


def print_kinds(report: dict) -> None:
    """One row per kind and part: ours, and the naive baseline beside it."""
    print(f"{'kind':9}{'part':17}" + "".join(f"{h:>12}" for h, _ in KIND_COLUMNS) + f"{'baseline %':>12}{'base wrong':>12}")
    for kind, parts in report.items():
        for part, sides in parts.items():
            ours, base = sides["mnote"], sides["naive_baseline"]
            print(f"{kind:9}{part:17}" + "".join(f"{str(ours[c]):>12}" for _, c in KIND_COLUMNS)
                  + f"{str(base['top1_exact_pct']):>12}{str(base['wrong_jumps']):>12}")
    for kind, parts in report.items():
        for part, sides in parts.items():
            print(f"  {kind} {part} by target: {sides['mnote']['by_kind']}")


def print_report(report: dict) -> None:
    columns = ["present_targets", "top1_exact_pct", "top1_exact", "landed", "wrong_jumps", "landed_not_exact", "honest_not_found",
               "absent", "absent_refused", "decoys", "decoys_right", "median_ms", "p95_ms"]
    print(f"{'group / locator':34}" + "".join(f"{c[:14]:>15}" for c in columns))
    for group, sides in report.items():
        for side, s in sides.items():
            print(f"{group + ' / ' + side:34}" + "".join(f"{str(s[c]):>15}" for c in columns))
    for group, sides in report.items():
        print(f"{group} by kind (mnote): {sides['mnote']['by_kind']}")
        print(f"{group} by kind (baseline): {sides['naive_baseline']['by_kind']}")


if __name__ == "__main__":
    raise SystemExit(main())
