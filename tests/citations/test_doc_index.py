"""One compact index per document version, read by every web process from
disk instead of parsing the sidecar and LightRAG's chunk store again."""

import json
import shutil

import pytest

from mnote.citations import sidecar as sidecar_module
from mnote.citations.context import chunk_context
from mnote.citations.mapper import map_query_data
from mnote.citations.sidecar import doc_index, forget_doc_indexes
from mnote.library.models import Source
from tests.lightrag_fakes import QUERY, recorded
from tests.paths import MAPPER_FIXTURES

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def refuse(*args, **kwargs):
    raise AssertionError("parsed again: the index on disk was not used")


def test_another_process_reads_the_index_without_parsing_lightrags_files(gamma, monkeypatch):
    first = doc_index(gamma)
    assert first.sidecar is not None and first.chunks_in_order() and first.store_seen
    forget_doc_indexes()  # a fresh web process: nothing in memory
    monkeypatch.setattr(sidecar_module, "_read_sidecar", refuse)
    monkeypatch.setattr(sidecar_module, "_read_chunk_store", refuse)
    again = doc_index(gamma)
    assert [b.content for b in again.sidecar.blocks] == [b.content for b in first.sidecar.blocks]
    assert again.sidecar.normalised_contents == first.sidecar.normalised_contents
    assert again.chunks_in_order(with_text=True) == first.chunks_in_order(with_text=True)
    _, body = recorded("query_data_naive.json")
    [citation] = map_query_data(body, query=QUERY, sources=Source.objects.all()).citations
    assert citation.diagnostics["blockMatch"].startswith("chunk_store_refs")


def test_a_rewritten_sidecar_is_read_again(gamma, lightrag_dirs):
    inputs, _ = lightrag_dirs
    before = doc_index(gamma)
    path = sidecar_module.sidecar_path(inputs, "gamma.docx")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("type") == "meta"] + [r for r in rows if r.get("type") == "content"][:2]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    forget_doc_indexes()
    assert len(doc_index(gamma).sidecar.blocks) == 2 < len(before.sidecar.blocks)


def test_without_a_json_chunk_store_it_maps_by_text_and_the_panel_uses_blocks(gamma, lightrag_dirs):
    _, storage = lightrag_dirs
    (storage / "kv_store_text_chunks.json").unlink()  # LightRAG on another storage back-end
    index = doc_index(gamma)
    assert index.chunks_in_order() == [] and not index.store_seen and index.sidecar is not None
    _, body = recorded("query_data_naive.json")
    [citation] = map_query_data(body, query=QUERY, sources=Source.objects.all()).citations
    assert citation.block_id and citation.diagnostics["blockMatch"].startswith("text_")
    assert chunk_context(gamma, 0).unit == "sidecar_blocks"
    # The store appears later (storage moved to JSON): the index is built again with it.
    shutil.copy(MAPPER_FIXTURES / "sdk_kv_store_text_chunks.json", storage / "kv_store_text_chunks.json")
    assert doc_index(gamma).chunks_in_order() and chunk_context(gamma, 0).unit == "lightrag_chunks"



def test_a_new_process_decodes_only_the_blocks_a_search_cites(gamma, lightrag_dirs):
    """Issue 17: a cold search read every block of a big document; the index
    on disk keeps each block apart, decoded when the mapper first uses it."""
    path = sidecar_module.sidecar_path(lightrag_dirs[0], "gamma.docx")
    more = [{"type": "content", "blockid": f"extra-{i}", "content": f"Appendix {i}", "heading": "Appendix"} for i in range(5)]
    with path.open("a") as f:  # blocks no chunk of the result comes from
        f.write("".join(json.dumps(row) + "\n" for row in more))
    doc_index(gamma)  # written to disk
    forget_doc_indexes()
    index = doc_index(gamma)
    blocks = index.sidecar.blocks
    assert sum(b is not None for b in blocks._decoded) == 0
    _, body = recorded("query_data_naive.json")
    [citation] = map_query_data(body, query=QUERY, sources=Source.objects.all()).citations
    assert 1 <= sum(b is not None for b in blocks._decoded) < len(blocks)
    assert index.sidecar.by_id[citation.block_id].block_id == citation.block_id
    # Every block reads back as it was parsed: in order, by position and by id.
    parsed = sidecar_module.load_sidecar(lightrag_dirs[0], "gamma.docx")
    assert list(blocks) == list(parsed.blocks) and blocks[-1] == parsed.blocks[-1]
    assert blocks[1:3] == list(parsed.blocks[1:3])
    assert [index.sidecar.by_id[b.block_id] for b in parsed.blocks] == list(parsed.blocks)


def test_a_damaged_index_file_is_built_again(gamma, settings):
    doc_index(gamma)
    [path] = (settings.DATA_DIR / "cache" / "index").glob(f"{gamma.sha256}-*.marshal")
    path.write_bytes(path.read_bytes()[:-10])  # cut short
    forget_doc_indexes()
    again = doc_index(gamma)
    assert [b.block_id for b in again.sidecar.blocks] == list(again.sidecar.by_id) != []
    assert path.stat().st_size > 10 and doc_index(gamma).sidecar.blocks[-1].content


def test_a_new_process_cites_exactly_what_the_first_did(gamma):
    """The blocks' display texts come from the index file in a new process
    (cleaned when it was written): quotes, evidence and links stay the same."""
    from mnote.citations.mapper import forget_text_memos

    _, body = recorded("query_data_naive.json")
    first = map_query_data(body, query=QUERY, sources=Source.objects.all()).citations
    forget_doc_indexes()
    forget_text_memos()
    sidecar_module.forget_display_texts()
    again = map_query_data(body, query=QUERY, sources=Source.objects.all()).citations
    assert [c.as_json() for c in again] == [c.as_json() for c in first]
    assert first and all(c.evidence_text and c.block_id for c in first)
