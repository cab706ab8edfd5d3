"""The library tree: roots → folders → files, one level per request, with a
status light per file and the worst light and counts per folder."""

import pytest

from mnote.library import tree
from mnote.library.models import IndexedRoot, Source
from tests.factories import restricted_root

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def library(db):
    papers = IndexedRoot.objects.create(name="Papers", path="papers")
    hr = restricted_root("HR", "hr", group="hr")
    rows = [
        (papers, "a.md", "indexed", False),
        (papers, "2026/q1/report.docx", "indexed", False),
        (papers, "2026/q1/draft.docx", "failed", False),
        (papers, "2026/q2/plan.md", "indexing", False),
        (papers, "2025/old.md", "indexed", True),
        (papers, "private/notes.md", "excluded", False),
        (hr, "salaries.md", "indexed", False),
    ]
    for root, rel, status, stale in rows:
        Source.objects.create(root=root, relative_path=rel, absolute_path=f"/l/{root.path}/{rel}", status=status, stale=stale)
    return papers, hr


def test_a_folder_shows_its_worst_light_and_counts_per_light(library, member):
    papers, _ = library
    level = tree.folder_level(member, papers, "")
    folders = {f.name: f for f in level.folders}
    assert list(folders) == ["2025", "2026", "private"]
    assert folders["2026"].light == "failed" and folders["2026"].counts == {"indexed": 1, "failed": 1, "indexing": 1}
    assert folders["2025"].light == "stale"
    assert folders["private"].light == "excluded"
    assert [s.relative_path for s in level.files] == ["a.md"] and level.files[0].light == "indexed"


def test_the_top_of_the_tree_is_the_roots_a_user_may_see(library, member, admin_user):
    assert [f.name for f in tree.roots_level(member).folders] == ["Papers"]
    assert [f.name for f in tree.roots_level(admin_user).folders] == ["HR", "Papers"]
    assert tree.roots_level(member).folders[0].total == 6


def test_the_tree_page_loads_one_level_for_htmx_with_filters(library, member_client):
    papers, _ = library
    response = member_client.get("/library/tree/", {"root": papers.pk, "path": "2026", "filter": "failed"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200 and "<html" not in page
    assert "q1/" in page and "q2/" not in page  # only the folder holding a failed file
    assert response["Vary"].count("HX-Request") == 1
    # Opening a folder asks for its level lazily.
    assert 'hx-trigger="toggle once"' in page and "path=2026/q1" in page


def test_the_tree_hides_a_root_the_member_may_not_see(library, member_client):
    _, hr = library
    response = member_client.get("/library/tree/", {"root": hr.pk})
    assert response.status_code == 404
    assert b"salaries" not in response.content


def test_the_tree_refuses_a_path_that_climbs_out(library, member_client):
    papers, _ = library
    assert member_client.get("/library/tree/", {"root": papers.pk, "path": "../hr"}).status_code == 400


def test_the_home_page_shows_the_roots_of_the_tree_with_lights(library, member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    page = member_client.get("/").content.decode()
    tree_html = page.split('id="tree-h"')[1].split("</section>")[0]
    assert "Papers" in tree_html and "HR" not in tree_html
    assert "light-failed" in tree_html and "6 files" in tree_html
