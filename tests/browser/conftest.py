"""End to end in headless Chromium against a live server: each page as a person uses it.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
