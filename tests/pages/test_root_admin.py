"""Roots and sources in the admin: adding a root syncs it, bad paths are
refused with a reason, registry rows change only through actions.

    nice .venv/bin/python -m pytest tests/pages/test_root_admin.py
"""

import os

import pytest
from django.contrib.messages import get_messages

from mnote.library.models import IndexedRoot, Job, Source
from tests.factories import root_form
from tests.files import write_files

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def papers_dir(library_dir, input_dir):
    return write_files(library_dir / "papers", {
        "intro.md": "# Intro\nWelcome.",
        "report.txt": "Quarterly report.",
        "private/draft.md": "Not for the library.",
    })  # fmt: skip


@pytest.fixture
def papers(admin_client, papers_dir):
    # Followed, so its messages are shown here and not in the next response.
    admin_client.post("/admin/library/indexedroot/add/", root_form(path="papers"), follow=True)
    return IndexedRoot.objects.get()


def shown_messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def statuses(root):
    return dict(root.sources.values_list("relative_path", "status"))


def test_it_redirects_a_member_away_from_the_library_admin(member_client):
    for url in ["/admin/library/indexedroot/", "/admin/library/indexedroot/add/", "/admin/library/source/"]:
        response = member_client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")


@pytest.mark.parametrize(
    "path, reason",
    [
        ("../x", "contains “..”"),
        ("/etc", "is absolute"),
        ("nowhere", "does not exist in the library base directory"),
    ],
)
def test_it_shows_why_a_root_path_is_refused(admin_client, library_dir, path, reason):
    response = admin_client.post("/admin/library/indexedroot/add/", root_form(path=path))
    assert response.status_code == 200
    assert reason in response.content.decode()
    assert not IndexedRoot.objects.exists()


def test_it_refuses_a_root_reached_through_a_symlink_out_of_the_base(admin_client, library_dir, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", library_dir / "shortcut")
    response = admin_client.post("/admin/library/indexedroot/add/", root_form(path="shortcut"))
    assert "leads outside the library base directory" in response.content.decode()
    assert not IndexedRoot.objects.exists()


def test_it_syncs_a_new_root_and_shows_its_sources(admin_client, papers_dir, input_dir):
    response = admin_client.post(
        "/admin/library/indexedroot/add/",
        root_form(path="./papers/", exclude_patterns="**/private/**\n\n  *.tmp  \n"),
        follow=True,
    )

    root = IndexedRoot.objects.get()
    assert (root.path, root.exclude_patterns) == ("papers", ["**/private/**", "*.tmp"])
    assert statuses(root) == {"intro.md": "queued", "report.txt": "queued", "private/draft.md": "excluded"}
    assert "Papers: 2 new, 0 changed, 0 missing, 0 unchanged, 1 excluded, 2 queued" in shown_messages(response)
    listing = admin_client.get("/admin/library/source/").content.decode()
    assert "intro.md" in listing and "private/draft.md" in listing


def test_it_edits_exclude_patterns_one_per_line(admin_client, papers):
    page = admin_client.get(f"/admin/library/indexedroot/{papers.pk}/change/").content.decode()
    assert "<textarea" in page

    response = admin_client.post(
        f"/admin/library/indexedroot/{papers.pk}/change/", root_form(exclude_patterns="**/private/**"), follow=True
    )

    papers.refresh_from_db()
    assert papers.exclude_patterns == ["**/private/**"]
    assert statuses(papers)["private/draft.md"] == "excluded"
    assert any("1 excluded" in m for m in shown_messages(response))


def test_it_turns_a_failing_sync_into_a_message(admin_client, papers_dir, monkeypatch):
    def broken_sync(root):
        raise PermissionError("[Errno 13] Permission denied: 'papers/intro.md'")

    monkeypatch.setattr("mnote.library.sync_report.sync_root", broken_sync)
    response = admin_client.post("/admin/library/indexedroot/add/", root_form(), follow=True)

    assert response.status_code == 200
    assert IndexedRoot.objects.filter(name="Papers").exists()
    assert "Syncing “Papers” failed: [Errno 13] Permission denied: 'papers/intro.md'" in shown_messages(response)


def test_it_syncs_selected_roots_on_demand(admin_client, papers, papers_dir):
    (papers_dir / "new.md").write_text("New.")
    response = admin_client.post(
        "/admin/library/indexedroot/", {"action": "sync_now", "_selected_action": [papers.pk]}, follow=True
    )
    assert "Papers: 1 new, 0 changed, 0 missing, 3 unchanged, 0 excluded, 1 queued" in shown_messages(response)


def test_it_removes_lightrag_documents_when_a_root_is_deleted_and_keeps_the_files(admin_client, papers, papers_dir):
    Source.objects.filter(relative_path="intro.md").update(status="indexed", lightrag_doc_id="doc-intro")
    confirmation = admin_client.get(f"/admin/library/indexedroot/{papers.pk}/delete/")
    assert "permission" not in confirmation.content.decode().lower()

    response = admin_client.post(f"/admin/library/indexedroot/{papers.pk}/delete/", {"post": "yes"}, follow=True)

    assert not IndexedRoot.objects.exists() and not Source.objects.exists()
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-intro"]}
    assert any("LightRAG documents of 3 files are being removed" in m for m in shown_messages(response))
    assert (papers_dir / "intro.md").exists() and (papers_dir / "report.txt").exists()


def test_it_cleans_up_lightrag_when_roots_are_deleted_in_bulk(admin_client, papers):
    Source.objects.filter(relative_path="intro.md").update(status="indexed", lightrag_doc_id="doc-intro")
    admin_client.post(
        "/admin/library/indexedroot/",
        {"action": "delete_selected", "_selected_action": [papers.pk], "post": "yes"},
    )
    assert not IndexedRoot.objects.exists()
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-intro"]}


def test_it_shows_sources_read_only(admin_client, papers):
    listing = admin_client.get("/admin/library/source/").content.decode()
    for action in ["reindex", "delete_lightrag_index", "clear_stale_records"]:
        assert f'value="{action}"' in listing
    assert "/admin/library/source/add/" not in listing
    source = papers.sources.get(relative_path="intro.md")
    page = admin_client.get(f"/admin/library/source/{source.pk}/change/")
    assert page.status_code == 200
    assert 'name="status"' not in page.content.decode()
    assert admin_client.post(f"/admin/library/source/{source.pk}/change/", {"status": "indexed"}).status_code == 403
    assert admin_client.get("/admin/library/source/add/").status_code == 403
    assert admin_client.post(f"/admin/library/source/{source.pk}/delete/", {"post": "yes"}).status_code == 403
    source.refresh_from_db()
    assert source.status == Source.Status.QUEUED


def source_action(admin_client, action, sources):
    return admin_client.post(
        "/admin/library/source/", {"action": action, "_selected_action": [s.pk for s in sources]}, follow=True
    )


def test_it_reindexes_selected_sources(admin_client, papers, papers_dir):
    intro = papers.sources.get(relative_path="intro.md")
    report = papers.sources.get(relative_path="report.txt")
    Source.objects.filter(pk=intro.pk).update(status="indexed", lightrag_doc_id="doc-intro")
    (papers_dir / "report.txt").unlink()

    response = source_action(admin_client, "reindex", [intro, report])

    assert shown_messages(response) == [
        "1 file queued for reindexing; its old LightRAG document is being deleted.",
        "1 file is gone from its folder: its LightRAG document is being removed instead.",
    ]
    intro.refresh_from_db()
    assert intro.status == Source.Status.QUEUED and intro.generation == 1
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-intro"]}


def test_it_deletes_the_index_of_selected_sources(admin_client, papers, papers_dir):
    intro = papers.sources.get(relative_path="intro.md")
    Source.objects.filter(pk=intro.pk).update(status="indexed", lightrag_doc_id="doc-intro")

    response = source_action(admin_client, "delete_lightrag_index", [intro])

    assert shown_messages(response) == [
        "LightRAG's document of 1 file is being removed; the file stays where it is."
    ]
    intro.refresh_from_db()
    assert intro.status == Source.Status.DELETE_SUBMITTED and intro.stale
    assert (papers_dir / "intro.md").read_text() == "# Intro\nWelcome."


def test_it_clears_stale_records_but_keeps_deletes_in_flight(admin_client, papers):
    Source.objects.filter(relative_path="intro.md").update(status="removed")
    Source.objects.filter(relative_path="report.txt").update(status="delete_submitted", stale=True)

    response = source_action(admin_client, "clear_stale_records", papers.sources.all()[:1])

    assert shown_messages(response) == [
        "Cleared 1 stale record (removed, failed or stale); rows whose delete is still submitted stay."
    ]
    assert statuses(papers) == {"report.txt": "delete_submitted", "private/draft.md": "queued"}


def test_it_still_deletes_by_name_what_lightrag_was_indexing_when_the_root_goes(admin_client, papers):
    source = Source.objects.get(relative_path="intro.md")
    Source.objects.filter(pk=source.pk).update(status="indexing", lightrag_name="mnote-0123456789abcdef-intro.md")

    admin_client.post(f"/admin/library/indexedroot/{papers.pk}/delete/", {"post": "yes"}, follow=True)

    # The job outlives the row: the worker deletes the document once LightRAG lists it.
    job = Job.objects.get(kind=Job.Kind.DELETE)
    assert job.source is None
    assert job.payload == {"doc_ids": [], "lightrag_names": ["mnote-0123456789abcdef-intro.md"]}
