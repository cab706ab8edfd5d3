"""LightRAG faked at the transport: its recorded real answers, a fake that
serves them for the routes a test declares, and the shapes of the answers
tests build by hand."""

import json

import httpx

from tests.paths import FIXTURES


def recorded(name: str) -> tuple[int, dict]:
    """A real LightRAG 1.5.7 response, as recorded: (HTTP status, body)."""
    data = json.loads((FIXTURES / "lightrag" / name).read_text())
    return data["_http_status"], data["body"]


class RecordedLightRAG:
    """A fake LightRAG at the transport: serves recorded responses for the
    routes a test declares and fails the test on any other request."""

    def __init__(self):
        self.routes: dict[tuple[str, str], object] = {}
        self.requests: list[httpx.Request] = []

    def on(self, method: str, path: str, response):
        """``response``: a recording's file name, an (status, body) pair, an
        exception to raise, or a function of the request returning such a pair.
        A body that is a list is sent as NDJSON, one line per item (``/query/stream``)."""
        self.routes[(method, path)] = response
        return self

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = (request.method, request.url.path)
        if key not in self.routes:
            raise AssertionError(f"unexpected request to LightRAG: {request.method} {request.url.path}")
        response = self.routes[key]
        if isinstance(response, Exception):
            raise response
        if callable(response):
            response = response(request)
        status, body = recorded(response) if isinstance(response, str) else response
        if isinstance(body, list):
            lines = "".join(json.dumps(line) + "\n" for line in body)
            return httpx.Response(status, content=lines.encode(), headers={"Content-Type": "application/x-ndjson"})
        return httpx.Response(status, json=body)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)
