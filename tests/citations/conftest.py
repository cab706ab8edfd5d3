"""The citation mapper, its document indexes and memos, permalinks and re-anchoring.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
