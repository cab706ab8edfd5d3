"""The HTML pages: home, library tree, roots, search, ask, the preview page, translation and who may reach which URL.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
