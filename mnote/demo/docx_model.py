"""The demo's Word documents as data: blocks (headings, paragraphs, lists,
tables, equations) of inlines (text, links, footnotes, math), and OMML math
expressions. ``docx_writer`` turns a ``Document`` into a .docx file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# A fixed creation date, so regenerating a document yields identical bytes.
DEFAULT_CREATED = "2026-01-05T09:00:00Z"


# --------------------------------------------------------------------------
# Document model
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    text: str
    bold: bool = False
    italic: bool = False
    code: bool = False


@dataclass(frozen=True)
class Link:
    text: str
    url: str


@dataclass(frozen=True)
class Footnote:
    """A footnote reference placed inline; ``text`` becomes the note body."""

    text: str


@dataclass(frozen=True)
class Math:
    """Inline OMML math inside a paragraph."""

    expr: MathExpr


Inline = str | Text | Link | Footnote | Math
InlineContent = Inline | Sequence[Inline]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 1


@dataclass(frozen=True, init=False)
class Paragraph:
    content: tuple[Inline, ...]
    style: str | None = None

    def __init__(self, *content: Inline, style: str | None = None):
        object.__setattr__(self, "content", tuple(content))
        object.__setattr__(self, "style", style)


@dataclass(frozen=True)
class BulletList:
    items: Sequence[InlineContent]


@dataclass(frozen=True)
class NumberedList:
    items: Sequence[InlineContent]


@dataclass(frozen=True)
class Cell:
    """A table cell.

    ``span`` > 1 merges horizontally (gridSpan). ``merge`` is "restart" on the
    top cell of a vertical merge and "continue" on the cells it swallows; the
    swallowed cells keep no content of their own.
    """

    content: InlineContent = ""
    span: int = 1
    merge: str | None = None
    bold: bool = False


@dataclass(frozen=True)
class Table:
    header: Sequence[Cell | str]
    rows: Sequence[Sequence[Cell | str]]
    widths: Sequence[int] | None = None  # relative column weights
    caption: str | None = None


@dataclass(frozen=True)
class Equation:
    """A display equation in its own paragraph."""

    expr: MathExpr


Block = Heading | Paragraph | BulletList | NumberedList | Table | Equation


@dataclass
class Document:
    title: str
    blocks: list[Block]
    language: str = "en-US"
    author: str = "MNote demo library"
    subject: str = ""
    keywords: str = ""
    description: str = ""
    created: str = DEFAULT_CREATED


# --------------------------------------------------------------------------
# OMML math expressions
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class MathNode:
    kind: str
    parts: tuple[MathExpr, ...]


@dataclass(frozen=True)
class PlainRun:
    text: str


# A string is an (italic) math run, a tuple is a row of expressions.
MathExpr = str | PlainRun | MathNode | tuple


def frac(numerator: MathExpr, denominator: MathExpr) -> MathNode:
    return MathNode("f", (numerator, denominator))


def sub(base: MathExpr, subscript: MathExpr) -> MathNode:
    return MathNode("sSub", (base, subscript))


def sup(base: MathExpr, superscript: MathExpr) -> MathNode:
    return MathNode("sSup", (base, superscript))


def subsup(base: MathExpr, subscript: MathExpr, superscript: MathExpr) -> MathNode:
    return MathNode("sSubSup", (base, subscript, superscript))


def sqrt(radicand: MathExpr) -> MathNode:
    return MathNode("rad", (radicand,))


def delim(inner: MathExpr) -> MathNode:
    """Parentheses that grow with their content."""
    return MathNode("d", (inner,))


def plain(text: str) -> PlainRun:
    """Upright text in math, for multi-letter names such as "SNR" or "exp"."""
    return PlainRun(text)
