"""RTF as text: paragraphs in order, no formatting. A small reader of the
RTF syntax (groups, control words, ``\\'hh`` and ``\\uN`` characters,
``\\binN`` data) that skips what is not body text (font and colour tables,
style sheets, document info, pictures, ``\\*`` destinations) and hidden text
(``\\v``), bounded in size and time.

Kept over striprtf (measured in ``bench/reader_compare.py``): striprtf reads
one regex match per character, matches hyperlinks with a backtracking regex
over the whole file, shows hidden text and joins nested table cells.
"""

from __future__ import annotations

import re

from django.utils.translation import gettext as _
from lxml import etree
from lxml import html as lxml_html

from .docx.limits import Deadline, PreviewRejected

MAX_RTF_BYTES = 20 * 1024 * 1024
MAX_DEPTH = 200
# A preview of the first hundred thousand paragraphs says what the file is;
# more would only slow the page (and the reader) down.
MAX_PARAGRAPHS = 100_000
_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-fA-F]{2})|\\(.)|([{}])|([^\\{}\r\n]+)|[\r\n]+", re.DOTALL
)
_SKIPPED = {
    b"fonttbl", b"colortbl", b"stylesheet", b"info", b"pict", b"object", b"header", b"footer", b"headerl", b"headerr",
    b"headerf", b"footerl", b"footerr", b"footerf", b"listtable", b"listoverridetable", b"revtbl", b"rsidtbl",
    b"generator", b"xmlnstbl", b"themedata", b"colorschememapping", b"latentstyles", b"datastore", b"fldinst",
    b"filetbl", b"bkmkstart", b"bkmkend", b"pgdsctbl", b"mmathPr", b"nonshppict", b"private", b"userprops",
}  # fmt: skip
_SYMBOLS = {
    b"emdash": "—", b"endash": "–", b"lquote": "‘", b"rquote": "’", b"ldblquote": "“", b"rdblquote": "”",
    b"bullet": "•", b"emspace": "\u2003", b"enspace": "\u2002", b"qmspace": "\u2005", b"zwj": "\u200d",
    b"zwnj": "\u200c", b"ltrmark": "\u200e", b"rtlmark": "\u200f",
}  # fmt: skip
_BREAKS = (b"par", b"row", b"sect", b"page", b"nestrow")
_CELLS = (b"tab", b"cell", b"nestcell")
# Characters an XML document cannot hold (NUL and other C0 controls but tab
# and newline): Outlook's RTF bodies carry NULs, and lxml refuses them.
_NOT_XML = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF])


def _xml_text(text: str) -> str:
    """``text`` as an XML document can hold it: \\u surrogate pairs joined,
    lone surrogates and control characters dropped."""
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text.translate(_NOT_XML)


def _encoding(data: bytes) -> str:
    match = re.search(rb"\\ansicpg(\d{1,5})", data[:2048])
    if not match:
        return "cp1252"
    encoding = {b"936": "gb18030", b"65001": "utf-8"}.get(match.group(1), "cp" + match.group(1).decode())
    try:
        "".encode(encoding)
    except LookupError:
        return "cp1252"
    return encoding


def rtf_paragraphs(data: bytes, deadline: Deadline | None = None, limit: int = MAX_PARAGRAPHS) -> list[str]:
    """The document's paragraphs, at most ``limit`` of them (a longer list
    ends there: the caller can tell by its length)."""
    if not data.lstrip().startswith(b"{\\rtf"):
        raise PreviewRejected(_("This file is not a valid RTF document: it does not start with {\\rtf."))
    encoding = _encoding(data)
    paragraphs: list[str] = []
    current: list[str] = []
    pending: bytearray = bytearray()  # \'hh bytes, decoded together (multi-byte code pages)
    # Per group: (skipping, hidden, uc). Hidden text (\v) is the writer's, not the reader's.
    stack: list[tuple[bool, bool, int]] = []
    skipping = hidden = False
    uc = 1
    skip_chars = 0  # the stand-ins that follow a \uN, which a reader of \uN skips
    position, end, count = 0, len(data), 0

    def flush_bytes():
        if pending:
            current.append(pending.decode(encoding, "replace"))
            pending.clear()

    while position < end and len(paragraphs) < limit:
        resume = end
        for m in _TOKEN.finditer(data, position):
            count += 1
            if count % 50_000 == 0:
                if deadline is not None:
                    deadline.check()
                if len(paragraphs) >= limit:
                    break
            kind = m.lastindex  # which alternative matched: dispatch without unpacking every group
            if kind == 6:  # plain text, the commonest
                if skipping or hidden:
                    continue
                flush_bytes()
                chunk = m.group(6).decode(encoding, "replace")
                if skip_chars:
                    dropped = min(skip_chars, len(chunk))
                    chunk = chunk[dropped:]
                    skip_chars -= dropped
                current.append(chunk)
                continue
            if kind is None:  # line ends: not text in RTF
                continue
            if kind == 5:
                flush_bytes()
                skip_chars = 0  # a group's end ends a \uN's stand-ins
                if m.group(5) == b"{":
                    stack.append((skipping, hidden, uc))
                    if len(stack) > MAX_DEPTH:
                        raise PreviewRejected(_("This RTF document is nested too deeply to preview."))
                elif stack:
                    skipping, hidden, uc = stack.pop()
                continue
            word = m.group(1)
            if word == b"bin":
                resume = m.end() + max(0, int(m.group(2) or 0))  # raw bytes: neither text nor syntax
                break
            if skip_chars:
                skip_chars -= 1  # a stand-in may be a control word or \'hh
                continue
            if kind == 4:
                symbol = m.group(4)
                if symbol == b"*":
                    skipping = True  # an optional destination this reader does not know
                elif skipping or hidden:
                    pass
                elif symbol in (b"\n", b"\r"):  # a backslash ending a line is a paragraph mark
                    flush_bytes()
                    paragraphs.append("".join(current))
                    current = []
                else:
                    flush_bytes()
                    symbol = symbol.decode("latin-1")
                    current.append({"~": "\u00a0", "-": "", "_": "\u2011"}.get(symbol, symbol))
                continue
            if kind == 3:
                if not (skipping or hidden):
                    pending.append(int(m.group(3), 16))
                continue
            # a control word
            if word in _SKIPPED:
                skipping = True
            if skipping:
                continue
            arg = m.group(2)
            if word == b"v":
                hidden = arg != b"0"
            elif word == b"plain":
                hidden = False
            elif word == b"uc":
                uc = max(0, min(int(arg or 1), 10))
            if hidden and word not in _BREAKS:
                continue
            if word in _BREAKS:
                flush_bytes()
                paragraphs.append("".join(current))
                current = []
            elif word == b"line":
                flush_bytes()
                current.append("\n")
            elif word in _CELLS:
                flush_bytes()
                current.append("\t")
            elif word == b"u":
                flush_bytes()
                value = int(arg or 0)
                current.append(chr((value + 65536 if value < 0 else value) & 0xFFFF))
                skip_chars = uc
            elif word in _SYMBOLS:
                flush_bytes()
                current.append(_SYMBOLS[word])
        position = resume
    flush_bytes()
    paragraphs.append("".join(current))
    return [_xml_text(p).strip() for p in paragraphs[:limit]]


def preview_rtf(fp, ctx) -> dict:
    data = fp.read(MAX_RTF_BYTES + 1)
    if len(data) > MAX_RTF_BYTES:
        raise PreviewRejected(_("This RTF document is too large to preview; open the original instead."))
    # About a million control words a second here: a real 20 MB file (mostly a
    # picture's hex digits, read in long runs) takes far less than this.
    paragraphs = rtf_paragraphs(data, Deadline(4.0), MAX_PARAGRAPHS + 1)
    warnings = []
    if len(paragraphs) > MAX_PARAGRAPHS:
        paragraphs = paragraphs[:MAX_PARAGRAPHS]
        warnings.append(_("Only the first %(n)s paragraphs are shown.") % {"n": f"{MAX_PARAGRAPHS:,}"})
    container = etree.Element("div", {"class": "rtf"})
    index = 0
    for text in paragraphs:
        if not text:
            continue
        el = etree.SubElement(container, "p", {"class": "rtf-paragraph", "data-block-index": str(index)})
        el.text = text
        index += 1
    return {"html": lxml_html.tostring(container, encoding="unicode"), "blocks": index, "title": "", "warnings": warnings}
