"""The app as people use it, in headless Chromium against the real embedded
LightRAG: search, open, ask, share — and what still works when LightRAG is
down. Screenshots of each page, in English and Chinese, go to artifacts/."""

from urllib.parse import quote

import pytest

from tests.browser.login import log_in
from tests.paths import ARTIFACTS
from tests.paths import DEMO_LIBRARY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.integration]

DEMO = DEMO_LIBRARY


def shoot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(1200)  # let the preview's smooth scroll finish
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def test_a_member_searches_opens_asks_and_shares(demo_library, chromium, live_server, member, django_user_model):
    page = log_in(chromium, live_server.url, "mia", "member-pass-123")
    shoot(page, "en-dashboard")

    page.goto(f"{live_server.url}/search/")
    page.fill("input[name=q]", "flat-field frames twilight sky")
    page.check("input[name=mode][value=library]")
    page.click("form.search-form button[type=submit]")
    cards = page.locator("article.source-card[data-locator]")
    cards.first.wait_for()
    card = cards.first
    card.click()
    card.locator("xpath=self::*[@data-located-status]").wait_for(timeout=15_000)
    assert card.get_attribute("data-located-status") in ("exact", "fuzzy")
    frame = page.frame_locator("iframe#preview-frame")
    frame.locator(".mnote-hit, .mnote-hit-outline").first.wait_for()
    shoot(page, "en-search")

    page.goto(f"{live_server.url}/ask/")
    page.fill("textarea[name=q]", "How many flat-field frames should be taken per filter?")
    page.click("form.search-form button[type=submit]")
    page.locator("section.answer").wait_for()
    assert "extractive answer, no LLM configured" in page.locator("section.answer").inner_text()
    badges = page.locator("a.badge-link")
    assert badges.count() >= 1
    card_ids = set(page.locator("article.source-card").evaluate_all("cards => cards.map(c => c.id)"))
    for i in range(badges.count()):
        assert badges.nth(i).get_attribute("href")[1:] in card_ids  # every badge points at a card on the page
    badges.first.click()
    target = page.locator(badges.first.get_attribute("href"))
    target.locator("xpath=self::*[@data-located-status]").wait_for(timeout=15_000)
    assert "active" in target.get_attribute("class")
    shoot(page, "en-ask")

    copy = page.locator("article.source-card .copy-link").first
    copy.click()
    link = copy.get_attribute("data-copied")
    assert link.startswith(f"{live_server.url}/c/")
    page.context.close()

    django_user_model.objects.create_user("noor", password="colleague-pass-1")
    colleague = log_in(chromium, live_server.url, "noor", "colleague-pass-1")
    colleague.goto(link)
    assert colleague.locator("article.citation-card").is_visible()
    colleague.frame_locator("#citation-frame").locator("#document[data-initial-status]").wait_for(timeout=15_000)
    shoot(colleague, "en-citation")
    colleague.context.close()


def test_pages_say_when_lightrag_is_down_and_workspace_search_still_works(
    demo_library, demo_stack, chromium, live_server, member
):
    page = log_in(chromium, live_server.url, "mia", "member-pass-123")
    demo_stack.lightrag.kill()
    try:
        page.goto(f"{live_server.url}/")
        assert "The search engine cannot be reached right now." in page.content()
        shoot(page, "en-dashboard-lightrag-down")

        page.goto(f"{live_server.url}/search/?q=onboarding&mode=workspace")
        assert page.locator("article.workspace-hit").count() >= 1

        page.goto(f"{live_server.url}/search/?q={quote('primary mirror')}&mode=library")
        assert "LightRAG is unavailable" in page.locator("#results").inner_text()
        assert page.locator("article.source-card[data-locator]").count() == 0
    finally:
        demo_stack.restart_lightrag()
        page.context.close()


def test_every_page_reads_in_chinese(demo_library, chromium, live_server, member):
    page = log_in(chromium, live_server.url, "mia", "member-pass-123", locale="zh-CN")
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    shoot(page, "zh-dashboard")
    page.goto(f"{live_server.url}/search/?q={quote('吡咯烷')}&mode=library&retrieval=naive")
    page.locator("article.source-card[data-locator]").first.click()
    page.locator("article.source-card.active[data-located-status]").wait_for(timeout=15_000)
    shoot(page, "zh-search")
    page.goto(f"{live_server.url}/ask/?q={quote('吡咯烷应该如何储存？')}&retrieval=naive")
    shoot(page, "zh-ask")
    assert "搜索" in page.locator("nav").inner_text()
    page.context.close()

