"""Spreadsheets (XLSX) and CSV files as tables, one per sheet, with a tab bar.

Every row is a block (``<tr data-block-index data-sheet data-range="A7:F7">``)
so the locator lands on a cell range. Big sheets are paged: a page holds
``PAGE_ROWS`` rows and the rest of the sheet is streamed past, never held
(an XLSX sheet is parsed incrementally, a CSV read row by row).

An XLSX is opened through the same guarded ZIP package as a DOCX (bounded
reads, no DTD or entities, a time budget).
"""

from __future__ import annotations

import csv
import io
import posixpath
import re
from datetime import datetime

from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from lxml import etree
from lxml import html as lxml_html

from .docx.limits import DEFAULT_LIMITS, Deadline, PreviewRejected
from .docx.safe_package import ZipPackage
from .sheet_formats import EPOCH, EPOCH_1904, number_styles, number_text
from .text_render import read_text

PAGE_ROWS = 500
# Excel 2003's width was 256 columns; wider data is rare but real (a sheet
# whose figures sit in GW:GY). Past this, the row says how many cells it hides.
MAX_COLUMNS = 1_024
MAX_MERGES = 20_000
MAX_CELL_CHARS = 2_000
MAX_SHARED_STRINGS = 1_000_000
MAX_SHEETS = 200
MAX_CSV_BYTES = 50 * 1024 * 1024

S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
STRICT_R = "http://purl.oclc.org/ooxml/officeDocument/relationships"
_CELL_REF = re.compile(r"([A-Z]{1,3})(\d+)$")


class XlsxPackage(ZipPackage):
    label = "Excel workbook"
    suffix = ".xlsx"
    writer = "Excel"
    streamed_parts = ("xl/worksheets/", "xl/sharedstrings.xml")


def column_name(index: int) -> str:
    """0 → A, 25 → Z, 26 → AA."""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(65 + rest) + name
    return name


def _column_index(letters: str) -> int:
    index = 0
    for ch in letters:
        index = index * 26 + ord(ch) - 64
    return index - 1


class _Table:
    """One sheet's page as an HTML table; rows are blocks."""

    def __init__(self, article: etree._Element, sheet_index: int, name: str, first_block: int):
        self.section = etree.SubElement(
            article, "section", {"class": "sheet", "id": f"sheet-{sheet_index + 1}", "data-sheet": name}
        )
        heading = etree.SubElement(self.section, "h2", {"class": "sheet-name"})
        heading.text = name
        wrapper = etree.SubElement(self.section, "div", {"class": "sheet-scroll"})
        self.table = etree.SubElement(wrapper, "table", {"class": "sheet-table"})
        self.head = etree.SubElement(self.table, "thead")
        self.body = etree.SubElement(self.table, "tbody")
        self.name = name
        self.block = first_block
        self.width = 0

    def add_row(self, number: int, cells: list[str], hidden: int = 0, merges: _Merges | None = None) -> None:
        while cells and not cells[-1]:
            cells.pop()
        if not cells and not hidden:
            return
        cells = cells[:MAX_COLUMNS]
        self.width = max(self.width, len(cells))
        row = etree.SubElement(
            self.body,
            "tr",
            {"data-block-index": str(self.block), "data-sheet": self.name, "data-row": str(number),
             "data-range": f"A{number}:{column_name(max(len(cells), 1) - 1)}{number}"},
        )  # fmt: skip
        self.block += 1
        # The number is drawn by CSS (data-n): not text the locator would match.
        # A header with no text of its own is an empty header to assistive
        # technology's checkers: it is presentation, as the corner is.
        etree.SubElement(row, "th", {"class": "row-number", "role": "presentation", "data-n": str(number)})
        for column, value in enumerate(cells):
            span = merges.span(number, column) if merges else (1, 1)
            if span is None:
                continue  # inside a merged range: its first cell holds the value
            td = etree.SubElement(row, "td")
            if span != (1, 1):
                if span[0] > 1:
                    td.set("rowspan", str(span[0]))
                if span[1] > 1:
                    td.set("colspan", str(span[1]))
            td.text = value[:MAX_CELL_CHARS]
            # Cells stay words apart in the row's text, which the locator matches.
            td.tail = "\t"
        if hidden:
            # Outside the row's text (preview-note): these are not the sheet's words.
            note = etree.SubElement(row, "td", {"class": "preview-note"})
            note.text = ngettext(
                "%(n)s more cell past column %(column)s is not shown.",
                "%(n)s more cells past column %(column)s are not shown.",
                hidden,
            ) % {"n": f"{hidden:,}", "column": column_name(MAX_COLUMNS - 1)}

    def finish(self) -> None:
        head_row = etree.SubElement(self.head, "tr")
        etree.SubElement(head_row, "th", {"class": "corner", "role": "presentation"})
        for i in range(self.width):
            th = etree.SubElement(head_row, "th", {"class": "column-name"})
            th.text = column_name(i)


def _pager(article, table: _Table, page: int, total_rows: int, page_url: str) -> None:
    pages = (total_rows + PAGE_ROWS - 1) // PAGE_ROWS
    if pages <= 1:
        return
    nav = etree.SubElement(table.section, "nav", {"class": "sheet-pages"})
    nav.text = _("Rows %(first)s–%(last)s of %(total)s. Page: ") % {
        "first": (page - 1) * PAGE_ROWS + 1, "last": min(page * PAGE_ROWS, total_rows), "total": f"{total_rows:,}"
    }  # fmt: skip
    for p in range(1, min(pages, 200) + 1):
        if p == page:
            link = etree.SubElement(nav, "strong")
        else:
            link = etree.SubElement(nav, "a", {"href": f"{page_url}{p}"})
        link.text = str(p)
        link.tail = " "


def _tabs(article, names: list[str]) -> None:
    if len(names) < 2:
        return
    nav = etree.Element("nav", {"class": "sheet-tabs", "aria-label": _("Sheets")})
    for i, name in enumerate(names):
        link = etree.SubElement(nav, "a", {"href": f"#sheet-{i + 1}"})
        link.text = name
    article.insert(0, nav)


def _result(article, blocks: int, title: str, warnings: list[str]) -> dict:
    return {
        "html": lxml_html.tostring(article, encoding="unicode"),
        "blocks": blocks,
        "title": title,
        "warnings": warnings,
    }


# --- CSV ----------------------------------------------------------------------


def _csv_rows(text: str):
    try:
        dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    return enumerate(csv.reader(io.StringIO(text, newline=""), dialect), start=1)


def preview_csv(fp, ctx) -> dict:
    return _one_page(preview_csv_pages(fp, ctx), ctx.page)


def preview_csv_pages(fp, ctx) -> list[dict]:
    text, truncated = read_text(fp, MAX_CSV_BYTES)
    kept = _PageRows(_CellBudget())
    total = 0
    try:
        for number, row in _csv_rows(text):
            total = number
            kept(number, row)
    except csv.Error as e:
        raise PreviewRejected(_("This CSV file cannot be read: %(error)s.") % {"error": e}) from e
    del text
    name = ctx.path.name if ctx.path else "CSV"
    pages = []
    count = _page_count([(kept, total)])
    for page in range(1, count + 1):
        article = etree.Element("article", {"class": "sheets"})
        table = _Table(article, 0, name, 0)
        for number, row, _hidden in kept.rows.pop(page, ()):
            table.add_row(number, row)
        table.finish()
        _pager(article, table, page, total, ctx.options.get("page_url", "?rows_page="))
        warnings = [_("Only the beginning of this large file is shown.")] if truncated else []
        pages.append(_result(article, table.block, "", warnings + _pages_left_out(count, [total])))
    return pages


# --- XLSX ---------------------------------------------------------------------


def _string_text(string, ns: str = S) -> str:
    """A shared or inline string's text: plain, or rich text runs; never its
    phonetic guides (their <t> sit in runs inside <rPh>)."""
    return "".join(t.text or "" for t in string.xpath("s:t | s:r/s:t", namespaces={"s": ns}))


def _shared_strings(package: XlsxPackage, part: str | None, deadline: Deadline, ns: str = S) -> list[str]:
    strings: list[str] = []
    if not part:
        return strings
    for _event, si in package.iterparse(part, f"{{{ns}}}si"):
        strings.append(_string_text(si, ns))
        si.clear()
        if len(strings) > MAX_SHARED_STRINGS:
            raise PreviewRejected(_("This workbook is too large to preview (more than a million distinct texts)."))
        if len(strings) % 10_000 == 0:
            deadline.check()
    return strings


def _cell_value(cell, strings: list[str], formats: dict[int, str], ns: str = S, epoch: datetime = EPOCH) -> str:
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        string = cell.find(f"{{{ns}}}is")
        return _string_text(string, ns) if string is not None else ""
    v = cell.find(f"{{{ns}}}v")
    raw = v.text if v is not None and v.text is not None else ""
    if kind == "s":
        try:
            return strings[int(raw)]
        except (ValueError, IndexError):
            return ""
    if kind == "b":
        return "TRUE" if raw == "1" else "FALSE"
    if kind in ("str", "e"):
        return raw
    style = cell.get("s", "0")
    return number_text(raw, formats.get(int(style) if style.isdigit() else 0), epoch) if raw else ""


def _sheet_rows(package, part, strings, formats, deadline, visit, ns: str = S, epoch: datetime = EPOCH):
    """Every row of the sheet to ``visit(row number, cell texts, cells past
    ``MAX_COLUMNS``)``; returns the sheet's row count and its merged ranges.

    Cells are read as each one ends and then dropped, rows likewise, so
    neither a long sheet nor one very wide row is ever held whole."""
    cell_tag, row_tag, merge_tag = f"{{{ns}}}c", f"{{{ns}}}row", f"{{{ns}}}mergeCell"
    merges: list[str] = []
    total = expected = number = 0
    current = None  # the row whose cells are being read
    cells: list[str] = []
    position = hidden = 0

    def start(row) -> None:
        nonlocal current, expected, number, cells, position, total, hidden
        current = row
        expected += 1
        written = row.get("r") or ""
        number = int(written) if written.isdigit() else expected
        expected = number
        total = max(total, number)
        cells, position, hidden = [], 0, 0

    for _event, el in package.iterparse(part, (cell_tag, row_tag, merge_tag)):
        if el.tag == cell_tag:
            row = el.getparent()
            if row is not current:
                start(row)
            match = _CELL_REF.match(el.get("r", ""))
            column = _column_index(match.group(1)) if match else position
            if column < MAX_COLUMNS and column >= len(cells):
                cells.extend([""] * (column - len(cells)))
                cells.append(_cell_value(el, strings, formats, ns, epoch))
            elif column >= MAX_COLUMNS and len(el):
                hidden += 1  # a cell with a value the row cannot show
            position += 1
            if position % 50_000 == 0:
                deadline.check()  # one very wide row
            el.clear()
            while el.getprevious() is not None:
                del row[0]
            continue
        if el.tag == merge_tag:
            if len(merges) < MAX_MERGES:
                merges.append(el.get("ref", ""))
            el.clear()
            continue
        if el is not current:
            start(el)  # a row without cells
        visit(number, cells, hidden)
        el.clear()
        # Rows already seen are dropped so a big sheet is never held whole.
        while el.getprevious() is not None:
            del el.getparent()[0]
        current = None
        if number % 2_000 == 0:
            deadline.check()
    return total, merges


class _Merges:
    """A page's merged ranges as table spans: the first cell of a range spans
    the rows of the range that the page shows, the others are left out."""

    def __init__(self, refs: list[str], shown_rows: list[int]):
        self.first: dict[tuple[int, int], tuple[int, int]] = {}
        self.covered: set[tuple[int, int]] = set()
        shown = set(shown_rows)
        for ref in refs:
            corners = [_CELL_REF.match(corner) for corner in ref.split(":")]
            if len(corners) != 2 or not all(corners):
                continue
            (c1, r1), (c2, r2) = [(_column_index(m.group(1)), int(m.group(2))) for m in corners]
            rows = [r for r in shown_rows if r1 <= r <= r2]
            if not rows or c2 < c1 or (len(rows) == 1 and c1 == c2):
                continue
            c2 = min(c2, MAX_COLUMNS - 1)
            top = rows[0]
            self.first[(top, c1)] = (len(rows), c2 - c1 + 1)
            for r in rows:
                for c in range(c1, c2 + 1):
                    if (r, c) != (top, c1) and r in shown:
                        self.covered.add((r, c))
                if len(self.covered) > 1_000_000:
                    return

    def span(self, row: int, column: int) -> tuple[int, int] | None:
        """(rowspan, colspan) of a cell, or None when a merged range covers it."""
        if (row, column) in self.covered:
            return None
        return self.first.get((row, column), (1, 1))

    def width(self, row: int, cells: list[str]) -> list[str]:
        """``cells`` padded to the last column a range starting in this row spans."""
        end = max((c + span[1] for (r, c), span in self.first.items() if r == row), default=0)
        return cells + [""] * (end - len(cells))


class _Workbook:
    """A workbook's sheets (name, part) and what reading their cells needs."""

    def __init__(self, package: XlsxPackage, deadline: Deadline):
        self.package, self.deadline = package, deadline
        workbook_part = package.related_part("", "officeDocument") or "xl/workbook.xml"
        workbook = package.xml(workbook_part)
        if workbook is None or etree.QName(workbook).localname != "workbook":
            raise package.invalid("it has no workbook (is it a Word document or a presentation?)")
        # Strict OOXML workbooks use their own namespaces throughout.
        self.ns = ns = etree.QName(workbook).namespace or S
        rns = R if ns == S else STRICT_R
        rels = package.relationships(workbook_part)
        self.strings = _shared_strings(package, package.related_part(workbook_part, "sharedStrings"), deadline, ns)
        styles = package.related_part(workbook_part, "styles")
        self.formats = number_styles(package.xml(styles) if styles else None, ns)
        props = workbook.find(f"{{{ns}}}workbookPr")
        # Workbooks from old Macs count days from 1904.
        self.epoch = EPOCH_1904 if props is not None and props.get("date1904") in ("1", "true") else EPOCH
        self.sheets: list[tuple[str, str]] = []
        sheets = workbook.find(f"{{{ns}}}sheets")
        for sheet in list(sheets if sheets is not None else [])[:MAX_SHEETS]:
            rel = rels.get(sheet.get(f"{{{rns}}}id") or sheet.get(f"{{{R}}}id", ""))
            if rel is None or not rel.part or rel.kind != "worksheet":
                continue  # chart sheets and dialog sheets hold no cells
            name = sheet.get("name") or posixpath.basename(rel.part)
            if sheet.get("state") in ("hidden", "veryHidden"):
                name += " " + _("(hidden)")
            self.sheets.append((name, rel.part))

    def rows(self, part: str, visit):
        """Every row of a sheet to ``visit``; the sheet's row count and merged ranges."""
        return _sheet_rows(self.package, part, self.strings, self.formats, self.deadline, visit, self.ns, self.epoch)


def preview_xlsx(fp, ctx, limits=DEFAULT_LIMITS) -> dict:
    return _one_page(preview_xlsx_pages(fp, ctx, limits), ctx.page)


def preview_xlsx_pages(fp, ctx, limits=DEFAULT_LIMITS) -> list[dict]:
    deadline = Deadline(limits.time_budget_s)
    budget = _CellBudget()
    sheets = []  # (name, rows kept, row count, merged ranges)
    with XlsxPackage(fp, limits) as package:
        book = _Workbook(package, deadline)
        for name, part in book.sheets:
            kept = _PageRows(budget)
            total, merge_refs = book.rows(part, kept)
            sheets.append((name, kept, total, merge_refs))
            deadline.check()
    count = _page_count([(kept, total) for _name, kept, total, _merges in sheets])
    left_out = _pages_left_out(count, [total for _name, _kept, total, _merges in sheets])
    pages = []
    for page in range(1, count + 1):
        article = etree.Element("article", {"class": "sheets"})
        block = 0
        warnings: list[str] = []
        for i, (name, kept, total, merge_refs) in enumerate(sheets):
            table = _Table(article, i, name, block)
            rows = kept.rows.pop(page, ())
            shown = [number for number, cells, hidden in rows if any(cells) or hidden]
            merges = _Merges(merge_refs, shown) if merge_refs else None
            for number, cells, hidden in rows:
                table.add_row(number, merges.width(number, cells) if merges else cells, hidden, merges)
                if hidden:
                    warnings.append(_("Some rows have cells past column %(column)s, which are not shown.")
                                    % {"column": column_name(MAX_COLUMNS - 1)})  # fmt: skip
            table.finish()
            _pager(article, table, page, total, ctx.options.get("page_url", "?rows_page="))
            block = table.block
        _tabs(article, [name for name, *_rest in sheets])
        pages.append(_result(article, block, "", list(dict.fromkeys(warnings)) + left_out))
    return pages


# --- every page from one read -------------------------------------------------------
# The preview renders every page of a paged sheet in one read of the file (in
# its child process) and keeps each page's render; it never reads the file
# again for another page. Pages past the ones the pager links, or past a
# budget of cells (about 60 MB of text held while the pages are made), are
# not made, and each page shown says so.
MAX_PAGES = 200
MAX_RENDERED_CELLS = 1_000_000


class _CellBudget:
    """The cells every sheet of one workbook may still keep."""

    def __init__(self, cells: int = MAX_RENDERED_CELLS):
        self.left = cells


class _PageRows:
    """A sheet's rows by page, as long as the budget lasts; ``cut_page``: the
    first page the budget did not hold whole."""

    def __init__(self, budget: _CellBudget):
        self.budget, self.rows, self.cut_page = budget, {}, None

    def __call__(self, number: int, cells: list[str], hidden: int = 0) -> None:
        page = (number - 1) // PAGE_ROWS + 1
        if page > MAX_PAGES or (self.cut_page is not None and page >= self.cut_page):
            return
        cells = cells[:MAX_COLUMNS]
        self.budget.left -= len(cells)
        if self.budget.left < 0:
            self.cut_page = page
            self.rows.pop(page, None)
            return
        self.rows.setdefault(page, []).append((number, cells, hidden))


def _page_count(sheets: list[tuple[_PageRows, int]]) -> int:
    wanted = max([(total + PAGE_ROWS - 1) // PAGE_ROWS for _kept, total in sheets] + [1])
    cuts = [kept.cut_page - 1 for kept, _total in sheets if kept.cut_page is not None]
    return max(1, min([wanted, MAX_PAGES, *cuts]))


def _pages_left_out(count: int, totals: list[int]) -> list[str]:
    wanted = max([(total + PAGE_ROWS - 1) // PAGE_ROWS for total in totals] + [1])
    if count >= wanted:
        return []
    return [_("This sheet is too large to show whole: only its first %(rows)s rows are shown.") % {"rows": f"{count * PAGE_ROWS:,}"}]


def _one_page(pages: list[dict], page: int) -> dict:
    if not 1 <= page <= len(pages):
        raise PreviewRejected(_("Page %(n)s of this sheet is not in the preview.") % {"n": page})
    return pages[page - 1]


# --- which page holds a cited passage ----------------------------------------------

_WORD = re.compile(r"\w+")


class _BestRow:
    """The row sharing most words with the evidence (the first such row)."""

    def __init__(self, evidence: str):
        self.wanted = {w.lower() for w in _WORD.findall(evidence)}
        self.score, self.number = 0, None

    def __call__(self, number: int, cells: list[str], hidden: int = 0) -> None:
        score = len(self.wanted.intersection(w.lower() for w in _WORD.findall(" ".join(cells))))
        if score > self.score:
            self.score, self.number = score, number

    @property
    def page(self) -> int | None:
        return (self.number - 1) // PAGE_ROWS + 1 if self.number else None


def page_of(fp, ctx, evidence: str, limits=DEFAULT_LIMITS) -> int | None:
    """The page of a paged sheet a citation's text is on, so the preview opens
    there (the locator then finds the row); None when nothing matches."""
    best = _BestRow(evidence)
    if not best.wanted:
        return None
    if ctx.path is not None and ctx.path.suffix.lower() == ".csv":
        text, _truncated = read_text(fp, MAX_CSV_BYTES)
        try:
            for number, row in _csv_rows(text):
                best(number, row)
        except csv.Error:
            return None
        return best.page
    with XlsxPackage(fp, limits) as package:
        book = _Workbook(package, Deadline(limits.time_budget_s))
        for _name, part in book.sheets:
            book.rows(part, best)
    return best.page


def load_asset(fp, part):
    raise PreviewRejected("A workbook's pictures are not shown.")
