"""In the browser: an answer streams in from the real LightRAG with the test
answering model (Enter asks, Shift+Enter adds a line, Stop stops it at
LightRAG), and a user makes and revokes their own API token."""

import re
import time

import httpx
import pytest

from mnote.api.models import ApiToken
from mnote.library.models import IndexedRoot
from tests.browser.login import log_in
from tests.live_stack import GAMMA, index, model_endpoint

pytestmark = pytest.mark.integration


@pytest.fixture
def manuals(transactional_db, live_answering, library_dir):
    (library_dir / "manuals").mkdir()
    (library_dir / "manuals" / "gamma.md").write_text(GAMMA)
    root = IndexedRoot.objects.create(name="Manuals", path="manuals")
    index(root)
    return root


@pytest.fixture
def page(chromium, live_server, member):
    page = log_in(chromium, live_server.url, "mia", "member-pass-123")
    yield page
    page.context.close()


def test_an_answer_streams_into_the_page_and_stop_stops_it(manuals, page, live_server, embedded_stack):
    model_endpoint(embedded_stack, "POST", {"reset": True, "pace": 0.05})
    page.goto(f"{live_server.url}/ask/")
    assert "naive" not in page.locator("select[name=retrieval]").input_value()  # an LLM: mix by default
    box = page.locator("textarea[name=q]")
    box.fill("How often is the Gamma mirror")
    box.press("Shift+Enter")
    box.type("re-aluminised?")
    assert box.input_value() == "How often is the Gamma mirror\nre-aluminised?"
    box.press("Enter")
    answer = page.locator("article.turn:not(.streaming) section.answer")
    answer.wait_for(timeout=60_000)
    assert "written by the LLM" in answer.inner_text() and "three years" in answer.inner_text()
    badge = answer.locator("a.badge-link").first
    assert page.locator(f"article.source-card{badge.get_attribute('href')}").count() == 1
    page.wait_for_url(re.compile(r"/ask/c/\d+/$"))

    try:
        model_endpoint(embedded_stack, "POST", {"pace": 0.6})
        box.fill("When does the Gamma dome open?")
        box.press("Enter")
        page.locator("article.turn.streaming article.source-card").first.wait_for(timeout=60_000)
        page.locator("button.stop").click()
        page.locator("article.turn .stopped").wait_for(timeout=10_000)
        deadline = time.monotonic() + 30
        while model_endpoint(embedded_stack)["cancelled"] < 1 and time.monotonic() < deadline:
            page.wait_for_timeout(200)
        assert model_endpoint(embedded_stack)["cancelled"] == 1
        assert page.locator("form.ask-form button[type=submit]").is_enabled()
    finally:
        model_endpoint(embedded_stack, "POST", {"pace": 0.02})


def test_a_user_creates_and_revokes_their_own_token(transactional_db, page, live_server, member):
    page.goto(f"{live_server.url}/tokens/")
    page.fill("input[name=name]", "my agent")
    page.click("form.token-form button[type=submit]")
    key = page.locator("code.token-key").inner_text()
    page.click("button[data-copy-from=new-token]")
    assert page.locator("button[data-copy-from=new-token]").get_attribute("data-copied") == key
    assert key in page.locator("#mcp-stdio-config").inner_text()
    page.set_viewport_size({"width": 390, "height": 800})
    for url in (page.url, f"{live_server.url}/api/docs/"):
        if url != page.url:
            page.goto(url)
        widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"{url} scrolls sideways at 390 px: {widths}"
    page.set_viewport_size({"width": 1366, "height": 800})
    page.goto(f"{live_server.url}/tokens/")
    status = httpx.get(f"{live_server.url}/api/status", headers={"Authorization": f"Bearer {key}"})
    assert status.status_code == 200
    # shown once (the page was left since)
    assert page.locator("code.token-key").count() == 0 and "my agent" in page.locator("table.tokens-table").inner_text()
    page.click("button.revoke")
    page.locator(".messages").wait_for()
    assert ApiToken.objects.filter(user=member).count() == 0
    assert httpx.get(f"{live_server.url}/api/status", headers={"Authorization": f"Bearer {key}"}).status_code == 401
