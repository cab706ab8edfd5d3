"""Characters of symbol fonts as Unicode.

``w:sym`` and runs set in Symbol or Wingdings store a font-specific code,
usually in the private-use range U+F020–U+F0FF (old files use 0x20–0xFF).
Symbol maps completely (Adobe Symbol encoding); for the Wingdings fonts only
the glyphs common in documents (bullets, check boxes, arrows) are mapped and
anything else is shown as the stored character.
"""

_SYMBOL_FONT = dict(
    zip(
        range(0x20, 0x7F),
        " !∀#∃%&∋()∗+,−./0123456789:;<=>?≅ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ[∴]⊥_‾αβχδεφγηιϕκλμνοπθρστυϖωξψζ{|}∼",
        strict=True,
    )
)
_SYMBOL_FONT.update(
    zip(
        range(0xA0, 0xFF),
        "€ϒ′≤⁄∞ƒ♣♦♥♠↔←↑→↓°±″≥×∝∂•÷≠≡≈…⏐⎯↵ℵℑℜ℘⊗⊕∅∩∪⊃⊇⊄⊂⊆∈∉∠∇®©™∏√⋅¬∧∨⇔⇐⇑⇒⇓◊〈®©™∑⎛⎜⎝⎡⎢⎣⎧⎨⎩⎪ 〉∫⌠⎮⌡⎞⎟⎠⎤⎥⎦⎫⎬⎭",
        strict=True,
    )
)

_WINGDINGS = {
    0x21: "✏",
    0x22: "✂",
    0x28: "☎",
    0x2A: "✉",
    0x4A: "☺",
    0x4C: "☹",
    0x6C: "●",
    0x6E: "■",
    0x6F: "□",
    0x71: "❑",
    0x72: "❒",
    0x75: "◆",
    0x76: "❖",
    0x9F: "•",
    0xA7: "▪",
    0xA8: "◻",
    0xD8: "➢",
    0xE0: "→",
    0xE8: "➔",
    0xF0: "⇨",
    0xFB: "✗",
    0xFC: "✓",
    0xFD: "☒",
    0xFE: "☑",
}
_WINGDINGS_2 = {0x4F: "✗", 0x50: "✓", 0x52: "☑", 0x53: "☒", 0x54: "☒", 0x97: "•", 0xA3: "□", 0xA2: "▫"}
_FONTS = {"symbol": _SYMBOL_FONT, "wingdings": _WINGDINGS, "wingdings 2": _WINGDINGS_2}


def symbol_char(font: str, code: int) -> str:
    """The Unicode text for ``code`` in ``font`` (a lower-case font name)."""
    table = _FONTS.get(font)
    low = code - 0xF000 if 0xF000 <= code <= 0xF0FF else code
    if table is not None and low in table:
        return table[low]
    if 0x20 <= code < 0xD800 or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF:
        return chr(code)
    return ""


def symbol_text(font: str, text: str) -> str:
    """A run's text as it looks in a symbol font."""
    return "".join(symbol_char(font, ord(ch)) if ord(ch) >= 0x20 else ch for ch in text)
