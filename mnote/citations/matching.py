"""Which sidecar block a LightRAG chunk comes from, and the display texts
the mapper reads over and over (kept by the process: cleaning is a pure
function of the text, and the same blocks and chunks come back search after
search)."""

import threading
from collections import Counter
from functools import lru_cache
from itertools import repeat

from rapidfuzz import fuzz
from rapidfuzz.fuzz import ratio as _ratio

from mnote.citations.sidecar import Block, Sidecar
from mnote.text import clean_display_text, evidence_window, fingerprint, lexical_score

# Below this rapidfuzz score a chunk is not said to come from a block.
FUZZY_BLOCK_THRESHOLD = 70


def _normalise(text: str) -> str:
    return " ".join(text.split())


# Display text by raw text, kept by the process: a chunk and its blocks are
# read three or four times per mapping (matching, quote, evidence), and the
# same blocks and chunks come back search after search. Cleaning is a pure
# function of the text; the memo holds a few searches' worth of both.
_cleaned = lru_cache(maxsize=4096)(clean_display_text)
# A chunk without a block is de-duplicated by its display text's fingerprint.
_fingerprint = lru_cache(maxsize=2048)(fingerprint)


# A block's character counts, for the fuzzy score's ceiling (read, never changed).
_char_counts = lru_cache(maxsize=2048)(Counter)


_MEMOS = (_cleaned, _fingerprint, _char_counts)


def _evidence(text: str, query: str, *, twice: str | None = None, **kwargs) -> str:
    """``evidence_window`` of a text the mapper cleaned: the window cleans
    its text once more (cleaning is not always idempotent) — ``twice``, when
    the caller has that already, else from the memo."""
    return evidence_window(_cleaned(text) if twice is None else twice, query, cleaned=True, **kwargs)


def forget_text_memos() -> None:
    """This process's memos of cleaned text (a cold start, for benchmarks)."""
    for memo in _MEMOS:
        memo.cache_clear()


# A chunk's first and last characters locate the blocks it was cut from.
ANCHOR_CHARS = 60


def _blocks_by_text(chunk_text: str, sidecar: Sidecar) -> tuple[list[Block], str]:
    """The blocks a chunk was made from, by text: LightRAG joins whole blocks
    (cut at the chunk's edges), so the chunk's head and tail each sit in a
    block, and the blocks between them belong to it too."""
    chunk = _normalise(chunk_text)
    contents = sidecar.normalised_contents
    if not chunk:
        return [], "no_block_match"
    head, tail = chunk[:ANCHOR_CHARS], chunk[-ANCHOR_CHARS:]
    first = next((i for i, text in enumerate(contents) if head in text), None)
    start = first or 0
    last = next((i for i in range(start, len(contents)) if tail in contents[i]), None)
    if first is not None and last is not None:
        return list(sidecar.blocks[first : last + 1]), "text_exact"
    if first is not None or last is not None:
        return [sidecar.blocks[first if first is not None else last]], "text_exact_one_edge"
    # Rare (text rewritten by the parser): fuzzy, on a bounded slice of text.
    scored = [(fuzz.partial_ratio(chunk[:600], text[:1500]), b) for text, b in zip(contents, sidecar.blocks)]
    return [b for score, b in scored if score >= FUZZY_BLOCK_THRESHOLD], "text_fuzzy"


def _inside_either(a: str, b: str) -> bool:
    return bool(a and b) and (a in b if len(a) <= len(b) else b in a)


# Text matches kept per document version (``DocIndex.text_matches``), at most this many.
TEXT_MATCHES_KEPT = 2048
# The memo is the document version's, shared by the web process's threads:
# its look-ups, clearing and stores are made under this lock (the matching
# itself runs outside it; two threads may match the same chunk once each).
_TEXT_MATCHES_LOCK = threading.Lock()


def _match_block(
    chunk_text: str, sidecar: Sidecar, candidate_ids: tuple[str, ...], query: str, *, text_matches: dict | None = None
) -> tuple[Block | None, str]:
    """The block a chunk comes from: the storage's exact link when there is
    one, else text matching. A chunk spanning several blocks resolves to the
    one holding its query-centred window. ``text_matches``: the document
    version's memo of text matching (by chunk text; it reads every block)."""
    if candidate_ids:
        blocks = [sidecar.by_id[i] for i in candidate_ids if i in sidecar.by_id]
        how = "chunk_store_refs"
    elif text_matches is None:
        blocks, how = _blocks_by_text(chunk_text, sidecar)
    else:
        with _TEXT_MATCHES_LOCK:
            found = text_matches.get(chunk_text)
        if found is None:
            matched, how = _blocks_by_text(chunk_text, sidecar)
            found = (tuple(matched), how)
            with _TEXT_MATCHES_LOCK:
                if len(text_matches) >= TEXT_MATCHES_KEPT:
                    text_matches.clear()
                text_matches[chunk_text] = found
        blocks, how = found
    if not blocks:
        return None, "no_block_match"
    if len(blocks) == 1:
        return blocks[0], how
    # The block holding the query's terms wins; the query-centred window of
    # the chunk breaks ties between blocks that hold them equally (computed
    # only for those: the fuzzy comparison was most of the mapping's time).
    shown = {b.index: sidecar.display_text(b)[0] for b in blocks}  # each block's display text
    scores = [lexical_score(shown[b.index], query) for b in blocks]
    best = max(scores)
    tied = [b for b, score in zip(blocks, scores) if score == best]
    if len(tied) == 1:
        return tied[0], how + "+query_window"
    window = _evidence(_cleaned(chunk_text), query)
    # partial_ratio is 100 exactly when the shorter text lies inside the
    # other: a substring test finds those blocks without the fuzzy scores.
    whole = [b for b in tied if _inside_either(window, shown[b.index])]
    if whole:
        return min(whole, key=lambda b: b.index), how + "+query_window"
    return _best_fuzzy(window, tied, shown), how + "+query_window"


# Two floats that differ only by rounding (the same score reached two ways)
# are nearer than this; two different scores of texts this size never are.
_SCORE_EPSILON = 1e-9


def _best_fuzzy(window: str, tied: list[Block], shown: dict[int, str]) -> Block:
    """The block with the best ``fuzz.partial_ratio`` against the window,
    the first block on a tie — scoring as few blocks as that answer needs
    (one score costs 0.1–1 ms).

    Each score needs only to reach the best so far (``score_cutoff``:
    rapidfuzz gives up early on a block that cannot, and returns 0), so the
    likely winner — the block sharing the longest piece of the window's
    either end — is scored first. A block whose ceiling (the most any
    alignment of the two texts can score) cannot beat the best is not scored;
    nor is the likely winner when one alignment of it (a floor) already beats
    every other block's ceiling."""
    edges = {b.index: _shared_edge_at(window, shown[b.index]) for b in tied}
    order = sorted(tied, key=lambda b: (-edges[b.index][0], b.index))
    counts = Counter(window)
    ceilings = {b.index: _fuzzy_ceiling(window, counts, shown[b.index]) for b in order[1:]}
    first = order[0]
    floor = _fuzzy_floor(window, shown[first.index], *edges[first.index])
    if all(ceilings[b.index] < floor - _SCORE_EPSILON for b in order[1:]):
        return first
    best_block, best_score = None, -1.0
    for block in order:
        if best_block is not None:
            ceiling = ceilings[block.index]
            if ceiling < best_score - _SCORE_EPSILON or (ceiling <= best_score + _SCORE_EPSILON and block.index > best_block.index):
                continue  # cannot beat the best, nor tie it from an earlier place
        score = fuzz.partial_ratio(window, shown[block.index], score_cutoff=max(best_score, 0))
        if score > best_score or (score == best_score and block.index < best_block.index):
            best_block, best_score = block, score
    return best_block


def _fuzzy_ceiling(window: str, window_counts: Counter, text: str) -> float:
    """An upper bound of ``fuzz.partial_ratio(window, text)``: each alignment
    scores 200·LCS / (m + k), comparing the shorter text (m characters) with
    k ≤ m characters of the other, and the common subsequence is no longer
    than k nor than the characters both texts share (counted with repeats)."""
    m = min(len(window), len(text))
    if not m:
        return 100.0  # rapidfuzz's own rule for empty texts; not worth a bound
    few, many = sorted((window_counts, _char_counts(text)), key=len)
    shared = min(m, sum(map(min, few.values(), map(many.get, few, repeat(0)))))
    return 200 * shared / (m + shared)


def _fuzzy_floor(window: str, text: str, length: int, at: int, head: bool) -> float:
    """A lower bound of ``fuzz.partial_ratio(window, text)``: the best ratio
    of a few of the alignments it takes the best of, placed on the window's
    shared start or end piece (``length`` characters at ``at`` in ``text``) —
    the shorter text against as many characters of the longer, and against
    the longer text's start up to the piece's end or its end from the
    piece's start, when those are shorter."""
    if not length or not window or not text:
        return 0.0
    in_window = 0 if head else len(window) - length
    short, long, in_short, in_long = (window, text, in_window, at) if len(text) >= len(window) else (text, window, at, in_window)
    m, n = len(short), len(long)
    start = min(max(in_long - in_short, 0), n - m)
    floor = _ratio(short, long[start : start + m])
    if in_long + length < m:
        floor = max(floor, _ratio(short, long[: in_long + length]))
    if n - in_long < m:
        floor = max(floor, _ratio(short, long[in_long:]))
    return floor


def _shared_edge_at(window: str, text: str) -> tuple[int, int, bool]:
    """The longest start or end of ``window`` found in ``text`` (a window cut
    across two blocks holds an end of one and a start of the next): its
    length, where it is in ``text``, and whether it is the window's start."""
    longest, at, head = 0, -1, True
    for is_head, piece in ((True, lambda k: window[:k]), (False, lambda k: window[len(window) - k :])):
        low, high = longest, min(len(window), len(text))  # a piece found, one not yet ruled out
        while low < high:
            mid = (low + high + 1) // 2
            if piece(mid) in text:
                low = mid
            else:
                high = mid - 1
        if low > longest:
            longest, at, head = low, text.find(piece(low)), is_head
    return longest, at, head
