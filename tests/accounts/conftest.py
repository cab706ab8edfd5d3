"""People, invitations, sessions and the first admin.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
