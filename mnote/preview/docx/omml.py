"""Office Math (OMML) as readable linear text.

Joining the ``m:t`` text of an equation loses its structure (∫₀¹x becomes
"01x"). LightRAG converts OMML to LaTeX for its chunks and MNote shows that
LaTeX through ``mnote.text.latex_to_text``; the preview does the same —
OMML → LaTeX here, then the same ``latex_to_text`` — so an equation reads the
same in a citation's evidence text and in the rendered document
(``SNR=S/√(S+B)``, ``∫₀¹x dx``, ``x̂``, ``lim_(x→0)f``).

The LaTeX follows LightRAG's converter where that reads well and departs
from it where ``latex_to_text`` would print command names (``\\lt``,
``\\genfrac``, ``\\underbrace``, ``\\boxed``).
"""

from __future__ import annotations

from lxml import etree

from .namespaces import M, M_VAL, W, m

_MAX_DEPTH = 80

_FUNCTIONS = {
    "sin", "cos", "tan", "cot", "sec", "csc", "sinh", "cosh", "tanh", "coth", "log", "ln", "lg", "exp",
    "min", "max", "lim", "det", "arcsin", "arccos", "arctan", "sup", "inf", "gcd", "deg", "dim", "arg",
}  # fmt: skip
# Other n-ary operators (⋃, ⋀, ∯ …) stay as their character.
_NARY = {"∏": r"\prod", "∐": r"\coprod", "∑": r"\sum", "∫": r"\int", "∬": r"\iint", "∭": r"\iiint", "∮": r"\oint"}
_ACCENTS = {
    "\u0300": r"\grave", "\u0301": r"\acute", "\u0302": r"\hat", "\u0303": r"\tilde", "\u0304": r"\bar",
    "\u0305": r"\overline", "\u0306": r"\breve", "\u0307": r"\dot", "\u0308": r"\ddot", "\u030c": r"\check",
    "\u20d6": r"\overleftarrow", "\u20d7": r"\vec", "\u20e1": r"\overleftrightarrow",
}  # fmt: skip
_BRACKETS = {"{": r"\{", "}": r"\}", "〈": r"\langle", "⟨": r"\langle", "〉": r"\rangle", "⟩": r"\rangle", "‖": r"\|"}
# "&" is left alone: in OMML it marks an alignment point, which LaTeX reads as a space too.
_TEXT_ESCAPES = str.maketrans({"{": r"\{", "}": r"\}", "\\": "∖", "%": r"\%", "$": r"\$", "#": r"\#", "^": r"\^",
                               "_": r"\_", "~": "∼"})  # fmt: skip

_T, _WT, _E = m("t"), f"{{{W}}}t", m("e")


def _local(el: etree._Element) -> str:
    tag = el.tag
    if not isinstance(tag, str) or not tag.startswith(f"{{{M}}}"):
        return ""
    return tag[len(M) + 2 :]


def _prop(el: etree._Element, pr: str, name: str) -> str | None:
    """The m:val of ``el/m:{pr}/m:{name}``; "" for a present element without a value."""
    props = el.find(m(pr))
    if props is None:
        return None
    child = props.find(m(name))
    if child is None:
        return None
    return child.get(M_VAL, "")


def _on(value: str | None) -> bool:
    return value is not None and value not in ("0", "off", "false")


class _Converter:
    def __init__(self) -> None:
        self.depth = 0

    def children(self, el: etree._Element) -> str:
        if self.depth > _MAX_DEPTH:
            return "".join(el.itertext())
        self.depth += 1
        try:
            return "".join(self.node(child) for child in el)
        finally:
            self.depth -= 1

    def part(self, el: etree._Element, name: str) -> str:
        child = el.find(m(name))
        return self.children(child) if child is not None else ""

    def node(self, el: etree._Element) -> str:
        local = _local(el)
        if not local:
            # Word text inside math (w:r/w:t) is shown as written.
            if el.tag == _WT:
                return (el.text or "").translate(_TEXT_ESCAPES)
            return self.children(el) if el.tag == f"{{{W}}}r" else ""
        handler = _HANDLERS.get(local)
        if handler is not None:
            return handler(self, el)
        if local.endswith("Pr"):
            return ""
        return self.children(el)

    def t(self, el):
        return (el.text or "").translate(_TEXT_ESCAPES)

    def r(self, el):
        return "".join(self.t(child) if child.tag in (_T, _WT) else "" for child in el)

    def f(self, el):
        num, den = self.part(el, "num"), self.part(el, "den")
        if _prop(el, "fPr", "type") == "noBar":
            return rf"\begin{{matrix}} {num} \\ {den} \end{{matrix}}"
        return rf"\frac{{{num}}}{{{den}}}"

    def s_sub(self, el):
        return f"{{{self.part(el, 'e')}}}_{{{self.part(el, 'sub')}}}"

    def s_sup(self, el):
        return f"{{{self.part(el, 'e')}}}^{{{self.part(el, 'sup')}}}"

    def s_sub_sup(self, el):
        return f"{{{self.part(el, 'e')}}}_{{{self.part(el, 'sub')}}}^{{{self.part(el, 'sup')}}}"

    def s_pre(self, el):
        return f"{{}}_{{{self.part(el, 'sub')}}}^{{{self.part(el, 'sup')}}}{{{self.part(el, 'e')}}}"

    def rad(self, el):
        degree = "" if _on(_prop(el, "radPr", "degHide")) else self.part(el, "deg").strip()
        body = self.part(el, "e")
        return rf"\sqrt[{degree}]{{{body}}}" if degree else rf"\sqrt{{{body}}}"

    def nary(self, el):
        char = _prop(el, "naryPr", "chr") or "∫"
        text = _NARY.get(char, char)
        sub = "" if _on(_prop(el, "naryPr", "subHide")) else self.part(el, "sub")
        sup = "" if _on(_prop(el, "naryPr", "supHide")) else self.part(el, "sup")
        if sub:
            text += f"_{{{sub}}}"
        if sup:
            text += f"^{{{sup}}}"
        return text + "{" + self.part(el, "e") + "}"

    def d(self, el):
        beg = _prop(el, "dPr", "begChr")
        end = _prop(el, "dPr", "endChr")
        sep = _prop(el, "dPr", "sepChr")
        beg = "(" if beg is None else beg
        end = ")" if end is None else end
        sep = "|" if sep is None else sep
        body = sep.join(self.children(e) for e in el.findall(_E))
        left = _BRACKETS.get(beg, beg) if beg else "."
        right = _BRACKETS.get(end, end) if end else "."
        return rf"\left{left} {body} \right{right}"

    def func(self, el):
        name_el = el.find(m("fName"))
        sub = sup = ""
        name = ""
        if name_el is not None:
            inner = next((c for c in name_el if _local(c) in ("limLow", "limUpp", "sSub", "sSup")), None)
            if inner is not None and _local(inner) in ("limLow", "sSub"):
                name, sub = self.part(inner, "e"), self.part(inner, "lim" if _local(inner) == "limLow" else "sub")
            elif inner is not None:
                name, sup = self.part(inner, "e"), self.part(inner, "lim" if _local(inner) == "limUpp" else "sup")
            else:
                name = self.children(name_el)
        stripped = name.strip()
        head = f"\\{stripped}" if stripped in _FUNCTIONS else rf"\operatorname{{{stripped}}}"
        if sub:
            head += f"_{{{sub}}}"
        if sup:
            head += f"^{{{sup}}}"
        return head + "{" + self.part(el, "e") + "}"

    def lim_low(self, el):
        base = self.part(el, "e").strip()
        head = f"\\{base}" if base in _FUNCTIONS else f"{{{base}}}"
        return f"{head}_{{{self.part(el, 'lim')}}}"

    def lim_upp(self, el):
        return f"{{{self.part(el, 'e')}}}^{{{self.part(el, 'lim')}}}"

    def acc(self, el):
        char = _prop(el, "accPr", "chr")
        command = _ACCENTS.get(char if char is not None else "\u0302", r"\hat")
        return f"{command}{{{self.part(el, 'e')}}}"

    def bar(self, el):
        command = r"\underline" if _prop(el, "barPr", "pos") == "bot" else r"\overline"
        return f"{command}{{{self.part(el, 'e')}}}"

    def group_chr(self, el):
        char = _prop(el, "groupChrPr", "chr")
        body = self.part(el, "e")
        if char and char in "←→↔⇐⇒⇔":
            return f"{char}^{{{body}}}"
        return body

    def eq_arr(self, el):
        return r"\begin{matrix} " + r" \\ ".join(self.children(e) for e in el.findall(_E)) + r" \end{matrix}"

    def matrix(self, el):
        rows = [" & ".join(self.children(e) for e in row.findall(_E)) for row in el.findall(m("mr"))]
        return r"\begin{matrix} " + r" \\ ".join(rows) + r" \end{matrix}"

    def phant(self, el):
        return "" if _prop(el, "phantPr", "show") in ("0", "off", "false") else self.part(el, "e")


_HANDLERS = {
    "t": _Converter.t,
    "r": _Converter.r,
    "f": _Converter.f,
    "sSub": _Converter.s_sub,
    "sSup": _Converter.s_sup,
    "sSubSup": _Converter.s_sub_sup,
    "sPre": _Converter.s_pre,
    "rad": _Converter.rad,
    "nary": _Converter.nary,
    "d": _Converter.d,
    "func": _Converter.func,
    "limLow": _Converter.lim_low,
    "limUpp": _Converter.lim_upp,
    "acc": _Converter.acc,
    "bar": _Converter.bar,
    "groupChr": _Converter.group_chr,
    "eqArr": _Converter.eq_arr,
    "m": _Converter.matrix,
    "phant": _Converter.phant,
}


def omml_to_latex(el: etree._Element) -> str:
    """LaTeX for an ``m:oMath`` (or any OMML element)."""
    return _Converter().children(el).strip()


def omml_to_text(el: etree._Element) -> tuple[str, str]:
    """(readable linear text, LaTeX) for an ``m:oMath``."""
    latex = omml_to_latex(el)
    # Imported here: most documents have no equation, and ``mnote.text``
    # (every text helper, with their regular expressions) would be most of
    # the preview child's start-up for them.
    from mnote.text import latex_to_text

    return latex_to_text(latex), latex
