"""Roots, expansion, sync, ingest and its recovery, jobs and workers, the watcher, uploads, progress and the demo library.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""

import pytest


@pytest.fixture
def root(library_dir, input_dir):
    """A Books root of five small files on disk (the ingest-recovery and reconcile tests'), none registered yet."""
    from mnote.library.models import IndexedRoot

    folder = library_dir / "books"
    folder.mkdir()
    for name in ("a.docx", "b.docx", "c.md", "d.md", "e.md"):
        (folder / name).write_text(f"content of {name}")
    return IndexedRoot.objects.create(name="Books", path="books")
