"""The cited words, highlighted in the real preview (Chromium): a parent page
sends ``mnote:locate`` to the preview in its frame, as the search and ask
pages do, and reads back ``mnote:located`` and the marked text."""

import json
from urllib.parse import quote

import pytest

from mnote.library.models import IndexedRoot, Source
from mnote.preview.text_map import skeleton
from tests.locate_documents import PASSAGES, TARGET_SENTENCE, write_locate_document

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# The parent side of the protocol, run in an app page of the same origin.
PARENT = """async ([url, locators]) => {
  const ready = new Promise((resolve) => window.addEventListener("message", function onReady(e) {
    if (e.data && e.data.type === "mnote:ready") { window.removeEventListener("message", onReady); resolve(); }
  }));
  const frame = document.createElement("iframe");
  frame.id = "locate-frame";
  frame.style.width = "1000px";
  frame.style.height = "600px";
  frame.src = url;
  document.body.prepend(frame);
  await ready;
  const results = [];
  for (const [i, locator] of locators.entries()) {
    const located = await new Promise((resolve) => {
      setTimeout(() => resolve({ status: "no answer" }), 20000);
      window.addEventListener("message", function onLocated(e) {
        if (e.origin === window.location.origin && e.data && e.data.type === "mnote:located" && e.data.requestId === `r${i}`) {
          window.removeEventListener("message", onLocated);
          resolve(e.data);
        }
      });
      frame.contentWindow.postMessage({ type: "mnote:locate", requestId: `r${i}`, locator }, window.location.origin);
    });
    const d = frame.contentDocument;
    const marks = Array.from(d.querySelectorAll("mark.mnote-hit"));
    const first = marks[0];
    located.marks = marks.map((m) => m.textContent).join("");
    located.markBlocks = Array.from(new Set(marks.map((m) => m.closest("[data-block-index]").dataset.blockIndex)));
    located.place = first ? {
      li: !!first.closest("li.docx-li"), aside: !!first.closest("aside"), note: !!first.closest(".docx-note"),
      nested: !!(first.closest("td") && first.closest("td").parentElement.closest("td")),
      cell: first.closest("td") ? first.closest("td").textContent.length : 0,
      top: first.getBoundingClientRect().top, viewport: frame.contentWindow.innerHeight,
    } : null;
    located.noteShown = !d.getElementById("locate-note").hidden;
    results.push(located);
  }
  return results;
}"""


@pytest.fixture
def manual(library_dir):
    (library_dir / "manuals").mkdir()
    path = write_locate_document(library_dir / "manuals" / "manual.docx")
    root = IndexedRoot.objects.create(name="Manuals", path="manuals")
    return Source.objects.create(root=root, relative_path="manual.docx", absolute_path=str(path), status="indexed")


def locate_all(page, live_server, source, locators):
    page.goto(f"{live_server.url}/")
    return page.evaluate(PARENT, [f"/preview/{source.pk}/", locators])


def evidence(text, **extra):
    return {"precision": "paragraph", "evidenceText": text, "searchQuery": "", **extra}


def test_it_marks_the_cited_words_of_every_kind_of_place(logged_in_page, live_server, manual):
    kinds = ["window", "cell", "nested", "list", "textbox", "footnote", "chinese", "decoy"]
    results = locate_all(logged_in_page, live_server, manual, [evidence(PASSAGES[k]) for k in kinds])
    by_kind = dict(zip(kinds, results))
    for kind, located in by_kind.items():
        assert located["status"] == "exact", kind
        assert skeleton(located["marks"]) == skeleton(PASSAGES[kind]), kind
        assert skeleton(located["quote"]) == skeleton(PASSAGES[kind]), kind
        assert not located["noteShown"], kind
    assert by_kind["list"]["place"]["li"] and by_kind["textbox"]["place"]["aside"]
    assert by_kind["footnote"]["place"]["note"] and by_kind["nested"]["place"]["nested"]
    # 吡咯烷 lands on its own paragraph, never on N-甲基吡咯烷酮.
    assert "甲基" not in by_kind["chinese"]["marks"]
    assert by_kind["chinese"]["blockIndex"] != by_kind["decoy"]["blockIndex"]


def test_it_marks_one_sentence_of_a_long_cell_and_scrolls_to_it(logged_in_page, live_server, manual):
    neighbour = TARGET_SENTENCE.replace("23", "22").replace("25 weeks", "24 weeks")
    # The neighbour first: the text it split must come back whole for the next one.
    earlier, located = locate_all(logged_in_page, live_server, manual, [evidence(neighbour), evidence(TARGET_SENTENCE)])
    assert earlier["marks"] == neighbour
    assert located["status"] == "exact"
    assert located["marks"].startswith("Clause 23:") and len(located["marks"]) < 120
    assert located["place"]["cell"] > 3000  # the cell is long; only its sentence is marked
    logged_in_page.wait_for_timeout(800)  # smooth scrolling
    top = logged_in_page.frame_locator("#locate-frame").locator("mark.mnote-hit").first.evaluate("m => m.getBoundingClientRect().top")
    assert 0 <= top <= 600


def test_it_marks_a_passage_across_two_blocks_and_a_section_from_its_heading(logged_in_page, live_server, manual):
    spanning, section = locate_all(logged_in_page, live_server, manual, [
        evidence(f"{PASSAGES['span_a']} {PASSAGES['span_b']}"),
        evidence(f"2. Coatings — {PASSAGES['section']}", headingPath=["2. Coatings"]),
    ])
    assert spanning["status"] == "exact" and len(spanning["markBlocks"]) == 2
    assert skeleton(spanning["marks"]) == skeleton(PASSAGES["span_a"] + PASSAGES["span_b"])
    assert section["marks"].startswith("2. Coatings") and skeleton(PASSAGES["section"]) in skeleton(section["marks"])


def test_it_says_not_found_for_absent_text_and_clears_the_last_highlight(logged_in_page, live_server, manual):
    found, absent = locate_all(logged_in_page, live_server, manual, [
        evidence(PASSAGES["cell"]),
        evidence("The contractor shall replace every gasket of the nitrogen purge line each winter."),
    ])
    assert found["status"] == "exact"
    assert absent["status"] == "not_found" and absent["marks"] == "" and absent["noteShown"]


def test_a_second_citation_moves_the_marks_and_only_close_text_asks_the_server(logged_in_page, live_server, manual):
    page = logged_in_page
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/anchor" in r.url else None)
    locator = evidence(PASSAGES["textbox"])
    page.goto(f"{live_server.url}/preview/{manual.pk}/?locator={quote(json.dumps(locator))}")
    page.locator("#document[data-initial-status]").wait_for()
    assert page.locator("#document").get_attribute("data-initial-status") == "exact"
    assert page.locator("mark.mnote-hit").all_inner_texts() == [PASSAGES["textbox"]]
    assert requests == []  # resolved on the server with the page
    # A verbatim quote found once in the page: no request either.
    result = page.evaluate("l => window.mnoteLocate(l)", evidence(PASSAGES["list"]))
    assert result["status"] == "exact" and requests == []
    assert "".join(page.locator("mark.mnote-hit").all_inner_texts()) == PASSAGES["list"]
    # The first marks are gone and the text is whole again.
    assert page.locator("aside p").first.evaluate("p => p.childNodes.length") == 1
    # Two list items quoted without the preview's labels: still found in the page, labels marked with them.
    both = f"{PASSAGES['list']} Park the telescope at zenith after each night."
    result = page.evaluate("l => window.mnoteLocate(l)", evidence(both))
    assert result["status"] == "exact" and requests == []
    assert "".join(page.locator("mark.mnote-hit").all_inner_texts()) == f"{PASSAGES['list']}2. Park the telescope at zenith after each night."
    # Close but not identical text (a label, a changed word): the server aligns it.
    close = "1. Close the dome shutter before the wind exceeds 15 metres per second. 2. Park the telescope at zenith after every night."
    result = page.evaluate("l => window.mnoteLocate(l)", evidence(close))
    assert result["status"] == "fuzzy" and len(requests) == 1
    assert "".join(page.locator("mark.mnote-hit").all_inner_texts()).startswith("1. Close the dome shutter")
    # Evidence whose words the page does not hold (a few of them are): refused in the page, no request.
    result = page.evaluate("l => window.mnoteLocate(l)", evidence("The contractor shall replace every gasket of the nitrogen purge line each winter."))
    assert result["status"] == "not_found" and len(requests) == 1 and page.locator("mark.mnote-hit").count() == 0


def test_pdf_text_match_boxes_sit_on_the_text_of_every_page_the_passage_covers(logged_in_page, live_server, library_dir):
    from tests.pdf_factory import line_baseline, make_pdf

    (library_dir / "reports").mkdir()
    filler = [f"Filler line {n} about orbital mechanics." for n in range(30)]
    pdf = make_pdf(library_dir / "reports" / "debris.pdf", [
        [*filler, "The annual collision probability"],
        ["grows with the flux of debris in low orbit.", "Other text."],
    ])
    root = IndexedRoot.objects.create(name="Reports", path="reports")
    source = Source.objects.create(root=root, relative_path="debris.pdf", absolute_path=str(pdf), status="indexed")
    page = logged_in_page
    locator = {"precision": "file", "evidenceText": "The annual collision probability grows with the flux of debris in low orbit",
               "searchQuery": "collision probability"}
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(locator))}")
    page.locator("#document[data-initial-status]").wait_for()
    assert page.locator("#document").get_attribute("data-initial-status") == "fuzzy"  # a text match, never "exact"
    boxes = page.evaluate("""() => Array.from(document.querySelectorAll('.mnote-rect')).map((r) => {
        const img = r.closest('.pdf-page').querySelector('img').getBoundingClientRect();
        const box = r.getBoundingClientRect();
        return {page: Number(r.closest('.pdf-page').dataset.page),
                top: (box.top - img.top) / img.height, bottom: (box.bottom - img.top) / img.height};
    })""")
    assert sorted({b["page"] for b in boxes}) == [1, 2]
    # Each box straddles its line's baseline (the glyphs sit on it), on the
    # page image itself: not half a line lower, as a strike-through would.
    expected = {1: line_baseline(30), 2: line_baseline(0)}
    for box in boxes:
        baseline = expected[box["page"]]
        assert box["top"] < baseline < box["bottom"], box
        assert box["bottom"] - baseline < 0.006 and baseline - box["top"] < 0.02, box


FIRE_STEPS = ["确保自身安全，大声呼喊提醒周围人员。", "小型火情使用就近的二氧化碳或干粉灭火器。", "火势无法控制时拉响火警，沿疏散路线撤离。"]


def test_a_chunk_that_numbers_a_list_its_own_way_is_marked_in_the_preview_and_in_the_context_panel(
    logged_in_page, live_server, library_dir, lightrag_dirs
):
    from tests.docx_factory import heading, make_docx, para

    _, storage = lightrag_dirs
    (library_dir / "zh").mkdir()
    path = make_docx(library_dir / "zh" / "fire.docx", [
        heading("火灾处置"), para("发现火情时按以下步骤处置："), *[para(step, numbered=True) for step in FIRE_STEPS],
        para("洗眼器和紧急喷淋装置每周测试一次。"),
    ])
    root = IndexedRoot.objects.create(name="ZH", path="zh")
    source = Source.objects.create(root=root, relative_path="fire.docx", absolute_path=str(path), status="indexed",
                                   lightrag_doc_id="doc-fire")
    # LightRAG's text numbers this list on from an earlier one: 7, 8, 9 where Word (and the preview) start at 1.
    chunks = ["火灾处置", "发现火情时按以下步骤处置： " + " ".join(f"{n}. {step}" for n, step in zip((7, 8, 9), FIRE_STEPS)),
              "洗眼器和紧急喷淋装置每周测试一次。"]
    (storage / "kv_store_text_chunks.json").write_text(json.dumps({
        f"doc-fire-chunk-{i}": {"content": text, "chunk_order_index": i, "full_doc_id": "doc-fire", "file_path": "fire.docx"}
        for i, text in enumerate(chunks)}))
    locator = evidence(f"火灾处置 — {chunks[1]}", headingPath=["火灾处置"], chunkId="doc-fire-chunk-1", chunkIndex=1)
    page = logged_in_page
    page.goto(f"{live_server.url}/preview/{source.pk}/?locator={quote(json.dumps(locator))}")
    page.locator("#document[data-initial-status]").wait_for()
    assert page.locator("#document").get_attribute("data-initial-status") == "exact"
    marked = "".join(page.locator("mark.mnote-hit").all_inner_texts())
    # The cited chunk's words, with the preview's own labels 1–3; nothing from outside the chunk.
    assert marked.startswith("发现火情")  # the heading is the chunk before: not marked
    assert skeleton(marked).endswith(skeleton("3. " + FIRE_STEPS[2])) and "洗眼器" not in marked
    # The context panel marks the same words in the cited chunk.
    context_mark = page.locator("#context-panel .context-item.target mark.mnote-context-hit")
    context_mark.wait_for(state="attached")
    shown = context_mark.text_content()
    assert shown.startswith("发现火情") and shown.endswith(FIRE_STEPS[2])
