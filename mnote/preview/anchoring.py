"""Where a cited passage is in a rendered preview, as exact text offsets.

Any rendered HTML whose blocks carry ``data-block-index`` (DOCX, Markdown,
text — and every renderer that follows the same convention) gets one
``TextMap`` per document version: the text the browser shows, in document
order, with each character's block. A cited passage (LightRAG's chunk or
block text, or only the evidence text of a locator) is resolved against it
on the server — exact search first, then a seed-and-vote alignment that
returns offsets — and ``locate.js`` turns the answer into a DOM range.

    text_map = build_text_map(html)          # once per version: cache text_map.compact()
    text_map = TextMap.from_compact(data)
    anchor = find_passage(text_map, evidence, heading="2.2 Coatings")
    anchor.as_json()  # {"status", "score", "start": {"block", "offset"}, "end": …, "textPosition", "textQuote"}

Offsets count *ink*: the characters that are not whitespace. Two HTML
parsers (lxml here, the browser there) may keep different whitespace-only
text nodes, but they agree on every visible character, so an ink offset
inside a block means the same place on both sides. The elements listed in
``SKIPPED_CLASSES`` (footnote numbers in the text, back-links) are not part
of the text; ``locate.js`` skips the same ones.

Matching compares *skeletons*: case-folded (NFKC) letters and digits only,
so punctuation, list labels' dots, table separators and LightRAG's markup
left-overs never decide a match. A passage is never found on text that is
not in the document: below ``FOUND`` of its skeleton covered in one place,
the answer is "not found".

Text the renderer made up (``SOFT_CLASSES``: list labels, note numbers,
image placeholders) is part of the text and may be highlighted, but a
passage is also matched against a second, *bare* skeleton without it: the
file's own text (and so the bench's ground truth) has no list labels, and
LightRAG numbers lists its own way (it continues a list Word restarts), so
"7. Close the valve" must find the preview's "1. Close the valve".

The text map, its skeletons and the classes above are made in ``text_map.py``;
this module finds passages in it.
"""

from __future__ import annotations

import bisect
import difflib
import re

from mnote.preview.text_map import FOUND, SEED_HITS, Anchor, TextMap, _SPACE, _is_cjk, _Space, skeleton


# --- finding a passage -------------------------------------------------------------


def _occurrences(haystack: str, needle: str, limit: int, lo: int = 0, hi: int | None = None) -> list[int]:
    found = []
    hi = len(haystack) if hi is None else hi
    i = haystack.find(needle, lo, hi)
    while i >= 0 and len(found) < limit:
        found.append(i)
        i = haystack.find(needle, i + 1, hi)
    return found


def _split_heading(evidence: str, heading: str) -> tuple[str, str, bool]:
    """The mapper's evidence is ``"<heading> — <window>"``: split it. The
    last value says whether the heading is part of the cited text."""
    if " — " in evidence:
        head, window = evidence.split(" — ", 1)
        if not heading or skeleton(head) == skeleton(heading) or len(head) <= 200:
            return head, window, True
    return heading, evidence, False


def _pick(text_map: TextMap, space: _Space, places: list[int], length: int, heading_skel: str) -> int:
    """Of several exact places, the one right after the cited heading, then
    one under it, then the one whose edges are word or block edges ("pump A."
    is not inside "pump A inlet"), then the first."""
    if len(places) == 1:
        return places[0]

    def rank(place: int) -> tuple:
        start, end = space.to_ink(place, place + length)
        after = bool(heading_skel) and _with_heading(space.s, heading_skel, place, 0) != place
        # The heading's own label ("2.1") is in the preview's heading, not always in the citation's.
        under = bool(heading_skel) and text_map.heading_before(start).endswith(heading_skel)
        return (after, under, text_map.is_edge(start, before=True) + text_map.is_edge(end, before=False))

    return max(places, key=lambda place: (rank(place), -place))


# Seed lengths of ``_vote``: (short passage, long passage, length from which
# it is long, shortest). locate.js uses the same to refuse a passage in the
# page, without asking, when the page's grams cover less than FOUND of it.
SEEDS = {"cjk": (4, 6, 60, 3), "other": (8, 12, 120, 5)}


def seed_length(n: int, cjk: bool) -> int:
    short, long, from_n, shortest = SEEDS["cjk" if cjk else "other"]
    k = long if n >= from_n else short
    # Shorter seeds for a short passage: a list label every few words must
    # not break all of them.
    return max(shortest, n // 2) if n < 2 * k else k


def _vote(S: str, E: str, lo: int, hi: int) -> tuple[float, int, int] | None:
    """Seed-and-vote alignment of ``E`` in ``S[lo:hi]``: seeds of ``E`` found
    in ``S`` vote for the diagonal (place − offset) they imply; the diagonal
    whose seeds cover most of ``E`` wins. Returns (coverage, start, end) in S."""
    n = len(E)
    cjk = sum(1 for c in E[:200] if _is_cjk(c)) > len(E[:200]) / 3
    k = seed_length(n, cjk)
    step = max(1, k // 2)
    votes: list[tuple[int, int, int]] = []  # (diagonal, offset in E, place in S)
    offsets = list(range(0, max(1, n - k + 1), step))
    if offsets[-1] != n - k and n > k:
        offsets.append(n - k)
    for o in offsets:
        seed = E[o : o + k]
        places = _occurrences(S, seed, SEED_HITS + 1, lo, hi)
        if not places or len(places) > SEED_HITS:
            continue
        votes.extend((p - o, o, p) for p in places)
    if not votes:
        return None
    votes.sort()
    tolerance = max(8, n // 10)
    best = None
    j = 0
    # A sliding window over diagonals: the cluster of votes within ``tolerance``.
    for i in range(len(votes)):
        while votes[i][0] - votes[j][0] > tolerance:
            j += 1
        cluster = votes[j : i + 1]
        covered = _coverage(cluster, k, n)
        if best is None or covered > best[0]:
            best = (covered, j, i)
    covered, j, i = best
    cluster = sorted(_chain(votes, j, i, k, n, tolerance), key=lambda v: v[1])
    covered = _coverage(cluster, k, n)
    first, last = cluster[0], cluster[-1]
    head_gap = first[1]
    start = first[2] - (head_gap if head_gap <= k else _alike_gap(E[:head_gap], S, first[2], lo, at_end=False))
    tail = n - (last[1] + k)
    after = last[2] + k
    end = after + (tail if tail <= k else _alike_gap(E[n - tail :], S, after, hi, at_end=True))
    # Snap the edges to the nearest place of the passage's own first and last characters.
    for m in sorted({min(n, 16), min(n, 10), min(n, 6)}, reverse=True):
        places = _occurrences(S, E[:m], 8, max(lo, start - k), min(hi, start + k + m))
        if places:
            start = min(places, key=lambda i: abs(i - start))
            break
    else:
        # The passage's first words are not in the text as they stand (a table
        # cell LightRAG repeats for every row a merged cell covers): a seed
        # further in may have matched the row before. Never start before the
        # passage's own first characters, when they follow shortly.
        for m in (4, 3, 2) if cjk else (8, 6):
            places = _occurrences(S, E[:m], 1, start, min(hi, start + 4 * k + tolerance + m)) if n > m else []
            if places:
                start = places[0]
                break
    for m in sorted({min(n, 16), min(n, 10), min(n, 6)}, reverse=True):
        places = _occurrences(S, E[-m:], 8, max(lo, end - k - m), min(hi, end + k))
        if places:
            end = min(places, key=lambda i: abs(i + m - end)) + m
            break
    else:
        for m in (4, 3, 2) if cjk else (8, 6):
            i = S.rfind(E[-m:], max(lo, end - 4 * k - tolerance - m), end) if n > m else -1
            if i >= 0:
                end = i + m
                break
    return covered, max(lo, start), min(hi, end)


def _alike_gap(cited: str, S: str, at: int, limit: int, *, at_end: bool) -> int:
    """How far the passage reaches past its last aligned seed (``at_end``:
    from ``at`` on; else back from ``at``): over the cited text's own edge
    written a little differently (a word changed or misspelt near the
    passage's start or end) — at most ``EDGE_GAP`` characters, ending on the
    passage's own last (first) letters and close to them — else 0: other
    text the document does not share is never taken in."""
    n = len(cited)
    if n > EDGE_GAP:
        return 0
    edge, slack = min(4, n), max(2, n // 4)
    if at_end:
        region = S[at : min(limit, at + n + slack)]
        places = [i + edge for i in _occurrences(region, cited[-edge:], 8)]
    else:
        first = max(limit, at - n - slack)
        region = S[first:at]
        places = [len(region) - i for i in _occurrences(region, cited[:edge], 8)]
    for reach in sorted(places, key=lambda r: abs(r - n)):
        shown = region[:reach] if at_end else region[len(region) - reach :]
        if difflib.SequenceMatcher(None, cited, shown, autojunk=False).ratio() >= 0.5:
            return reach
    return 0


# The most characters of a passage's edge that differ from the text and are still taken in.
EDGE_GAP = 40


def _chain(votes: list[tuple[int, int, int]], j: int, i: int, k: int, n: int, tolerance: int) -> list[tuple[int, int, int]]:
    """The best cluster (``votes[j:i+1]``) with the clusters that continue it
    in order on both sides after a jump: text only one side has (hidden
    text, a text box, a table cell LightRAG repeats) shifts the diagonal."""
    chain = votes[j : i + 1]
    rest = votes[:j] + votes[i + 1 :]
    bands: list[list[tuple[int, int, int]]] = []
    for vote in rest:  # sorted by diagonal
        if bands and vote[0] - bands[-1][-1][0] <= tolerance:
            bands[-1].append(vote)
        else:
            bands.append([vote])
    # Each band: a few seeds in a row on one diagonal, never one stray seed.
    bands = [b for b in bands if len({o for _, o, _ in b}) >= 2 and b[-1][0] - b[0][0] <= 2 * tolerance]
    max_jump = max(64, n // 3)
    o_lo, o_hi = min(v[1] for v in chain), max(v[1] for v in chain)
    p_lo, p_hi = min(v[2] for v in chain), max(v[2] for v in chain)
    added = True
    while added and bands:
        added = False
        for band in list(bands):
            bo_lo, bo_hi = min(v[1] for v in band), max(v[1] for v in band)
            bp_lo, bp_hi = min(v[2] for v in band), max(v[2] for v in band)
            after = bo_lo > o_hi and bp_lo > p_hi and abs((bp_lo - p_hi) - (bo_lo - o_hi)) <= max_jump
            before = bo_hi < o_lo and bp_hi < p_lo and abs((p_lo - bp_hi) - (o_lo - bo_hi)) <= max_jump
            if after or before:
                chain = chain + band
                bands.remove(band)
                o_lo, o_hi, p_lo, p_hi = min(o_lo, bo_lo), max(o_hi, bo_hi), min(p_lo, bp_lo), max(p_hi, bp_hi)
                added = True
    return chain


def _coverage(cluster: list[tuple[int, int, int]], k: int, n: int) -> float:
    spans = sorted({o for _, o, _ in cluster})
    covered, reach = 0, 0
    for o in spans:
        covered += max(0, o + k - max(o, reach))
        reach = max(reach, o + k)
    return covered / n


# A list label LightRAG (or a person) wrote in front of an item: "7.", "a)",
# "(iv)", "•". Dropped from the evidence only to match the bare skeleton.
_LABEL = re.compile(
    r"(?:(?<=^)|(?<=\s))(?:\(?(?:\d{1,3}(?:\.\d{1,3})*|[A-Za-z]|[ivxlcIVXLC]{1,6})[.)、]|\(\d{1,3}\)|[•·▪◦‣○●■□◆◇➢✓*-])(?=\s)"
)
_HEADING_LABEL = re.compile(r"^\s*(?:\d{1,3}(?:\.\d{1,3})*\.?|[A-Z]\.|[IVXLC]{1,6}\.)\s+")


# Words of letters and digits; CJK characters and punctuation one by one.
_TOKEN = re.compile(r"(?:(?![\u3000-\u9fff\uac00-\ud7af])[^\W_])+|\S")


def shared_with(evidence: str, text: str, *, heading: str = "") -> str:
    """The longest stretch of ``evidence``'s words that ``text`` holds too
    (words, or single characters of CJK and punctuation, compared as tokens).
    The mapper's evidence is a window of a sidecar block, which can run past
    the end of the cited chunk; marking only what both hold keeps the
    highlight inside the chunk."""
    _, window, _ = _split_heading(evidence, heading)
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(window)]
    if not spans:
        return ""
    tokens = [window[a:b] for a, b in spans]
    match = difflib.SequenceMatcher(None, tokens, _TOKEN.findall(text), autojunk=False).find_longest_match()
    if not match.size:
        return ""
    return window[spans[match.a][0]:spans[match.a + match.size - 1][1]]


def find_passage(
    text_map: TextMap, evidence: str, *, heading: str = "", within: tuple[int, int] | None = None, whole: bool = False
) -> Anchor | None:
    """Where ``evidence`` is in the document, or None when it is not there.

    ``heading`` (the citation's last heading) chooses between places that
    hold the same words and is taken into the highlight only when it stands
    right before them, as in the text. ``within`` limits the search to an
    ink range (the cited chunk's place). ``whole``: the text is a chunk, not
    ``"<heading> — <window>"`` evidence, and is never split at its dash.

    Exact text is looked for in the full skeleton, then in the bare one (no
    list labels on either side); close text is aligned in both and the
    better alignment wins.
    """
    if not text_map.skeleton:
        return None
    head, window, cited_heading = (heading, evidence or "", False) if whole else _split_heading(evidence or "", heading)
    E, H = skeleton(window), skeleton(head)
    if len(E) < 2:
        return None
    E_bare, H_bare = skeleton(_LABEL.sub(" ", window)), skeleton(_HEADING_LABEL.sub("", head))
    tries = [(text_map.full, E, H)]
    if text_map.soft or (E_bare, H_bare) != (E, H):
        tries.append((text_map.bare, E_bare or E, H_bare or H))
    labels = len(_LABEL.findall(window))
    for space, E_, H_ in tries:
        found = _exact(text_map, space, E_, H_, cited_heading, space.bounds(within), evidence, window)
        # Labels dropped from the evidence must be labels in the document too
        # ("page 12. Next" is not "page 13. Next"); one may precede the place.
        if found is not None and (E_ == E or labels <= text_map.soft_between(max(0, found.start - 8), found.end)):
            return found
    # Seed and vote: close but not identical text (labels, fields, symbols).
    best = None
    for space, E_, H_ in tries:
        lo, hi = space.bounds(within)
        voted = _vote(space.s, E_, lo, hi)
        if voted is not None and voted[0] >= _found_at(E_) and (best is None or voted[0] > best[1][0]):
            best = (space, voted, H_, lo, E_)
    if best is None:
        return None
    space, (covered, start, end), H_, lo, E_ = best
    if not _numbers_agree(text_map, space, E_, start, end):
        return None
    if cited_heading:
        # An aligned start may sit a few words late (the window's first words
        # differ): the heading may stand a little further back.
        start = _heading_start(text_map, space, H_, start, lo, gap=max(HEADING_GAP, min(48, len(E) // 16)))
    return _anchor(text_map, space, "fuzzy", covered, start, end, window)


# Close text this short (letters and digits) must share more of itself to be
# the cited text: a module header or a title of a sibling file differs in one
# word of four ("pygments.lexers._julia_builtins" is not "…_stata_builtins").
SHORT_PASSAGE = 40
FOUND_SHORT = 0.8


def _found_at(E: str) -> float:
    """The share of ``E`` that must be aligned in one place to call it found."""
    return FOUND_SHORT if len(E) < SHORT_PASSAGE and not any(_is_cjk(c) for c in E[:8]) else FOUND


def _exact(text_map: TextMap, space: _Space, E: str, H: str, cited_heading: bool, bounds: tuple[int, int], evidence: str, window: str) -> Anchor | None:
    S = space.s
    lo, hi = bounds
    # 1. The heading and the window together, as they stand in the text.
    if H and cited_heading:
        places = _occurrences(S, H + E, 50, lo, hi)
        if places:
            place = _pick(text_map, space, places, len(H) + len(E), "")
            return _anchor(text_map, space, "exact", 1.0, place, place + len(H) + len(E), evidence)
    # 2. The window alone, under its heading when it occurs more than once.
    places = _occurrences(S, E, 50, lo, hi)
    if places:
        place = _pick(text_map, space, places, len(E), H)
        start = _heading_start(text_map, space, H, place, lo) if cited_heading else place
        return _anchor(text_map, space, "exact", 1.0, start, place + len(E), window)
    return None


def _numbers_agree(text_map: TextMap, space: _Space, E: str, start: int, end: int) -> bool:
    """Close text is the cited text only when no digit of it is replaced by
    something else: "Section 1.01" of a sibling document is not this one's
    "Section I.01", "March 2024" is not "March 2014". Text only on one side
    (a label, a text box, hidden text) does not count."""
    if not any(c.isdigit() for c in E):
        return True
    found = space.s[start:end]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, E, found, autojunk=False).get_opcodes():
        if op == "replace" and any(c.isdigit() for c in E[i1:i2] + found[j1:j2]):
            return False
    return True


# Between a heading and its text: a list label or a number at most.
HEADING_GAP = 4


def _heading_start(text_map: TextMap, space: _Space, H: str, start: int, lo: int, gap: int = HEADING_GAP) -> int:
    """Where the passage starts when its heading is cited: at the heading
    when it stands right before. The heading block right before counts too
    when its words are close to the cited heading's but not the same (hidden
    text, a field or a label only one of them has)."""
    moved = _with_heading(space.s, H, start, lo, gap)
    if moved != start or not H or start <= lo:
        return moved
    ink = space.ink_of[start]
    i = bisect.bisect_right(text_map._heading_starts, (ink, float("inf"))) - 1
    if i < 0:
        return start
    h_start, h_end = text_map._heading_starts[i]
    first = bisect.bisect_left(space.ink_of, h_start)
    last = bisect.bisect_left(space.ink_of, h_end)
    shown = space.s[first:last]
    if first < lo or not shown or start - last > gap:
        return start
    same = sum(b.size for b in difflib.SequenceMatcher(None, H, shown, autojunk=False).get_matching_blocks())
    close = same >= 0.8 * min(len(H), len(shown)) and same >= 0.5 * max(len(H), len(shown))
    return first if close else start


def _with_heading(S: str, H: str, start: int, lo: int, gap: int = HEADING_GAP) -> int:
    """``start`` moved back to the cited heading when it stands right before
    (at most ``gap`` letters and digits between them)."""
    if not H:
        return start
    # The heading may also overlap ``start``: an aligned start can land in it.
    i = S.rfind(H, max(lo, start - len(H) - gap), start + len(H) - 1)
    return i if 0 <= i <= start and start - (i + len(H)) <= gap else start


_LEAD = re.compile(r"^[^\w]{1,3}")
_TRAIL = re.compile(r"[^\w]{1,3}$")


def _anchor(
    text_map: TextMap, space: _Space, status: str, score: float, skel_start: int, skel_end: int, evidence: str = ""
) -> Anchor | None:
    if skel_end <= skel_start:
        return None
    start, end = space.to_ink(skel_start, skel_end)
    # Punctuation at the evidence's edges ("(", a final ".") belongs to the
    # passage when the document has it there too.
    ink = _SPACE.sub("", evidence)
    lead = (_LEAD.search(ink) or [""])[0] if ink.strip() else ""
    trail = (_TRAIL.search(ink) or [""])[0] if ink.strip() else ""
    if trail and text_map.ink.startswith(trail, end):
        end += len(trail)
    if lead and start >= len(lead) and text_map.ink[start - len(lead) : start] == lead:
        start -= len(lead)
    start, end = text_map.whole_words(start, end)
    return Anchor(status, score, start, end, text_map)
