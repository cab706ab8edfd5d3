"""A short snippet of a quote for a list ("Recently cited"): whole words at
both ends, no Markdown table pipes or rules, heading marks or emphasis."""

_MARKS = ("**", "__", "`")


def _row_text(line: str) -> str:
    stripped = line.strip()
    if "|" not in stripped:
        return stripped
    cells = [cell.strip() for cell in stripped.strip("|").split("|")]
    return " · ".join(cell for cell in cells if cell)


def _is_rule(line: str) -> bool:
    # A Markdown table's rule row: "|---|:--:|" (pipes, dashes, colons only).
    stripped = line.strip()
    return "-" in stripped and set(stripped) <= set("|-: ")


def plain_text(quote: str) -> str:
    lines = []
    for line in quote.splitlines():
        if _is_rule(line):
            continue
        line = line.lstrip()
        while line.startswith("#"):
            line = line[1:]
        lines.append(_row_text(line))
    text = " ".join(" ".join(lines).split())
    for mark in _MARKS:
        text = text.replace(mark, "")
    return text


def snippet(quote: str, limit: int = 110) -> str:
    """``quote`` as at most about ``limit`` characters of plain text. A quote
    that starts inside a word (a chunk's cut) starts at the next word, after
    an ellipsis; a long one ends at a word's end, with an ellipsis."""
    text = plain_text(quote)
    if text[:1].isascii() and text[:1].islower():
        space = text.find(" ")
        if 0 < space <= 25:
            text = "…" + text[space + 1 :]
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:·") + "…"
