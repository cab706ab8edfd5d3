"""A team's first minutes, in headless Chromium: an admin creates a group
and invites a member, the member opens the link, sets a password and is
signed in, the admin uploads a file with progress into a root opened for
uploads, and the file is queued for indexing. Screenshots at 1366 and
390 px go to artifacts/."""

import pytest

from tests.browser.login import log_in
from tests.paths import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def shoot(page, name: str, *, width: int = 1366) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    page.screenshot(path=str(ARTIFACTS / f"people-{name}-{width}.png"), full_page=True)
    # A phone never scrolls a page sideways (a wide table scrolls inside its card).
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), name


@pytest.fixture
def inbox(library_dir, lightrag_dirs, fake_lightrag):
    from mnote.library.models import IndexedRoot

    fake_lightrag.on("GET", "/health", "health.json").on(
        "POST", "/documents/paginated", "documents_paginated_after_delete.json"
    )
    (library_dir / "inbox").mkdir()
    return IndexedRoot.objects.create(name="Inbox", path="inbox", uploads_open=True, visible_to_all=False)


def test_invite_a_member_and_upload_a_file_with_progress(chromium, live_server, admin_user, inbox, tmp_path, django_user_model):
    admin = log_in(chromium, live_server.url, "ada", "admin-pass-123")
    admin.goto(f"{live_server.url}/people/")
    admin.click("text=Create a group")
    admin.fill("#id_name", "Board")
    admin.check("label:has-text('Inbox') input")
    admin.click("button.primary")
    admin.wait_for_url(f"{live_server.url}/people/")
    assert "Board" in admin.locator("#groups-h + ul, section:has(#groups-h)").first.inner_text()

    admin.click("text=Invite someone")
    admin.fill("#id_note", "Nora")
    admin.check("label:has-text('Board') input")
    shoot(admin, "invite")
    admin.click("button.primary")
    link = admin.locator("#invitation-link").inner_text().strip()
    assert link.startswith(f"{live_server.url}/people/join/")
    shoot(admin, "invitation")
    shoot(admin, "invitation", width=390)

    member_context = chromium.new_context(viewport={"width": 390, "height": 844})
    member = member_context.new_page()
    member.goto(link)
    member.fill("#id_username", "nora")
    member.fill("#id_first_name", "Nora Nakamura")
    member.fill("#id_password1", "a-long-pass-phrase")
    member.fill("#id_password2", "a-long-pass-phrase")
    shoot(member, "join", width=390)
    member.click("button.primary")
    member.wait_for_url(f"{live_server.url}/")
    assert "Welcome, Nora Nakamura" in member.content()
    assert "Add files to Inbox" in member.content()  # the group sees the root, and it takes uploads
    member_context.close()

    admin.set_viewport_size({"width": 1366, "height": 900})
    admin.goto(f"{live_server.url}/people/")
    assert "nora" in admin.locator("table.people-table").inner_text()
    shoot(admin, "people")
    shoot(admin, "people", width=390)

    report = tmp_path / "minutes.md"
    report.write_text("# Board minutes\n\nThe budget was approved.\n" * 2000)
    admin.set_viewport_size({"width": 1366, "height": 900})
    admin.goto(f"{live_server.url}/library/roots/{inbox.pk}/upload/")
    progress = []
    admin.on("console", lambda message: progress.append(message.text))
    admin.set_input_files("#upload-files", [str(report), str(tmp_path / "minutes.md")])
    done = admin.locator(".upload-file[data-stage]")
    done.nth(1).wait_for(timeout=15_000)
    stages = [done.nth(i).get_attribute("data-stage") for i in range(2)]
    assert stages == ["queued", "queued"]
    rows = admin.locator(".upload-file").all_inner_texts()
    assert "minutes (2).md" in rows[1]  # the second one did not overwrite the first
    assert admin.locator(".upload-file progress").first.get_attribute("value") is not None
    admin.locator("#progress .progress-files").wait_for(timeout=10_000)
    assert "queued" in admin.locator("#progress").inner_text()
    shoot(admin, "upload")
    shoot(admin, "upload", width=390)
    assert (inbox.absolute_path / "minutes.md").exists() and (inbox.absolute_path / "minutes (2).md").exists()
    admin.context.close()
