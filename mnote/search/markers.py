"""The LLM's own reference markers in an answer: the ones to strip (`[1]`,
`[KG]`, a trailing References list) and MNote's `[ref:<chunk_id>]` ones,
mapped to citation ids. Pure functions, no Django."""

import re

_NUMBER = r"\^?[1-9]\d{0,2}"
_NUMBER_LIST = rf"{_NUMBER}(?:\s*(?:[,，;；、]|[-–—])\s*{_NUMBER})*"
_NUMBER_PREFIX = r"(?:(?:source|doc|document|reference|citation)\s*(?:#\s*)?)?"
# Only brackets holding nothing but reference numbers: `[x0, y0]`, `[0, 1]`
# (an interval) or `[a]` are content, never touched. The spaces before a marker
# go with it; "(?<![ \t])" tries them from the start of their run only (a search
# starting at every space of a long run was quadratic: 13 s for 20,000 spaces).
_NUMERIC_MARKER = re.compile(
    rf"(?<![ \t])[ \t]*(?:\[\s*{_NUMBER_PREFIX}{_NUMBER_LIST}\s*\](?:\(#?[^)\s]*\))?"
    rf"|【\s*{_NUMBER_LIST}\s*】|［\s*{_NUMBER_LIST}\s*］)",
    re.IGNORECASE,
)
_LIGHTRAG_MARKER = re.compile(r"(?<![ \t])[ \t]*\[(?:KG|DC)(?:\s*[,/|]\s*(?:KG|DC))*\]")
_FOOTNOTE_DEFINITION = re.compile(r"^[ \t]*\[\^\d{1,3}\]:.*(?:\n|$)", re.MULTILINE)
_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.DOTALL)

_REFERENCE_WORDS = (
    r"references?|sources?|citations?|bibliography|works\s+cited"
    r"|参考文献|参考资料|参考来源|引用|引用来源|引用文献|资料来源|来源"
)
_BOLD = r"(?:\*\*|__)?"
_REFERENCE_HEADING = re.compile(
    rf"^[ \t]*(?:#{{1,6}}[ \t]*)?{_BOLD}[ \t]*(?:{_REFERENCE_WORDS})[ \t]*{_BOLD}"
    rf"(?:[ \t]*(?P<colon>[:：])[ \t]*{_BOLD}(?P<rest>[^\n]*))?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_REFERENCE_ITEM = re.compile(
    r"^\s*(?:[-*+•]\s|\d{1,3}[.)]\s|\[\^?\d{1,3}\]|【\d{1,3}】|\[(?:KG|DC)\]|\[ref:)", re.IGNORECASE
)
_RULE_LINE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")


def _without_reference_section(text: str) -> str:
    """Cut a trailing "References"/"参考文献" heading and the list after it.

    Only when nothing but list items follows: a "Sources of error" paragraph
    or a heading followed by prose is the answer itself.
    """
    for heading in _REFERENCE_HEADING.finditer(text):
        if heading.group("rest") and not heading.group("colon"):
            continue
        after = text[heading.end() :].splitlines()
        if all(not line.strip() or _REFERENCE_ITEM.match(line) or _RULE_LINE.match(line) for line in after):
            kept = text[: heading.start()].rstrip().splitlines()
            while kept and (not kept[-1].strip() or _RULE_LINE.match(kept[-1])):
                kept.pop()
            return "\n".join(kept)
    return text


def _outside_code(text: str, clean) -> str:
    """Apply ``clean`` to the prose only; code samples keep their brackets."""
    parts, last = [], 0
    for code in _CODE.finditer(text):
        parts.append(clean(text[last : code.start()]))
        parts.append(code.group())
        last = code.end()
    parts.append(clean(text[last:]))
    return "".join(parts)


def _strip_inline_markers(prose: str) -> str:
    prose = _FOOTNOTE_DEFINITION.sub("", prose)
    prose = _NUMERIC_MARKER.sub("", prose)
    return _LIGHTRAG_MARKER.sub("", prose)


def strip_llm_markers(text: str) -> str:
    """Remove the LLM's own reference markers and trailing reference list.

    Removed: `[1]`, `[1, 2]`, `[1-3]`, `[1][2]`, `[^1]` (and footnote
    definitions), `【1】`, `[Source 1]`, LightRAG's `[KG]`/`[DC]`, and a final
    References/Sources/参考文献/引用 section. Kept: any bracket with other
    content (`[x0, y0]`, `[ref:…]`), `(1)`, and everything inside code.
    """
    text = _without_reference_section(text)
    text = _outside_code(text, _strip_inline_markers)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# One unbounded run, inside the brackets; the spaces around it and before the
# marker are stripped in Python ("\s*" on each side of a lazy run, and a leading
# "[ \t]*" retried at every space, made an unclosed "[ref:" quadratic or worse).
_REF_MARKER = re.compile(r"\[ref:([^\[\]]*)\]", re.IGNORECASE)


def map_ref_markers(text: str, citation_by_chunk: dict[str, str]) -> tuple[str, dict[int, list[str]]]:
    """Take `[ref:<chunk_id>]` markers out of ``text``.

    Returns the text without them and, for each place a marker stood (a
    character offset into the returned text), the citation ids its chunk ids
    map to. `[ref:a, b]` names several chunks; unknown chunk ids are dropped.
    """
    kept: list[str] = []
    refs: dict[int, list[str]] = {}
    length = last = 0
    for marker in _REF_MARKER.finditer(text):
        before = text[last : marker.start()].rstrip(" \t")
        kept.append(before)
        length += len(before)
        last = marker.end()
        for chunk_id in re.split(r"[,;，；\s]+", marker.group(1).strip()):
            chunk_id = re.sub(r"^ref:", "", chunk_id, flags=re.IGNORECASE)
            citation_id = citation_by_chunk.get(chunk_id)
            if citation_id and citation_id not in refs.get(length, []):
                refs.setdefault(length, []).append(citation_id)
    kept.append(text[last:])
    return "".join(kept), refs


def _numbers(marker: str) -> list[str]:
    found: list[str] = []
    for first, last in re.findall(r"(\d+)(?:\s*[-–—]\s*(\d+))?", marker):
        if last and 0 < int(last) - int(first) < 10:
            found.extend(str(n) for n in range(int(first), int(last) + 1))
        else:
            found.extend(n for n in (first, last) if n)
    return found


def _numeric_to_ref(prose: str) -> str:
    """`[1, 2]` → `[ref:#1 #2]`, so LightRAG's reference markers survive
    cleaning with their place; `#n` is resolved per sentence later."""
    prose = _FOOTNOTE_DEFINITION.sub("", prose)
    return _NUMERIC_MARKER.sub(lambda m: "[ref:" + " ".join("#" + n for n in _numbers(m.group())) + "]", prose)
