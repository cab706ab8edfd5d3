"""List labels ("1.", "a)", "iv.", "•", "第一章") simulated in document order.

``w:numPr`` (on the paragraph, or from its style) names a ``w:num``, which
names a ``w:abstractNum`` holding nine levels (start, numFmt, lvlText,
lvlRestart, isLgl). Counters belong to the abstract definition, so two
``w:num`` that share one continue each other unless a ``w:lvlOverride/
w:startOverride`` restarts the count; that is how Word's "continue list" and
"restart numbering" are stored. The label becomes real text in the preview,
as it does in LightRAG's chunks ("1. First step").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from .namespaces import W_VAL, w
from .styles import SYMBOL_FONTS, Styles
from .symbols import symbol_text

_MAX_LEVELS = 9
_PLACEHOLDER = re.compile(r"%[1-9]")
_ROMAN = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
          (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))  # fmt: skip
_CJK_DIGITS = "零一二三四五六七八九"


def _roman(n: int) -> str:
    if not 0 < n < 4000:
        return str(n)
    out = []
    for value, numeral in _ROMAN:
        count, n = divmod(n, value)
        out.append(numeral * count)
    return "".join(out)


def lower_roman(n: int) -> str:
    return _roman(n).lower()


def _letters(n: int) -> str:
    # Word repeats the letter: a … z, aa … zz, aaa … (a hostile start value
    # must not ask for a billion of them).
    if not 0 < n <= 26 * 20:
        return str(n)
    return chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)


def _chinese_counting(n: int) -> str:
    if not 0 < n < 100:
        return str(n)
    tens, ones = divmod(n, 10)
    if tens == 0:
        return _CJK_DIGITS[ones]
    return ("" if tens == 1 else _CJK_DIGITS[tens]) + "十" + (_CJK_DIGITS[ones] if ones else "")


def _enclosed(n: int) -> str:
    return chr(0x2460 + n - 1) if 1 <= n <= 20 else f"({n})"


_FORMATS = {
    "decimal": str,
    "decimalZero": lambda n: f"{n:02d}",
    "lowerLetter": _letters,
    "upperLetter": lambda n: _letters(n).upper(),
    "lowerRoman": lower_roman,
    "upperRoman": _roman,
    "ordinal": lambda n: f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}",
    "chineseCounting": _chinese_counting,
    "chineseCountingThousand": _chinese_counting,
    "japaneseCounting": _chinese_counting,
    "taiwaneseCounting": _chinese_counting,
    "ideographDigital": lambda n: "".join("〇一二三四五六七八九"[int(d)] for d in str(n)) if n > 0 else str(n),
    "ideographTraditional": lambda n: "甲乙丙丁戊己庚辛壬癸"[(n - 1) % 10] if n > 0 else str(n),
    "decimalEnclosedCircle": _enclosed,
    "decimalEnclosedCircleChinese": _enclosed,
    "decimalFullWidth": lambda n: "".join(chr(0xFF10 + int(d)) for d in str(n)),
    "decimalFullWidth2": lambda n: "".join(chr(0xFF10 + int(d)) for d in str(n)),
    "decimalEnclosedParen": lambda n: f"({n})",
    "decimalEnclosedFullstop": lambda n: f"{n}.",
    "none": lambda n: "",
    "bullet": lambda n: "",
}


@dataclass(frozen=True)
class _Level:
    start: int
    fmt: str
    text: str
    restart: int | None  # w:lvlRestart: restart after this 1-based level; 0 = never
    legal: bool
    pstyle: str | None


def _int(el: etree._Element | None, default: int | None = None) -> int | None:
    if el is None:
        return default
    try:
        return int(el.get(W_VAL, ""))
    except ValueError:
        return default


_ABSTRACT_NUM, _ABSTRACT_NUM_ID, _NUM, _NUM_ID = w("abstractNum"), w("abstractNumId"), w("num"), w("numId")
_LVL, _ILVL = w("lvl"), w("ilvl")


def _int_attr(el: etree._Element, name: str) -> int | None:
    try:
        return int(el.get(name, "0"))
    except ValueError:
        return None


def _level(lvl: etree._Element) -> _Level:
    start, fmt, text, restart, legal, pstyle, font, picture = 1, "decimal", "", None, False, None, "", False
    for child in lvl:
        tag = child.tag
        if tag == _START:
            start = _int(child, 1)
        elif tag == _NUM_FMT:
            fmt = child.get(W_VAL, "decimal")
        elif tag == _LVL_TEXT:
            text = child.get(W_VAL, "")
        elif tag == _LVL_RESTART:
            restart = _int(child)
        elif tag == _IS_LGL:
            legal = child.get(W_VAL, "1") not in ("0", "false", "off")
        elif tag == _PSTYLE:
            pstyle = child.get(W_VAL)
        elif tag == _PIC_BULLET:
            picture = True
        elif tag == _RPR:
            for fonts in child.iterchildren(_RFONTS):
                font = (fonts.get(_ASCII) or fonts.get(_HANSI) or "").strip().lower()
    if font in SYMBOL_FONTS:
        text = symbol_text(font, text)
    if picture or (fmt == "bullet" and text and all(0xE000 <= ord(ch) <= 0xF8FF for ch in text)):
        text = "•"
    return _Level(start, fmt, text, restart, legal, pstyle)


_START, _NUM_FMT, _LVL_TEXT, _LVL_RESTART = w("start"), w("numFmt"), w("lvlText"), w("lvlRestart")
_IS_LGL, _PSTYLE, _PIC_BULLET, _RPR, _RFONTS = w("isLgl"), w("pStyle"), w("lvlPicBulletId"), w("rPr"), w("rFonts")
_ASCII, _HANSI = w("ascii"), w("hAnsi")


class Numbering:
    def __init__(self, root: etree._Element | None, styles: Styles):
        self._styles = styles
        # Indexed here, read when a paragraph uses them (templates define hundreds).
        self._abstract_el: dict[str, etree._Element] = {}
        self._num_el: dict[str, etree._Element] = {}
        self._abstract: dict[str, dict[int, etree._Element]] = {}
        self._parsed_levels: dict[tuple[str, int], _Level] = {}
        self._style_link: dict[str, str | None] = {}  # abstractNumId -> numbering style id
        self._num: dict[str, tuple[str, dict[int, tuple[int | None, _Level | None]]]] = {}
        self._counters: dict[str, list[int | None]] = {}
        self._started_nums: set[str] = set()
        self.unsupported: set[str] = set()
        if root is None:
            return
        for el in root:
            if el.tag == _ABSTRACT_NUM:
                abstract_id = el.get(_ABSTRACT_NUM_ID)
                if abstract_id is not None:
                    self._abstract_el.setdefault(abstract_id, el)
            elif el.tag == _NUM:
                num_id = el.get(_NUM_ID)
                if num_id is not None:
                    self._num_el.setdefault(num_id, el)

    def _levels(self, abstract_id: str) -> dict[int, etree._Element]:
        levels = self._abstract.get(abstract_id)
        if levels is not None:
            return levels
        levels = {}
        abstract = self._abstract_el.get(abstract_id)
        link = None
        if abstract is not None:
            for lvl in abstract.iterchildren(_LVL):
                ilvl = _int_attr(lvl, _ILVL)
                if ilvl is not None and 0 <= ilvl < _MAX_LEVELS:
                    levels.setdefault(ilvl, lvl)
            link_el = abstract.find(w("numStyleLink"))
            link = link_el.get(W_VAL) if link_el is not None else None
        self._abstract[abstract_id] = levels
        self._style_link[abstract_id] = link
        return levels

    def _abstract_level(self, abstract_id: str, ilvl: int) -> _Level | None:
        key = (abstract_id, ilvl)
        parsed = self._parsed_levels.get(key)
        if parsed is None:
            lvl = self._levels(abstract_id).get(ilvl)
            if lvl is None:
                return None
            parsed = self._parsed_levels[key] = _level(lvl)
        return parsed

    def _num_def(self, num_id: str) -> tuple[str, dict[int, tuple[int | None, _Level | None]]] | None:
        if num_id in self._num:
            return self._num[num_id]
        num = self._num_el.get(num_id)
        abstract_el = num.find(w("abstractNumId")) if num is not None else None
        if abstract_el is None:
            return None
        overrides = {}
        for override in num.iterchildren(w("lvlOverride")):
            ilvl = _int_attr(override, _ILVL)
            if ilvl is None:
                continue
            lvl = override.find(_LVL)
            overrides[ilvl] = (_int(override.find(w("startOverride"))), _level(lvl) if lvl is not None else None)
        self._num[num_id] = (abstract_el.get(W_VAL, ""), overrides)
        return self._num[num_id]

    def _resolve_abstract(self, num_id: str) -> str | None:
        num = self._num_def(num_id)
        abstract_id = num[0] if num else None
        for _ in range(5):  # numStyleLink -> numbering style -> its num -> the real abstractNum
            if abstract_id is None:
                break
            self._levels(abstract_id)
            link = self._style_link.get(abstract_id)
            linked_num = self._styles.numbering(link)[0] if link else None
            if linked_num is None or linked_num == num_id or self._num_def(linked_num) is None:
                break
            abstract_id = self._num_def(linked_num)[0]
        return abstract_id

    def label(self, numpr: etree._Element | None, style_id: str | None) -> tuple[str, int] | None:
        """(label, level) of a paragraph with this ``w:numPr`` and style,
        advancing the counters; None when the paragraph is not numbered."""
        num_id = ilvl = None
        if numpr is not None:
            for part in numpr:
                if part.tag == _NUM_ID:
                    num_id = part.get(W_VAL)
                elif part.tag == _ILVL:
                    ilvl = _int(part)
        if (num_id is None or ilvl is None) and style_id:
            style_num, style_ilvl = self._styles.numbering(style_id)
            num_id = num_id if num_id is not None else style_num
            ilvl = ilvl if ilvl is not None else style_ilvl
        if num_id is None or num_id == "0":
            return None
        abstract_id = self._resolve_abstract(num_id)
        levels = self._levels(abstract_id) if abstract_id is not None else None
        if not levels:
            return None
        if ilvl is None:
            linked = (i for i in levels if style_id and self._abstract_level(abstract_id, i).pstyle == style_id)
            ilvl = next(linked, 0)
        overrides = self._num_def(num_id)[1]

        def level(i: int) -> _Level | None:
            override = overrides.get(i)
            return override[1] if override and override[1] else self._abstract_level(abstract_id, i)

        current = level(ilvl)
        if current is None or not 0 <= ilvl < _MAX_LEVELS:
            return None
        counters = self._counters.setdefault(abstract_id, [None] * _MAX_LEVELS)
        if num_id not in self._started_nums:
            self._started_nums.add(num_id)
            for i, (start, _) in overrides.items():
                if start is not None and 0 <= i < _MAX_LEVELS:
                    counters[i] = start - 1
        counters[ilvl] = current.start if counters[ilvl] is None else counters[ilvl] + 1
        for deeper in range(ilvl + 1, _MAX_LEVELS):
            if counters[deeper] is None:
                continue
            restart = (level(deeper) or current).restart
            if restart is None or (restart != 0 and ilvl < restart):
                counters[deeper] = None
        for upper in range(ilvl):
            if counters[upper] is None:
                upper_level = level(upper)
                counters[upper] = upper_level.start if upper_level else 1
        return self._format(current, ilvl, counters, level), ilvl

    def _format(self, current: _Level, ilvl: int, counters: list[int | None], level) -> str:
        if current.fmt == "bullet":
            return current.text
        text = current.text
        if "%" not in text:
            return text
        for i in range(ilvl + 1):
            placeholder = f"%{i + 1}"
            if placeholder not in text:
                continue
            lvl = level(i)
            fmt = "decimal" if (current.legal and i < ilvl) or lvl is None else lvl.fmt
            converter = _FORMATS.get(fmt)
            if converter is None:
                self.unsupported.add(fmt)
                converter = str
            text = text.replace(placeholder, converter(counters[i] or 0))
        # A placeholder for a deeper level than this one has no number to show.
        return _PLACEHOLDER.sub("", text) if "%" in text else text
