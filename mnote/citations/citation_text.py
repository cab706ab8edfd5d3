"""The one place where citation text is cleaned (the contract's "text bundle").

LightRAG chunks and sidecar blocks carry markup: ``<equation format="latex">``,
``<drawing …/>``, ``<table format="json|html">``, ``<sup>``/``<sub>``, ``#``
heading markers, and tags cut in half where a chunk boundary fell inside them.
From that raw text this module makes:

- the display quote (``clean_display_text`` + ``ensure_query_terms``),
- the locator evidence text (``evidence_window``),
- the de-duplication fingerprint (``fingerprint``),
- MNote's own lexical score and the term marks templates render.

Term matching is the same everywhere: text and query are compared after NFKC
and casefolding (so ``m³`` matches ``m3`` and full-width letters match ASCII);
a Latin term must start a word and may be a prefix of it (``mirror`` finds
``mirrors``, ``re`` does not match inside ``three``); a CJK term matches
anywhere, since CJK text has no spaces.

Pure functions, no Django.
"""

import hashlib
import html
import json
import re
import unicodedata
from functools import lru_cache

import lxml.etree
import lxml.html

# --- characters and terms ---------------------------------------------------

# Headings LightRAG's parsers invent for text before a document's first real
# heading (its docx, markdown, MinerU and Docling parsers all use this one).
# They are not in the file: never evidence text, never a heading path.
SYNTHETIC_HEADINGS = frozenset({"Preface/Uncategorized"})


def is_real_heading(heading: str) -> bool:
    return bool(heading and heading.strip()) and heading.strip() not in SYNTHETIC_HEADINGS


_CJK_CLASS = "\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0003ffff"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_WORD_TOKEN = re.compile(r"[^\W_]+")

_STOPWORDS = frozenset(
    """
    an the and or but if of in on at to for from by with without as is are was were be been being am
    it its this that these those there here what which who whom whose when where why how does do did
    has have had not no nor so than then too very can could should would will shall may might must
    into onto about over under between after before such any all each some me my we our you your he
    his she her they them their us i
    """.split()
)


def _is_cjk(ch: str) -> bool:
    return bool(_CJK_RUN.fullmatch(ch))


def _is_latin_word_char(ch: str) -> bool:
    return ch.isalnum() and not _is_cjk(ch)


@lru_cache(maxsize=512)
def _fold(text: str) -> tuple[str, tuple[int, ...]]:
    """NFKC + casefold, with each folded character's index in ``text``.

    Folding one character at a time keeps the map exact; it differs from
    folding the whole string only for rare combining sequences.
    """
    if text.isascii():
        return text.lower(), tuple(range(len(text)))
    # Most text is already NFKC and keeps its length when casefolded: then the
    # map is the identity and the per-character loop can be skipped.
    if unicodedata.is_normalized("NFKC", text):
        whole = text.casefold()
        if len(whole) == len(text):
            return whole, tuple(range(len(text)))
    folded: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        for f in unicodedata.normalize("NFKC", ch).casefold():
            folded.append(f)
            origin.append(i)
    return "".join(folded), tuple(origin)


@lru_cache(maxsize=256)
def _primary_terms(query: str) -> tuple[str, ...]:
    """The words the user typed: Latin-script words and whole CJK runs
    (cached: the mapper asks for the same query's terms a hundred times)."""
    folded, _ = _fold(query or "")
    terms: list[str] = []
    for token in _WORD_TOKEN.findall(folded):
        pos = 0
        for run in _CJK_RUN.finditer(token):
            terms.append(token[pos : run.start()])
            terms.append(run.group())
            pos = run.end()
        terms.append(token[pos:])
    kept = [t for t in terms if t and (_is_cjk(t[0]) or (len(t) >= 2 and t not in _STOPWORDS))]
    return tuple(dict.fromkeys(kept))


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def query_terms(query: str) -> list[str]:
    """Lowercase Latin words (≥ 2 characters, no stopwords) and, for each CJK
    run, the run itself followed by its character bigrams; no duplicates."""
    terms: list[str] = []
    for term in _primary_terms(query):
        terms.append(term)
        if _is_cjk(term[0]):
            terms.extend(_bigrams(term))
    return list(dict.fromkeys(terms))


def _find(folded: str, term: str) -> list[tuple[int, int]]:
    """Spans of ``term`` in folded text, under the module's matching rule."""
    spans = []
    latin = not _is_cjk(term[0])
    start = folded.find(term)
    while start != -1:
        if not (latin and start > 0 and _is_latin_word_char(folded[start - 1])):
            spans.append((start, start + len(term)))
        start = folded.find(term, start + 1)
    return spans


def _contains(text: str, term: str) -> bool:
    return bool(_find(_fold(text)[0], term))


def _matching_terms(folded: str, query: str) -> list[str]:
    """Terms to look for in one text: a CJK run where the text has it whole,
    else its bigrams, so a partial CJK match still counts for something."""
    terms: list[str] = []
    for term in _primary_terms(query):
        if _is_cjk(term[0]) and len(term) > 2 and not _find(folded, term):
            terms.extend(_bigrams(term))
        else:
            terms.append(term)
    return list(dict.fromkeys(terms))


def _term_spans(text: str, query: str) -> list[tuple[int, int, str]]:
    """(start, end, term) of every match in ``text``'s own coordinates."""
    folded, origin = _fold(text)
    spans = []
    for term in _matching_terms(folded, query):
        spans.extend((origin[s], origin[e - 1] + 1, term) for s, e in _find(folded, term))
    spans.sort()
    return spans


def _first_span(text: str, term: str) -> tuple[int, int] | None:
    folded, origin = _fold(text)
    found = _find(folded, term)
    return (origin[found[0][0]], origin[found[0][1] - 1] + 1) if found else None


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


# --- raw chunk → display text ------------------------------------------------

_HEADING_MARK = re.compile(r"(?m)^[ \t]*#{1,6}(?:[ \t]+|$)")
# A chunk that begins inside a tag: `ion>`, `at="latex">`, `png" src="" />`.
_LEADING_TAG_TAIL = re.compile(r"""\A(?:[\w:-]*(?:="[^"<>]*")?|[^"<>\n]*")(?:\s+[\w:-]+="[^"<>]*")*(?:\s*/>|>)""")
_ORPHAN_CLOSE = re.compile(r"</(equation|table)\s*>", re.I)
# Markup that stays meaningful inside a table cell. An unclosed equation ends
# at a blank line or the next LightRAG tag; LaTeX holds neither.
_CELL_MARKUP = r"""
      <equation\b[^>]*>(?P<equation>.*?)(?:</equation\s*>|(?=\n\s*\n|<(?:equation|table|drawing)\b)|\Z)
    | <drawing\b[^>]*?/>
    | <drawing\b[^>]*>(?:[^<]*</drawing\s*>)?
    | <(?P<script_tag>sup|sub)>(?P<script>[^<]*)</(?P=script_tag)\s*>
"""
_INNER_MARKUP = re.compile(_CELL_MARKUP, re.S | re.I | re.X)
_MARKUP = re.compile(
    _CELL_MARKUP
    + r"""
    | <table\b(?P<table_attrs>[^>]*)>
    | <!--.*?(?:-->|\Z)
    | <!\[CDATA\[(?P<cdata>.*?)(?:\]\]>|\Z)
    | </?(?P<tag>[a-z][\w:.-]*)(?P<attrs>\s[^<>]*)?/?>
    | </?(?:equation|table|drawing|sup|sub|tr|td|th|p|br|div|span)\b[^<>]*(?=<)
    | <[a-z/!?][^<>]*\Z
    | <\s*\Z
    """,
    re.S | re.I | re.X,
)
_TABLE_EDGE = re.compile(r"<(/?)table\b[^>]*>", re.I)


def _table_end(text: str, start: int) -> tuple[int, int]:
    """(end of body, end of closing tag) of a table whose body starts at
    ``start``; nested tables are counted, a missing close runs to the end."""
    depth = 1
    for edge in _TABLE_EDGE.finditer(text, start):
        depth += -1 if edge.group(1) else 1
        if depth == 0:
            return edge.start(), edge.end()
    return len(text), len(text)


_INLINE_TAGS = frozenset(
    {"a", "b", "i", "u", "s", "em", "strong", "span", "small", "big", "font", "code", "mark", "abbr", "sup",
     "sub", "ins", "del", "strike", "tt", "kbd", "var", "cite", "q", "bdi", "bdo", "wbr"}
)  # fmt: skip
_HTML_PARSER = lxml.html.HTMLParser(no_network=True, remove_comments=True, remove_pis=True)


def _json_cell(cell: object) -> str:
    """A cell's text; a nested list or object is read flat, without recursion."""
    texts: list[str] = []
    pending = [cell]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(reversed(item))
        elif isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif item is not None:
            texts.append(str(item))
    return " ".join(texts)


def _rows_text(rows: list[list[str]]) -> str:
    cleaned = ([clean_display_text(cell) for cell in row] for row in rows)
    lines = [" | ".join(c for c in row if c) for row in cleaned]
    return "; ".join(line for line in lines if line)


def _json_table_text(body: str) -> str:
    try:
        rows = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        rows = None
    if isinstance(rows, list):
        return _rows_text([[_json_cell(c) for c in (row if isinstance(row, list) else [row])] for row in rows])
    # Cut by the chunk boundary: take the quoted cells that are there.
    cut_rows = []
    for row in re.split(r"\]\s*,\s*\[", body):
        cells = re.findall(r'"((?:[^"\\]|\\.)*)"|"([^"]*)\Z', row)
        cut_rows.append([_json_unquote(closed) if closed else open_ for closed, open_ in cells])
    if any(cut_rows):
        return _rows_text(cut_rows)
    return " ".join(re.sub(r'[\[\]",]', " ", body).split())


def _json_unquote(cell: str) -> str:
    try:
        return json.loads(f'"{cell}"')
    except ValueError:
        return cell


def _html_table_text(body: str) -> str:
    # Equations and scripts become text first (escaped again, since lxml
    # unescapes), so cells never go back through the cleaner: a table nested
    # thousands deep costs one parse, not one per level.
    body = _INNER_MARKUP.sub(lambda m: html.escape(_markup_text(m)), body)
    try:
        table = lxml.html.fragment_fromstring(f"<table>{body}</table>", parser=_HTML_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return ""
    rows = []
    for tr in table.iter("tr"):
        if next(tr.iterancestors("table"), None) is not table:
            continue  # a nested table's text comes with the cell holding it
        rows.append([" ".join(" ".join(cell.itertext()).split()) for cell in tr if cell.tag in ("td", "th")])
    if not any(rows):
        return " ".join(" ".join(table.itertext()).split())
    lines = (" | ".join(cell for cell in row if cell) for row in rows)
    return "; ".join(line for line in lines if line)


def _table_text(attrs: str, body: str) -> str:
    declared = re.search(r"""format\s*=\s*["']?(\w+)""", attrs or "")
    looks_like_json = body.lstrip().startswith("[") or ("<" not in body and re.search(r'["\]]', body))
    kind = declared.group(1).lower() if declared else ("json" if looks_like_json else "html")
    return _json_table_text(body) if kind == "json" else _html_table_text(body)


def _equation_text(body: str) -> str:
    return latex_to_text(html.unescape(body))


def _markup_text(m: re.Match) -> str:
    found = m.groupdict()
    if found["equation"] is not None:
        return _equation_text(found["equation"])
    if found["script"] is not None:
        marker = "^" if found["script_tag"].lower() == "sup" else "_"
        return _script(html.unescape(found["script"]), marker)
    if found.get("cdata") is not None:
        return found["cdata"]
    if found.get("tag") is not None:
        attrs = found["attrs"]
        if attrs and "=" not in attrs and attrs.strip() not in ("", "/"):
            return html.unescape(m.group())  # "a <b and c> d" is prose, not a tag
        return "" if found["tag"].lower() in _INLINE_TAGS else " "
    return " "


# Word list bullets set in Symbol or Wingdings reach the text as private-use
# code points that show as □; these are the ones Word's bullet lists use.
_SYMBOL_FONT_BULLETS = str.maketrans(
    {
        0xF0B7: "•", 0xF0A7: "▪", 0xF0D8: "➢", 0xF076: "❖", 0xF0FC: "✓",
        0xF06E: "■", 0xF06C: "●", 0xF0A8: "◻", 0xF071: "❑", 0xF0E8: "➔",
    }
)


# Blocks and chunks come back query after query; their cleaned text does not change.
@lru_cache(maxsize=4096)
def clean_display_text(raw: str) -> str:
    """The display quote from raw chunk or block text.

    Equations become readable text, ``<drawing>`` is dropped (its caption
    attribute too), JSON and HTML tables become ``cell | cell; cell | cell``,
    ``<sup>``/``<sub>`` become super/subscripts, other tags and tags cut by a
    chunk boundary are removed, ``#`` heading markers go, entities are
    unescaped and whitespace is collapsed. Cleaning clean text changes
    nothing, unless it holds tag-like text that only entities kept from
    being a tag (``&lt;b&gt;`` shows as ``<b>``, then goes on a second pass).
    """
    if not raw:
        return ""
    text = _LEADING_TAG_TAIL.sub("", _HEADING_MARK.sub("", raw), count=1)
    pieces: list[str] = []
    # A chunk that starts inside an equation or a table: what comes before the
    # orphan closing tag is that element's body.
    orphan = _ORPHAN_CLOSE.search(text)
    if orphan and f"<{orphan.group(1).lower()}" not in text[: orphan.start()].lower():
        body = text[: orphan.start()]
        if orphan.group(1).lower() == "equation":
            pieces.append(_equation_text(body))
        else:
            pieces.append(_table_text("", body))
        pieces.append(" ")
        text = text[orphan.end() :]
    pos = 0
    while m := _MARKUP.search(text, pos):
        pieces.append(html.unescape(text[pos : m.start()]))
        if m.group("table_attrs") is not None:
            body_end, pos = _table_end(text, m.end())
            pieces.append(f" {_table_text(m.group('table_attrs'), text[m.end() : body_end])} ")
        else:
            pieces.append(_markup_text(m))
            pos = m.end()
    pieces.append(html.unescape(text[pos:]))
    return re.sub(r"\s+", " ", "".join(pieces)).translate(_SYMBOL_FONT_BULLETS).strip()


# --- query terms in the display quote -----------------------------------------

_FRAGMENT_WIDTH = 80


def _latex_symbol_names(raw: str) -> list[str]:
    """Names of LaTeX commands the display shows as symbols (``\\Phi`` → Φ)."""
    names = []
    for m in _INNER_MARKUP.finditer(raw or ""):
        body = m.group("equation") or ""
        names.extend(n for n in re.findall(r"\\([A-Za-z]+)", body) if n in _SYMBOLS)
    return list(dict.fromkeys(names))


def ensure_query_terms(display: str, raw: str, query: str) -> str:
    """The display quote, plus what it needs so no query term the raw text
    shows is lost, appended after `` … ``.

    A term is re-added when it is in the raw text's visible content but not in
    ``display``:
    - ``display`` was shortened and the term is further on: the shortest
      whole-word fragment of the cleaned raw text around it is appended;
    - the term names a LaTeX symbol the display shows as a glyph (query
      ``phi``, equation ``\\Phi``): the command name is appended.
    A term found only in tag names or attributes (ids, ``format``, image
    paths, a drawing's caption) is not visible text and is not re-added; nor
    is a term absent from the raw text. CJK runs count whole, not by bigram.
    """
    display = (display or "").strip()
    cleaned = clean_display_text(raw)
    symbol_names = _latex_symbol_names(raw)
    additions: list[str] = []
    for term in _primary_terms(query):
        if _contains(" ".join([display, *additions]), term):
            continue
        span = _first_span(cleaned, term)
        if span:
            start, end = _window_bounds(cleaned, *span, _FRAGMENT_WIDTH)
            additions.append(cleaned[start:end])
            continue
        named = next((n for n in symbol_names if _fold(n)[0].startswith(term)), None)
        if named:
            additions.append(named)
    return " … ".join(part for part in [display, *additions] if part)


# --- locator evidence ---------------------------------------------------------

_LEADING_PUNCTUATION = ",.;:!?)]}、，。；：！？）」』"


def _window_bounds(text: str, keep_start: int, keep_end: int, width: int) -> tuple[int, int]:
    """About ``width`` characters of ``text`` centred on [keep_start, keep_end),
    with no Latin word cut in half at either edge."""
    n = len(text)
    if n <= width:
        start, end = 0, n
    elif keep_end - keep_start >= width:
        start, end = keep_start, keep_start + width
    else:
        slack = width - (keep_end - keep_start)
        start = max(0, keep_start - slack // 2)
        end = min(n, start + width)
        start = max(0, end - width)
    if 0 < start < n and _is_latin_word_char(text[start - 1]) and _is_latin_word_char(text[start]):
        after_word = start
        while after_word < n and _is_latin_word_char(text[after_word]):
            after_word += 1
        if after_word <= keep_start:
            start = after_word
        else:
            while start > 0 and _is_latin_word_char(text[start - 1]):
                start -= 1
    if 0 < end < n and _is_latin_word_char(text[end - 1]) and _is_latin_word_char(text[end]):
        word_start = end
        while word_start > 0 and _is_latin_word_char(text[word_start - 1]):
            word_start -= 1
        if word_start >= keep_end and word_start > start:
            end = word_start
        else:
            while end < n and _is_latin_word_char(text[end]):
                end += 1
    while start < end and (text[start].isspace() or (start < keep_start and text[start] in _LEADING_PUNCTUATION)):
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _densest_cluster(text: str, query: str, width: int) -> tuple[int, int] | None:
    """The span holding the most distinct query terms (longer terms weigh
    more) within ``width`` characters.

    Ties go to matches that start a word or clause, then to more matches,
    then to the earliest: ``吡咯烷`` after ``。`` beats the one inside
    ``N-甲基吡咯烷酮``.
    """
    spans = _term_spans(text, query)
    if not spans:
        return None
    starts_word = [s == 0 or not text[s - 1].isalnum() for s, _, _ in spans]
    best: tuple[tuple[int, int, int], int, int] | None = None
    counts: dict[str, int] = {}
    weight = standalone = 0
    j = 0
    for i, (start, _, _) in enumerate(spans):
        while j < len(spans) and (j == i or spans[j][1] - start <= width):
            term = spans[j][2]
            counts[term] = counts.get(term, 0) + 1
            weight += len(term) if counts[term] == 1 else 0
            standalone += starts_word[j]
            j += 1
        score = (weight, standalone, j - i)
        if best is None or score > best[0]:
            best = (score, i, j)
        term = spans[i][2]
        counts[term] -= 1
        weight -= len(term) if counts[term] == 0 else 0
        standalone -= starts_word[i]
    _, i, j = best
    return spans[i][0], max(end for _, end, _ in spans[i:j])


def evidence_window(text: str, query: str, *, heading_path: list[str] | None = None, width: int = 280) -> str:
    """The locator evidence text: ``"<last heading> — <window>"``.

    The window is about ``width`` characters of the cleaned text, centred on
    the densest cluster of query terms (the start of the text when none is
    found), cut only between whole words (anywhere between CJK characters).
    The heading is left out when there is none or the window already starts
    with it. No markup, no ellipses: the browser scorer tokenises it as is.
    """
    cleaned = clean_display_text(text)
    cluster = _densest_cluster(cleaned, query, width) or (0, 0)
    start, end = _window_bounds(cleaned, cluster[0], cluster[1], width)
    window = cleaned[start:end]
    heading = clean_display_text(next((h for h in reversed(heading_path or []) if is_real_heading(h)), ""))
    if not heading or _fold(window)[0].startswith(_fold(heading)[0]):
        return window
    return f"{heading} — {window}" if window else heading


# --- fingerprint, score, marks --------------------------------------------------


def fingerprint(text: str) -> str:
    """sha1 hex of the text with case, width and compatibility forms folded
    (NFKC + casefold) and everything but letters and digits dropped.

    Pass the display quote. All of it is hashed, not a prefix: two chunks of
    one section can share a long opening and differ later, and merging them
    would lose a citation, which is worse than showing a near-duplicate.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text or "").casefold())
    kept = "".join(ch for ch in folded if ch.isalnum())
    return hashlib.sha1(kept.encode(), usedforsecurity=False).hexdigest()


def _phrase(text: str) -> str:
    return " ".join(_WORD_TOKEN.findall(_fold(text)[0]))


def lexical_score(text: str, query: str) -> float:
    """MNote's lexical score in [0, 1]: 0.9 × the fraction of query terms the
    text contains, + 0.1 when it contains the whole query as a phrase.
    Shown as "MNote lexical score", never as rerank."""
    terms = query_terms(query)
    if not terms or not text:
        return 0.0
    folded = _fold(text)[0]
    found = sum(1 for term in terms if _find(folded, term))
    phrase = _phrase(query)
    has_phrase = bool(phrase) and bool(_find(_phrase(text), phrase))
    return round(min(1.0, 0.9 * found / len(terms) + (0.1 if has_phrase else 0.0)), 4)


def mark_terms(display: str, query: str) -> list[tuple[str, bool]]:
    """The display quote as (segment, is a query-term match) pairs, in order,
    for templates to wrap matches in ``<mark>`` with auto-escaping on. A
    Latin match is extended to the end of its word (``mirror`` marks
    ``mirrors``); a CJK run is marked whole, or by bigrams when the display
    does not contain it whole."""
    if not display:
        return []
    marked: list[tuple[int, int]] = []
    for start, end, term in _term_spans(display, query):
        if not _is_cjk(term[0]):
            while end < len(display) and _is_latin_word_char(display[end]):
                end += 1
        if marked and start <= marked[-1][1]:
            marked[-1] = (marked[-1][0], max(marked[-1][1], end))
        else:
            marked.append((start, end))
    segments: list[tuple[str, bool]] = []
    pos = 0
    for start, end in marked:
        if start > pos:
            segments.append((display[pos:start], False))
        segments.append((display[start:end], True))
        pos = end
    if pos < len(display):
        segments.append((display[pos:], False))
    return segments


# --- quotes not worth a card --------------------------------------------------

# What Word writes in place of a field it could not update (English and
# Chinese Word); a table of cross-references can be little else.
_FIELD_RESIDUE = re.compile(
    r"(?:Error!|错误[!！])\s*(?:Reference source not found|Bookmark not defined|No text of specified style in document"
    r"|Not a valid (?:bookmark|result for table|link|embedded object|filename)[^.。]*|Hyperlink reference not valid"
    r"|Main Document Only|Unknown (?:switch|op code)[^.。]*|未找到引用源|未定义书签|文档中没有指定样式的文字)[.。]?",
    re.IGNORECASE,
)


def is_unreadable(display: str) -> bool:
    """True for a display quote nobody can read an answer in: nothing but
    markup or whitespace (a chunk of Word theme or settings XML), or mostly
    the error text Word leaves where a field could not be updated."""
    letters = sum(ch.isalnum() for ch in display or "")
    if letters == 0:
        return True
    remainder = _FIELD_RESIDUE.sub("", display)
    if remainder == display:
        return False
    kept = sum(ch.isalnum() for ch in remainder)
    return kept < 40 or kept < 0.5 * letters
