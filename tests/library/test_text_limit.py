"""Files that would flood LightRAG (issue 9, finding 4: one DOCX became
67,352 chunks) are held back at sync with the reason shown to admins, and
go when an admin reindexes them.

    nice .venv/bin/python -m pytest tests/library/test_text_limit.py -q
"""

import json
import zipfile

import pytest

from mnote.api.models import ApiToken
from mnote.library.ingest import link_for_scan
from mnote.library.models import IndexedRoot, Source
from mnote.library.sync import sync_root
from mnote.library.text_size import estimated_text_bytes

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
MB = 1024 * 1024


@pytest.fixture
def flood(library_dir, input_dir, settings):
    settings.MNOTE_MAX_TEXT_MB = 1
    folder = library_dir / "books"
    folder.mkdir()
    (folder / "short.md").write_text("# Short\nA page.")
    (folder / "huge.txt").write_text("word " * (MB // 2))  # 2.5 MB of text
    with zipfile.ZipFile(folder / "huge.docx", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", "<w:p>same words again</w:p>" * 60_000)  # 1.6 MB, compresses to KBs
        z.writestr("word/media/photo.png", b"\x89PNG" + b"\0" * (3 * MB))  # images are not text
    return IndexedRoot.objects.create(name="Books", path="books")


def link_for_scan_now(root):
    """The worker's step before a scan: the sources it links into LightRAG's inputs."""
    linked, _more = link_for_scan()
    return list(root.sources.filter(pk__in=linked))


def statuses(root):
    return dict(root.sources.values_list("relative_path", "status"))


def test_it_estimates_text_from_the_package_directory(flood, library_dir):
    assert estimated_text_bytes(library_dir / "books" / "huge.docx") == len("<w:p>same words again</w:p>") * 60_000
    assert estimated_text_bytes(library_dir / "books" / "short.md") == len("# Short\nA page.")


def test_a_file_with_too_much_text_is_held_back_with_the_reason(flood, input_dir):
    summary = sync_root(flood)
    assert statuses(flood) == {"short.md": "queued", "huge.txt": "excluded", "huge.docx": "excluded"}
    assert summary.held == 2 and "2 held back" in summary.line()
    held = flood.sources.get(relative_path="huge.txt")
    assert held.excluded_by.startswith("the text-size limit (about 2 MB of text, more than MNOTE_MAX_TEXT_MB=1)")
    assert [s.relative_path for s in link_for_scan_now(flood)] == ["short.md"]
    assert [p.name.split("-", 2)[2] for p in input_dir.iterdir()] == ["short.md"]
    # Still held at the next sync.
    assert sync_root(flood).held == 2
    assert statuses(flood)["huge.txt"] == "excluded"


def test_an_admin_reindex_lets_a_held_file_go_and_it_stays_allowed(flood, input_dir, admin_user, client):
    sync_root(flood)
    held = flood.sources.get(relative_path="huge.txt")
    client.force_login(admin_user)
    client.post(f"/library/sources/{held.pk}/reindex/")
    held.refresh_from_db()
    assert held.status == "queued" and held.allow_large_text
    # A large file goes in a scan of its own, once the small ones queued with it have gone.
    assert held not in link_for_scan_now(flood)
    flood.sources.filter(status="queued").exclude(pk=held.pk).update(status="indexing")
    assert held in link_for_scan_now(flood)
    assert any(p.name.endswith("-huge.txt") for p in input_dir.iterdir())
    sync_root(flood)
    assert statuses(flood)["huge.txt"] == "queued"


def test_the_api_lets_a_held_file_go_too(flood, admin_user, client):
    sync_root(flood)
    held = flood.sources.get(relative_path="huge.docx")
    key = ApiToken.objects.create_token(admin_user)[1]
    response = client.post("/api/admin/ingest", json.dumps({"sourceId": held.pk}), content_type="application/json",
                           headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200 and response.json()["result"] == "queued"
    assert Source.objects.get(pk=held.pk).allow_large_text
