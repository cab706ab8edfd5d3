"""Issue 17: the mapper's shortcuts give exactly what the work they skip
would have given."""

import random
from collections import Counter, namedtuple

from rapidfuzz import fuzz

from mnote.citations.matching import _best_fuzzy, _fuzzy_ceiling, _fuzzy_floor, _shared_edge_at
from tests.factories import indexed_source
from tests.lightrag_fakes import chunk, QUERY, result

_Block = namedtuple("_Block", "index")
_LETTERS = "abcde fgh主镜铝膜 ,."


def _text(rng, low, high):
    return "".join(rng.choice(_LETTERS) for _ in range(rng.randint(low, high)))


def _mutated(rng, text, rate=0.08):
    return "".join(rng.choice(_LETTERS) if rng.random() < rate else ch for ch in text)


def _window_across(rng, texts):
    """A window cut across two neighbouring blocks, a few characters changed
    (what the tie-break sees: no block holds it whole)."""
    i = rng.randrange(len(texts) - 1)
    joined = texts[i] + " " + texts[i + 1]
    cut = rng.randint(0, max(0, len(texts[i]) - 5))
    return _mutated(rng, joined[cut : cut + rng.randint(70, 300)])


def _every_score(window, tied, shown):
    """What the tie-break did before: every block scored, the best kept, the first on a tie."""
    scores = [(fuzz.partial_ratio(window, shown[b.index]), -b.index, b) for b in tied]
    return max(scores, key=lambda s: s[:2])[2]


def test_the_fuzzy_tie_break_picks_the_block_scoring_every_block_picks():
    rng = random.Random(17)
    for case in range(300):
        texts = [_text(rng, 20, 700) for _ in range(rng.randint(2, 5))]
        if case % 2:  # near-copies of one passage, some exact: scores close together or equal
            base = _text(rng, 60, 400)
            texts = [rng.choice([base, _mutated(rng, base, rng.choice([0.01, 0.05, 0.1])), _text(rng, 20, 400)]) for _ in texts]
            window = _mutated(rng, base[rng.randint(0, 30) :], 0.05)
        else:
            window = _window_across(rng, texts)
        tied = [_Block(i) for i in range(len(texts))]
        shown = dict(enumerate(texts))
        assert _best_fuzzy(window, tied, shown) == _every_score(window, tied, shown)


def test_the_ceiling_and_the_floor_hold_the_fuzzy_score_between_them():
    rng = random.Random(18)
    for _ in range(200):
        texts = [_text(rng, 1, 600) for _ in range(2)]
        window = _window_across(rng, texts) or "a"
        for text in texts:
            score = fuzz.partial_ratio(window, text)
            assert _fuzzy_floor(window, text, *_shared_edge_at(window, text)) <= score + 1e-9
            assert score <= _fuzzy_ceiling(window, Counter(window), text) + 1e-9


def test_links_are_signed_with_the_same_bytes_as_djangos_signer(settings):
    """The signer that derives its key once writes exactly the links Django's
    would, and reads links signed under a rotated-out key."""
    from django.core import signing

    from mnote.citations import references

    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "new-secret", ["old-secret"]
    ours = references._signer()
    django_signer = signing.Signer(key="new-secret", salt=references.SALT)
    payloads = [
        [1, 7, "0123456789abcdef", "doc-1-chunk-003", "b12", "primary mirror"],
        [1, 8, "fedcba9876543210", "doc-2-chunk-000", "", "主镜 re-aluminised \"when\" ±"],
        [1, 9, "fedcba9876543210", "", "", "q", "a chunk's text " * 20],
    ]
    for payload in payloads:
        for compress in (False, True):
            assert ours.sign_object(payload, compress=compress) == django_signer.sign_object(payload, compress=compress)
    old = signing.Signer(key="old-secret", salt=references.SALT).sign_object(payloads[0])
    assert ours.unsign_object(old) == payloads[0]
    assert references.read_reference(old).query == "primary mirror"
    forged = old[:-2] + ("AA" if not old.endswith("AA") else "BB")
    assert references.read_reference(forged) is None


def test_a_moved_file_is_cited_under_its_new_path_and_the_path_memo_stays_bounded(db, lightrag_dirs):
    """The per-file facts kept between searches are keyed by the row's path
    fields: a file moved (or its root renamed) is never cited at its old path."""
    from mnote.citations import mapper
    from mnote.library.models import IndexedRoot, Source

    root = IndexedRoot.objects.create(name="Specs", path="specs")
    notes = indexed_source(root, "notes.md", "doc-66666666666666666666666666666666")
    body = result(chunk(notes, 0, "Pump maintenance notes."))
    [before] = mapper.map_query_data(body, query="pump", sources=Source.objects.all()).citations
    assert (before.source_path, before.file_name) == ("specs/notes.md", "notes.md")
    Source.objects.filter(pk=notes.pk).update(relative_path="old/pump notes.md")
    IndexedRoot.objects.filter(pk=root.pk).update(path="archive")
    [after] = mapper.map_query_data(body, query="pump", sources=Source.objects.all()).citations
    assert (after.source_path, after.file_name) == ("archive/old/pump notes.md", "pump notes.md")
    assert after.locator["sourcePath"] == "archive/old/pump notes.md"
    while len(mapper._FACTS) < 4096:  # other files' facts, up to the bound
        mapper._FACTS[(f"f{len(mapper._FACTS)}.md", "specs")] = mapper._SourceFacts("x.md", "specs/x.md", None)
    Source.objects.filter(pk=notes.pk).update(relative_path="new.md")
    [moved] = mapper.map_query_data(body, query="pump", sources=Source.objects.all()).citations
    assert moved.source_path == "archive/new.md" and len(mapper._FACTS) < 4096


def test_a_changed_file_is_not_anchored_in_the_preview_of_its_old_content(member_client, library_dir):
    """Where a version's render lies is kept by the process; whether it is
    rendered, and which version a row is, are read on every search."""
    import hashlib
    import uuid

    from mnote.citations.mapper import _add_anchor
    from mnote.library.models import IndexedRoot, Source
    from tests.docx_factory import heading, make_docx, para
    from tests.locate_documents import TARGET_SENTENCE

    (library_dir / "v").mkdir()
    path = make_docx(library_dir / "v" / "valves.docx", [heading("Valves"), para(TARGET_SENTENCE), para(f"Version {uuid.uuid4()}")])
    root = IndexedRoot.objects.create(name="V", path="v")
    source = Source.objects.create(root=root, relative_path="valves.docx", absolute_path=str(path), status="indexed",
                                   sha256=hashlib.sha256(path.read_bytes()).hexdigest())

    def anchored() -> bool:
        locator = {"precision": "paragraph", "evidenceText": f"Valves — {TARGET_SENTENCE}", "headingPath": ["Valves"]}
        _add_anchor(locator, source)
        return "anchor" in locator

    assert not anchored()  # not rendered yet: the next search looks again
    member_client.get(f"/preview/{source.pk}/")
    assert anchored()
    make_docx(path, [heading("Valves"), para(TARGET_SENTENCE), para(f"Version {uuid.uuid4()}")])
    source.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()  # synced: a new version, never rendered
    assert not anchored()


def test_text_matching_is_kept_per_document_version_and_redone_for_a_new_one(gamma, lightrag_dirs, monkeypatch):
    """Without LightRAG's chunk store a chunk is matched to its blocks by
    reading every block; that is done once per chunk text per document
    version, and again when the sidecar changes."""
    import json

    from mnote.citations import matching
    from mnote.citations import sidecar as sidecar_module
    from mnote.citations.mapper import map_query_data
    from mnote.library.models import Source
    from tests.lightrag_fakes import recorded

    inputs, storage = lightrag_dirs
    (storage / "kv_store_text_chunks.json").unlink()  # LightRAG on another storage back-end
    scans = []
    real = matching._blocks_by_text
    monkeypatch.setattr(matching, "_blocks_by_text", lambda text, sidecar: scans.append(text) or real(text, sidecar))
    _, body = recorded("query_data_naive.json")
    first = [c.as_json() for c in map_query_data(body, query=QUERY, sources=Source.objects.all()).citations]
    again = [c.as_json() for c in map_query_data(body, query=QUERY, sources=Source.objects.all()).citations]
    assert again == first and first[0]["blockId"] and len(scans) == 1
    # The sidecar rewritten (the file parsed again): one other block is left, holding the text; the chunk maps there.
    path = sidecar_module.sidecar_path(inputs, "gamma.docx")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    other = next(r for r in rows if r.get("type") == "content" and r["blockid"] != first[0]["blockId"])
    kept = dict(other, content=first[0]["displayQuote"])
    path.write_text("\n".join(json.dumps(r) for r in [*(r for r in rows if r.get("type") == "meta"), kept]) + "\n")
    [moved] = map_query_data(body, query=QUERY, sources=Source.objects.all()).citations
    assert len(scans) == 2 and moved.block_id == kept["blockid"] != first[0]["blockId"]
    index = sidecar_module.doc_index(gamma)
    index.text_matches.clear()  # full of other chunks' matches: the next one read makes room
    index.text_matches.update({f"other chunk {i}": ((), "no_block_match") for i in range(matching.TEXT_MATCHES_KEPT)})
    map_query_data(body, query=QUERY, sources=Source.objects.all())
    assert len(index.text_matches) <= matching.TEXT_MATCHES_KEPT and len(scans) == 3
