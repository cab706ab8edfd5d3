"""Exact anchoring on the server: a passage resolved to text offsets and
blocks of the rendered preview (mnote/preview/anchoring.py) and the
``/preview/<id>/anchor`` view that serves it to an open preview."""

import pytest

from mnote.library.models import IndexedRoot, Source
from mnote.preview.anchoring import find_passage
from mnote.preview.text_map import TextMap, build_text_map, skeleton
from mnote.preview.docx_render import render_docx
from tests.locate_documents import PASSAGES, TARGET_SENTENCE, write_locate_document
from tests.paths import DEMO_LIBRARY, REPO_DIR


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    path = write_locate_document(tmp_path_factory.mktemp("anchoring") / "manual.docx")
    html = render_docx(path).html
    return html, build_text_map(html, "v1")


def block_text(html: str, index: int) -> str:
    import lxml.html

    root = lxml.html.fragment_fromstring(html, create_parent="div")
    return root.xpath(f'//*[@data-block-index="{index}"]')[0].text_content()


@pytest.mark.parametrize("kind", ["window", "cell", "nested", "list", "textbox", "footnote", "chinese", "decoy"])
def test_it_resolves_each_kind_of_passage_to_its_exact_words(rendered, kind):
    html, text_map = rendered
    anchor = find_passage(text_map, PASSAGES[kind]).as_json()
    assert anchor["status"] == "exact"
    assert skeleton(anchor["textQuote"]["exact"]) == skeleton(PASSAGES[kind])
    assert anchor["start"]["block"] == anchor["end"]["block"]
    assert skeleton(PASSAGES[kind]) in skeleton(block_text(html, anchor["start"]["block"]))
    start, end = anchor["textPosition"]["start"], anchor["textPosition"]["end"]
    assert skeleton(text_map.text[start:end]) == skeleton(PASSAGES[kind])


def test_it_tells_the_short_word_from_the_longer_one(rendered):
    html, text_map = rendered
    chinese = find_passage(text_map, PASSAGES["chinese"]).as_json()
    decoy = find_passage(text_map, PASSAGES["decoy"]).as_json()
    assert chinese["start"]["block"] != decoy["start"]["block"]
    assert "甲基" not in block_text(html, chinese["start"]["block"])


def test_it_highlights_a_sentence_inside_a_long_cell_not_the_cell(rendered):
    html, text_map = rendered
    anchor = find_passage(text_map, TARGET_SENTENCE).as_json()
    cell = block_text(html, anchor["start"]["block"])
    assert len(cell) > 3000 and anchor["textQuote"]["exact"].startswith("Clause 23:")
    assert anchor["end"]["offset"] - anchor["start"]["offset"] < 100


def test_it_takes_the_heading_into_a_section_passage(rendered):
    html, text_map = rendered
    anchor = find_passage(text_map, f"{PASSAGES['heading']} — {PASSAGES['section']}", heading="2. Coatings").as_json()
    assert anchor["textQuote"]["exact"].startswith("2. Coatings")
    assert block_text(html, anchor["start"]["block"]) == "2. Coatings"
    assert "visible light" in anchor["textQuote"]["exact"]


def test_it_spans_two_blocks_when_the_passage_does(rendered):
    _, text_map = rendered
    anchor = find_passage(text_map, f"{PASSAGES['span_a']} {PASSAGES['span_b']}").as_json()
    assert anchor["end"]["block"] == anchor["start"]["block"] + 1
    assert anchor["textQuote"]["exact"].startswith("The first half") and anchor["textQuote"]["exact"].endswith("encoder cable.")


def test_it_aligns_close_but_not_identical_text_and_calls_it_fuzzy(rendered):
    _, text_map = rendered
    # A list label and a changed word, as LightRAG's text differs from the file's.
    evidence = "1. Close the dome shutter before the wind exceeds 15 metres per second. 2. Park the telescope at zenith after every night."
    anchor = find_passage(text_map, evidence).as_json()
    assert anchor["status"] == "fuzzy"
    assert anchor["textQuote"]["exact"].startswith("1. Close the dome")


@pytest.mark.parametrize(
    "absent",
    [
        "The reactor uses heavy water as a moderator and natural uranium as its fuel.",
        "吡咯烷酮应避光保存，使用后立即盖紧瓶盖。",
        # Shared words, other sentence: never a hit on text that is not there.
        "The contractor shall replace every gasket of the nitrogen purge line each winter.",
    ],
)
def test_it_refuses_a_passage_that_is_not_in_the_document(rendered, absent):
    _, text_map = rendered
    assert find_passage(text_map, absent) is None


def test_it_chooses_the_place_under_the_cited_heading(tmp_path):
    html = (
        '<h2 data-block-index="0" data-heading-level="2">Pumps</h2><p data-block-index="1">Check the seals weekly.</p>'
        '<h2 data-block-index="2" data-heading-level="2">Valves</h2><p data-block-index="3">Check the seals weekly.</p>'
    )
    text_map = build_text_map(html)
    assert find_passage(text_map, "Valves — Check the seals weekly.", heading="Valves").as_json()["start"]["block"] == 2
    assert find_passage(text_map, "Check the seals weekly.", heading="Valves").as_json()["start"]["block"] == 3
    assert find_passage(text_map, "Check the seals weekly.", heading="Pumps").as_json()["start"]["block"] == 1


def test_its_compact_form_round_trips_and_skips_footnote_numbers(rendered):
    _, text_map = rendered
    again = TextMap.from_compact(text_map.compact(), "v1")
    assert again.ink == text_map.ink and again.runs == text_map.runs and again.headings == text_map.headings
    assert TextMap.from_compact({"v": 0}) is None
    # "rms¹." — the footnote number is not part of the sentence.
    assert "12 nm rms." in text_map.text


@pytest.mark.django_db
def test_the_anchor_view_answers_with_offsets_and_refuses_bad_input(member_client, library_dir):
    (library_dir / "manuals").mkdir()
    path = write_locate_document(library_dir / "manuals" / "manual.docx")
    root = IndexedRoot.objects.create(name="Manuals", path="manuals")
    source = Source.objects.create(root=root, relative_path="manual.docx", absolute_path=str(path), status="indexed")
    url = f"/preview/{source.pk}/anchor"

    found = member_client.get(url, {"evidence": TARGET_SENTENCE}).json()
    assert found["anchor"]["status"] == "exact" and found["anchor"]["version"] == found["version"]
    assert found["anchor"]["textQuote"]["exact"].startswith("Clause 23")
    # Head and tail of a passage too long for one URL.
    long = member_client.get(url, {"evidence": PASSAGES["span_a"][:30], "tail": PASSAGES["span_b"][-30:]}).json()
    assert long["anchor"]["end"]["block"] == long["anchor"]["start"]["block"] + 1
    assert member_client.get(url, {"evidence": "heavy water moderator in a reactor core"}).json()["anchor"] is None
    assert member_client.get(url).status_code == 400
    assert member_client.get(f"/preview/{source.pk + 99}/anchor", {"evidence": "x"}).status_code == 404

    page = member_client.get(f"/preview/{source.pk}/", {"locator": '{"evidenceText": "%s"}' % PASSAGES["cell"]})
    assert page.context["locator"]["anchor"]["start"]["block"] == found["anchor"]["start"]["block"] - 5


@pytest.mark.django_db
def test_a_citation_with_a_known_chunk_is_never_highlighted_outside_it(member_client, library_dir, lightrag_dirs):
    import json

    _, storage = lightrag_dirs
    notes = library_dir / "notes"
    notes.mkdir()
    text = ("# Pumps\n\nCheck the seals weekly. Pump bearings need grease.\n\n"
            "# Valves\n\nCheck the seals weekly. Valve stems are lapped every spring.\n")
    (notes / "care.md").write_text(text)
    root = IndexedRoot.objects.create(name="Notes", path="notes")
    source = Source.objects.create(root=root, relative_path="care.md", absolute_path=str(notes / "care.md"), status="indexed",
                                   lightrag_doc_id="doc-0123")
    chunk_id = "doc-0123-chunk-001"
    (storage / "kv_store_text_chunks.json").write_text(json.dumps({chunk_id: {
        "content": "# Valves\nCheck the seals weekly. Valve stems are lapped every spring.", "chunk_order_index": 1,
        "full_doc_id": "doc-0123", "file_path": "care.md"}}))
    url = f"/preview/{source.pk}/anchor"

    free = member_client.get(url, {"evidence": "Check the seals weekly."}).json()["anchor"]
    assert free["start"]["block"] == 1  # the first place, with nothing else to go by
    inside = member_client.get(url, {"evidence": "Check the seals weekly.", "chunk_id": chunk_id}).json()["anchor"]
    assert inside["start"]["block"] == 3 and inside["textQuote"]["exact"] == "Check the seals weekly."
    # Evidence from beyond the chunk: the chunk's own words are marked instead.
    beyond = member_client.get(url, {"evidence": "Pump bearings need grease.", "chunk_id": chunk_id, "query": "valve stems"}).json()["anchor"]
    assert beyond["start"]["block"] >= 2 and "Valve stems" in beyond["textQuote"]["exact"]


@pytest.mark.django_db
def test_evidence_running_past_a_chunk_that_cannot_be_placed_is_marked_only_where_the_chunk_holds_it(
    member_client, library_dir, lightrag_dirs
):
    import json

    _, storage = lightrag_dirs
    notes = library_dir / "notes"
    notes.mkdir()
    (notes / "care.md").write_text("# Valves\n\nValve stems are lapped every spring by the night shift.\n\n"
                                   "Pump bearings need grease once a month.\n")
    root = IndexedRoot.objects.create(name="Notes", path="notes")
    source = Source.objects.create(root=root, relative_path="care.md", absolute_path=str(notes / "care.md"), status="indexed",
                                   lightrag_doc_id="doc-0456")
    chunk_id = "doc-0456-chunk-000"
    # LightRAG's chunk holds text the preview does not show (here a made-up
    # table), so the chunk cannot be placed whole.
    (storage / "kv_store_text_chunks.json").write_text(json.dumps({chunk_id: {
        "content": "Valve stems are lapped every spring by the night shift.\n" + " | ".join(f"cell {n} of a table" for n in range(40)),
        "chunk_order_index": 0, "full_doc_id": "doc-0456", "file_path": "care.md"}}))
    evidence = "Valves — Valve stems are lapped every spring by the night shift. Pump bearings need grease once a month."

    anchor = member_client.get(f"/preview/{source.pk}/anchor", {"evidence": evidence, "chunk_id": chunk_id}).json()["anchor"]
    assert anchor["textQuote"]["exact"] == "Valve stems are lapped every spring by the night shift."
    # Without the chunk, the whole evidence is marked, the next paragraph too.
    free = member_client.get(f"/preview/{source.pk}/anchor", {"evidence": evidence}).json()["anchor"]
    assert "Pump bearings" in free["textQuote"]["exact"]


def test_an_aligned_section_starts_at_its_heading_not_at_a_word_inside_it():
    # Evidence from the file's XML has no list labels; the preview shows them.
    html = (
        '<p data-block-index="0">Bind the XPath to the control.</p>'
        '<h1 data-block-index="1" data-heading-level="1">Namespace Guidelines</h1>'
        '<p data-block-index="2">Guidelines:</p>'
        "<li data-block-index='3'><span>1.</span> Either don't use namespaces, or if you do use them, don't use a default namespace.</li>"
        '<li data-block-index="4"><span>2.</span> All namespaces you use should be declared on the root element.</li>'
    )
    evidence = ("Namespace Guidelines — Guidelines: Either don't use namespaces, or if you do use them, don't use a default "
                "namespace. All namespaces you use should be declared on the root element.")
    anchor = find_passage(build_text_map(html), evidence, heading="Namespace Guidelines").as_json()
    assert anchor["status"] == "fuzzy"
    assert anchor["start"] == {"block": 1, "offset": 0}
    assert anchor["textQuote"]["exact"].endswith("root element.")


def test_a_chunk_is_found_whole_even_with_a_dash_in_it(rendered):
    _, text_map = rendered
    chunk = f"{PASSAGES['span_a']} — {PASSAGES['span_b']}"  # a dash in the text, not "<heading> — <window>"
    anchor = find_passage(text_map, chunk, whole=True).as_json()
    assert anchor["textQuote"]["exact"].startswith("The first half") and anchor["textQuote"]["exact"].endswith("cable.")


# A list Word restarts at 1 (a w:num with startOverride) that LightRAG's text
# numbers on from the list before it, as the demo's Chinese handbook does.
LIST_HTML = (
    '<h2 data-block-index="0" data-heading-level="2">火灾处置</h2>'
    '<p data-block-index="1">发现火情时按以下步骤处置：</p>'
    '<p data-block-index="2"><span class="docx-label">1.</span> 确保自身安全，大声呼喊提醒周围人员。</p>'
    '<p data-block-index="3"><span class="docx-label">2.</span> 小型火情使用就近的二氧化碳或干粉灭火器。</p>'
    '<p data-block-index="4"><span class="docx-label">3.</span> 火势无法控制时拉响火警，沿疏散路线撤离。</p>'
    '<p data-block-index="5">洗眼器每周测试一次。</p>'
)


def test_list_numbers_the_preview_and_the_citation_disagree_on_do_not_stop_an_exact_match():
    text_map = build_text_map(LIST_HTML)
    chunk = "发现火情时按以下步骤处置： 7. 确保自身安全，大声呼喊提醒周围人员。 8. 小型火情使用就近的二氧化碳或干粉灭火器。 9. 火势无法控制时拉响火警，沿疏散路线撤离。"
    anchor = find_passage(text_map, chunk, whole=True).as_json()
    assert anchor["status"] == "exact"
    assert anchor["start"] == {"block": 1, "offset": 0} and anchor["end"]["block"] == 4
    assert anchor["textQuote"]["exact"].endswith("沿疏散路线撤离。") and "洗眼器" not in anchor["textQuote"]["exact"]
    # The file's own words (the bench's ground truth) carry no labels at all.
    bare = find_passage(text_map, "确保自身安全，大声呼喊提醒周围人员。 小型火情使用就近的二氧化碳或干粉灭火器。").as_json()
    assert bare["status"] == "exact" and bare["start"]["block"] == 2 and bare["end"]["block"] == 3


def test_numbers_dropped_as_labels_must_be_labels_in_the_document():
    html = '<p data-block-index="0">See page 13. Next, close the valve and log the pressure in the book.</p>'
    text_map = build_text_map(html)
    # "12." looks like a list label, but the document has no label there: not this text.
    assert find_passage(text_map, "See page 12. Next, close the valve and log the pressure in the book.") is None


def test_close_text_whose_digits_differ_is_refused():
    html = (
        '<p data-block-index="0">[expect]Section I.01[/expect]Name name name name name name name name name name name</p>'
        '<p data-block-index="1">The primary mirror was recoated in March 2014 with aluminium by the contractor.</p>'
    )
    text_map = build_text_map(html)
    assert find_passage(text_map, "[expect]Section 1.01[/expect]Name name name name name name name name name name name") is None
    assert find_passage(text_map, "The primary mirror was recoated in March 2024 with aluminium by the contractor.") is None
    # Digits that agree, a word that does not: still the cited text, fuzzily.
    close = find_passage(text_map, "The primary mirror was recoated in March 2014 with aluminum by the contractor.")
    assert close is not None and close.status == "fuzzy"


def test_text_hidden_in_the_file_does_not_break_the_passage_or_its_heading(tmp_path):
    from tests.docx_factory import heading, make_docx, para

    hidden = '<w:r><w:rPr><w:vanish/></w:rPr><w:t xml:space="preserve"> hidden note 42 </w:t></w:r>'
    path = make_docx(tmp_path / "hidden.docx", [
        heading("Cooling"),
        para("Pressure is logged at 3 bar", hidden, " and the log is kept for 5 years by the operator."),
        para("Heading with ", hidden, "hidden words", style="Heading1"),
        para("Its section text is a sentence long enough to be a section of its own here."),
    ])
    text_map = build_text_map(render_docx(path).html)
    # LightRAG (and the XML) read hidden runs; Word and the preview do not show them.
    found = find_passage(text_map, "Pressure is logged at 3 bar hidden note 42 and the log is kept for 5 years by the operator.")
    assert found.as_json()["textQuote"]["exact"] == "Pressure is logged at 3 bar and the log is kept for 5 years by the operator."
    section = find_passage(text_map, "Heading with hidden note 42 hidden words — Its section text is a sentence long enough",
                           heading="Heading with hidden note 42 hidden words").as_json()
    assert section["textQuote"]["exact"].startswith("Heading with hidden words Its section")


def test_soft_text_round_trips_and_an_old_compact_form_still_reads():
    text_map = build_text_map(LIST_HTML)
    assert len(text_map.soft) == 3
    again = TextMap.from_compact(text_map.compact())
    assert again.soft == text_map.soft and again.bare.s == text_map.bare.s
    old = {**text_map.compact(), "v": 1}
    del old["soft"]
    assert TextMap.from_compact(old).soft == []


@pytest.mark.django_db
def test_the_mappers_locator_carries_the_anchor_once_the_preview_is_rendered(member_client, library_dir, lightrag_dirs):
    import hashlib
    import uuid

    from mnote.citations.mapper import _add_anchor
    from tests.docx_factory import heading, make_docx, para

    (library_dir / "m").mkdir()
    # Content of its own: no other test has rendered (and cached) this version.
    path = make_docx(library_dir / "m" / "valves.docx", [heading("Valves"), para(TARGET_SENTENCE), para(f"Version {uuid.uuid4()}")])
    root = IndexedRoot.objects.create(name="M", path="m")
    source = Source.objects.create(root=root, relative_path="valves.docx", absolute_path=str(path), status="indexed",
                                   sha256=hashlib.sha256(path.read_bytes()).hexdigest())
    locator = {"precision": "paragraph", "evidenceText": f"Valves — {TARGET_SENTENCE}", "headingPath": ["Valves"]}
    _add_anchor(locator, source)
    assert "anchor" not in locator  # a search never renders a file
    page = member_client.get(f"/preview/{source.pk}/")
    _add_anchor(locator, source)
    anchor = locator["anchor"]
    assert anchor["status"] == "exact" and anchor["version"] == page.context["text_version"]
    assert anchor["textQuote"]["exact"] == f"Valves {TARGET_SENTENCE}"
    assert anchor["start"] == {"block": 0, "offset": 0} and anchor["end"]["block"] == 1
    # A PDF's page box is its own locator: no text anchor is added to it.
    boxed = {"precision": "bbox", "evidenceText": TARGET_SENTENCE}
    _add_anchor(boxed, source)
    assert "anchor" not in boxed


def test_a_chunk_that_starts_inside_a_table_with_a_merged_cell_starts_at_its_own_row():
    handbook = DEMO_LIBRARY / "zh" / "实验室安全手册.docx"
    text_map = build_text_map(render_docx(handbook).html)
    # LightRAG's table text repeats a merged cell ("易燃液体 类别2") in every row it
    # covers; the row before (乙醇) holds it once, and must not be marked.
    chunk = ("，; 丙酮 | 易燃液体 类别2 | 防爆柜，远离氧化剂 | 10 L; 四氢呋喃 | 易燃液体 类别2 | 防爆柜，避光；开封后每3个月检测过氧化物 | 5 L; "
             "N-甲基吡咯烷酮（NMP） | 生殖毒性 类别1B | 通风试剂柜，密封防潮 | 5 L; 二氯甲烷 | 致癌性 类别2 | 通风试剂柜，不得使用铝制容器 | 10 L; "
             "浓硫酸 | 皮肤腐蚀 类别1A | 酸柜，下置防漏托盘，与碱分")
    quote = find_passage(text_map, chunk, whole=True).as_json()["textQuote"]["exact"]
    assert quote.startswith("丙酮") and quote.endswith("与碱分")


@pytest.mark.django_db
def test_the_cards_quote_is_the_anchored_words_once_the_preview_is_rendered(member_client, library_dir, lightrag_dirs):
    import hashlib
    import uuid

    from mnote.citations.mapper import map_query_data
    from tests.docx_factory import heading, make_docx, para

    (library_dir / "q").mkdir()
    steps = ["Close the inlet valve before the pump housing is opened for service.",
             "Drain the housing into the grey tray and log the volume."]
    path = make_docx(library_dir / "q" / "pump.docx", [heading("Pump service"), *(para(s, numbered=True) for s in steps),
                                                       para(f"Version {uuid.uuid4()}")])
    root = IndexedRoot.objects.create(name="Q", path="q")
    source = Source.objects.create(root=root, relative_path="pump.docx", absolute_path=str(path), status="indexed",
                                   sha256=hashlib.sha256(path.read_bytes()).hexdigest(), lightrag_name="mnote-0123456789abcdef-pump.docx",
                                   lightrag_doc_id="doc-" + "b" * 32)
    # LightRAG's text numbers the list its own way ("7.", "8."): the preview shows the file's "1.", "2.".
    lightrag_text = f"7. {steps[0]}\n8. {steps[1]}"
    data = {"status": "success", "data": {"entities": [], "relationships": [], "references": [{"reference_id": "1", "file_path": source.lightrag_name}],
            "chunks": [{"reference_id": "1", "content": lightrag_text, "file_path": source.lightrag_name, "chunk_id": f"{source.lightrag_doc_id}-chunk-000"}]}}

    def card():
        [citation] = map_query_data(data, query="inlet valve", sources=Source.objects.all()).citations
        return citation

    before = card()
    assert "anchor" not in before.locator and before.display_quote.startswith("7. Close the inlet valve")
    member_client.get(f"/preview/{source.pk}/")
    after = card()
    anchored = after.locator["anchor"]["textQuote"]["exact"]
    # The words the preview marks, in the file's own numbering, are the card's quote.
    assert after.display_quote == anchored == after.locator["displayQuote"]
    assert "7." not in after.display_quote and "Close the inlet valve" in after.display_quote and "grey tray" in after.display_quote


def test_the_pages_own_refusal_uses_the_servers_threshold_and_seeds():
    """locate.js refuses a passage without asking only where the server's
    alignment could not find it: the same threshold and seed lengths."""
    import json
    import re
    from mnote.preview import anchoring

    js = (REPO_DIR / "static" / "js" / "locate.js").read_text()
    assert float(re.search(r"const FOUND = ([0-9.]+);", js).group(1)) == anchoring.FOUND
    seeds = json.loads(re.sub(r"(\w+):", r'"\1":', re.search(r"const SEEDS = (\{.*?\});", js).group(1)))
    assert {k: tuple(v) for k, v in seeds.items()} == anchoring.SEEDS
    assert [anchoring.seed_length(n, False) for n in (10, 16, 119, 120)] == [5, 8, 8, 12]
    assert [anchoring.seed_length(n, True) for n in (7, 16, 60)] == [3, 4, 6]
