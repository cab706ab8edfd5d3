"""The HTML pages: home, library tree, roots, search, ask, the preview page, translation and who may reach which URL.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py; here, the
library the search pages' tests search."""

import pytest


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
