"""End to end in headless Chromium against a live server: each page as a person uses it.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""

import pytest

from tests.browser.login import log_in

# --- headless Chromium -------------------------------------------------------

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def logged_in_page(chromium, live_server, member):
    page = log_in(chromium, live_server.url, "mia", "member-pass-123")
    yield page
    page.context.close()
