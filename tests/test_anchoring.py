"""Exact anchoring on the server: a passage resolved to text offsets and
blocks of the rendered preview (mnote/preview/anchoring.py) and the
``/preview/<id>/anchor`` view that serves it to an open preview."""

import pytest

from mnote.library.models import IndexedRoot, Source
from mnote.preview.anchoring import TextMap, build_text_map, find_passage, skeleton
from mnote.preview.docx_render import render_docx
from tests.locate_documents import PASSAGES, TARGET_SENTENCE, write_locate_document


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
