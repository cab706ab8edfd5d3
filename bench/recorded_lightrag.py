"""A LightRAG stand-in for benchmarks that costs next to nothing: LightRAG
1.5.7's recorded responses (tests/fixtures/lightrag/), encoded once at start,
served by a bare asyncio protocol (keep-alive, no framework, no JSON work per
request), so the CPU a benchmark measures goes to MNote, not to its fake.

    .venv/bin/python bench/recorded_lightrag.py --port 8501

Answers GET /health and POST /query/data (all a search needs); any other
route is a 404, which the benchmark would see as errors.
"""

import argparse
import asyncio
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "lightrag"


def _response(status: int, body: bytes) -> bytes:
    reason = {200: "OK", 404: "Not Found"}[status]
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _recorded(name: str) -> bytes:
    return _response(200, json.dumps(json.loads((FIXTURES / name).read_text())["body"]).encode())


ROUTES = {
    (b"GET", b"/health"): _recorded("health.json"),
    (b"POST", b"/query/data"): _recorded("query_data_naive.json"),
}
NOT_FOUND = _response(404, b'{"detail":"Not Found"}')


class Recorded(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return  # the body is still on its way
            self.buffer = self.buffer[end + 4 + length :]
            method, path, _ = head.split(b" ", 2)
            self.transport.write(ROUTES.get((method, path.split(b"?", 1)[0]), NOT_FOUND))


async def serve(host: str, port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Recorded, host, port, backlog=256)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))
