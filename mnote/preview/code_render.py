"""Source code, configuration and other plain-text formats with line numbers
and Pygments' syntax colouring.

Lines are grouped into blocks (a run of lines up to a blank line, at most
``MAX_BLOCK_LINES``), each ``<div class="code-block" data-block-index
data-line-start data-line-end>``, so the locator lands on a line range. Line
numbers come from CSS (``data-line``), never from the text, so they do not
enter what the locator matches.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from lxml import etree
from lxml import html as lxml_html
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

from .text_render import read_text

MAX_CODE_BYTES = 2 * 1024 * 1024
# Pygments runs about 1 MB/s on the lexers people use; past this, plain lines.
MAX_HIGHLIGHT_CHARS = 400_000
MAX_BLOCK_LINES = 12


def _css_class(token_type) -> str:
    while token_type not in STANDARD_TYPES:
        token_type = token_type.parent
    return STANDARD_TYPES[token_type]


def _lines(text: str, file_name: str) -> list[list[tuple[str, str]]]:
    """The text as lines of (css class, text) runs."""
    if len(text) > MAX_HIGHLIGHT_CHARS:
        return [[("", line)] for line in text.split("\n")]
    try:
        lexer = get_lexer_for_filename(file_name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False, ensurenl=False)
    lines: list[list[tuple[str, str]]] = [[]]
    for token_type, value in lexer.get_tokens(text):
        css = _css_class(token_type)
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                lines.append([])
            if part:
                lines[-1].append((css, part))
    return lines


def render_code(text: str, file_name: str) -> tuple[str, int]:
    lines = _lines(text.replace("\r\n", "\n").replace("\r", "\n"), file_name)
    while lines and not lines[-1]:
        lines.pop()
    # Focusable: a long line scrolls the block sideways, which a keyboard must reach.
    container = lxml_html.Element("div", {"class": "code highlight", "tabindex": "0"})
    block = None
    count = 0
    lines_in_block = 0
    end_block = False
    for number, runs in enumerate(lines, start=1):
        blank = not any(value.strip() for _, value in runs)
        if block is None or (end_block and not blank) or lines_in_block >= MAX_BLOCK_LINES:
            block = lxml_html.Element(
                "div", {"class": "code-block", "data-block-index": str(count), "data-line-start": str(number)}
            )
            container.append(block)
            count += 1
            lines_in_block = 0
            end_block = False
        # A blank line closes a block of two lines or more; the next text starts another.
        end_block = end_block or (blank and lines_in_block >= 2)
        lines_in_block += 1
        block.set("data-line-end", str(number))
        line = etree.SubElement(block, "span", {"class": "line", "data-line": str(number)})
        for css, value in runs:
            if css:
                span = etree.SubElement(line, "span", {"class": css})
                span.text = value
            elif len(line):
                line[-1].tail = (line[-1].tail or "") + value
            else:
                line.text = (line.text or "") + value
        line.tail = "\n"
    return lxml_html.tostring(container, encoding="unicode"), count


def preview_code(fp, ctx) -> dict:
    text, truncated = read_text(fp, MAX_CODE_BYTES)
    name = ctx.path.name if ctx.path else ""
    html, blocks = render_code(text, name)
    warnings = [_("Only the beginning of this large file is shown.")] if truncated else []
    if len(text) > MAX_HIGHLIGHT_CHARS:
        warnings.append(_("This file is too large to colour; it is shown as plain text."))
    return {"html": html, "blocks": blocks, "title": "", "warnings": warnings}
