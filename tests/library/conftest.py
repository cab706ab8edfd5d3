"""Roots, expansion, sync, ingest and its recovery, jobs and workers, the watcher, uploads, progress and the demo library.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
