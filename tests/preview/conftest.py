"""The renderers (DOCX, PDF, text, sheets), their sandbox and limits, and the anchoring map.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
