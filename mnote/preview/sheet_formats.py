"""A spreadsheet cell's number as Excel shows it: dates, and the common
number formats (percent, fixed and optional decimals, thousands separators,
scientific, literal text around the digits, a section for negatives)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

# Built-in number formats that are dates (ECMA-376 18.8.30).
_DATE_FORMATS = set(range(14, 23)) | {45, 46, 47}
# Built-in number formats that are not dates (ECMA-376 18.8.30); 0 is General.
_BUILTIN_FORMATS = {
    1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00", 9: "0%", 10: "0.00%", 11: "0.00E+00", 37: "#,##0", 38: "#,##0",
    39: "#,##0.00", 40: "#,##0.00", 48: "##0.0E+0",
}  # fmt: skip
# A number format's digits: "0", "#,##0.00", "0.0": one run of placeholders.
_DIGITS = re.compile(r"[0#?][0#?,]*(?:\.[0#?]*)?|\.[0#?]+")
# What a format writes around its digits: "quoted text", [$€-407] currency, [Red]
# colours and conditions, \x escaped characters, _x spaces and *x fills.
_FORMAT_NOISE = re.compile(r'"([^"]*)"|\[\$([^\]-]*)[^\]]*\]|\[[^\]]*\]|\\(.)|_.|\*.')
EPOCH = datetime(1899, 12, 30)
EPOCH_1904 = datetime(1904, 1, 1)
DATE = "date"
TIME = "time"  # a time of day: the date part is not shown
ELAPSED = "elapsed"  # [h]:mm:ss, a duration: hours past 24 are shown
# Built-in number formats that are times (ECMA-376 18.8.30), and [h]:mm:ss.
_TIME_FORMATS = {18, 19, 20, 21, 45, 47}
_ELAPSED_FORMATS = {46}


def number_styles(root, ns: str) -> dict[int, str]:
    """Cell style index → ``DATE`` or the number format code to apply (General
    left out), from a workbook's parsed styles part (or None)."""
    if root is None:
        return {}
    codes: dict[int, str] = dict(_BUILTIN_FORMATS)
    for fmt in root.iter(f"{{{ns}}}numFmt"):
        code = fmt.get("formatCode", "")[:255]
        bare = _FORMAT_NOISE.sub("", code).lower()
        fmt_id = int(fmt.get("numFmtId", "-1") or -1)
        if any(ch in bare for ch in "dy"):
            codes[fmt_id] = DATE
        elif "h" in bare or "s" in bare:
            codes[fmt_id] = ELAPSED if "[h" in code.lower() else TIME
        elif code.lower() != "general":
            codes[fmt_id] = code
    for fmt_id in _DATE_FORMATS:
        codes[fmt_id] = TIME if fmt_id in _TIME_FORMATS else ELAPSED if fmt_id in _ELAPSED_FORMATS else DATE
    xfs = root.find(f"{{{ns}}}cellXfs")
    found = {}
    for i, xf in enumerate(xfs if xfs is not None else []):
        code = codes.get(int(xf.get("numFmtId", "0") or 0))
        if code:
            found[i] = code
    return found


def formatted(number: float, code: str) -> str | None:
    """``number`` shown as Excel shows it under ``code``: percent, fixed
    decimals, thousands separators, scientific, literal text around it; None
    for what this does not read (fractions, conditions), shown as General."""
    sections = code.split(";")
    section = sections[1] if number < 0 and len(sections) > 1 and sections[1] else sections[0]
    if number < 0 and len(sections) > 1 and sections[1]:
        number = -number  # the negative section writes its own sign or brackets
    if "/" in section or section.startswith("[") and section[1:2] in "<>=":
        return None
    pieces: list[str] = []
    position = 0
    for m in _FORMAT_NOISE.finditer(section):
        pieces.append(section[position : m.start()])
        pieces.append("\x00" + (m.group(1) or m.group(2) or m.group(3) or "").replace("%", "\x01") + "\x00")
        position = m.end()
    pieces.append(section[position:])
    plain = "".join(pieces)
    outside = "".join(plain.split("\x00")[0::2])  # what is not literal text
    digits = _DIGITS.search(outside)
    if digits is None:
        return None
    core = digits.group(0)
    percent = outside.count("%")
    value = number * 100**percent
    whole, _dot, fraction = core.partition(".")
    places = sum(1 for ch in fraction if ch in "0#?")
    scientific = outside[digits.end() : digits.end() + 2].upper() in ("E+", "E-")
    if scientific:
        shown = f"{value:.{places}E}"
    else:
        thousands = "," in whole.strip(",")
        # Trailing commas scale by a thousand ("#,##0," shows thousands).
        value /= 1000 ** (len(whole) - len(whole.rstrip(",")))
        shown = f"{value:,.{places}f}" if thousands else f"{value:.{places}f}"
        required = fraction.count("0")  # "0.0#": one place always, a second if it is not 0
        for _optional in range(places - required):
            if not shown.endswith("0"):
                break
            shown = shown[:-1]
        if shown.endswith("."):
            shown = shown[:-1]
    # The literal text (quoted, [$€-407], \x) around the digits, in place.
    before, after = plain[: plain.find(core)] if core in plain else "", ""
    if core in plain:
        after = plain[plain.find(core) + len(core) :]
        if scientific:
            after = after[2:].lstrip("0+-")
    text = before + shown + after
    return text.replace("\x00", "").replace("\x01", "%").strip() or shown


def number_text(value: str, code: str | None, epoch: datetime = EPOCH) -> str:
    try:
        number = float(value)
    except ValueError:
        return value
    if code in (TIME, ELAPSED) and 0 <= number < 2_958_466:
        seconds = round(number * 86_400)
        hours, rest = divmod(seconds, 3_600)
        return f"{hours if code == ELAPSED else hours % 24}:{rest // 60:02d}:{rest % 60:02d}"
    if code and code not in (DATE, TIME, ELAPSED) and abs(number) < 1e300:
        shown = formatted(number, code)
        if shown:
            return shown
    if code == DATE and 0 < number < 2_958_466:
        moment = epoch + timedelta(days=number)
        return moment.strftime("%Y-%m-%d %H:%M:%S") if number % 1 else moment.strftime("%Y-%m-%d")
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.15g}"
