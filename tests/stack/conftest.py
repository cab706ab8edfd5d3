"""The embedded stack: processes and their configuration, the model endpoint, rerank, the answering model, tiktoken's cache, the web layout.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
