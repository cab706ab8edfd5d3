"""The re-anchoring bench's kinds whose edits are made to the file itself:
PDF, XLSX, CSV and ODT. Used by ``reanchor_bench.py`` (see its docstring).

A person edits these files and saves (or exports) them again; the text a
citation re-anchors in is what the preview reads from the new file. So each
edit here is applied to the document's own units — paragraphs (PDF, ODT) or
rows (XLSX, CSV) — the file is written again, and the new file is read by
the preview's own reader:

- PDF: the text layer of a real PDF (the PDF reader's page text, PDFium),
  cut into paragraphs; each version, the cited one too, is written as a PDF
  by ``tests/pdf_factory.py`` (Helvetica, lines wrapped at 90 characters,
  about 40 lines a page) and read back by the preview's PDF text reader. Both
  versions go through the same writer and reader, so what differs is the
  edit and what it does to the layout: an edited paragraph wraps again (line
  breaks move inside and around the quote) and the text after it moves
  across page breaks — as when a person edits the source and exports again.
  Not kept: the real file's columns, fonts and hyphenation (the writer has
  one column, one font, and Latin-1 letters: the rest become "?" in both
  versions).
- ODT: sections of Debian's handbook (English and Chinese HTML, the text
  ``question_library.py`` fetches), written as ODT by odfpy (headings,
  paragraphs, list items, each line of an example) and rendered by the
  preview's ODT renderer.
- XLSX: the real workbook changed by openpyxl (rows inserted, moved with
  their cells' formats by ``move_range``, cells' words changed, a row's
  cells emptied, a row deleted), saved, and rendered by the preview's sheet
  renderer (its first page: a row moved past it is not in the text).
- CSV: a real workbook's sheet written as CSV (each cell's value as text),
  its rows edited as lists, rendered by the preview's CSV renderer.

The cited passages are chosen from the bench's own reading of the file,
never from the code under test: sentences of the paragraphs (PDF, ODT) or
one row's text cells (XLSX, CSV: the rendered row whose text holds them all
in order is the quote), kept when they occur once. The true place in the
new text is found by the bench: the edited passage as the bench made it,
looked for with runs of white space made one; an edit whose true place
cannot be told (the passage moved past the sheet's first page, or it
occurs twice after the edit) is counted under ``untold`` and not scored.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
import subprocess
import tempfile
import textwrap
from array import array
from pathlib import Path

from reanchor_bench import _WORD, blocks_of, edit_blocks, rendered_text, sentences

TEXLIVE_PACKAGE = "texlive-latex-base-doc"  # LaTeX's manuals: real PDFs nobody here wrote
PDF_LINE = 90
PDF_PAGE_LINES = 40
PDF_PAGES_KEPT = 12  # of a long manual, its first pages (each edit writes and reads the file again)
MAX_SHEET_CELLS = 200_000
SHEET_LONG = 20  # a row is citable with two text cells, or one this long
_CJK_SENTENCE = re.compile(r"(?<=[。！？])")
_SPACES = re.compile(r"\s+")
_TOKEN = re.compile(r"[^\W_]+")


# --- where a passage is, white space aside ---------------------------------------------


class Loose:
    """A text with runs of white space made one space, and the way back. (The
    bench finds true places with its own code, not with the re-anchoring's.)"""

    def __init__(self, text: str):
        out, origin, space = [], array("i"), False
        for i, ch in enumerate(text):
            if ch.isspace():
                if not space and out:
                    out.append(" ")
                    origin.append(i)
                space = True
                continue
            space = False
            out.append(ch)
            origin.append(i)
        self.text, self.origin, self.raw = "".join(out), origin, text

    def spans(self, needle: str, limit: int = 2) -> list[tuple[int, int]]:
        """The raw spans where ``needle`` (white space made one) stands, at most ``limit``."""
        needle = _SPACES.sub(" ", needle).strip()
        found, i = [], self.text.find(needle) if needle else -1
        while i >= 0 and len(found) < limit:
            end = i + len(needle) - 1
            found.append((self.origin[i], self.origin[end] + 1))
            i = self.text.find(needle, i + 1)
        return found

    def once(self, needle: str) -> tuple[int, int] | None:
        spans = self.spans(needle)
        return spans[0] if len(spans) == 1 else None


# --- reading and writing each kind -------------------------------------------------------


def pdf_text(path: Path) -> str:
    """The text the preview's PDF reader finds: its pages, one after another."""
    from mnote.preview.pdf.child import _child_text

    return "\n".join(json.loads(_child_text(str(path)))["pages"])


def _latin(text: str) -> str:
    # The writer's font has WinAnsi letters only; the rest become "?" (as the writer would).
    return text.encode("cp1252", errors="replace").decode("cp1252")


def pdf_paragraphs(path: Path) -> list[str]:
    """A real PDF's text layer cut into paragraphs: lines joined until one
    ends a sentence well short of the page's measure (or is empty)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    paragraphs: list[str] = []
    try:
        for index in range(min(len(pdf), PDF_PAGES_KEPT)):
            lines = [line.strip() for line in pdf[index].get_textpage().get_text_range().splitlines()]
            measure = max((len(line) for line in lines), default=0)
            current = ""
            for line in lines:
                if not line:
                    if current:
                        paragraphs.append(current)
                    current = ""
                    continue
                if current.endswith("-") and line[:1].islower():
                    current = current[:-1] + line
                else:
                    current = f"{current} {line}".strip()
                if line[-1:] in ".!?:" and len(line) < 0.8 * measure:
                    paragraphs.append(current)
                    current = ""
            if current:
                paragraphs.append(current)
    finally:
        pdf.close()
    paragraphs = [_latin(" ".join(p.split())) for p in paragraphs]
    return [p for p in paragraphs if p]


def write_pdf(paragraphs: list[str], path: Path) -> None:
    from tests.pdf_factory import pdf_bytes

    lines: list[str] = []
    for paragraph in paragraphs:
        lines += textwrap.wrap(paragraph, PDF_LINE, break_long_words=True, break_on_hyphens=False) + [""]
    pages = [lines[i : i + PDF_PAGE_LINES] for i in range(0, len(lines), PDF_PAGE_LINES)] or [[""]]
    path.write_bytes(pdf_bytes(pages, font_size=9.0))


def handbook_sections(work: Path | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """(file name, [(style, text)]) of every handbook section the question
    library takes, English and Chinese: headings, paragraphs, list items and
    each line of an example, in order."""
    from question_library import SECTIONS, fetch, section_markdown

    html = fetch(work or Path(tempfile.gettempdir()) / "mnote-question-library")
    out = []
    for lang, names in SECTIONS.items():
        for name in names:
            units, code = [], False
            for line in section_markdown(html / lang / f"{name}.html").splitlines():
                if line.startswith("```"):
                    code = not code
                    continue
                line = line.strip()
                if not line or line.startswith("|"):
                    continue
                if code:
                    units.append(("code", line))
                elif line.startswith("#"):
                    units.append(("h", line.lstrip("#").strip()))
                else:
                    units.append(("p", line.removeprefix("- ")))
            out.append((f"{lang}-{name.removeprefix('sect.')}.odt", units))
    return out


def write_odt(units: list[tuple[str, str]], path: Path) -> None:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    doc = OpenDocumentText()
    for style, text in units:
        doc.text.addElement(H(outlinelevel=2, text=text) if style == "h" else P(text=text))
    doc.save(str(path))


def text_sentences(paragraphs: list[str]) -> list[str]:
    """Sentences a reader would cite: the bench's usual ones, and Chinese ones
    (cut after 。！？, 20-200 characters)."""
    out = sentences(paragraphs)
    for p in paragraphs:
        for s in _CJK_SENTENCE.split(p):
            s = s.strip()
            if 20 <= len(s) <= 200 and sum("\u4e00" <= ch <= "\u9fff" for ch in s) >= 12:
                out.append(s)
    return out


def fetch_texlive_pdfs(work: Path | None = None) -> list[Path]:
    """LaTeX's manuals from Debian (downloaded and unpacked once, nothing installed)."""
    work = work or Path(tempfile.gettempdir()) / "mnote-reanchor-texlive"
    unpacked = work / "x"
    if not unpacked.is_dir():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", TEXLIVE_PACKAGE], cwd=work, check=True, capture_output=True)
        deb = sorted(work.glob(f"{TEXLIVE_PACKAGE}_*.deb"))[-1]
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    return sorted(unpacked.rglob("*.pdf"))


# --- sheets ------------------------------------------------------------------------------


def _display(value) -> str:
    return "" if value is None else str(value)


def sheet_rows(path: Path) -> list[tuple[str, list[list]]]:
    """(sheet title, rows of values) of each worksheet of a workbook."""
    import openpyxl

    book = openpyxl.load_workbook(path)
    try:
        # A sheet whose stated size is a million rows (one of the corpus's) is left out: it is no one's table.
        return [(ws.title, [list(r) for r in ws.iter_rows(min_row=1, values_only=True)]) for ws in book.worksheets
                if ws.max_row * ws.max_column <= MAX_SHEET_CELLS]
    finally:
        book.close()


def citable_rows(rows: list[list]) -> list[int]:
    """Rows (0-based) a reader would cite: two text cells, or one long one."""
    out = []
    for i, row in enumerate(rows):
        texts = [v for v in row if isinstance(v, str) and _WORD.search(v)]
        if len(texts) >= 2 or any(len(t) >= SHEET_LONG for t in texts):
            out.append(i)
    return out


def row_quote(blocks: list[str], row: list) -> str | None:
    """The rendered block holding the row's text cells in order, when one does."""
    texts = [" ".join(v.split()) for v in row if isinstance(v, str) and v.strip()]

    def holds(block: str) -> bool:
        at = 0
        for t in texts:
            at = block.find(t, at)
            if at < 0:
                return False
            at += len(t)
        return True

    found = [b for b in blocks if holds(b)]
    return found[0] if len(found) == 1 else None


def _cell_word_change(row: list, quote: str, rng: random.Random, word: str, add: bool):
    """(column, new value) for one text cell of ``row`` with a word replaced
    (and, with ``add``, a word added after its first), or None."""
    choices = [j for j, v in enumerate(row)
               if isinstance(v, str) and _WORD.search(v) and quote.count(" ".join(v.split())) == 1]
    if not choices:
        return None
    j = rng.choice(choices)
    value = " ".join(row[j].split())
    words = list(_WORD.finditer(value))
    m = rng.choice(words)
    new = value[: m.start()] + word + value[m.end() :]
    if add:
        space = new.find(" ")
        new = new + " newly" if space < 0 else new[:space] + " newly" + new[space:]
    return j, value, new


def sheet_plan(case: str, rows: list[list], r: int, quote: str, filler: list, rng: random.Random):
    """The edit as operations on rows ((op, args…), 0-based rows as they
    stand when the operation runs) and the quote as it reads after it (None
    when deleted); None when the edit does not apply here."""
    n = len(rows)
    if case == "insert_above":
        return [("insert", rng.randint(0, r), filler)], quote
    if case == "move_paragraph":
        if n < 3:
            return None
        return [("move", r, rng.choice([i for i in range(n) if i != r]))], quote
    if case == "move_other":
        if r + 1 >= n:
            return None
        return [("move", rng.randint(r + 1, n - 1), rng.randint(0, r))], quote
    if case == "words_inside":
        change = _cell_word_change(rows[r], quote, rng, "revised", add=True)
        if change is None:
            return None
        j, old, new = change
        return [("set", r, j, new)], quote.replace(old, new)
    if case == "words_around":
        ops = []
        for k in (r - 1, r + 1):
            if 0 <= k < n:
                change = _cell_word_change(rows[k], " ".join(_display(v) for v in rows[k]), rng, "amended", add=False)
                if change is not None:
                    ops.append(("set", k, change[0], change[2]))
        return (ops, quote) if ops else None
    if case == "mixed":
        if n < 3:
            return None
        change = _cell_word_change(rows[r], quote, rng, "changed", add=False)
        if change is None:
            return None
        j, old, new = change
        at = rng.choice([i for i in range(n) if i != r])
        return [("set", r, j, new), ("move", r, at), ("insert", rng.randint(0, at), filler)], quote.replace(old, new)
    if case == "deleted":
        return [("clear", r)], None
    if case == "paragraph_gone":
        return [("delete", r)], None
    raise ValueError(case)


def apply_to_rows(rows: list[list], ops: list) -> list[list]:
    rows = [list(r) for r in rows]
    for op, *args in ops:
        if op == "insert":
            rows.insert(args[0], list(args[1]))
        elif op == "move":
            moved = rows.pop(args[0])
            rows.insert(args[1], moved)
        elif op == "set":
            rows[args[0]][args[1]] = args[2]
        elif op == "clear":
            rows[args[0]] = [None] * len(rows[args[0]])
        elif op == "delete":
            rows.pop(args[0])
    return rows


def apply_to_workbook(source: Path, title: str, ops: list, target: Path) -> None:
    """The real workbook changed by openpyxl as a person would: a row
    inserted, a row moved with its cells' formats, a cell's words changed, a
    row emptied or deleted; saved to ``target``."""
    import openpyxl
    from openpyxl.utils import get_column_letter

    book = openpyxl.load_workbook(source)
    ws = book[title]
    first = 1  # rows of the plan count from the sheet's row 1 (as sheet_rows reads them)
    last_col = get_column_letter(max(1, ws.max_column))
    for op, *args in ops:
        if op == "insert":
            at = first + args[0]
            ws.insert_rows(at)
            for j, value in enumerate(args[1]):
                ws.cell(at, j + 1, value)
        elif op == "move":
            src, dst = first + args[0], first + args[1]
            # Moved: a row opened where it goes, the row's cells (with their
            # formats) moved into it, its old row closed.
            at = dst if dst < src else dst + 1
            ws.insert_rows(at)
            if at <= src:
                src += 1
            ws.move_range(f"A{src}:{last_col}{src}", rows=at - src, translate=True)
            ws.delete_rows(src)
        elif op == "set":
            ws.cell(first + args[0], args[1] + 1).value = args[2]
        elif op == "clear":
            for cell in ws[first + args[0]]:
                cell.value = None
        elif op == "delete":
            ws.delete_rows(first + args[0])
    book.save(target)
    book.close()


def write_csv(rows: list[list], path: Path) -> None:
    out = io.StringIO()
    csv.writer(out).writerows([[_display(v) for v in row] for row in rows])
    path.write_text(out.getvalue(), encoding="utf-8")


# --- the cases, per kind -----------------------------------------------------------------


def rendered_blocks(path: Path) -> tuple[str, list[str]] | None:
    text_map = rendered_text(path)
    if text_map is None:
        return None
    return text_map.text, blocks_of(text_map)


def paragraph_documents(kind: str, corpus: Path, limit: int, rng: random.Random, fetch: bool):
    """(file name, units) of real text for PDF (paragraphs) or ODT ((style, text))."""
    if kind == "odt":
        docs = handbook_sections()
    else:
        paths = sorted((corpus / "pdf").glob("*.pdf")) + (fetch_texlive_pdfs() if fetch else [])
        docs = []
        for path in paths:
            try:
                paragraphs = pdf_paragraphs(path)
            except Exception:  # noqa: BLE001 (a PDF its reader refuses is not cited)
                continue
            letters = "".join(paragraphs)
            if len(letters) >= 400 and letters.count("?") < 0.02 * len(letters):
                docs.append((path.name, paragraphs))
    rng.shuffle(docs)
    return docs[:limit]


def paragraph_cases(kind: str, name: str, units: list, per_doc: int, fillers: list[str], cases: tuple,
                    rng: random.Random, seed: int, work: Path):
    """Yield (quote, old text, (start, end) in it, case, new text, true span or None or "untold")."""
    texts = [u[1] if isinstance(u, tuple) else u for u in units]
    style = [u[0] for u in units] if kind == "odt" else None

    def text_of(new_units, label: str) -> str:
        path = work / f"{hashlib.sha256((name + label).encode()).hexdigest()[:16]}.{kind}"
        if kind == "odt":
            write_odt(new_units, path)
            made = rendered_blocks(path)
            text = made[0] if made else ""
        else:
            write_pdf(new_units, path)
            text = pdf_text(path)
        path.unlink()
        return text

    old_text = text_of(units, "old")
    old_loose = Loose(old_text)
    picks = [s for s in dict.fromkeys(text_sentences([t for t, st in zip(texts, style or texts) if st != "code"]))
             if len(old_loose.spans(s)) == 1]
    for quote in rng.sample(picks, min(per_doc, len(picks))):
        located = [(i, t.find(quote)) for i, t in enumerate(texts) if quote in t]
        if len(located) != 1:
            continue
        index, inner = located[0]
        old_span = old_loose.once(quote)
        for case in cases:
            filler = rng.choice([f for f in fillers if f not in old_loose.text] or ["A paragraph added by a reviewer."])
            made = edit_blocks(case, texts, index, inner, quote, filler, random.Random(f"{seed}-{name}-{quote}-{case}"))
            if made is None:
                continue
            new_texts, place = made
            if style is not None:
                # Each paragraph keeps its style; an inserted one is a paragraph.
                kept = dict(zip(map(id, texts), style))
                new_units = [(kept.get(id(t), "p"), t) for t in new_texts]
            else:
                new_units = new_texts
            new_text = text_of(new_units, case + quote)
            truth = None
            if place is not None:
                b, at, length = place
                block_span = Loose(new_text).once(new_texts[b])
                if block_span is None:
                    truth = "untold"
                else:
                    inside = Loose(new_text[block_span[0] : block_span[1]]).once(new_texts[b][at : at + length])
                    truth = (block_span[0] + inside[0], block_span[0] + inside[1]) if inside else "untold"
            yield quote, old_text, old_span, case, new_text, truth


def sheet_documents(kind: str, corpus: Path, limit: int, rng: random.Random):
    """(file name, xlsx path, sheet title, rows) of real workbooks' sheets with citable rows."""
    docs = []
    for path in sorted((corpus / "xlsx").glob("*.xlsx")):
        try:
            sheets = sheet_rows(path)
        except Exception:  # noqa: BLE001 (a workbook openpyxl refuses is left out)
            continue
        for title, rows in sheets:
            if citable_rows(rows):
                name = path.name if kind == "xlsx" else f"{path.stem}.csv"
                docs.append((name, path, title, rows))
                break  # one sheet per workbook
    rng.shuffle(docs)
    return docs[:limit]


def sheet_cases(kind: str, name: str, source: Path, title: str, rows: list[list], per_doc: int, fillers: list[list],
                cases: tuple, rng: random.Random, seed: int, work: Path):
    """As ``paragraph_cases``, for a sheet's rows."""

    def text_of(ops, label: str) -> str | None:
        path = work / f"{hashlib.sha256((name + label).encode()).hexdigest()[:16]}.{kind}"
        try:
            if kind == "xlsx":
                apply_to_workbook(source, title, ops, path)
            else:
                write_csv(apply_to_rows(rows, ops), path)
            made = rendered_blocks(path)
        except Exception:  # noqa: BLE001 (openpyxl cannot save every real workbook)
            return None
        finally:
            path.unlink(missing_ok=True)
        return made

    old = text_of([], "old")
    if old is None:
        return
    old_text, blocks = old
    old_loose = Loose(old_text)
    picks = []
    for r in citable_rows(rows):
        quote = row_quote(blocks, rows[r])
        # As long as the text kinds' sentences (five words): a shorter row with
        # one word changed and one added is another row, for a reader too.
        if quote and len(_TOKEN.findall(quote)) >= 5 and len(old_loose.spans(quote)) == 1:
            picks.append((r, quote))
    for r, quote in rng.sample(picks, min(per_doc, len(picks))):
        old_span = old_loose.once(quote)
        for case in cases:
            filler = rng.choice([f for f in fillers if f is not rows[r]] or [["Added by a reviewer", "note"]])
            plan = sheet_plan(case, rows, r, quote, filler, random.Random(f"{seed}-{name}-{r}-{case}"))
            if plan is None:
                continue
            ops, new_quote = plan
            made = text_of(ops, f"{case}-{r}")
            if made is None:
                continue
            new_text = made[0]
            truth = None if new_quote is None else (Loose(new_text).once(new_quote) or "untold")
            yield quote, old_text, old_span, case, new_text, truth


def file_kind_cases(kind: str, corpus: Path, docs_per_kind: int, per_doc: int, cases: tuple, rng: random.Random,
                    seed: int, fetch: bool):
    """Yield (file name, quote, old text, old span, case, new text, truth) for one kind."""
    with tempfile.TemporaryDirectory(prefix="reanchor-") as tmp:
        work = Path(tmp)
        if kind in ("pdf", "odt"):
            docs = paragraph_documents(kind, corpus, docs_per_kind, rng, fetch)
            texts = [[u[1] if isinstance(u, tuple) else u for u in units] for _, units in docs]
            fillers = [s for paragraphs in texts for s in text_sentences(paragraphs)[:3]]
            for name, units in docs:
                for made in paragraph_cases(kind, name, units, per_doc, fillers, cases, rng, seed, work):
                    yield (name, *made)
        else:
            docs = sheet_documents(kind, corpus, docs_per_kind, rng)
            fillers = [rows[i] for _, _, _, rows in docs for i in citable_rows(rows)[:2]]
            for name, source, title, rows in docs:
                for made in sheet_cases(kind, name, source, title, rows, per_doc, fillers, cases, rng, seed, work):
                    yield (name, *made)


