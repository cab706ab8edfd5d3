"""The HTML pages: home, library tree, roots, search, ask, the preview page, translation and who may reach which URL.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py; here, what the
search and ask pages' tests share."""

import pytest

from tests.lightrag_fakes import no_llm_health, query_stream_lines


@pytest.fixture
def with_llm(fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    fake_lightrag.on("POST", "/query/stream", (200, query_stream_lines()))
    return fake_lightrag


@pytest.fixture
def without_llm(fake_lightrag):
    fake_lightrag.on("GET", "/health", no_llm_health())
    fake_lightrag.on("POST", "/query/data", "query_data_naive.json")
    return fake_lightrag


@pytest.fixture
def library(db, lightrag_dirs):
    """An office root of four indexed sources the scripted LightRAG answers about."""
    from mnote.library.models import IndexedRoot

    from tests.factories import indexed_source

    root = IndexedRoot.objects.create(name="Office", path="office")
    return {
        "handbook": indexed_source(root, "policies/handbook.docx", lightrag_name="handbook.docx"),
        "tables": indexed_source(root, "reports/crossrefs.docx", lightrag_name="crossrefs.docx"),
        "theme": indexed_source(root, "reports/theme.docx", lightrag_name="theme.docx"),
        "minutes": indexed_source(root, "minutes/2026-10.md", lightrag_name="minutes.md"),
    }
