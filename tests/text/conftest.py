"""Pure functions on strings: terms, LaTeX, display cleaning, evidence windows, scores.

The session-wide fixtures (the embedded stack, indexed shelves, the live
server, users and clients) come from tests/conftest.py."""
