"""The reader's experience in headless Chromium, at 1400 px and at 360 px
(a phone): the member's home, a scoped search and its preview sheet, a
permalink the member may not open. No page may scroll sideways. LightRAG is
faked at the transport (the pages are what is tested here); screenshots go
to artifacts/."""

import httpx
import pytest

from mnote.library.models import IndexedRoot, Source
from tests.browser.login import log_in
from tests.factories import restricted_root
from tests.lightrag_fakes import named_chunk, ScriptedLightRAG
from tests.paths import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

WIDTHS = {"wide": 1400, "phone": 360}
LONG_TOKEN = "Approval_workflow_reference_" + "x" * 90
HANDBOOK = (
    "# Purchasing handbook\n\n"
    "Purchase approval needs two signatures from the budget holder before any order is placed. "
    f"The form is {LONG_TOKEN} in the finance system.\n\n"
    "Orders above 10 000 EUR also need the director's approval.\n"
)


def shoot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(400)
    page.screenshot(path=str(ARTIFACTS / f"i15-{name}.png"), full_page=False)


def assert_no_sideways_scroll(page, what: str) -> None:
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"{what} scrolls sideways: {widths}"


@pytest.fixture
def reader_library(library_dir, lightrag_dirs, settings):
    office = library_dir / "office" / "policies"
    office.mkdir(parents=True)
    (office / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    root = IndexedRoot.objects.create(name="Office", path="office")
    hr = restricted_root("HR", "hr", group="hr")

    def source(root, rel, name):
        return Source.objects.create(
            root=root,
            relative_path=rel,
            absolute_path=str(library_dir / root.path / rel),
            sha256="d" * 64,
            lightrag_name=name,
            lightrag_doc_id=f"doc-{name}",
            status=Source.Status.INDEXED,
        )

    handbook = source(root, "policies/handbook.md", "handbook.md")
    source(root, "minutes/2026-10.md", "minutes.md")
    salaries = source(hr, "salaries.md", "salaries.md")

    def answer(body):
        chunks = [named_chunk("minutes.md", i, f"Minutes item {i}: approval of the agenda.") for i in range(20)]
        chunks += [named_chunk("handbook.md", 0, HANDBOOK), named_chunk("salaries.md", 0, "Salary approval table.")]
        return chunks[: body.get("chunk_top_k") or 20]

    fake = ScriptedLightRAG(answer)
    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(fake.handler)
    return {"handbook": handbook, "salaries": salaries}


def member_page(chromium, live_server, width):
    page = log_in(chromium, live_server.url, "mia", "member-pass-123")
    page.set_viewport_size({"width": width, "height": 800})
    return page


@pytest.mark.parametrize("size", WIDTHS)
def test_a_members_home_starts_with_search_and_shows_no_admin_telemetry(chromium, live_server, member, reader_library, size):
    page = member_page(chromium, live_server, WIDTHS[size])
    page.goto(f"{live_server.url}/")
    search_box = page.locator(".start-form input[name=q]")
    assert search_box.is_visible()
    assert search_box.bounding_box()["y"] < 200  # the first thing on the page
    text = page.locator("main").inner_text()
    assert "Input directory" not in text and "Documents in LightRAG" not in text
    assert "2 files in the folders you can see" in text
    assert_no_sideways_scroll(page, f"home at {size}")
    shoot(page, f"home-member-{size}")

    search_box.fill("approval")
    page.click(".start-form button.primary")
    page.wait_for_url("**/search/?**")
    assert page.locator("article.source-card[data-locator]").count() >= 1
    page.goto(f"{live_server.url}/")
    assert "approval" in page.locator("#recent-h + ul").inner_text()
    page.context.close()


@pytest.mark.parametrize("size", WIDTHS)
def test_a_scoped_search_finds_the_file_says_what_was_outside_and_previews_it(chromium, live_server, member, reader_library, size):
    page = member_page(chromium, live_server, WIDTHS[size])
    page.goto(f"{live_server.url}/search/?q=approval&mode=library&scope=office/policies")
    cards = page.locator("article.source-card[data-locator]")
    cards.first.wait_for()
    assert cards.count() == 1
    assert "office/policies/handbook.md" in cards.first.inner_text()
    assert "LightRAG also found 20 results outside it" in page.locator("#results").inner_text()
    assert "salaries" not in page.content()
    assert_no_sideways_scroll(page, f"search at {size}")

    cards.first.locator(".open-card").click()
    frame = page.frame_locator("iframe#preview-frame")
    frame.locator("#document").wait_for()
    pane = page.locator(".preview-pane")
    back = page.locator("#sheet-back")
    if size == "phone":
        # A full-screen sheet over the results, not a pane 14,000 px below them.
        box = pane.bounding_box()
        assert box["y"] == 0 and box["width"] == WIDTHS[size]
        assert back.is_visible()
        assert_no_sideways_scroll(page, "preview sheet")
        document = page.locator("iframe#preview-frame").element_handle().content_frame()
        assert_no_sideways_scroll(document, "the previewed file")
        shoot(page, f"search-scope-sheet-{size}")
        back.click()
        assert not pane.evaluate("p => p.classList.contains('sheet-open')")
        assert cards.first.is_visible()
    else:
        assert not back.is_visible()
        assert pane.bounding_box()["x"] > WIDTHS[size] / 3  # beside the cards
    # The context panel starts folded.
    assert frame.locator("#context-panel details").evaluate("d => d.open") is False
    shoot(page, f"search-scope-{size}")
    page.context.close()


@pytest.mark.parametrize("size", WIDTHS)
def test_a_member_opening_a_restricted_permalink_gets_the_apps_own_page(chromium, live_server, member, reader_library, size):
    from mnote.citations.models import Citation

    cited = Citation.objects.create(
        source=reader_library["salaries"], source_path="hr/salaries.md", source_sha256="d" * 64,
        precision="file", display_quote="Salary approval table.", search_query="salary",
    )
    page = member_page(chromium, live_server, WIDTHS[size])
    response = page.goto(f"{live_server.url}/c/{cited.token}")
    assert response.status == 404
    main = page.locator("main").inner_text()
    assert "in a part of the library you cannot see, or it was removed" in main
    assert "salaries" not in page.content().lower() and "Salary" not in page.content()
    assert page.locator("header.topbar nav.mainnav").is_visible() or size == "phone"
    assert page.locator("header.topbar .brand").is_visible()
    assert_no_sideways_scroll(page, f"restricted permalink at {size}")
    shoot(page, f"restricted-permalink-{size}")
    page.context.close()


@pytest.mark.parametrize("size", WIDTHS)
def test_the_library_tree_opens_folders_lazily_with_status_lights(chromium, live_server, member, reader_library, size):
    page = member_page(chromium, live_server, WIDTHS[size])
    page.goto(f"{live_server.url}/")
    tree = page.locator(".library-tree")
    office = tree.locator("li.tree-folder").filter(has_text="Office").first
    assert "2 files" in office.inner_text() and "HR" not in tree.inner_text()
    office.locator("summary").first.click()
    policies = office.locator("li.tree-folder").filter(has_text="policies")
    policies.first.wait_for()  # loaded by htmx when the root was opened
    policies.locator("summary").first.click()
    handbook = policies.locator("li.tree-file").filter(has_text="handbook.md")
    handbook.wait_for()
    assert handbook.locator(".light-indexed").count() == 1
    assert handbook.locator("a", has_text="Search in it").is_visible()
    assert_no_sideways_scroll(page, f"tree at {size}")
    tree.scroll_into_view_if_needed()
    shoot(page, f"tree-{size}")
    page.context.close()


@pytest.mark.parametrize("size", WIDTHS)
def test_an_admin_picks_a_folder_and_previews_the_matching_files(chromium, live_server, admin_user, reader_library, library_dir, size):
    (library_dir / "office" / "policies" / "draft.txt").write_text("draft")
    page = log_in(chromium, live_server.url, "ada", "admin-pass-123")
    page.set_viewport_size({"width": WIDTHS[size], "height": 800})
    page.goto(f"{live_server.url}/library/roots/add/")
    assert str(library_dir) in page.locator(".base-dir").inner_text()
    page.fill("#id_name", "Policies")
    page.locator("details.folder-picker summary").click()
    page.locator("button[data-pick='office/policies']").click()
    assert page.input_value("#id_path") == "office/policies"
    page.fill("#id_include_patterns", "*.md")
    page.click("button[name=preview]")
    preview = page.locator("#root-preview")
    preview.wait_for()
    assert "1 file would be indexed · 1 left out by the include patterns" in preview.inner_text()
    assert_no_sideways_scroll(page, f"roots form at {size}")
    preview.scroll_into_view_if_needed()
    shoot(page, f"roots-form-{size}")
    page.context.close()


def test_no_page_scrolls_sideways_on_a_phone(chromium, live_server, admin_user, reader_library):
    from mnote.citations.models import Citation

    cited = Citation.objects.create(
        source=reader_library["handbook"], source_path="office/policies/handbook.md", source_sha256="d" * 64,
        precision="file", display_quote=f"The form is {LONG_TOKEN} in the finance system.", search_query="approval form",
    )
    page = log_in(chromium, live_server.url, "ada", "admin-pass-123")
    page.set_viewport_size({"width": 360, "height": 800})
    for path in (
        "/",
        "/?filter=all",
        "/search/?q=approval&mode=library",
        "/search/?q=handbook&mode=workspace",
        "/ask/?q=who+approves+purchases",
        f"/c/{cited.token}",
        "/library/tree/?root=%d&path=policies" % reader_library["handbook"].root_id,
        "/library/roots/",
        "/library/roots/add/",
        "/c/no-such-link",
    ):
        page.goto(f"{live_server.url}{path}")
        assert_no_sideways_scroll(page, path)
    shoot(page, "not-found-admin-phone")
    page.context.close()


def test_enter_in_the_roots_form_saves_rather_than_picking_a_folder(chromium, live_server, admin_user, reader_library, library_dir):
    (library_dir / "office" / "minutes").mkdir()
    page = log_in(chromium, live_server.url, "ada", "admin-pass-123")
    page.goto(f"{live_server.url}/library/roots/add/")
    page.fill("#id_name", "Minutes")
    page.fill("#id_path", "office/minutes")
    page.press("#id_name", "Enter")
    page.wait_for_url(f"{live_server.url}/library/roots/")
    assert IndexedRoot.objects.get(name="Minutes").path == "office/minutes"
    page.context.close()
