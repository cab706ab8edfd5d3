"""The LightRAG client, its configuration and provider, and LightRAG on PostgreSQL.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
