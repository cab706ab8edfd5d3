"""What the renderer needs from ``styles.xml``: heading levels, style-linked
numbering and character formatting, each resolved along ``w:basedOn``.

Style ids are localised (a Chinese Word file calls "heading 1" ``a3``), so a
style without an outline level is recognised as a heading by its ``w:name``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from lxml import etree

from .limits import PreviewRejected
from .namespaces import W_VAL, w

_HEADING_NAME = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_MONOSPACE_FONTS = frozenset(
    {"consolas", "courier", "courier new", "lucida console", "menlo", "monaco", "source code pro", "dejavu sans mono"}
)
_OFF = frozenset({"0", "false", "off", "none"})


def is_on(el: etree._Element | None) -> bool | None:
    """An OOXML on/off property: None when absent."""
    if el is None:
        return None
    return el.get(W_VAL, "1") not in _OFF


class RunFormat(NamedTuple):
    code: bool = False
    bold: bool = False
    italic: bool = False
    underline: bool = False
    strike: bool = False
    vert: str = ""  # "superscript" | "subscript" | ""
    hidden: bool = False
    symbol_font: str = ""  # a symbol font's name when the run is set in one

    def merged(self, rpr: etree._Element | None) -> RunFormat:
        """This format with a ``w:rPr``'s direct formatting applied."""
        return self if rpr is None else _merge(self, rpr, None)


def _merge(fmt: RunFormat, rpr: etree._Element, styles: Styles | None) -> RunFormat:
    """``fmt`` with a ``w:rPr``'s direct formatting applied, in one pass over
    it; with ``styles``, a leading ``w:rStyle`` first replaces ``fmt`` with
    its character style's formatting."""
    code, bold, italic, underline, strike, vert, hidden, symbol_font = fmt
    changed = False
    first = True
    for child in rpr:
        kind = _RPR_KINDS.get(child.tag)
        if kind is None:
            first = False
            continue
        if kind == _CHAR_STYLE:
            if first and styles is not None:
                fmt = styles.run_format(child.get(W_VAL))
                code, bold, italic, underline, strike, vert, hidden, symbol_font = fmt
            first = False
            continue
        first = False
        changed = True
        if kind <= _HIDDEN:
            value = child.get(W_VAL)
            on = value is None or value not in _OFF
            if kind == _BOLD:
                bold = on
            elif kind == _ITALIC:
                italic = on
            elif kind == _STRIKE:
                strike = on
            else:
                hidden = on
        elif kind == _UNDERLINE:
            underline = child.get(W_VAL) != "none"
        elif kind == _VERT:
            value = child.get(W_VAL)
            vert = value if value in ("superscript", "subscript") else ""
        else:
            font = (child.get(_ASCII) or child.get(_HANSI) or "").strip().lower()
            if font:
                code = font in _MONOSPACE_FONTS
                symbol_font = font if font in SYMBOL_FONTS else ""
    if not changed:
        return fmt
    return RunFormat(code, bold, italic, underline, strike, vert, hidden, symbol_font)


SYMBOL_FONTS = frozenset({"symbol", "wingdings", "wingdings 2", "wingdings 3", "webdings"})

_ASCII, _HANSI = w("ascii"), w("hAnsi")
_BOLD, _ITALIC, _STRIKE, _HIDDEN, _UNDERLINE, _VERT, _FONTS, _CHAR_STYLE = range(8)
_RPR_KINDS = {
    w("rStyle"): _CHAR_STYLE,
    w("b"): _BOLD,
    w("i"): _ITALIC,
    w("strike"): _STRIKE,
    w("dstrike"): _STRIKE,
    w("vanish"): _HIDDEN,
    w("u"): _UNDERLINE,
    w("vertAlign"): _VERT,
    w("rFonts"): _FONTS,
}
PLAIN = RunFormat()


@dataclass
class _Style:
    name: str
    based_on: str | None
    outline: int | None
    num_id: str | None
    ilvl: int | None
    rpr: etree._Element | None


_STYLE, _STYLE_ID, _DEFAULT, _TYPE = w("style"), w("styleId"), w("default"), w("type")


def _parse_style(style: etree._Element) -> _Style:
    name = based_on = outline = num_id = ilvl = rpr = None
    for child in style:
        tag = child.tag
        if tag == _NAME:
            name = (child.get(W_VAL) or "").strip().lower()
        elif tag == _BASED_ON:
            based_on = child.get(W_VAL)
        elif tag == _RPR:
            rpr = child
        elif tag == _PPR:
            for prop in child:
                if prop.tag == _OUTLINE:
                    outline = _int(prop.get(W_VAL))
                elif prop.tag == _NUMPR:
                    for part in prop:
                        if part.tag == _NUM_ID:
                            num_id = part.get(W_VAL)
                        elif part.tag == _ILVL:
                            ilvl = _int(part.get(W_VAL))
    return _Style(name or "", based_on, outline, num_id, ilvl, rpr)


_NAME, _BASED_ON, _RPR, _PPR = w("name"), w("basedOn"), w("rPr"), w("pPr")
_OUTLINE, _NUMPR, _NUM_ID, _ILVL = w("outlineLvl"), w("numPr"), w("numId"), w("ilvl")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def without_latent_styles(data: bytes) -> bytes:
    """``styles.xml`` without its ``w:latentStyles`` block: a list of the
    built-in styles' user-interface settings (hundreds of ``w:lsdException``,
    most of the part's bytes in files Word writes) that no preview reads, cut
    out before parsing. Anything unusual (no such block, a style inside it)
    leaves the bytes as they are."""
    start = data.find(b"<w:latentStyles")
    if start < 0 or data[start + 15 : start + 16] not in (b" ", b">", b"\t", b"\r", b"\n"):
        return data
    end = data.find(b"</w:latentStyles>", start)
    if end < 0 or data.find(b"<w:style", start, end) >= 0:
        return data
    return data[:start] + data[end + 17 :]


class Styles:
    @classmethod
    def from_package(cls, package, part: str | None) -> Styles:
        """The styles of a package's styles part (``part`` None: no styles)."""
        data = package.read(part) if part else None
        if data is None:
            return cls(None)
        trimmed = without_latent_styles(data)
        try:
            return cls(package.parse_xml(trimmed, part))
        except PreviewRejected:
            if trimmed is data:
                raise
            return cls(package.parse_xml(data, part))  # say what is wrong with the part as written

    def __init__(self, root: etree._Element | None):
        self._elements: dict[str, etree._Element] = {}
        self._styles: dict[str, _Style | None] = {}
        self.default_paragraph: str | None = None
        self._heading_cache: dict[str | None, int | None] = {}
        self._numpr_cache: dict[str, tuple[str | None, int | None]] = {}
        self._format_cache: dict[str, RunFormat] = {}
        if root is None:
            return
        # Only indexed here; a style is read when a paragraph or run uses it.
        for style in root.iterchildren(_STYLE):
            style_id = style.get(_STYLE_ID)
            if not style_id:
                continue
            self._elements.setdefault(style_id, style)
            if self.default_paragraph is None and style.get(_DEFAULT) in ("1", "true", "on"):
                if style.get(_TYPE, "paragraph") == "paragraph":
                    self.default_paragraph = style_id

    def _style(self, style_id: str) -> _Style | None:
        if style_id in self._styles:
            return self._styles[style_id]
        style = self._elements.get(style_id)
        parsed = _parse_style(style) if style is not None else None
        self._styles[style_id] = parsed
        return parsed

    def _chain(self, style_id: str | None):
        seen = set()
        while style_id and style_id not in seen and len(seen) < 50:
            seen.add(style_id)
            style = self._style(style_id)
            if style is None:
                return
            yield style_id, style
            style_id = style.based_on

    def name(self, style_id: str | None) -> str:
        style = self._style(style_id) if style_id else None
        return style.name if style else (style_id or "").lower()

    def heading_level(self, style_id: str | None) -> int | None:
        """0-based outline level of a paragraph style, None for body text."""
        if style_id is None:
            style_id = self.default_paragraph
        if style_id in self._heading_cache:
            return self._heading_cache[style_id]
        level = None
        for _, style in self._chain(style_id):
            if style.outline is not None:
                level = style.outline
                break
        if level is None:
            for _, style in self._chain(style_id):
                match = _HEADING_NAME.fullmatch(style.name)
                if match:
                    level = int(match.group(1)) - 1
                    break
        if level is None and style_id and style_id not in self._elements:
            # A style the file uses but never defines, such as "Heading2".
            match = _HEADING_NAME.fullmatch(style_id)
            if match:
                level = int(match.group(1)) - 1
        if level is not None and not 0 <= level <= 8:
            level = None
        self._heading_cache[style_id] = level
        return level

    def numbering(self, style_id: str) -> tuple[str | None, int | None]:
        """(numId, ilvl) a paragraph style links to; each inherited separately."""
        if style_id in self._numpr_cache:
            return self._numpr_cache[style_id]
        num_id = ilvl = None
        for _, style in self._chain(style_id):
            if num_id is None and style.num_id is not None:
                num_id = style.num_id
            if ilvl is None and style.ilvl is not None:
                ilvl = style.ilvl
            if num_id is not None and ilvl is not None:
                break
        self._numpr_cache[style_id] = (num_id, ilvl)
        return num_id, ilvl

    def format_of(self, rpr: etree._Element) -> RunFormat:
        """The formatting of a run with this ``w:rPr``: its character style
        (``w:rStyle``, which comes first), then its direct formatting."""
        return _merge(PLAIN, rpr, self)

    def run_format(self, style_id: str | None) -> RunFormat:
        """Formatting a character style applies (base first, then derived)."""
        if not style_id:
            return PLAIN
        cached = self._format_cache.get(style_id)
        if cached is not None:
            return cached
        chain = [style for _, style in self._chain(style_id)]
        fmt = PLAIN
        for style in reversed(chain):
            fmt = fmt.merged(style.rpr)
        self._format_cache[style_id] = fmt
        return fmt
