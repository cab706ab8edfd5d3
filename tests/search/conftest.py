"""Full-library search and answers: the answer service, badges, the workspace index, the relevance floor.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
