"""The display quote: readable text from raw LightRAG chunk or sidecar block text.

LightRAG chunks and sidecar blocks carry markup: ``<equation format="latex">``,
``<drawing …/>``, ``<table format="json|html">``, ``<sup>``/``<sub>``, ``#``
heading markers, and tags cut in half where a chunk boundary fell inside them.
"""

import html
import json
import re
from functools import lru_cache

import lxml.etree
import lxml.html

from mnote.text.latex import _SYMBOLS, _script, latex_to_text
from mnote.text.terms import _first_span, _fold, _occurs, _primary_terms, _window_bounds

# --- raw chunk → display text ------------------------------------------------

_HEADING_MARK = re.compile(r"(?m)^[ \t]*#{1,6}(?:[ \t]+|$)")
# A Markdown table: rows "| a | b |" (outer pipes optional when there are inner
# ones) and a separator row "|---|:---:|" under the header.
_MD_TABLE_ROW = re.compile(r"^[ \t]*\|(.*)\|[ \t]*$")
# Each run of spaces or dashes has one quantifier that can take it (two side by
# side, "[ \t]*\|?[ \t]*", split a long run every way before failing).
_MD_TABLE_RULE = re.compile(r"^[ \t]*(?:\|[ \t]*)?:?-+:?(?:[ \t]*\|[ \t]*:?-+:?)*[ \t]*(?:\|[ \t]*)?$")
# A chunk that begins inside a tag: `ion>`, `at="latex">`, `png" src="" />`.
_LEADING_TAG_TAIL = re.compile(r"""\A(?:[\w:-]*(?:="[^"<>]*")?|[^"<>\n]*")(?:\s+[\w:-]+="[^"<>]*")*(?:\s*/>|>)""")
_ORPHAN_CLOSE = re.compile(r"</(equation|table)\s*>", re.I)
# Markup that stays meaningful inside a table cell. An unclosed equation ends
# at a blank line or the next LightRAG tag; LaTeX holds neither.
_CELL_MARKUP = r"""
      <equation\b[^>]*>(?P<equation>.*?)(?:</equation\s*>|(?=\n\s*\n|<(?:equation|table|drawing)\b)|\Z)
    | <drawing\b[^>]*?/>
    | <drawing\b[^>]*>(?:[^<]*</drawing\s*>)?
    | <(?P<script_tag>sup|sub)>(?P<script>[^<]*)</(?P=script_tag)\s*>
"""
_INNER_MARKUP = re.compile(_CELL_MARKUP, re.S | re.I | re.X)
_MARKUP = re.compile(
    _CELL_MARKUP
    + r"""
    | <table\b(?P<table_attrs>[^>]*)>
    | <!--.*?(?:-->|\Z)
    | <!\[CDATA\[(?P<cdata>.*?)(?:\]\]>|\Z)
    | </?(?P<tag>[a-z][\w:.-]*)(?P<attrs>\s[^<>]*)?/?>
    | </?(?:equation|table|drawing|sup|sub|tr|td|th|p|br|div|span)\b[^<>]*(?=<)
    | <[a-z/!?][^<>]*\Z
    | <\s*\Z
    """,
    re.S | re.I | re.X,
)
_TABLE_EDGE = re.compile(r"<(/?)table\b[^>]*>", re.I)


def _table_end(text: str, start: int) -> tuple[int, int]:
    """(end of body, end of closing tag) of a table whose body starts at
    ``start``; nested tables are counted, a missing close runs to the end."""
    depth = 1
    for edge in _TABLE_EDGE.finditer(text, start):
        depth += -1 if edge.group(1) else 1
        if depth == 0:
            return edge.start(), edge.end()
    return len(text), len(text)


_INLINE_TAGS = frozenset(
    {"a", "b", "i", "u", "s", "em", "strong", "span", "small", "big", "font", "code", "mark", "abbr", "sup",
     "sub", "ins", "del", "strike", "tt", "kbd", "var", "cite", "q", "bdi", "bdo", "wbr"}
)  # fmt: skip
_HTML_PARSER = lxml.html.HTMLParser(no_network=True, remove_comments=True, remove_pis=True)


def _json_cell(cell: object) -> str:
    """A cell's text; a nested list or object is read flat, without recursion."""
    texts: list[str] = []
    pending = [cell]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(reversed(item))
        elif isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif item is not None:
            texts.append(str(item))
    return " ".join(texts)


def _rows_text(rows: list[list[str]]) -> str:
    cleaned = ([clean_display_text(cell) for cell in row] for row in rows)
    lines = [" | ".join(c for c in row if c) for row in cleaned]
    return "; ".join(line for line in lines if line)


def _json_table_text(body: str) -> str:
    try:
        rows = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        rows = None
    if isinstance(rows, list):
        return _rows_text([[_json_cell(c) for c in (row if isinstance(row, list) else [row])] for row in rows])
    # Cut by the chunk boundary: take the quoted cells that are there.
    cut_rows = []
    for row in re.split(r"\]\s*,\s*\[", body):
        cells = re.findall(r'"((?:[^"\\]|\\.)*)"|"([^"]*)\Z', row)
        cut_rows.append([_json_unquote(closed) if closed else open_ for closed, open_ in cells])
    if any(cut_rows):
        return _rows_text(cut_rows)
    return " ".join(re.sub(r'[\[\]",]', " ", body).split())


def _json_unquote(cell: str) -> str:
    try:
        return json.loads(f'"{cell}"')
    except ValueError:
        return cell


def _html_table_text(body: str) -> str:
    # Equations and scripts become text first (escaped again, since lxml
    # unescapes), so cells never go back through the cleaner: a table nested
    # thousands deep costs one parse, not one per level.
    body = _INNER_MARKUP.sub(lambda m: html.escape(_markup_text(m)), body)
    try:
        table = lxml.html.fragment_fromstring(f"<table>{body}</table>", parser=_HTML_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return ""
    rows = []
    for tr in table.iter("tr"):
        if next(tr.iterancestors("table"), None) is not table:
            continue  # a nested table's text comes with the cell holding it
        rows.append([" ".join(" ".join(cell.itertext()).split()) for cell in tr if cell.tag in ("td", "th")])
    if not any(rows):
        return " ".join(" ".join(table.itertext()).split())
    lines = (" | ".join(cell for cell in row if cell) for row in rows)
    return "; ".join(line for line in lines if line)


def _table_text(attrs: str, body: str) -> str:
    declared = re.search(r"""format\s*=\s*["']?(\w+)""", attrs or "")
    looks_like_json = body.lstrip().startswith("[") or ("<" not in body and re.search(r'["\]]', body))
    kind = declared.group(1).lower() if declared else ("json" if looks_like_json else "html")
    return _json_table_text(body) if kind == "json" else _html_table_text(body)


def _equation_text(body: str) -> str:
    return latex_to_text(html.unescape(body))


def _markup_text(m: re.Match) -> str:
    found = m.groupdict()
    if found["equation"] is not None:
        return _equation_text(found["equation"])
    if found["script"] is not None:
        marker = "^" if found["script_tag"].lower() == "sup" else "_"
        return _script(html.unescape(found["script"]), marker)
    if found.get("cdata") is not None:
        return found["cdata"]
    if found.get("tag") is not None:
        attrs = found["attrs"]
        if attrs and "=" not in attrs and attrs.strip() not in ("", "/"):
            return html.unescape(m.group())  # "a <b and c> d" is prose, not a tag
        return "" if found["tag"].lower() in _INLINE_TAGS else " "
    return " "


# Word list bullets set in Symbol or Wingdings reach the text as private-use
# code points that show as □; these are the ones Word's bullet lists use.
_SYMBOL_FONT_BULLETS = str.maketrans(
    {
        0xF0B7: "•", 0xF0A7: "▪", 0xF0D8: "➢", 0xF076: "❖", 0xF0FC: "✓",
        0xF06E: "■", 0xF06C: "●", 0xF0A8: "◻", 0xF071: "❑", 0xF0E8: "➔",
    }
)
# str.translate with a dict looks every character up (~0.4 µs each: most of a
# search's mapping time on CJK text); a substring search finds the rare bullet first.
_SYMBOL_FONT_CHARS = tuple(chr(c) for c in _SYMBOL_FONT_BULLETS)


# Characters the cleaner acts on besides whitespace (tags, entities, heading marks, table pipes).
_MARKUP_CHARS = "<>&#|"


def _symbol_font_bullets(text: str) -> str:
    return text.translate(_SYMBOL_FONT_BULLETS) if any(ch in text for ch in _SYMBOL_FONT_CHARS) else text


# Blocks and chunks come back query after query; their cleaned text does not change.
@lru_cache(maxsize=4096)
def _markdown_tables(text: str) -> str:
    """Markdown tables read like the HTML ones: ``cell | cell; cell | cell``,
    the separator row gone (it showed as "|------|------|" in quotes)."""
    if "|" not in text or "\n" not in text:
        return text
    out: list[str] = []
    in_table = False
    for line in text.split("\n"):
        if "-" in line and _MD_TABLE_RULE.match(line) and ("|" in line):
            in_table = True
            continue
        row = _MD_TABLE_ROW.match(line)
        if row:
            cells = " | ".join(cell.strip() for cell in row.group(1).split("|"))
            if in_table and out:
                out[-1] += f"; {cells}"
            else:
                out.append(cells)
            in_table = True
            continue
        in_table = False
        out.append(line)
    return "\n".join(out)


def clean_display_text(raw: str) -> str:
    """The display quote from raw chunk or block text.

    Equations become readable text, ``<drawing>`` is dropped (its caption
    attribute too), JSON and HTML tables become ``cell | cell; cell | cell``,
    ``<sup>``/``<sub>`` become super/subscripts, other tags and tags cut by a
    chunk boundary are removed, ``#`` heading markers go, entities are
    unescaped and whitespace is collapsed. Cleaning clean text changes
    nothing, unless it holds tag-like text that only entities kept from
    being a tag (``&lt;b&gt;`` shows as ``<b>``, then goes on a second pass).
    """
    if not raw:
        return ""
    if not any(ch in raw for ch in _MARKUP_CHARS):
        # Nothing any step below acts on (no tag, entity, heading mark or
        # table pipe): only whitespace and bullets change. Most block text
        # and every cleaned quote cleaned again is like this.
        return _symbol_font_bullets(" ".join(raw.split()))
    text = _LEADING_TAG_TAIL.sub("", _markdown_tables(_HEADING_MARK.sub("", raw)), count=1)
    pieces: list[str] = []
    # A chunk that starts inside an equation or a table: what comes before the
    # orphan closing tag is that element's body.
    orphan = _ORPHAN_CLOSE.search(text)
    if orphan and f"<{orphan.group(1).lower()}" not in text[: orphan.start()].lower():
        body = text[: orphan.start()]
        if orphan.group(1).lower() == "equation":
            pieces.append(_equation_text(body))
        else:
            pieces.append(_table_text("", body))
        pieces.append(" ")
        text = text[orphan.end() :]
    pos = 0
    while m := _MARKUP.search(text, pos):
        pieces.append(html.unescape(text[pos : m.start()]))
        if m.group("table_attrs") is not None:
            body_end, pos = _table_end(text, m.end())
            pieces.append(f" {_table_text(m.group('table_attrs'), text[m.end() : body_end])} ")
        else:
            pieces.append(_markup_text(m))
            pos = m.end()
    pieces.append(html.unescape(text[pos:]))
    # str.split() and the regex \s split on the same characters; split is ~5x faster on CJK text.
    return _symbol_font_bullets(" ".join("".join(pieces).split()))


# --- query terms in the display quote -----------------------------------------

_FRAGMENT_WIDTH = 80


def _latex_symbol_names(raw: str) -> list[str]:
    """Names of LaTeX commands the display shows as symbols (``\\Phi`` → Φ)."""
    names = []
    for m in _INNER_MARKUP.finditer(raw or ""):
        body = m.group("equation") or ""
        names.extend(n for n in re.findall(r"\\([A-Za-z]+)", body) if n in _SYMBOLS)
    return list(dict.fromkeys(names))


@lru_cache(maxsize=256)
def _may_name_a_symbol(term: str) -> bool:
    """Whether some LaTeX symbol's name starts with this (folded) query term."""
    return any(_fold(name)[0].startswith(term) for name in _SYMBOLS)


def ensure_query_terms(display: str, raw: str, query: str, *, cleaned: str | None = None) -> str:
    """The display quote, plus what it needs so no query term the raw text
    shows is lost, appended after `` … ``.

    A term is re-added when it is in the raw text's visible content but not in
    ``display``:
    - ``display`` was shortened and the term is further on: the shortest
      whole-word fragment of the cleaned raw text around it is appended;
    - the term names a LaTeX symbol the display shows as a glyph (query
      ``phi``, equation ``\\Phi``): the command name is appended.
    A term found only in tag names or attributes (ids, ``format``, image
    paths, a drawing's caption) is not visible text and is not re-added; nor
    is a term absent from the raw text. CJK runs count whole, not by bigram.
    """
    display = (display or "").strip()
    if cleaned is None:  # the caller may have it already: ``clean_display_text(raw)``
        cleaned = clean_display_text(raw)
    symbol_names = None  # read from the raw markup only when a term is missing
    additions: list[str] = []
    shown = _fold(display)[0]  # folded again only when something is added
    for term in _primary_terms(query):
        if _occurs(shown, term):
            continue
        span = _first_span(cleaned, term)
        if span:
            start, end = _window_bounds(cleaned, *span, _FRAGMENT_WIDTH)
            additions.append(cleaned[start:end])
            shown = _fold(" ".join([display, *additions]))[0]
            continue
        if not _may_name_a_symbol(term):
            continue  # no symbol's name starts with it: the raw markup need not be read
        if symbol_names is None:
            symbol_names = _latex_symbol_names(raw) if "<" in (raw or "") else []
        named = next((n for n in symbol_names if _fold(n)[0].startswith(term)), None)
        if named:
            additions.append(named)
            shown = _fold(" ".join([display, *additions]))[0]
    return " … ".join(part for part in [display, *additions] if part)


# --- quotes not worth a card --------------------------------------------------

# What Word writes in place of a field it could not update (English and
# Chinese Word); a table of cross-references can be little else.
_FIELD_RESIDUE = re.compile(
    r"(?:Error!|错误[!！])\s*(?:Reference source not found|Bookmark not defined|No text of specified style in document"
    r"|Not a valid (?:bookmark|result for table|link|embedded object|filename)[^.。]*|Hyperlink reference not valid"
    r"|Main Document Only|Unknown (?:switch|op code)[^.。]*|未找到引用源|未定义书签|文档中没有指定样式的文字)[.。]?",
    re.IGNORECASE,
)


# Exactly the characters str.isalnum() accepts (\w is isalnum() or "_"),
# matched in C rather than one character at a time in Python.
_ALNUM_RUN = re.compile(r"[^\W_]+")


def _alnum_count(text: str) -> int:
    return sum(map(len, _ALNUM_RUN.findall(text)))


def is_unreadable(display: str) -> bool:
    """True for a display quote nobody can read an answer in: nothing but
    markup or whitespace (a chunk of Word theme or settings XML), or mostly
    the error text Word leaves where a field could not be updated."""
    if not _ALNUM_RUN.search(display or ""):
        return True
    remainder = _FIELD_RESIDUE.sub("", display)
    if remainder == display:
        return False
    kept = _alnum_count(remainder)
    return kept < 40 or kept < 0.5 * _alnum_count(display)
