"""LaTeX as LightRAG writes it inside ``<equation format="latex">`` → readable text."""

import re

# --- LaTeX → readable text ---------------------------------------------------

_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "omicron": "ο", "pi": "π", "varpi": "ϖ", "rho": "ρ", "varrho": "ϱ", "sigma": "σ", "varsigma": "ς",
    "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ",
    "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
_SYMBOLS = _GREEK | {
    "cdot": "·", "cdotp": "·", "times": "×", "div": "÷", "pm": "±", "mp": "∓", "ast": "∗", "star": "⋆",
    "circ": "∘", "bullet": "•", "leq": "≤", "le": "≤", "leqslant": "≤", "geq": "≥", "ge": "≥", "geqslant": "≥",
    "neq": "≠", "ne": "≠", "approx": "≈", "equiv": "≡", "sim": "∼", "simeq": "≃", "cong": "≅", "propto": "∝",
    "ll": "≪", "gg": "≫", "infty": "∞", "partial": "∂", "nabla": "∇", "sum": "∑", "prod": "∏", "coprod": "∐",
    "int": "∫", "iint": "∬", "iiint": "∭", "oint": "∮", "rightarrow": "→", "to": "→", "leftarrow": "←",
    "gets": "←", "Rightarrow": "⇒", "Leftarrow": "⇐", "leftrightarrow": "↔", "Leftrightarrow": "⇔",
    "longrightarrow": "⟶", "Longrightarrow": "⟹", "implies": "⟹", "iff": "⟺", "mapsto": "↦",
    "uparrow": "↑", "downarrow": "↓", "rightleftharpoons": "⇌", "in": "∈", "notin": "∉", "ni": "∋",
    "subset": "⊂", "subseteq": "⊆", "supset": "⊃", "supseteq": "⊇", "cup": "∪", "cap": "∩", "setminus": "∖",
    "emptyset": "∅", "varnothing": "∅", "forall": "∀", "exists": "∃", "neg": "¬", "lnot": "¬", "land": "∧",
    "wedge": "∧", "lor": "∨", "vee": "∨", "oplus": "⊕", "otimes": "⊗", "cdots": "⋯", "ldots": "…", "dots": "…",
    "vdots": "⋮", "ddots": "⋱", "prime": "′", "degree": "°", "angle": "∠", "perp": "⊥", "parallel": "∥",
    "mid": "∣", "hbar": "ℏ", "ell": "ℓ", "Re": "ℜ", "Im": "ℑ", "aleph": "ℵ", "langle": "⟨", "rangle": "⟩",
    "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋", "vert": "|", "lvert": "|", "rvert": "|",
    "Vert": "‖", "lVert": "‖", "rVert": "‖", "backslash": "\\", "therefore": "∴", "because": "∵",
    "triangle": "△", "square": "□", "colon": ":", "AA": "Å", "dagger": "†", "checkmark": "✓",
    "lbrace": "{", "rbrace": "}", "lbrack": "[", "rbrack": "]", "textdegree": "°", "textperthousand": "‰",
}  # fmt: skip
_FUNCTIONS = frozenset(
    """sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh coth log ln lg exp lim limsup liminf
    max min sup inf det dim ker deg gcd lcm arg Pr hom""".split()
)
_FRACTIONS = frozenset({"frac", "dfrac", "tfrac", "cfrac"})
_TEXT_WRAPPERS = frozenset(
    {"text", "textrm", "textit", "textbf", "textsf", "texttt", "textnormal", "textup", "mbox", "hbox", "emph"}
)
_MATH_WRAPPERS = frozenset(
    {"mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathcal", "mathfrak", "mathscr", "mathnormal",
     "boldsymbol", "bm", "pmb", "displaylines"}
)  # fmt: skip
_DOUBLE_STRUCK = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "P": "ℙ", "E": "𝔼"}
_DELIMITER_SIZES = frozenset(
    {"left", "right", "middle", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr",
     "Biggl", "Biggr", "bigm", "Bigm"}
)  # fmt: skip
_NO_OUTPUT = frozenset(
    {"displaystyle", "textstyle", "scriptstyle", "scriptscriptstyle", "limits", "nolimits", "rm", "bf", "it",
     "sf", "tt", "cal", "nonumber", "notag", "negthinspace", "negmedspace", "negthickspace", "allowbreak",
     "centering", "hline", "cline"}
)  # fmt: skip
_SPACES = frozenset({"quad", "qquad", "enspace", "thinspace", "medspace", "thickspace", "space", "nobreakspace"})
_ONE_ARG_DROPPED = frozenset({"label", "color", "hspace", "vspace", "hskip", "vskip", "phantom", "hphantom"})
_ACCENTS = {
    "hat": "\u0302", "widehat": "\u0302", "bar": "\u0304", "overline": "\u0305", "vec": "\u20d7",
    "overrightarrow": "\u20d7", "dot": "\u0307", "ddot": "\u0308", "tilde": "\u0303", "widetilde": "\u0303",
    "check": "\u030c", "breve": "\u0306", "acute": "\u0301", "grave": "\u0300", "underline": "\u0332",
}  # fmt: skip
_CONTROL_SYMBOLS = {
    ",": " ", ":": " ", ";": " ", ">": " ", " ": " ", "!": "", "\\": "; ", "|": "‖",
    "[": "", "]": "", "(": "", ")": "",
}  # fmt: skip

_SUPERSCRIPT = dict(
    zip(
        "0123456789+-−=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVWβγδθιφχ",
        "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵝᵞᵟᶿᶥᵠᵡ",
        strict=True,
    )
)
_SUBSCRIPT = dict(
    zip("0123456789+-−=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ", strict=True)
)
# Deeper nesting than this is not a formula anyone wrote; it is read flat
# instead of recursing, so hostile input cannot exhaust the stack.
_MAX_LATEX_DEPTH = 40
_SIGNS = "+-−±∓"
_COMMAND_NAME = re.compile(r"[A-Za-z]+")
_TWO_LETTERS = re.compile(r"[^\W\d_]{2}")


def _is_wrapped(text: str) -> bool:
    """True when one pair of brackets encloses the whole text."""
    if len(text) < 2 or text[0] not in "([" or text[-1] not in ")]":
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "(["
        depth -= ch in ")]"
        if depth == 0 and i < len(text) - 1:
            return False
    return depth == 0


def _script(arg: str, marker: str) -> str:
    """``x^2`` → ``x²``: Unicode super/subscripts when every character has
    one, else ``^(…)`` / ``_(…)`` so the meaning survives."""
    arg = arg.strip()
    if not arg:
        return ""
    if arg in ("′", "″", "‴"):
        return arg
    if marker == "^" and arg == "∘":
        return "°"
    table = _SUPERSCRIPT if marker == "^" else _SUBSCRIPT
    if all(ch in table for ch in arg):
        return "".join(table[ch] for ch in arg)
    if len(arg) == 1 or _is_wrapped(arg):
        return marker + arg
    return f"{marker}({arg})"


def _group_for_fraction(part: str, operators: str) -> str:
    body = part[1:] if part[:1] in _SIGNS else part
    if part and not _is_wrapped(part) and any(op in body for op in operators):
        return f"({part})"
    return part


def _fraction(numerator: str, denominator: str) -> str:
    if not numerator and not denominator:
        return ""
    relations = " +-−±∓=<>≤≥≠≈≡,;"
    return f"{_group_for_fraction(numerator, relations)}/{_group_for_fraction(denominator, relations + '/·×÷')}"


def _root(radicand: str, index: str) -> str:
    radicand = radicand.strip()
    simple = len(radicand) <= 1 or re.fullmatch(r"[\d.,]+", radicand) or _is_wrapped(radicand)
    body = radicand if simple else f"({radicand})"
    index = index.strip()
    if index in ("", "2"):
        return "√" + body
    if index in ("3", "4"):
        return ("∛" if index == "3" else "∜") + body
    return f"{body}^(1/{index})"


class _LatexReader:
    """A forgiving reader: every input gives some text, nothing raises."""

    def __init__(self, source: str):
        self.s = source
        self.i = 0

    def _skip_spaces(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def _flat_rest(self, stop_at_brace: bool) -> str:
        end = self.s.find("}", self.i) if stop_at_brace else -1
        end = len(self.s) if end == -1 else end
        text = self.s[self.i : end]
        self.i = min(end + 1, len(self.s))
        return re.sub(r"[{}\\$]", " ", text)

    def sequence(self, depth: int, text_mode: bool, in_group: bool) -> str:
        if depth > _MAX_LATEX_DEPTH:
            return self._flat_rest(in_group)
        out: list[str] = []
        state = {"space": False, "word": False}

        def emit(piece: str, word: bool = False) -> None:
            if not piece:
                return
            tail = "".join(out[-2:])[-2:]
            if state["word"] and piece[0].isalnum():
                out.append(" ")
            elif state["space"] and _TWO_LETTERS.fullmatch(tail) and _TWO_LETTERS.match(piece):
                out.append(" ")
            out.append(piece)
            state["space"] = False
            state["word"] = word

        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == "}":
                self.i += 1
                if in_group:
                    break
                continue  # an unbalanced closing brace: ignored
            if ch.isspace():
                self.i += 1
                if text_mode:
                    out.append(" ")
                    state["word"] = False
                else:
                    state["space"] = True
                continue
            if ch == "{":
                self.i += 1
                emit(self.sequence(depth + 1, text_mode, in_group=True))
            elif ch in "^_":
                self.i += 1
                emit(_script(self.argument(depth, text_mode), ch))
            elif ch == "\\":
                piece, word = self.command(depth, text_mode)
                emit(piece, word)
            elif ch == "$":
                self.i += 1
            elif ch == "&" or ch == "~":
                self.i += 1
                out.append(" ")
                state["word"] = False
            elif (
                state["space"]
                and ch.isalpha()
                and self.i + 1 < len(self.s)
                and self.s[self.i + 1].isalpha()
            ):
                # "Flow rate" typed into an equation keeps its space; "A t" does not.
                self.i += 1
                if _TWO_LETTERS.fullmatch("".join(out[-2:])[-2:]):
                    out.append(" ")
                state["space"] = False
                emit(ch)
            else:
                self.i += 1
                emit("−" if ch == "-" and not text_mode else ch)
        return "".join(out)

    def argument(self, depth: int, text_mode: bool) -> str:
        """The next argument: a braced group, one command, or one character."""
        if depth > _MAX_LATEX_DEPTH:
            return self._flat_rest(stop_at_brace=False)
        while self.i < len(self.s) and (self.s[self.i].isspace() or self.s[self.i] == "$"):
            self.i += 1
        if self.i >= len(self.s):
            return ""
        ch = self.s[self.i]
        if ch == "{":
            self.i += 1
            return self.sequence(depth + 1, text_mode, in_group=True)
        if ch == "\\":
            return self.command(depth + 1, text_mode)[0]
        if ch == "}":
            return ""
        self.i += 1
        return "−" if ch == "-" and not text_mode else ch

    def _optional(self, depth: int) -> str:
        """``[…]`` right after a command (the index of ``\\sqrt[3]``)."""
        self._skip_spaces()
        if self.i < len(self.s) and self.s[self.i] == "[":
            end = self.s.find("]", self.i)
            if end != -1:
                inner = self.s[self.i + 1 : end]
                self.i = end + 1
                return _LatexReader(inner).sequence(depth + 1, False, in_group=False)
        return ""

    def command(self, depth: int, text_mode: bool) -> tuple[str, bool]:
        """Read one ``\\command`` with its arguments: (text, reads as a word)."""
        self.i += 1  # the backslash
        match = _COMMAND_NAME.match(self.s, self.i)
        if not match:
            if self.i >= len(self.s):
                return "", False
            symbol = self.s[self.i]
            self.i += 1
            return _CONTROL_SYMBOLS.get(symbol, symbol), False
        name = match.group()
        self.i = match.end()
        if self.i < len(self.s) and self.s[self.i] == "*":
            self.i += 1

        if name in _SYMBOLS:
            return _SYMBOLS[name], False
        if name in _FUNCTIONS:
            return name, True
        if name in _FRACTIONS:
            return _fraction(self.argument(depth, text_mode), self.argument(depth, text_mode)), False
        if name in ("binom", "dbinom", "tbinom"):
            return f"C({self.argument(depth, text_mode)},{self.argument(depth, text_mode)})", False
        if name == "sqrt":
            index = self._optional(depth)
            return _root(self.argument(depth, text_mode), index), False
        if name in _TEXT_WRAPPERS:
            return self.argument(depth, text_mode=True), False
        if name in _MATH_WRAPPERS:
            return self.argument(depth, text_mode), False
        if name == "operatorname":
            return self.argument(depth, text_mode).strip(), True
        if name == "mathbb":
            arg = self.argument(depth, text_mode)
            return "".join(_DOUBLE_STRUCK.get(ch, ch) for ch in arg), False
        if name in _DELIMITER_SIZES:
            self._skip_spaces()
            if self.i < len(self.s) and self.s[self.i] == ".":
                self.i += 1  # "\left." is an invisible delimiter
            return "", False
        if name in _SPACES:
            return " ", False
        if name in _NO_OUTPUT:
            return "", False
        if name in _ONE_ARG_DROPPED:
            self.argument(depth, text_mode)
            return " ", False
        if name in ("begin", "end"):
            environment = self.argument(depth, text_mode=True).strip()
            if name == "begin" and environment in ("array", "tabular"):
                self.argument(depth, text_mode=True)  # the column spec
            return " ", False
        if name in _ACCENTS:
            arg = self.argument(depth, text_mode)
            return (arg + _ACCENTS[name] if len(arg) == 1 else arg), False
        if name in ("overset", "underset", "stackrel"):
            self.argument(depth, text_mode)  # the annotation above or below
            return self.argument(depth, text_mode), False
        if name in ("xrightarrow", "xleftarrow"):
            self._optional(depth)
            self.argument(depth, text_mode)
            return ("→" if name == "xrightarrow" else "←"), False
        if name == "textcolor":
            self.argument(depth, text_mode)
            return self.argument(depth, text_mode), False
        if name == "tag":
            return f" ({self.argument(depth, text_mode=True).strip()})", False
        if name == "pmod":
            return f" (mod {self.argument(depth, text_mode).strip()})", False
        if name == "bmod":
            return " mod ", False
        # Unknown commands keep their name: a reader can still guess \newton.
        return name, True


def latex_to_text(latex: str) -> str:
    """Readable plain text from LaTeX as LightRAG puts it inside
    ``<equation format="latex">``: ``P=\\frac{ρgQH}{η}`` → ``P=ρgQH/η``,
    ``x^2`` → ``x²``, ``e^{-\\Phi A t}`` → ``e^(−ΦAt)``. Math-mode spaces are
    dropped except between two words; ``-`` becomes ``−``. Never raises:
    unbalanced braces, stray ``$`` and unknown commands degrade to text."""
    if not latex:
        return ""
    text = _LatexReader(latex).sequence(0, text_mode=False, in_group=False)
    return re.sub(r"\s+", " ", text).strip()
