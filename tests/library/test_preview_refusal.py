"""A file the preview will never show is never sent to LightRAG: LightRAG's
own parser may read a DOCX that declares a DTD, but the preview refuses it
(Word never writes one), so its citations would open a refusal page. It
fails at once with its plain reason instead, and the files beside it go on."""

import zipfile

import pytest

from mnote.library.ingest import link_for_scan
from mnote.library.models import IndexedRoot, Source
from mnote.library.reasons import plain_reason
from mnote.library.sync import sync_root
from tests.docx_factory import make_docx, para

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def with_dtd(path):
    """The same DOCX, its document part declaring a DTD (harmless: no entities)."""
    with zipfile.ZipFile(path) as archive:
        parts = {info.filename: archive.read(info) for info in archive.infolist()}
    head, _, rest = parts["word/document.xml"].partition(b"?>")
    parts["word/document.xml"] = head + b"?><!DOCTYPE w:document>" + rest
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return path


@pytest.fixture
def shelf(library_dir, input_dir):
    (library_dir / "shelf").mkdir()
    return IndexedRoot.objects.create(name="Shelf", path="shelf")


def test_a_docx_the_preview_refuses_is_not_sent_and_says_why(shelf, library_dir, input_dir):
    folder = library_dir / "shelf"
    with_dtd(make_docx(folder / "declared.docx", [para("Dome shutter maintenance log")]))
    make_docx(folder / "plain.docx", [para("Dome shutter maintenance log, second copy")])
    before = (folder / "declared.docx").read_bytes()
    sync_root(shelf)
    linked, _ = link_for_scan()
    refused = shelf.sources.get(relative_path="declared.docx")
    plain = shelf.sources.get(relative_path="plain.docx")
    assert list(linked) == [plain.pk]
    assert [path.name for path in input_dir.iterdir()] == [plain.link_name]
    assert (refused.status, refused.failure_kind) == (Source.Status.FAILED, Source.Failure.PERMANENT)
    assert "document type declaration (DTD)" in refused.last_error
    assert plain_reason(refused) == "Damaged: the file could not be read."
    assert refused not in Source.objects.citable()
    assert (folder / "declared.docx").read_bytes() == before
