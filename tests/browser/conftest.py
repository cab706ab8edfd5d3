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


# --- a parent page steering the preview in its frame --------------------------

# The parent side of the preview's protocol, run in an app page of the same
# origin as the search and ask pages do: loads the preview in a frame, sends
# each locator as ``mnote:locate`` (no reload) and reads back ``mnote:located``.
PARENT = """async ([url, locators, width, height]) => {
  let frame = document.getElementById("locate-frame");
  if (!frame) {
    const ready = new Promise((resolve) => window.addEventListener("message", function onReady(e) {
      if (e.data && e.data.type === "mnote:ready") { window.removeEventListener("message", onReady); resolve(); }
    }));
    frame = document.createElement("iframe");
    frame.id = "locate-frame";
    frame.style.width = `${width}px`;
    frame.style.height = `${height}px`;
    frame.src = url;
    document.body.prepend(frame);
    await ready;
    frame.contentWindow.mnoteSameWindow = true;  // gone if the frame reloads
  }
  const results = [];
  for (const locator of locators) {
    const requestId = `r${Math.random()}`;
    results.push(await new Promise((resolve) => {
      setTimeout(() => resolve({ status: "no answer" }), 20000);
      window.addEventListener("message", function onLocated(e) {
        if (e.origin === window.location.origin && e.data && e.data.type === "mnote:located" && e.data.requestId === requestId) {
          window.removeEventListener("message", onLocated);
          resolve({ ...e.data, sameWindow: !!frame.contentWindow.mnoteSameWindow });
        }
      });
      frame.contentWindow.postMessage({ type: "mnote:locate", requestId, locator }, window.location.origin);
    }));
  }
  return results;
}"""


@pytest.fixture
def locate_in_frame(live_server):
    """``locate_in_frame(page, source, locators)``: each locator sent in turn
    to the source's preview in a frame of an app page (loaded once per page);
    returns what the preview answered for each."""

    def locate(page, source, locators, *, width=1000, height=600):
        if not page.url.startswith(live_server.url) or "/preview/" in page.url:
            page.goto(f"{live_server.url}/")
        return page.evaluate(PARENT, [f"/preview/{source.pk}/", locators, width, height])

    return locate
