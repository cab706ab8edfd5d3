"""Logging in through the login page, as a person does."""


def log_in(browser, base_url: str, username: str, password: str, *, locale: str = "en-US"):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, locale=locale)
    page = context.new_page()
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button.primary")
    page.wait_for_url(f"{base_url}/")
    return page
