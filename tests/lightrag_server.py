"""A stand-in LightRAG over real HTTP, for tests whose
MNote runs in other processes: workers started with ``manage.py run_worker``,
web processes under gunicorn. It answers the routes they use with LightRAG
1.5.7's recorded responses (tests/fixtures/lightrag/) and remembers what it
was asked, so a test can count what reached LightRAG from all processes.

Like LightRAG it keeps a set of documents: a delete of a listed document has
an effect (it is gone), a second delete of the same id has none.
"""

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from tests import paths

FIXTURES = paths.FIXTURES / "lightrag"


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())["body"]


class LightRAGServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.lock = threading.Lock()
        self.documents: set[str] = set()
        self.delete_requests: Counter[str] = Counter()
        self.deleted: Counter[str] = Counter()  # effects: a listed document went
        self.request_times: dict[str, list[float]] = {}
        self.scans = 0
        # doc id -> seconds a delete of it takes (a request in flight to kill a worker in).
        self.slow_deletes: dict[str, float] = {}
        self.query_data = recorded("query_data_naive.json")
        self.health = recorded("health.json")
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length) or b"{}") if length else {}

            def _send(self, body, status=200):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/health":
                    return self._send(server.health)
                self._send({"detail": "Not Found"}, 404)

            def do_POST(self):
                body = self._body()
                if self.path == "/documents/scan":
                    with server.lock:
                        server.scans += 1
                    return self._send(recorded("scan.json"))
                if self.path == "/documents/paginated":
                    return self._send(server.listing())
                if self.path == "/query/data":
                    return self._send(server.query_data)
                self._send({"detail": "Not Found"}, 404)

            def do_DELETE(self):
                body = self._body()
                if self.path != "/documents/delete_document":
                    return self._send({"detail": "Not Found"}, 404)
                doc_ids = body.get("doc_ids") or []
                for doc_id in doc_ids:
                    with server.lock:
                        server.delete_requests[doc_id] += 1
                        server.request_times.setdefault(doc_id, []).append(time.monotonic())
                        slow = server.slow_deletes.pop(doc_id, 0)
                    if slow:
                        time.sleep(slow)
                    with server.lock:
                        if doc_id in server.documents:
                            server.documents.discard(doc_id)
                            server.deleted[doc_id] += 1
                self._send(recorded("delete_document.json"))

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def listing(self) -> dict:
        with self.lock:
            documents = [
                {"id": doc_id, "file_path": doc_id, "status": "processed", "chunks_count": 1, "error_msg": None,
                 "metadata": {}, "track_id": "t", "created_at": "2026-01-01T00:00:00+00:00",
                 "updated_at": "2026-01-01T00:00:00+00:00", "content_summary": ""}
                for doc_id in sorted(self.documents)
            ][:200]
        return {
            "documents": documents,
            "pagination": {"page": 1, "page_size": 200, "total_count": len(documents), "total_pages": 1,
                           "has_next": False, "has_prev": False},
            "status_counts": {},
        }

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "LightRAGServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

