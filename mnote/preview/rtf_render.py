"""RTF as text: paragraphs in order, no formatting. A small reader of the
RTF syntax (groups, control words, ``\\'hh`` and ``\\uN`` characters) that
skips what is not body text (font and colour tables, style sheets, document
info, pictures, ``\\*`` destinations), bounded in size and time."""

from __future__ import annotations

import re

from django.utils.translation import gettext as _
from lxml import etree
from lxml import html as lxml_html

from .docx.limits import Deadline, PreviewRejected

MAX_RTF_BYTES = 20 * 1024 * 1024
MAX_DEPTH = 200
_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-fA-F]{2})|\\(.)|([{}])|([^\\{}\r\n]+)|[\r\n]+", re.DOTALL
)
_SKIPPED = {
    b"fonttbl", b"colortbl", b"stylesheet", b"info", b"pict", b"object", b"header", b"footer", b"headerl", b"headerr",
    b"headerf", b"footerl", b"footerr", b"footerf", b"listtable", b"listoverridetable", b"revtbl", b"rsidtbl",
    b"generator", b"xmlnstbl", b"themedata", b"colorschememapping", b"latentstyles", b"datastore", b"fldinst",
    b"filetbl", b"bkmkstart", b"bkmkend", b"pgdsctbl", b"mmathPr",
}  # fmt: skip
_CODEPAGES = {b"ansicpg936": "gb18030", b"ansicpg1252": "cp1252"}


def rtf_paragraphs(data: bytes, deadline: Deadline | None = None) -> list[str]:
    if not data.lstrip().startswith(b"{\\rtf"):
        raise PreviewRejected(_("This file is not a valid RTF document: it does not start with {\\rtf."))
    encoding = "cp1252"
    match = re.search(rb"\\ansicpg(\d+)", data[:2048])
    if match:
        encoding = {b"936": "gb18030", b"65001": "utf-8"}.get(match.group(1), "cp" + match.group(1).decode())
    paragraphs: list[str] = []
    current: list[str] = []
    pending: bytearray = bytearray()  # \'hh bytes, decoded together (multi-byte code pages)
    stack: list[tuple[bool, int]] = []
    skipping = False
    uc = 1
    skip_chars = 0

    def flush_bytes():
        if pending:
            try:
                current.append(pending.decode(encoding, "replace"))
            except LookupError:
                current.append(pending.decode("cp1252", "replace"))
            pending.clear()

    for count, m in enumerate(_TOKEN.finditer(data)):
        if deadline is not None and count % 50_000 == 0:
            deadline.check()
        word, arg, hexbyte, symbol, brace, text = m.groups()
        if brace == b"{":
            flush_bytes()
            stack.append((skipping, uc))
            if len(stack) > MAX_DEPTH:
                raise PreviewRejected(_("This RTF document is nested too deeply to preview."))
            continue
        if brace == b"}":
            flush_bytes()
            if stack:
                skipping, uc = stack.pop()
            continue
        if symbol == b"*":
            skipping = True  # an optional destination this reader does not know
            continue
        if word is not None:
            if word in _SKIPPED:
                skipping = True
            if skipping:
                continue
            if word in (b"par", b"line", b"row", b"sect", b"page"):
                flush_bytes()
                if word == b"line":
                    current.append("\n")
                else:
                    paragraphs.append("".join(current))
                    current = []
            elif word == b"tab" or word == b"cell":
                flush_bytes()
                current.append("\t")
            elif word == b"uc":
                uc = int(arg or 1)
            elif word == b"u":
                flush_bytes()
                value = int(arg or 0)
                current.append(chr(value + 65536 if value < 0 else value))
                skip_chars = uc
            elif word in (b"emdash", b"endash", b"lquote", b"rquote", b"ldblquote", b"rdblquote", b"bullet"):
                flush_bytes()
                current.append({b"emdash": "—", b"endash": "–", b"lquote": "‘", b"rquote": "’", b"ldblquote": "“",
                                b"rdblquote": "”", b"bullet": "•"}[word])  # fmt: skip
            continue
        if skipping:
            continue
        if hexbyte is not None:
            if skip_chars:
                skip_chars -= 1
                continue
            pending.append(int(hexbyte, 16))
            continue
        if symbol is not None:
            if skip_chars:
                skip_chars -= 1
                continue
            flush_bytes()
            current.append(
                {"~": "\u00a0", "-": "", "_": "\u2011"}.get(symbol.decode("latin-1"), symbol.decode("latin-1"))
            )
            continue
        if text:
            flush_bytes()
            chunk = text.decode(encoding, "replace")
            if skip_chars:
                dropped = min(skip_chars, len(chunk))
                chunk = chunk[dropped:]
                skip_chars -= dropped
            current.append(chunk)
    flush_bytes()
    paragraphs.append("".join(current))
    return [p.strip() for p in paragraphs]


def preview_rtf(fp, ctx) -> dict:
    data = fp.read(MAX_RTF_BYTES + 1)
    if len(data) > MAX_RTF_BYTES:
        raise PreviewRejected(_("This RTF document is too large to preview; open the original instead."))
    paragraphs = rtf_paragraphs(data, Deadline(10.0))
    container = etree.Element("div", {"class": "rtf"})
    index = 0
    for text in paragraphs:
        if not text:
            continue
        el = etree.SubElement(container, "p", {"class": "rtf-paragraph", "data-block-index": str(index)})
        el.text = text
        index += 1
    return {"html": lxml_html.tostring(container, encoding="unicode"), "blocks": index, "title": "", "warnings": []}
