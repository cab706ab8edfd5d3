"""The library dashboard: filters over the registry ("needs attention"
first), row actions for admins, live updates while something is in progress,
LightRAG's unmapped documents, and the roots pages.

    nice .venv/bin/python -m pytest -q tests/pages/test_dashboard.py
"""

import dataclasses
import re

import httpx
import pytest
from django.contrib.auth.models import Group

from mnote.library.models import IndexedRoot, Job, Source
from tests.factories import restricted_root
from tests.factories import root_form

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

DOCUMENTS = "documents_paginated_after_delete.json"


@pytest.fixture
def lightrag_up(fake_lightrag):
    return fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)


@pytest.fixture
def lightrag_down(fake_lightrag):
    refused = httpx.ConnectError("Connection refused")
    return fake_lightrag.on("GET", "/health", refused).on("POST", "/documents/paginated", refused)


@pytest.fixture
def papers(library_dir):
    (library_dir / "papers").mkdir()
    return IndexedRoot.objects.create(name="Papers", path="papers")


@pytest.fixture
def board(library_dir):
    (library_dir / "board").mkdir()
    root = restricted_root("Board", "board", group="board")
    return root


def add(root, relative_path, status, **fields):
    return Source.objects.create(
        root=root,
        relative_path=relative_path,
        absolute_path=str(root.absolute_path / relative_path),
        status=status,
        **fields,
    )


@pytest.fixture
def registry(papers, board):
    """One row per kind of state, in two roots; gamma and beta map to LightRAG documents."""
    S = Source.Status
    return {
        "failed": add(papers, "failed.pdf", S.FAILED, last_error="Parser crashed on page 3 " + "x" * 200),
        "stale": add(papers, "changed.md", S.STALE, stale=True),
        "not_indexed": add(papers, "waiting.md", S.NOT_INDEXED),
        "duplicate": add(papers, "copy.md", S.DUPLICATE),
        "queued": add(papers, "queued.md", S.QUEUED),
        "indexed": add(
            papers, "gamma.docx", S.INDEXED, lightrag_doc_id="doc-b7cf006581394ea318c700a870cecd9f", chunk_count=4
        ),
        "removed": add(papers, "gone.md", S.REMOVED),
        "excluded": add(papers, "draft-private/secret.md", S.EXCLUDED, excluded_by="**/draft-private/**"),
        "board_failed": add(board, "minutes-failed.md", S.FAILED),
        "board_indexed": add(board, "beta.md", S.INDEXED, lightrag_doc_id="doc-8f0e7ea1689dd00378a7866c4934ca47"),
    }


def table_paths(page: str) -> set[str]:
    """The library paths in the source table's file column."""
    return set(re.findall(r'<td class="path">([^<]+)</td>', page))


def current_filter(page: str) -> str:
    return re.search(r'<a [^>]*aria-current="true">\s*([^<]+?)\s*<span', page).group(1)


# --- the table and its filters ------------------------------------------------


def test_it_shows_what_needs_attention_first_and_by_default(admin_client, lightrag_up, registry):
    page = admin_client.get("/").content.decode()
    assert current_filter(page) == "Needs attention"
    nav = page.split('class="filters"')[1].split("</nav>")[0]
    assert nav.index("Needs attention") < nav.index("Indexing") < nav.index("All")
    assert table_paths(page) == {
        "papers/failed.pdf",
        "papers/changed.md",
        "papers/waiting.md",
        "papers/copy.md",
        "board/minutes-failed.md",
    }
    assert "failed, stale (changed or missing since indexing), duplicate, not indexed yet" in page


@pytest.mark.parametrize(
    "name, expected",
    [
        ("indexing", {"papers/queued.md"}),
        ("failed", {"papers/failed.pdf", "papers/changed.md", "board/minutes-failed.md"}),
        ("indexed", {"papers/gamma.docx", "board/beta.md"}),
        ("removed", {"papers/gone.md"}),
    ],
)
def test_it_filters_the_table(admin_client, lightrag_up, registry, name, expected):
    page = admin_client.get(f"/?filter={name}").content.decode()
    assert table_paths(page) == expected


def test_it_lists_every_row_under_all_and_counts_each_filter(admin_client, lightrag_up, registry):
    page = admin_client.get("/?filter=all").content.decode()
    assert len(table_paths(page)) == 10
    counts = dict(re.findall(r'>\s*([^<>]+?) <span class="count">([^<]+)</span></a>', page))
    assert counts == {
        "Needs attention": "5",
        "Indexing": "1",
        "Failed / stale": "3",
        "Indexed": "2",
        "Removed": "1",
        "LightRAG unmapped": "3",
        "All": "10",
    }


def test_it_filters_by_path(admin_client, lightrag_up, registry):
    page = admin_client.get("/?filter=all&q=PAPERS/g").content.decode()
    assert table_paths(page) == {"papers/gamma.docx", "papers/gone.md"}


def test_it_paginates_fifty_rows_a_page(admin_client, lightrag_up, papers):
    for n in range(55):
        add(papers, f"file-{n:02}.md", Source.Status.FAILED)
    first = admin_client.get("/").content.decode()
    assert len(table_paths(first)) == 50
    assert "Showing 1–50 of 55" in first
    assert 'href="/?page=2"' in first
    second = admin_client.get("/?page=2").content.decode()
    assert table_paths(second) == {f"papers/file-{n}.md" for n in range(50, 55)}


def test_it_says_a_failure_plainly_and_keeps_lightrags_message_one_click_away(admin_client, lightrag_up, registry):
    page = admin_client.get("/").content.decode()
    error = registry["failed"].last_error
    assert '<span class="reason">Damaged: the file could not be read.</span>' in page
    assert f'<p class="full-error">{error}</p>' in page


def test_it_answers_a_bad_filter_with_400(admin_client, lightrag_up, registry):
    response = admin_client.get("/?filter=everything")
    assert response.status_code == 400
    assert b"This table view does not exist" in response.content


# --- members ------------------------------------------------------------------


def test_it_shows_members_only_sources_of_roots_they_may_see(member_client, lightrag_up, registry):
    page = member_client.get("/?filter=all").content.decode()
    assert "papers/failed.pdf" in table_paths(page)
    assert "board/minutes-failed.md" not in page
    assert "board/beta.md" not in page
    assert "10 files" not in page and "8 files in the folders you can see" in page


def test_it_shows_members_no_actions_and_no_unmapped_names(member_client, lightrag_up, registry):
    page = member_client.get("/?filter=all").content.decode()
    assert "Reindex" not in page
    assert "Delete index" not in page
    assert "Clear stale records" not in page
    assert "Manage roots" not in page
    assert "filter=unmapped" not in page
    assert "epsilon.docx" not in page
    # LightRAG's counts cover folders the member may not see: admins only.
    assert 'id="registry-h"' not in page and "LightRAG unmapped" not in page


def test_it_shows_members_in_a_group_that_groups_sources(client, member, lightrag_up, registry):
    member.groups.add(Group.objects.get(name="board"))
    client.force_login(member)
    page = client.get("/?filter=all").content.decode()
    assert "board/minutes-failed.md" in table_paths(page)


def test_it_refuses_a_member_the_unmapped_filter(member_client, lightrag_up, registry):
    assert member_client.get("/?filter=unmapped").status_code == 400


@pytest.mark.parametrize(
    "url", ["/library/sources/{id}/reindex/", "/library/sources/{id}/delete-index/", "/library/sources/clear-stale/"]
)
def test_it_refuses_member_actions_with_403(member_client, registry, url):
    failed = registry["failed"]
    response = member_client.post(url.format(id=failed.pk))
    assert response.status_code == 403
    assert b"Admins only" in response.content
    failed.refresh_from_db()
    assert failed.status == Source.Status.FAILED
    assert Source.objects.count() == 10
    assert not Job.objects.exists()


# --- admin actions ------------------------------------------------------------


def test_it_reindexes_a_file_for_an_admin(admin_client, lightrag_up, registry, input_dir, library_dir):
    indexed = registry["indexed"]
    (library_dir / "papers" / "gamma.docx").write_bytes(b"new content")
    response = admin_client.post(f"/library/sources/{indexed.pk}/reindex/?filter=indexed", follow=True)
    assert response.redirect_chain == [("/?filter=indexed", 302)]
    indexed.refresh_from_db()
    assert indexed.status == Source.Status.QUEUED
    assert Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).exists()
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-b7cf006581394ea318c700a870cecd9f"]}
    assert "“papers/gamma.docx” is queued for reindexing" in response.content.decode()


def test_it_answers_an_htmx_action_with_the_refreshed_table_and_its_message(
    admin_client, lightrag_up, registry, input_dir, library_dir
):
    (library_dir / "papers" / "failed.pdf").write_bytes(b"%PDF-1.4")
    failed = registry["failed"]
    response = admin_client.post(f"/library/sources/{failed.pk}/reindex/", HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    # The message is swapped in out of band, above the table, so polling leaves it be.
    messages, table = page.split('<section id="sources"')
    assert 'id="sources-messages" aria-live="polite" hx-swap-oob="true"' in messages
    assert "is queued for reindexing" in messages
    assert "<html" not in page
    page = table
    # Queued now, so gone from "needs attention", and the table polls.
    assert "papers/failed.pdf" not in table_paths(page)
    assert 'hx-trigger="every 3s"' in page


def test_it_says_why_an_excluded_file_is_not_reindexed(admin_client, lightrag_up, registry):
    excluded = registry["excluded"]
    page = admin_client.post(f"/library/sources/{excluded.pk}/reindex/", follow=True).content.decode()
    assert "is excluded by “**/draft-private/**”" in page
    assert not Job.objects.exists()


def test_it_deletes_a_files_index_and_keeps_the_row(admin_client, lightrag_up, registry, input_dir):
    indexed = registry["indexed"]
    page = admin_client.post(f"/library/sources/{indexed.pk}/delete-index/", follow=True).content.decode()
    indexed.refresh_from_db()
    assert indexed.status == Source.Status.DELETE_SUBMITTED
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-b7cf006581394ea318c700a870cecd9f"]}
    assert "the file stays where it is" in page


def test_it_clears_stale_records_and_says_how_many(admin_client, lightrag_up, registry):
    page = admin_client.post("/library/sources/clear-stale/", follow=True).content.decode()
    # failed.pdf, changed.md, gone.md and the board's failed minutes.
    assert "Cleared 4 stale records" in page
    assert not Source.objects.filter(status__in=[Source.Status.FAILED, Source.Status.REMOVED]).exists()


def test_it_offers_row_actions_only_where_they_apply(admin_client, lightrag_up, registry):
    page = admin_client.get("/?filter=all").content.decode()
    assert f"/library/sources/{registry['indexed'].pk}/delete-index/" in page
    assert f"/library/sources/{registry['removed'].pk}/delete-index/" not in page
    assert f"/library/sources/{registry['excluded'].pk}/reindex/" not in page
    assert f"/library/sources/{registry['failed'].pk}/reindex/?filter=all" in page
    assert 'name="csrfmiddlewaretoken"' in page


# --- live updates -------------------------------------------------------------


def test_it_polls_while_something_is_in_progress(admin_client, lightrag_up, papers):
    add(papers, "done.md", Source.Status.INDEXED)
    idle = admin_client.get("/").content.decode()
    assert "every 3s" not in idle
    add(papers, "busy.md", Source.Status.INDEXING)
    busy = admin_client.get("/?filter=failed").content.decode()
    assert 'hx-get="/?filter=failed" hx-trigger="every 3s"' in busy


def test_it_polls_for_rows_the_member_cannot_see_never(member_client, lightrag_up, board, papers):
    add(board, "secret-busy.md", Source.Status.QUEUED)
    assert "every 3s" not in member_client.get("/").content.decode()


def test_it_returns_only_the_table_to_htmx_and_asks_lightrag_nothing_for_a_member(
    member_client, fake_lightrag, registry
):
    response = member_client.get("/?filter=all", HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page and "LightRAG unavailable" not in page
    assert page.lstrip().startswith('<section id="sources"')
    assert "papers/failed.pdf" in table_paths(page)
    assert fake_lightrag.requests == []
    assert response.headers["Vary"].count("HX-Request") == 1


def test_it_returns_the_whole_page_to_an_htmx_history_restore(member_client, lightrag_up, registry):
    page = member_client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true").content.decode()
    assert "<html" in page


# --- LightRAG down, LightRAG unmapped -------------------------------------------


def test_it_renders_the_table_when_lightrag_is_down(admin_client, lightrag_down, registry):
    response = admin_client.get("/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "LightRAG unavailable" in page
    assert "papers/failed.pdf" in table_paths(page)
    # Health failed, so the document list is not even asked for.
    assert [r.url.path for r in lightrag_down.requests] == ["/health"]
    assert re.search(r"Documents in LightRAG</dt>\s*<dd[^>]*><span class=\"muted\">unknown", page)


def test_it_says_the_unmapped_list_is_unavailable_when_lightrag_is_down(admin_client, lightrag_down, registry):
    response = admin_client.get("/?filter=unmapped", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    page = response.content.decode()
    assert "unmapped documents cannot be listed" in page
    assert "Connection refused" in page


def test_it_lists_lightrag_unmapped_file_names_for_admins(admin_client, lightrag_up, registry):
    page = admin_client.get("/?filter=unmapped").content.decode()
    assert current_filter(page) == "LightRAG unmapped"
    assert table_paths(page) == {"epsilon.docx", "delta_note.txt"}
    assert page.count('<td class="path">epsilon.docx</td>') == 2
    assert "gamma.docx" not in table_paths(page)
    assert "dup-63dfc8af3485775dc9beb2694420cc10" in page


# --- roots ----------------------------------------------------------------------


def test_it_lists_roots_for_admins(admin_client, papers, board):
    page = admin_client.get("/library/roots/").content.decode()
    assert "<code>papers</code>" in page and "<code>board</code>" in page
    assert "all members" in page
    assert ">board<" in page.split("<code>board</code>")[1]  # the group it is shared with


@pytest.mark.parametrize(
    "url", ["/library/roots/", "/library/roots/add/", "/library/roots/{id}/edit/", "/library/roots/{id}/remove/"]
)
def test_it_answers_members_on_root_pages_with_403(member_client, papers, url):
    response = member_client.get(url.format(id=papers.pk))
    assert response.status_code == 403
    assert b"open to admins only" in response.content


def test_it_sends_anonymous_visitors_from_root_pages_to_login(client):
    response = client.get("/library/roots/")
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")


def test_it_shows_the_form_error_for_a_bad_root_path(admin_client, library_dir):
    response = admin_client.post("/library/roots/add/", root_form(path="../etc"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "contains “..”; paths must stay inside the library base directory" in page
    assert "The root was not saved" in page
    assert not IndexedRoot.objects.exists()


def test_it_adds_a_root_syncs_it_and_shows_the_summary(admin_client, library_dir, input_dir):
    folder = library_dir / "papers"
    folder.mkdir()
    (folder / "intro.md").write_text("# Intro\nWelcome.")
    (folder / "report.txt").write_text("Quarterly report.")
    response = admin_client.post("/library/roots/add/", root_form(), follow=True)
    page = response.content.decode()
    assert response.redirect_chain == [("/library/roots/", 302)]
    assert "Papers: 2 new, 0 changed, 0 missing, 0 unchanged, 0 excluded, 2 queued" in page
    assert set(Source.objects.values_list("relative_path", "status")) == {
        ("intro.md", "queued"),
        ("report.txt", "queued"),
    }


def test_it_edits_a_root(admin_client, papers, input_dir):
    response = admin_client.post(
        f"/library/roots/{papers.pk}/edit/", root_form(exclude_patterns="**/drafts/**\n\n**/drafts/**"), follow=True
    )
    assert response.status_code == 200
    papers.refresh_from_db()
    assert papers.exclude_patterns == ["**/drafts/**"]
    assert "Saved the root “Papers”." in response.content.decode()


def test_it_disables_a_root_after_a_confirmation_page(admin_client, papers, input_dir):
    add(papers, "a.md", Source.Status.INDEXED, lightrag_doc_id="doc-a")
    confirm = admin_client.get(f"/library/roots/{papers.pk}/disable/").content.decode()
    assert "Disable the root “Papers”?" in confirm
    admin_client.post(f"/library/roots/{papers.pk}/disable/")
    papers.refresh_from_db()
    assert not papers.enabled
    assert Source.objects.get().status == Source.Status.DELETE_SUBMITTED


def test_it_removes_a_root_after_a_confirmation_page(admin_client, papers, input_dir):
    add(papers, "a.md", Source.Status.INDEXED, lightrag_doc_id="doc-a")
    confirm = admin_client.get(f"/library/roots/{papers.pk}/remove/").content.decode()
    assert "Remove the root “Papers”?" in confirm
    assert 'name="csrfmiddlewaretoken"' in confirm
    page = admin_client.post(f"/library/roots/{papers.pk}/remove/", follow=True).content.decode()
    assert not IndexedRoot.objects.exists()
    assert "Removed root “Papers”" in page
    assert Job.objects.get(kind=Job.Kind.DELETE).payload == {"doc_ids": ["doc-a"]}


def test_it_refuses_to_remove_a_root_by_get(admin_client, papers):
    admin_client.get(f"/library/roots/{papers.pk}/remove/")
    assert IndexedRoot.objects.exists()


# --- the content security policy ----------------------------------------------


@pytest.mark.parametrize("url", ["/?filter=all", "/library/roots/", "/library/roots/add/"])
def test_it_uses_no_inline_script_or_style(admin_client, lightrag_up, registry, url):
    page = admin_client.get(url).content.decode()
    assert " style=" not in page
    assert "<style" not in page
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", page))


def test_it_shows_how_lightrag_uses_the_embedder_and_where_that_sizing_came_from(admin_client, lightrag_up, settings, tmp_path):
    page = admin_client.get("/").content.decode()
    assert "8 calls at a time × 10 chunks, timeout 30 s, 3 files in parallel" in page
    assert "as configured (not measured here)" in page

    env_file = tmp_path / ".env"
    env_file.write_text('MNOTE_EMBEDDING_SECONDS_PER_CHUNK="3.000"\n')
    settings.MNOTE_LIGHTRAG = dataclasses.replace(settings.MNOTE_LIGHTRAG, env_file=env_file)
    page = admin_client.get("/").content.decode()
    assert "sized from a start-up measurement: 3.00 s per chunk (about 20 chunks a minute)" in page


def test_it_shows_the_stage_lightrag_reports_for_a_file_it_works_on(admin_client, lightrag_up, registry):
    Source.objects.filter(pk=registry["queued"].pk).update(status=Source.Status.INDEXING, progress="processing · 12 chunks")
    page = admin_client.get("/?filter=indexing").content.decode()
    assert "processing · 12 chunks" in page
