"""The JSON API for agents, its tokens and OpenAPI description, and the MCP server.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
