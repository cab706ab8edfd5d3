import json
import re
import shutil

import pytest

from mnote.citations.mapper import map_query_data
from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot, Source
from tests import paths
from tests.factories import indexed_source, install_sidecar, restricted_root
from tests.lightrag_fakes import chunk, result

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

FIXTURES = paths.FIXTURES / "mapper"
ZETA_DOC = "doc-3aa1ef546a56349469a2f766153e485b"
ORBIT_DOC = "doc-f7cc584058d4dd48ec0d1bbaac8e1ca0"


@pytest.fixture
def root(db):
    return IndexedRoot.objects.create(name="Specs", path="specs")


def blocks(fixture: str) -> list[dict]:
    rows = [json.loads(line) for line in (FIXTURES / fixture).read_text().splitlines() if line.strip()]
    return [r for r in rows if r["type"] == "content"]


def test_it_maps_a_docx_paraid_block_to_a_paragraph_locator(root, lightrag_dirs):
    inputs, _ = lightrag_dirs
    zeta = indexed_source(root, "zeta.docx", ZETA_DOC)
    install_sidecar(inputs, zeta.lightrag_name, "sidecar_docx_sample.blocks.jsonl")
    power = blocks("sidecar_docx_sample.blocks.jsonl")[1]["content"]

    mapped = map_query_data(result(chunk(zeta, 1, power)), query="shaft power", sources=Source.objects.all())
    [citation] = mapped.citations
    assert citation.precision == "paragraph" and not citation.degraded
    assert citation.block_id == "afd7873855e22c81550eaf5b1a81c4fb"
    assert citation.locator["paraIds"] == ["42899387", "162E3FE8"]
    assert citation.heading_path == ["Zeta Pump Specification", "Power"]
    assert "page" not in citation.locator and "bbox" not in citation.locator
    assert "<equation" not in citation.display_quote and "ρgQH/η" in citation.display_quote
    assert "shaft power" in citation.evidence_text.lower()
    assert citation.locator["resourceKind"] == "docx" and citation.locator["sourcePath"] == "specs/zeta.docx"
    assert citation.citation_markdown == f"[zeta.docx, paragraph]({citation.citation_url})"


def test_it_says_file_only_when_there_is_no_sidecar(root, lightrag_dirs):
    notes = indexed_source(root, "notes.md", "doc-11111111111111111111111111111111")
    mapped = map_query_data(result(chunk(notes, 0, "The shutter motor is serviced monthly.")), query="shutter motor",
                            sources=Source.objects.all())
    [citation] = mapped.citations
    assert citation.precision == "file" and citation.degraded
    assert citation.block_id is None
    assert not {"page", "bbox", "blockId", "paraIds"} & set(citation.locator)
    assert citation.locator["resourceKind"] == "markdown"
    assert "file only" in citation.citation_markdown
    assert citation.diagnostics["sidecarBlockMapped"] is False


def test_it_keeps_the_page_and_rectangle_of_a_bbox_block(root, lightrag_dirs):
    inputs, _ = lightrag_dirs
    report = indexed_source(root, "orbital_report.pdf", ORBIT_DOC)
    install_sidecar(inputs, report.lightrag_name, "sidecar_pdf_sample.blocks.jsonl")
    collision = blocks("sidecar_pdf_sample.blocks.jsonl")[1]["content"]
    [citation] = map_query_data(result(chunk(report, 1, collision)), query="collision probability",
                                sources=Source.objects.all()).citations
    assert citation.precision == "bbox"
    assert citation.locator["page"] == 2 and citation.page == 2
    assert citation.locator["bbox"] == [0.11, 0.095, 0.88, 0.19]
    assert "p.2" in citation.citation_markdown
    assert "Φ" in citation.display_quote and "\\Phi" not in citation.display_quote


def test_it_deduplicates_chunks_of_the_same_block_and_keeps_different_blocks(root, lightrag_dirs):
    inputs, _ = lightrag_dirs
    zeta = indexed_source(root, "zeta.docx", ZETA_DOC)
    install_sidecar(inputs, zeta.lightrag_name, "sidecar_docx_sample.blocks.jsonl")
    first, power, drawings = (b["content"] for b in blocks("sidecar_docx_sample.blocks.jsonl"))
    mapped = map_query_data(
        result(chunk(zeta, 1, power), chunk(zeta, 2, power.split("\n")[1]), chunk(zeta, 3, drawings)),
        query="pump", sources=Source.objects.all())
    assert [c.block_id for c in mapped.citations] == ["afd7873855e22c81550eaf5b1a81c4fb", "7f76c98dcc12fd6e4c9fd461b20bfeb4"]
    assert "<drawing" not in mapped.citations[1].display_quote
    assert "Z-100" in mapped.citations[1].display_quote  # the table, flattened


def test_it_uses_the_chunk_stores_exact_block_links(root, lightrag_dirs):
    inputs, storage = lightrag_dirs
    indexed_source(root, "gamma.docx", "doc-b7cf006581394ea318c700a870cecd9f", lightrag_name="gamma.docx")
    install_sidecar(inputs, "gamma.docx", "server_gamma.blocks.jsonl")
    shutil.copy(FIXTURES / "sdk_kv_store_text_chunks.json", storage / "kv_store_text_chunks.json")
    from tests.lightrag_fakes import recorded

    _, body = recorded("query_data_naive.json")
    [citation] = map_query_data(body, query="mirror re-aluminised coating chamber", sources=Source.objects.all()).citations
    assert citation.diagnostics["blockMatch"].startswith("chunk_store_refs")
    # The chunk spans three blocks; the one holding the query window wins.
    assert citation.heading_path[-1] == "Maintenance"
    assert citation.locator["chunkIndex"] == 0


def test_it_never_cites_a_stale_source(root, lightrag_dirs):
    zeta = indexed_source(root, "zeta.docx", ZETA_DOC, stale=True)
    mapped = map_query_data(result(chunk(zeta, 0, "pump head")), query="pump head", sources=Source.objects.all())
    assert mapped.citations == []
    assert mapped.dropped[0]["reason"].startswith("stale")


def test_it_maps_a_response_that_has_chunks_but_no_references(root, lightrag_dirs):
    notes = indexed_source(root, "notes.md", "doc-22222222222222222222222222222222")
    mapped = map_query_data(result(chunk(notes, 0, "The dome opens at dusk."), references=False), query="dome opens",
                            sources=Source.objects.all())
    assert [c.source_path for c in mapped.citations] == ["specs/notes.md"]
    assert mapped.diagnostics["referencesBuiltFromChunks"] is True


def test_a_reference_without_doc_id_does_not_match_a_deleted_row(root, lightrag_dirs):
    Source.objects.create(root=root, relative_path="old.md", absolute_path="/x/old.md", lightrag_name="old.md",
                                 lightrag_doc_id="", status=Source.Status.REMOVED, stale=True)
    mapped = map_query_data(
        result({"reference_id": "1", "content": "old text", "file_path": "old.md", "chunk_id": "chunk-without-doc"}),
        query="old text", sources=Source.objects.all())
    assert mapped.citations == []
    assert "old.md" in mapped.dropped[0]["lightragFilePath"]


def test_it_drops_unmapped_files_and_says_nothing_about_hidden_ones(root, lightrag_dirs, member):
    secret_root = restricted_root("HR", "hr", group="hr")
    salaries = indexed_source(secret_root, "salaries.md", "doc-33333333333333333333333333333333")
    visible = indexed_source(root, "notes.md", "doc-44444444444444444444444444444444")
    unknown = {"reference_id": "9", "content": "x", "file_path": "someone-elses.txt", "chunk_id": "doc-5-chunk-000"}
    mapped = map_query_data(result(chunk(salaries, 0, "salary bands"), chunk(visible, 0, "salary review notes"), unknown),
                            query="salary", sources=Source.objects.visible_to(member))
    assert [c.source_path for c in mapped.citations] == ["specs/notes.md"]
    assert "salaries" not in json.dumps(mapped.dropped)
    assert {d["reason"] for d in mapped.dropped} == {"not visible to you", "unmapped: no registry row has this LightRAG file name"}


def test_it_gives_short_unique_ids_and_the_same_links_without_writing_rows(root, lightrag_dirs):
    notes = indexed_source(root, "notes.md", "doc-66666666666666666666666666666666")
    chunks = [chunk(notes, i, f"Paragraph {i} about the dome shutter.") for i in range(30)]
    first = map_query_data(result(*chunks), query="dome shutter", sources=Source.objects.all())
    ids = [c.citation_id for c in first.citations]
    assert len(ids) == 30 and len(set(ids)) == 30
    assert all(re.fullmatch(r"[0-9a-z]{4}", i) for i in ids)
    again = map_query_data(result(*chunks), query="dome shutter", sources=Source.objects.all())
    assert [c.citation_url for c in again.citations] == [c.citation_url for c in first.citations]
    assert all(c.citation_url.startswith("/c/r/") for c in first.citations)
    assert Citation.objects.count() == 0  # rows are made when a link is opened (test_permalinks.py)


def test_it_limits_results_to_the_scope(root, lightrag_dirs):
    a = indexed_source(root, "2024/a.md", "doc-77777777777777777777777777777777")
    b = indexed_source(root, "2025/b.md", "doc-88888888888888888888888888888888")
    mapped = map_query_data(result(chunk(a, 0, "telescope a"), chunk(b, 0, "telescope b")), query="telescope",
                            sources=Source.objects.all(), scope=["specs/2025"])
    assert [c.source_path for c in mapped.citations] == ["specs/2025/b.md"]


GAMMA_DOC = "doc-66309693646f2902a212f769449cdedc"


def test_it_keeps_lightrags_synthetic_heading_out_of_evidence_and_heading_path(root, lightrag_dirs):
    # Recorded from LightRAG 1.5.7's native parser on the demo manual: the text
    # before its first heading sits under the invented "Preface/Uncategorized".
    inputs, _ = lightrag_dirs
    gamma = indexed_source(root, "gamma.docx", GAMMA_DOC)
    install_sidecar(inputs, gamma.lightrag_name, "demo_gamma_preface.blocks.jsonl")
    preface, introduction = blocks("demo_gamma_preface.blocks.jsonl")[:2]
    assert preface["heading"] == "Preface/Uncategorized"

    mapped = map_query_data(
        result(chunk(gamma, 0, preface["content"] + "\n\n" + introduction["content"])),
        query="revision C imaging camera", sources=Source.objects.all(),
    )
    [citation] = mapped.citations
    assert citation.block_id == preface["blockid"]
    assert citation.heading_path == []
    assert "Preface" not in citation.evidence_text and "Uncategorized" not in citation.evidence_text
    assert citation.evidence_text.startswith("GAMMA Telescope Operations")
    assert citation.locator["headingPath"] == []

    # A real heading still leads the evidence of its own section.
    mapped = map_query_data(result(chunk(gamma, 1, introduction["content"])), query="altitude-azimuth mount",
                            sources=Source.objects.all())
    assert mapped.citations[0].heading_path == ["1. Introduction"]
    assert mapped.citations[0].evidence_text.startswith("1. Introduction")


def test_it_never_puts_a_synthetic_heading_into_evidence_text():
    from mnote.text import evidence_window

    window = evidence_window("Text before any heading about mirrors.", "mirrors", heading_path=["Preface/Uncategorized"])
    assert window == "Text before any heading about mirrors."


def test_the_substring_shortcut_agrees_with_the_fuzzy_score_it_replaces():
    """Issue 17: a block that holds the query window whole (or lies whole in
    it) is found by a substring test; that is exactly partial_ratio == 100."""
    import random

    from rapidfuzz import fuzz

    from mnote.citations.matching import _inside_either

    rng = random.Random(17)
    for _ in range(3000):
        # The window is never empty when the shortcut is asked (an empty one goes the fuzzy way).
        a = "".join(rng.choice("ab主镜 ") for _ in range(rng.randint(1, 8)))
        b = "".join(rng.choice("ab主镜 ") for _ in range(rng.randint(0, 12)))
        assert _inside_either(a, b) == (fuzz.partial_ratio(a, b) == 100), (a, b)


def test_mapping_reads_the_registry_in_one_query_whatever_it_cites(root, lightrag_dirs, django_assert_num_queries):
    """Each citation reads only the registry columns fetched with the rows:
    one more field read would be a query per cited file on every search."""
    inputs, _ = lightrag_dirs
    zeta = indexed_source(root, "zeta.docx", ZETA_DOC)
    install_sidecar(inputs, zeta.lightrag_name, "sidecar_docx_sample.blocks.jsonl")
    notes = indexed_source(root, "notes.md", "doc-66666666666666666666666666666666")
    first, power, drawings = (b["content"] for b in blocks("sidecar_docx_sample.blocks.jsonl"))
    body = result(chunk(zeta, 1, power), chunk(notes, 0, "Pump maintenance notes."), chunk(zeta, 3, drawings))
    with django_assert_num_queries(1):
        mapped = map_query_data(body, query="pump", sources=Source.objects.all())
    # Grouped by file, as LightRAG's references are.
    assert [c.source_path for c in mapped.citations] == ["specs/zeta.docx", "specs/zeta.docx", "specs/notes.md"]
    assert [c.precision for c in mapped.citations] == ["paragraph", "paragraph", "file"]
