"""Who may reach what: every URL pattern of the URLconf × anonymous / member
(no group) / member of the group a restricted root is shared with / admin.

The patterns are read from the URLconf, so a new view fails
``test_every_url_pattern_has_an_entry`` until it gets a row in ``MATRIX``.
Objects in the URLs are the restricted root's, so "member" must never see
them and "group member" must.

    nice .venv/bin/python -m pytest tests/pages/test_authorization_matrix.py -q
"""

import json
import re
import shutil

import pytest
from django.contrib.auth.models import Group
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver

from mnote.accounts.models import Invitation
from mnote.api.models import ApiToken
from mnote.citations.models import Citation
from mnote.citations.references import encode_reference
from mnote.library.models import IndexedRoot, Source
from mnote.search.models import Conversation
from tests.lightrag_fakes import query_stream_lines
from tests.pdf_factory import make_pdf
from tests.docx_xml import PNG, drawing, make_docx, p
from tests.paths import DEMO_LIBRARY

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ROLES = ("anonymous", "member", "group_member", "admin")
LOGIN = "login"  # a redirect to the login page
SECRET = b"notes.md"  # the restricted file's name: never in a refused answer
DEMO_DOCX = DEMO_LIBRARY / "en" / "gamma-telescope-manual.docx"


def expect(anonymous, member, group_member, admin) -> dict:
    return dict(zip(ROLES, (anonymous, member, group_member, admin)))


PAGE = expect(LOGIN, 200, 200, 200)
RESTRICTED_PAGE = expect(LOGIN, 404, 200, 200)
ADMIN_PAGE = expect(LOGIN, 403, 403, 200)
ADMIN_ACTION = expect(LOGIN, 403, 403, 302)
PUBLIC = expect(200, 200, 200, 200)

# pattern → (method, query or JSON body, expected status per role)
MATRIX = {
    "": ("GET", None, PAGE),
    "library/sources/<int:source_id>/reindex/": ("POST", None, ADMIN_ACTION),
    "library/sources/<int:source_id>/delete-index/": ("POST", None, ADMIN_ACTION),
    "library/sources/clear-stale/": ("POST", None, ADMIN_ACTION),
    "library/sources/retry-failed/": ("POST", None, ADMIN_ACTION),
    "library/roots/<int:root_id>/retry-failed/": ("POST", None, ADMIN_ACTION),
    "library/roots/": ("GET", None, ADMIN_PAGE),
    "library/roots/add/": ("GET", None, ADMIN_PAGE),
    "library/roots/<int:root_id>/edit/": ("GET", None, ADMIN_PAGE),
    "library/roots/<int:root_id>/disable/": ("GET", None, ADMIN_PAGE),
    "library/roots/<int:root_id>/enable/": ("POST", None, ADMIN_ACTION),
    "library/roots/<int:root_id>/remove/": ("GET", None, ADMIN_PAGE),
    "c/<str:token>": ("GET", None, RESTRICTED_PAGE),
    # A search's signed link: opened, it goes on to its permalink.
    "c/r/<str:reference>": ("GET", None, expect(LOGIN, 404, 302, 302)),
    "search/": ("GET", {"q": "notes", "mode": "workspace"}, PAGE),
    "ask/": ("GET", None, PAGE),
    "preview/<int:source_id>/": ("GET", None, RESTRICTED_PAGE),
    "preview/<int:source_id>/original": ("GET", None, RESTRICTED_PAGE),
    "preview/<int:source_id>/image/<path:part>": ("GET", None, RESTRICTED_PAGE),
    "preview/<int:source_id>/page/<int:page>.png": ("GET", None, RESTRICTED_PAGE),
    "preview/<int:source_id>/find": ("GET", {"evidence": "Restricted yield figures"}, RESTRICTED_PAGE),
    "preview/<int:source_id>/anchor": ("GET", {"evidence": "Restricted yield figures"}, RESTRICTED_PAGE),
    "accounts/login/": ("GET", None, PUBLIC),
    "accounts/logout/": ("POST", None, expect(LOGIN, LOGIN, LOGIN, LOGIN)),  # logged out, to the login page
    "api/status": ("GET", None, expect(401, 200, 200, 200)),
    "api/search": ("POST", {"query": "restricted yield"}, expect(401, 200, 200, 200)),
    "api/query": ("POST", {"query": "restricted yield"}, expect(401, 200, 200, 200)),
    "api/open-reference": ("POST", {"token": "<token>"}, expect(401, 404, 200, 200)),
    # Visible but not citable (never indexed): 409 tells it apart from the hidden 404.
    "api/sources/<int:source_id>/chunks": ("GET", {"chunk_index": 0}, expect(401, 404, 409, 409)),
    "api/admin/ingest": ("POST", {"rootId": "<root_id>"}, expect(401, 403, 403, 200)),
    "api/admin/delete-source": ("POST", {"sourceId": "<source_id>"}, expect(401, 403, 403, 200)),
    "api/admin/prune-registry": ("POST", {}, expect(401, 403, 403, 200)),
    "api/admin/retry-failed": ("POST", {"rootId": "<root_id>"}, expect(401, 403, 403, 200)),
    "api/openapi.json": ("GET", None, PUBLIC),
    "api/docs/": ("GET", None, PUBLIC),
    "api/^.*$": ("GET", None, expect(404, 404, 404, 404)),
    "i18n/setlang/": ("POST", {"language": "en"}, expect(302, 302, 302, 302)),
    # A conversation and a token are their owner's (the group member's) alone, even to admins.
    "ask/c/<int:pk>/": ("GET", None, expect(LOGIN, 404, 200, 404)),
    "ask/c/<int:pk>/delete": ("POST", None, expect(LOGIN, 404, 302, 404)),
    "tokens/": ("GET", None, PAGE),
    # The restricted root's own level of the tree: its files for those who may see it.
    "library/tree/": ("GET", {"root": "<root_id>"}, RESTRICTED_PAGE),
    "tokens/<int:pk>/revoke": ("POST", None, expect(LOGIN, 404, 302, 404)),
    # MCP is for agents with an API token; a browser session opens nothing there.
    "mcp": ("POST", None, expect(401, 401, 401, 401)),
    # Progress of the roots one may see: the restricted root's files only for its group.
    "library/progress/": ("GET", {"root": "<root_id>"}, PAGE),
    # Uploads: a hidden root is not there; this one is not open for uploads.
    "library/roots/<int:root_id>/upload/": ("GET", None, expect(LOGIN, 404, 403, 403)),
    "people/": ("GET", None, ADMIN_PAGE),
    "people/invite/": ("GET", None, ADMIN_PAGE),
    "people/invitations/<int:invitation_id>/": ("GET", None, ADMIN_PAGE),
    "people/invitations/<int:invitation_id>/revoke/": ("POST", None, ADMIN_ACTION),
    # An invitation link is for someone without an account yet; a made-up one opens nothing.
    "people/join/<str:token>/": ("GET", None, expect(404, 404, 404, 404)),
    "people/users/<int:user_id>/": ("GET", None, ADMIN_PAGE),
    "people/users/<int:user_id>/reset-link/": ("POST", None, expect(LOGIN, 403, 403, 200)),
    "people/users/<int:user_id>/active/": ("POST", None, ADMIN_ACTION),
    # Django's reset page, for someone logged out: a made-up link says it does not work.
    "people/reset/<uidb64>/<token>/": ("GET", None, PUBLIC),
    "people/groups/add/": ("GET", None, ADMIN_PAGE),
    "people/groups/<int:group_id>/": ("GET", None, ADMIN_PAGE),
    "people/groups/<int:group_id>/delete/": ("POST", None, ADMIN_ACTION),
}
# Django's own admin site: staff only, whatever the page.
ADMIN_SITE = "admin/"


def url_patterns(patterns=None, prefix=""):
    """(full pattern, URLPattern) of every view in the URLconf."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            yield from url_patterns(entry.url_patterns, prefix + str(entry.pattern))
        else:
            assert isinstance(entry, URLPattern)
            yield prefix + str(entry.pattern), entry


def concrete(pattern: str, values: dict) -> str:
    """A URL for the pattern with the world's objects in its placeholders."""
    url = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), pattern)
    url = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values[m.group(1)]), url)
    return "/" + url.replace("^", "").replace("$", "").replace(".*", "nowhere").replace("\\", "")


@pytest.fixture
def world(library_dir, lightrag_dirs, fake_lightrag, django_user_model, tmp_path):
    chemists = Group.objects.create(name="chemists")
    (library_dir / "lab").mkdir()
    (library_dir / "lab" / "notes.md").write_text("# Lab\nRestricted yield figures.")
    root = IndexedRoot.objects.create(name="Lab", path="lab", visible_to_all=False)
    root.visible_to_groups.add(chemists)

    def source(name):
        return Source.objects.create(root=root, relative_path=name, absolute_path=str(library_dir / "lab" / name),
                                     sha256="", status=Source.Status.QUEUED)

    make_docx(library_dir / "lab" / "figure.docx", p(drawing('r:embed="rImg"', "A logo")),
              rels=(("rImg", "image", "media/logo.png", False),), files={"word/media/logo.png": PNG})
    make_pdf(library_dir / "lab" / "scan.pdf", [["Restricted yield figures"]])
    notes, figure, scan = source("notes.md"), source("figure.docx"), source("scan.pdf")
    cited = Citation.objects.create(source=notes, source_path="lab/notes.md", source_sha256="", precision="file",
                                    display_quote="Restricted yield figures")
    for method, path, name in [
        ("GET", "/health", "health.json"),
        ("POST", "/query/data", "query_data_mix.json"),
        ("POST", "/query", "query.json"),
        ("POST", "/query/stream", (200, query_stream_lines())),
        ("POST", "/documents/paginated", "documents_paginated_after_delete.json"),
        ("POST", "/documents/scan", "scan.json"),
        ("DELETE", "/documents/delete_document", "delete_document.json"),
    ]:
        fake_lightrag.on(method, path, name)
    users = {
        "member": django_user_model.objects.create_user("mia"),
        "group_member": django_user_model.objects.create_user("gus"),
        "admin": django_user_model.objects.create_user("ada", is_staff=True),
    }
    users["group_member"].groups.add(chemists)
    values = {
        "source_id": notes.pk, "root_id": root.pk, "token": cited.token, "part": "word/media/logo.png", "page": 1,
        "content_type_id": 1, "object_id": notes.pk, "id": users["member"].pk, "app_label": "library", "url": "x/",
        "reference": encode_reference(source_id=notes.pk, sha256="", chunk_id="", block_id="", query="", quote=None),
    }  # fmt: skip
    invitation = Invitation.objects.create(note="a chemist")
    values.update(invitation_id=invitation.pk, user_id=users["member"].pk, group_id=chemists.pk, uidb64="MQ")
    conversation = Conversation.objects.create(user=users["group_member"], title="Lab yields")
    token, _key = ApiToken.objects.create_token(users["group_member"], "lab laptop")
    per_pattern_values = {"ask/c/<int:pk>/": {"pk": conversation.pk}, "ask/c/<int:pk>/delete": {"pk": conversation.pk},
                          "tokens/<int:pk>/revoke": {"pk": token.pk}}  # fmt: skip
    per_pattern_source = {"preview/<int:source_id>/image/<path:part>": figure.pk,
                          "preview/<int:source_id>/page/<int:page>.png": scan.pk,
                          "preview/<int:source_id>/find": scan.pk}  # fmt: skip
    return users, values, per_pattern_source, per_pattern_values


def test_every_url_pattern_has_an_entry():
    missing = [pattern for pattern, _ in url_patterns() if pattern not in MATRIX and not pattern.startswith(ADMIN_SITE)]
    assert missing == [], "Add these URL patterns to MATRIX in tests/pages/test_authorization_matrix.py"
    stale = sorted(set(MATRIX) - {pattern for pattern, _ in url_patterns()})
    assert stale == []


def call(client, method, url, data):
    if method == "GET":
        return client.get(url, data)
    if url.startswith("/api/"):
        return client.post(url, json.dumps(data or {}), content_type="application/json")
    return client.post(url, data or {})


def outcome(response) -> int | str:
    if response.status_code == 302 and response["Location"].startswith("/accounts/login/"):
        return LOGIN
    return response.status_code


@pytest.mark.parametrize("role", ROLES)
def test_each_role_gets_what_the_matrix_says_on_every_pattern(world, client, role):
    users, values, per_pattern_source, per_pattern_values = world
    if role != "anonymous":
        client.force_login(users[role])
    got, wanted = {}, {}
    for pattern, _ in url_patterns():
        if pattern.startswith(ADMIN_SITE):
            continue
        method, data, expected = MATRIX[pattern]
        pattern_values = {
            **values,
            "source_id": per_pattern_source.get(pattern, values["source_id"]),
            **per_pattern_values.get(pattern, {}),
        }
        if isinstance(data, dict):
            data = {k: (pattern_values[v[1:-1]] if isinstance(v, str) and v.startswith("<") else v) for k, v in data.items()}
        # Each request sees the same world: an admin's delete or prune is rolled back after it.
        with transaction.atomic():
            response = call(client, method, concrete(pattern, pattern_values), data)
            transaction.set_rollback(True)
        got[pattern], wanted[pattern] = outcome(response), expected[role]
        if role in ("anonymous", "member") and response.status_code != 302 and not response.streaming:
            assert SECRET not in response.content, pattern
        if role != "anonymous" and pattern == "accounts/logout/":
            client.force_login(users[role])
    assert got == wanted


@pytest.mark.parametrize("role", ROLES)
def test_the_admin_site_is_for_staff_only(world, client, role):
    users, values, *_ = world
    if role != "anonymous":
        client.force_login(users[role])
    for pattern, entry in url_patterns():
        if not pattern.startswith(ADMIN_SITE):
            continue
        response = client.get(concrete(pattern, values))
        if role == "admin":
            assert response.status_code < 500, pattern
            continue
        # Everyone else sees the admin login page, or is sent away from every other page.
        if entry.name == "login":
            assert response.status_code == 200, pattern
        else:
            assert response.status_code == 302, pattern
            assert response["Location"].startswith(("/admin/login/", "/admin/", "/accounts/login/")), pattern
        assert SECRET not in response.content, pattern


# Counts and diagnostics: what LightRAG found and why references were dropped
# would tell a member that hidden documents are about the query. Only these
# may reach a non-admin, on every surface (session, token, MCP).
MEMBER_DIAGNOSTICS = {"mode", "llmAvailable", "providerRerankRequested", "providerRerankAvailable", "outsideScope"}
ADMIN_COUNTS = {"references", "chunks", "dropped"}


def _search_diagnostics(client, surface: str, user) -> dict:
    body = {"query": "restricted yield"}
    if surface == "session":
        client.force_login(user)
        return client.post("/api/search", json.dumps(body), content_type="application/json").json()["diagnostics"]
    _, key = ApiToken.objects.create_token(user, surface)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    if surface == "token":
        return client.post("/api/search", json.dumps(body), content_type="application/json", **bearer).json()["diagnostics"]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": body}}
    response = client.post("/mcp", json.dumps(call), content_type="application/json",
                           HTTP_ACCEPT="application/json, text/event-stream", **bearer)  # fmt: skip
    result = response.json()["result"]
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])["diagnostics"]


@pytest.mark.parametrize("surface", ["session", "token", "mcp"])
@pytest.mark.parametrize("role", ["member", "group_member", "admin"])
def test_only_admins_get_counts_and_diagnostics_of_a_search(world, client, role, surface):
    users, *_ = world
    diagnostics = _search_diagnostics(client, surface, users[role])
    if role == "admin":
        assert ADMIN_COUNTS <= set(diagnostics)
    else:
        assert set(diagnostics) <= MEMBER_DIAGNOSTICS, set(diagnostics) - MEMBER_DIAGNOSTICS
