"""axe-core finds no accessibility violation on any page, in English and
Chinese, at desktop (1280 px) and phone (390 px) widths: as an admin, as a
member and signed out. LightRAG is faked at the transport (search and answer
from the files of a small library, of several kinds); everything else is the
app as served.

axe-core comes from npm at the version package-lock.json pins
(`make install-browser` puts it in node_modules/); it is evaluated in each
page by the test, never served by the app.

    .venv/bin/python -m pytest -q tests/browser/test_accessibility_browser.py
"""

import json
from urllib.parse import quote

import httpx
import pytest
from django.contrib.auth.models import Group

from mnote.library.models import IndexedRoot, Source
from tests import preview_files as files
from tests.lightrag_fakes import recorded
from tests.paths import REPO_DIR
from tests.docx_factory import heading, make_docx, para
from tests.pdf_factory import make_pdf

# In the PostgreSQL pass only: it runs beside the longer SQLite pass and has
# the time for this test's minute of browser work.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.postgres_only]

AXE = REPO_DIR / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = {"desktop": 1280, "phone": 390}
LANGUAGES = {"en": "en-US", "zh-hans": "zh-CN"}
QUESTION = "How was the primary mirror recoated?"


class LibraryLightRAG:
    """LightRAG as far as the pages need it: health, a search over the
    library's files (every file's first passage, in order) and a short answer."""

    RECORDED = {"/health": "health.json", "/documents/paginated": "documents_paginated_after_delete.json"}

    def __init__(self, passages: dict[str, str]):
        self.passages = passages  # LightRAG file name -> text

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path in self.RECORDED:
            status, body = recorded(self.RECORDED[request.url.path])
            return httpx.Response(status, json=body)
        if request.url.path == "/query/data":
            chunks = [
                {"reference_id": str(n), "content": text, "file_path": name, "chunk_id": f"doc-{name}-chunk-000"}
                for n, (name, text) in enumerate(self.passages.items(), 1)
            ]
            references = [{"reference_id": c["reference_id"], "file_path": c["file_path"]} for c in chunks]
            return httpx.Response(200, json={"status": "success", "data": {"chunks": chunks, "references": references}})
        if request.url.path == "/query/stream":
            text = "The primary mirror was recoated with aluminium in March [1]."
            lines = "".join(json.dumps({"response": text[i : i + 12]}) + "\n" for i in range(0, len(text), 12))
            return httpx.Response(200, content=lines.encode(), headers={"Content-Type": "application/x-ndjson"})
        raise AssertionError(f"unexpected request to LightRAG: {request.method} {request.url.path}")


@pytest.fixture
def axe_source() -> str:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `make install-browser` (npm ci installs axe-core there).")
    return AXE.read_text()


@pytest.fixture
def library(library_dir, lightrag_dirs, settings, tmp_path):
    """A root with a file of each kind the preview shows, indexed (as far as
    the app's rows go), and LightRAG answering from them."""
    settings.DATA_DIR = tmp_path / "data"
    folder = library_dir / "observatory"
    folder.mkdir()
    root = IndexedRoot.objects.create(name="Observatory", path="observatory", uploads_open=True)
    IndexedRoot.objects.create(name="Board", path="board", visible_to_all=False).visible_to_groups.add(
        Group.objects.create(name="Board")
    )
    made = {
        "notes/mirror.md": lambda p: p.write_text(f"# Mirror log\n\n{files.PASSAGE}\n\n| Month | Work |\n|---|---|\n| March | Recoat |\n"),
        "mirror.docx": lambda p: make_docx(p, [heading("Mirror maintenance"), para(files.PASSAGE)]),
        "mirror.pdf": lambda p: make_pdf(p, [["Mirror maintenance", files.PASSAGE]], title="Mirror"),
        "review.pptx": files.make_pptx,
        "budget.xlsx": files.make_xlsx,
        "guide.epub": files.make_epub,
        "dome.png": lambda p: p.write_bytes(files.png_bytes()),
        "refraction.py": files.make_code,
    }
    sources = {}
    for relative, make in made.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        make(path)
        sources[relative] = Source.objects.create(
            root=root, relative_path=relative, absolute_path=str(path), sha256="c" * 64,
            lightrag_name=path.name, lightrag_doc_id=f"doc-{path.name}", status=Source.Status.INDEXED,
        )  # fmt: skip
    passages = {source.lightrag_name: files.PASSAGE for source in sources.values()}
    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(LibraryLightRAG(passages).handler)
    return root, sources


def axe_violations(page) -> list[dict]:
    """axe's violations in the page as it stands (frames are checked as pages
    of their own: the preview's document has its own address)."""
    return page.evaluate(
        """async () => {
            const result = await axe.run(document, {iframes: false, resultTypes: ["violations"]});
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 5).map(n => ({target: n.target.join(" "), summary: n.failureSummary})),
            }));
        }"""
    )


def describe(failures: list) -> str:
    lines = []
    for where, violations in failures:
        lines.append(where)
        for v in violations:
            lines.append(f"  [{v['impact']}] {v['id']}: {v['help']}")
            for node in v["nodes"]:
                lines.append(f"      {node['target']}: {node['summary'].replace(chr(10), ' ')}")
    return "\n".join(lines)


def sign_in(browser, base_url: str, username: str, password: str) -> dict:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button.primary")
    page.wait_for_url(f"{base_url}/")
    state = context.storage_state()
    context.close()
    return state


def test_axe_finds_no_violation_on_any_page_in_either_language_at_either_width(
    chromium, live_server, axe_source, library, admin_user, member, client
):
    from mnote.accounts.invitations import invitation_path, password_reset_path
    from mnote.accounts.models import Invitation
    from mnote.api.models import ApiToken
    from mnote.citations.models import Citation

    root, sources = library
    base = live_server.url
    # What a team has after a while: a search's citations, a question asked,
    # a token, an open invitation.
    client.force_login(member)
    conversation = client.post("/ask/", {"q": QUESTION})
    assert conversation.status_code == 302
    citation = Citation.objects.order_by("pk").first()
    assert citation is not None
    ApiToken.objects.create_token(member, "my agent")
    invitation = Invitation.objects.create(note="Nora", created_by=admin_user)
    states = {
        "admin": sign_in(chromium, base, "ada", "admin-pass-123"),
        "member": sign_in(chromium, base, "mia", "member-pass-123"),
        "signed out": None,
    }
    ask = f"/ask/?q={quote(QUESTION)}"
    search = f"/search/?q={quote('primary mirror')}&mode=library"
    previews = [f"/preview/{source.pk}/" for source in sources.values()]
    member_pages = [
        "/",
        f"/library/tree/?root={root.pk}",
        search,
        f"/search/?q={quote('mirror')}&mode=workspace",
        "/search/",
        ask,
        "/ask/",
        conversation.url,
        *previews,
        f"/c/{citation.token}",
        f"/library/roots/{root.pk}/upload/",
        f"/library/progress/?root={root.pk}",
        "/tokens/",
        "/api/docs/",
        "/library/roots/",  # admins only: the 403 page
        "/no-such-page/",  # 404
    ]
    admin_pages = [
        "/",
        "/library/roots/",
        "/library/roots/add/",
        f"/library/roots/{root.pk}/edit/",
        "/people/",
        "/people/invite/",
        f"/people/invitations/{invitation.pk}/",
        "/people/groups/add/",
        f"/people/groups/{Group.objects.get(name='Board').pk}/",
        f"/people/users/{member.pk}/",
    ]
    signed_out_pages = [
        "/accounts/login/",
        invitation_path(invitation),
        "/people/join/not-a-real-link/",
        password_reset_path(member),
        "/no-such-page/",
    ]
    pages = {"admin": admin_pages, "member": member_pages, "signed out": signed_out_pages}

    failures, checked = [], 0

    def check(page, where: str) -> None:
        """axe at each width, on the page as loaded (the viewport resized, not reloaded)."""
        nonlocal checked
        page.evaluate(axe_source)
        for width_name, width in WIDTHS.items():
            page.set_viewport_size({"width": width, "height": 900})
            found = axe_violations(page)
            checked += 1
            if found:
                failures.append((f"{where}, {width_name}", found))

    for language, locale in LANGUAGES.items():
        for who, state in states.items():
            context = chromium.new_context(locale=locale, storage_state=state)
            page = context.new_page()
            for path in pages[who]:
                page.goto(base + path)
                if path == ask:
                    page.locator("section.answer").wait_for(timeout=15_000)
                if path == search:
                    # With a result open: the preview pane beside the cards (a sheet over them on a phone).
                    page.locator("article.source-card[data-locator]").first.click()
                    page.locator("article.source-card.active[data-located-status]").wait_for(timeout=15_000)
                assert page.locator("html").get_attribute("lang") == language, path
                check(page, f"{path} ({who}, {language})")
            if who == "admin":
                # A one-time page an admin reaches by a form.
                page.goto(f"{base}/people/")
                page.locator(f"form[action='/people/users/{member.pk}/reset-link/'] button").click()
                page.locator("#reset-link").wait_for()
                check(page, f"reset link page ({who}, {language})")
            context.close()
    assert not failures, f"{len(failures)} of {checked} pages have violations:\n" + describe(failures)
