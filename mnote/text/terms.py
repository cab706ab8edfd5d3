"""Query terms and how they match text.

Term matching is the same everywhere: text and query are compared after NFKC
and casefolding (so ``m³`` matches ``m3`` and full-width letters match ASCII);
a Latin term must start a word and may be a prefix of it (``mirror`` finds
``mirrors``, ``re`` does not match inside ``three``); a CJK term matches
anywhere, since CJK text has no spaces.
"""

import re
import unicodedata
from functools import lru_cache

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


class _PerCharacter(dict):
    """A function of one character, worked out once per character seen (a
    table as small as the alphabets read): the loops over every character
    of a chunk then cost a dict lookup each, not a regex or a normalisation."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def __missing__(self, ch: str):
        value = self[ch] = self.function(ch)
        return value


_CJK = _PerCharacter(lambda ch: bool(_CJK_RUN.fullmatch(ch)))
# A letter or digit of a script written with spaces (a Latin term may not start after one).
_LATIN_WORD_CHAR = _PerCharacter(lambda ch: ch.isalnum() and not _CJK[ch])
# One character's fold: NFKC, then casefold (may be several characters).
_CHAR_FOLD = _PerCharacter(lambda ch: unicodedata.normalize("NFKC", ch).casefold())


def _is_cjk(ch: str) -> bool:
    return _CJK[ch]


def _is_latin_word_char(ch: str) -> bool:
    return _LATIN_WORD_CHAR[ch]


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
    parts = list(map(_CHAR_FOLD.__getitem__, text))
    folded = "".join(parts)
    if len(folded) == len(text) and all(map(len, parts)):
        return folded, tuple(range(len(text)))
    return folded, tuple(i for i, part in enumerate(parts) for _ in part)


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


def _starts(folded: str, term: str) -> list[int]:
    """Where ``term`` matches in folded text, under the module's matching
    rule (a search's evidence windows run this loop a few thousand times)."""
    starts = []
    find, latin_word = folded.find, _LATIN_WORD_CHAR
    start = find(term)
    if _CJK[term[0]]:  # anywhere
        while start != -1:
            starts.append(start)
            start = find(term, start + 1)
        return starts
    while start != -1:
        if not (start and latin_word[folded[start - 1]]):  # at the start of a word
            starts.append(start)
        start = find(term, start + 1)
    return starts


def _first_match(folded: str, term: str) -> int:
    """Where ``_starts``'s first match is, or -1; found without looking
    for the others (a CJK bigram can match hundreds of times in a long chunk)."""
    start = folded.find(term)
    if start <= 0 or _CJK[term[0]]:
        return start
    latin_word = _LATIN_WORD_CHAR
    while start != -1 and latin_word[folded[start - 1]]:  # inside a word: look further
        start = folded.find(term, start + 1)
    return start


def _occurs(folded: str, term: str) -> bool:
    """Whether ``term`` matches anywhere, stopping at the first match."""
    return _first_match(folded, term) != -1


def _matching_terms(folded: str, query: str) -> list[str]:
    """Terms to look for in one text: a CJK run where the text has it whole,
    else its bigrams, so a partial CJK match still counts for something."""
    terms: list[str] = []
    for term, bigrams in _term_plan(query):
        if bigrams and folded.find(term) == -1:  # a CJK term matches anywhere
            terms.extend(bigrams)
        else:
            terms.append(term)
    return list(dict.fromkeys(terms))


@lru_cache(maxsize=256)
def _term_plan(query: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each of the query's words with the bigrams that stand in for it (a
    CJK run longer than two characters) or none: worked out once per query."""
    return tuple((t, tuple(_bigrams(t)) if _is_cjk(t[0]) and len(t) > 2 else ()) for t in _primary_terms(query))


def _term_spans(text: str, query: str) -> list[tuple[int, int, str]]:
    """(start, end, term) of every match in ``text``'s own coordinates."""
    folded, origin = _fold(text)
    spans = []
    find = folded.find
    for term in _matching_terms(folded, query):
        if find(term) == -1:  # most terms of most texts: no list, no call
            continue
        last = len(term) - 1
        spans.extend([(origin[s], origin[s + last] + 1, term) for s in _starts(folded, term)])
    spans.sort()
    return spans


def _first_span(text: str, term: str) -> tuple[int, int] | None:
    folded, origin = _fold(text)
    start = _first_match(folded, term)
    return None if start == -1 else (origin[start], origin[start + len(term) - 1] + 1)


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


# --- content units: what a sentence claims, for badge support ---------------

_LATIN_TOKEN = re.compile(r"\d+(?:\.\d+)*|[^\W\d_][^\W_]*")
_CONTENT_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each either etc few for from further had has
    have having he her here hers him his how however i if in into is it its itself just let may me might more
    most much must my no nor not now of off on once one only or other our ours out over own per please same
    shall she should so some such than that the their theirs them then there these they this those through
    thus to too under until up upon us very via was we were what when where whether which while who whom
    whose why will with within without would yes yet you your yours
    according additionally based context described document documents furthermore given mentioned moreover
    namely overall provided specifically stated therefore""".split()
)
# Particles that glue Chinese words together: a bigram holding one is not a
# term ("池的", "是多"), and would only dilute the overlap.
_CJK_FUNCTION_CHARS = frozenset("的了是在和与及或也都就而并之为被把从于这那吗呢么吧着啊")
_CJK_STOP_BIGRAMS = frozenset({"多少", "如何", "怎样", "请问", "一下", "几个", "哪些", "哪个"})


def _stem(word: str) -> str:
    """Crude suffix folding, the same on both sides, so "batteries"/"battery",
    "caches"/"cache" and "charging"/"charged"/"charge" meet."""
    if word[0].isdigit():
        return word
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def is_cjk_unit(unit: str) -> bool:
    return bool(_CJK_RUN.fullmatch(unit))


def _cjk_units(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in _CJK_FUNCTION_CHARS else [run]
    bigrams = (run[i : i + 2] for i in range(len(run) - 1))
    return [b for b in bigrams if b not in _CJK_STOP_BIGRAMS and not _CJK_FUNCTION_CHARS.intersection(b)]


def _latin_unit(token: str) -> str | None:
    if token[0].isdigit():
        return token
    if len(token) < 2 or token in _CONTENT_STOPWORDS:
        return None
    return _stem(token)


def content_units(text: str) -> list[str]:
    """Content terms for scoring how well a quote backs a sentence, in order, once each.

    Unlike the query terms above this keeps numbers ("3.7", "2023"): a figure is
    the claim most worth sourcing. Latin words are stemmed; CJK runs count by
    their bigrams, without the particles that glue words together.
    """
    text = text.lower()
    units: list[str] = []
    for run in _CJK_RUN.findall(text):
        units.extend(_cjk_units(run))
    for token in _LATIN_TOKEN.findall(_CJK_RUN.sub(" ", text)):
        if unit := _latin_unit(token):
            units.append(unit)
    return list(dict.fromkeys(units))


def query_units(query: str) -> set[str]:
    """The query's terms in the form of :func:`content_units` (a lone digit is no term)."""
    return {unit for unit in content_units(query) if len(unit) > 1 or not unit.isdigit()}


def stemmed_words(lowered: str) -> set[str]:
    """The stemmed Latin words of lowercase text, to test a content unit against."""
    return {_stem(token) for token in _LATIN_TOKEN.findall(_CJK_RUN.sub(" ", lowered))}
