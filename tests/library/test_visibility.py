import pytest
from django.contrib.auth.models import Group

from mnote.library.models import IndexedRoot, Source

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def roots(db):
    chemists = Group.objects.create(name="chemists")
    public = IndexedRoot.objects.create(name="Handbooks", path="handbooks")
    private = IndexedRoot.objects.create(name="Lab records", path="lab", visible_to_all=False)
    private.visible_to_groups.add(chemists)
    Source.objects.create(root=public, relative_path="guide.md", absolute_path="/l/handbooks/guide.md", status="indexed")
    for name in ("batch-1.docx", "batch-2.docx", "batch-3.docx"):
        Source.objects.create(root=private, relative_path=name, absolute_path=f"/l/lab/{name}", status="indexed")
    return public, private, chemists


def test_it_hides_a_group_root_from_members_outside_the_group(roots, member):
    public, private, _ = roots
    assert list(IndexedRoot.objects.visible_to(member)) == [public]
    assert list(Source.objects.visible_to(member).values_list("relative_path", flat=True)) == ["guide.md"]


def test_it_shows_a_group_root_to_its_members(roots, member):
    public, private, chemists = roots
    member.groups.add(chemists)
    assert set(IndexedRoot.objects.visible_to(member)) == {public, private}
    assert Source.objects.visible_to(member).count() == 4


def test_it_shows_every_root_to_admins(roots, admin_user):
    assert IndexedRoot.objects.visible_to(admin_user).count() == 2


def test_it_does_not_count_hidden_sources_on_the_home_page(roots, member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    fake_lightrag.on("POST", "/documents/paginated", "documents_paginated_after_delete.json")
    page = member_client.get("/").content.decode()
    assert "1 file in the folders you can see" in page
    assert "Documents in LightRAG" not in page


def test_it_hides_a_restricted_source_from_preview_and_permalink(roots, member_client, admin_user, client, library_dir):
    from mnote.citations.models import Citation

    _, private, _ = roots
    (library_dir / "lab").mkdir()
    (library_dir / "lab" / "notes.md").write_text("# Batch\nYield 82 %.")
    source = Source.objects.create(root=private, relative_path="notes.md", absolute_path=str(library_dir / "lab" / "notes.md"),
                                   status="indexed", sha256="b" * 64)
    cited = Citation.objects.create(source=source, source_path="lab/notes.md", source_sha256="b" * 64, precision="file",
                                    display_quote="Yield 82 %.")
    for url in (f"/preview/{source.pk}/", f"/preview/{source.pk}/original", f"/c/{cited.token}"):
        response = member_client.get(url)
        assert response.status_code == 404, url
        assert b"notes.md" not in response.content and b"Yield" not in response.content
        # Inside the app, with its navigation, saying why without saying which.
        assert b'class="topbar"' in response.content and b"Log out" in response.content, url
        assert b"a part of the library you cannot see, or" in response.content, url
    # A link that never existed reads exactly like a hidden one.
    hidden = member_client.get(f"/c/{cited.token}").content.decode()
    missing = member_client.get("/c/no-such-token").content.decode()
    strip = lambda page: page.replace(cited.token, "T").replace("no-such-token", "T")  # noqa: E731
    assert strip(hidden).split("<main")[1] == strip(missing).split("<main")[1]

    client.force_login(admin_user)
    assert client.get(f"/preview/{source.pk}/").status_code == 200
    assert b"Yield 82" in client.get(f"/c/{cited.token}").content


def test_it_never_shows_a_member_lightrags_document_count(roots, member_client, admin_user, client, fake_lightrag):
    # LightRAG's total counts every root, so it would tell a member that hidden files exist.
    fake_lightrag.on("GET", "/health", "health.json")
    page = member_client.get("/").content.decode()
    assert "Documents in LightRAG" not in page and "LightRAG unmapped" not in page
    assert [r.url.path for r in fake_lightrag.requests] == ["/health"]

    fake_lightrag.on("POST", "/documents/paginated", "documents_paginated_after_delete.json")
    client.force_login(admin_user)
    assert "Documents in LightRAG" in client.get("/").content.decode()


def test_visible_ids_name_each_root_a_user_may_see_once(roots, member, admin_user, django_user_model):
    """Every kind of user gets the roots they may see, each once (a member in
    two groups sharing a root), and a change of groups or of a root's
    visibility holds at the next question."""
    from django.contrib.auth.models import AnonymousUser

    public, private, chemists = roots
    other = Group.objects.create(name="others")
    shared = IndexedRoot.objects.create(name="Shared", path="shared", visible_to_all=False)
    shared.visible_to_groups.add(chemists, other)
    inactive = django_user_model.objects.create_user("gone", is_active=False)
    inactive.groups.add(chemists)
    both = django_user_model.objects.create_user("both")
    both.groups.add(chemists, other)

    def same(user) -> list[int]:
        return sorted(IndexedRoot.objects.visible_ids(user))

    assert same(member) == [public.pk]
    assert same(AnonymousUser()) == [] and same(inactive) == []
    assert same(both) == sorted([public.pk, private.pk, shared.pk])  # each root once
    assert same(admin_user) == sorted([public.pk, private.pk, shared.pk])
    member.groups.add(other)
    assert same(member) == sorted([public.pk, shared.pk])
    private.visible_to_all = True
    private.save()
    assert same(member) == sorted([public.pk, private.pk, shared.pk])
