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


# --- the recorded query about the Gamma manual, and answers shaped like it

QUERY = "mirror re-aluminised coating chamber"
GAMMA_DOC = "doc-b7cf006581394ea318c700a870cecd9f"


def query_stream_lines() -> list[dict]:
    """/query/stream's NDJSON in bypass mode (the LLM's words for MNote's own
    prompt, no references line): the recorded answer to the gamma query, in pieces."""
    _, answer = recorded("query.json")
    text = answer["response"]
    return [{"response": text[i : i + 9]} for i in range(0, len(text), 9)]


def result(*chunks, references=True):
    data = {"entities": [], "relationships": [], "chunks": list(chunks)}
    if references:
        names = list(dict.fromkeys(c["file_path"] for c in chunks))
        data["references"] = [{"reference_id": str(i + 1), "file_path": n} for i, n in enumerate(names)]
    return {"status": "success", "data": data}


def chunk(source, index, content):
    return {"reference_id": "1", "content": content, "file_path": source.lightrag_name,
            "chunk_id": f"{source.lightrag_doc_id}-chunk-{index:03d}"}


# --- a LightRAG whose /query/data answers come from a function of the ask

# A chunk's text worth a card.
HANDBOOK = "Purchase approval needs two signatures from the budget holder before any order is placed."


def named_chunk(name: str, n: int, content: str) -> dict:
    return {"reference_id": name, "content": content, "file_path": name, "chunk_id": f"doc-{name}-chunk-{n:03d}"}


class ScriptedLightRAG:
    """Answers /query/data from a function of the request body; records each ask."""

    def __init__(self, answer, *, rerank: bool = False):
        self.answer = answer
        self.rerank = rerank
        self.asks: list[dict] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health":
            status, body = recorded("health.json")
            if self.rerank:
                config = {**body["configuration"], "enable_rerank": True, "rerank_binding": "cohere", "rerank_model": "m"}
                body = {**body, "configuration": config}
            return httpx.Response(status, json=body)
        if request.url.path == "/query/data":
            body = json.loads(request.content)
            self.asks.append(body)
            chunks = self.answer(body)
            refs = [{"reference_id": c["reference_id"], "file_path": c["file_path"]} for c in chunks]
            unique = list({r["file_path"]: r for r in refs}.values())
            return httpx.Response(200, json={"status": "success", "data": {"chunks": chunks, "references": unique}})
        raise AssertionError(f"unexpected request {request.url.path}")


def serve_scripted(settings, answer, **kwargs) -> ScriptedLightRAG:
    fake = ScriptedLightRAG(answer, **kwargs)
    settings.MNOTE_LIGHTRAG_TRANSPORT = httpx.MockTransport(fake.handler)
    return fake


# --- LightRAG's document list (/documents/paginated) and health, by hand


def document(name, status="processed", *, doc_id=None, chunks=3, error=None, updated="2026-01-01T00:00:00+00:00"):
    return {
        "id": doc_id or f"doc-{name}",
        "file_path": name,
        "status": status,
        "chunks_count": chunks,
        "error_msg": error,
        "metadata": {"parse_engine": "native"},
        "track_id": "t",
        "created_at": updated,
        "updated_at": updated,
        "content_summary": "",
    }


def listing(*documents):
    return 200, {
        "documents": list(documents),
        "pagination": {"page": 1, "page_size": 200, "total_count": len(documents), "total_pages": 1,
                       "has_next": False, "has_prev": False},
        "status_counts": {},
    }


HEALTH_IDLE = (200, {"status": "healthy", "pipeline_busy": False, "configuration": {}})
HEALTH_BUSY = (200, {"status": "healthy", "pipeline_busy": True, "configuration": {}})


def no_llm_health():
    """The recorded health of a LightRAG with no LLM configured."""
    _, health = recorded("health.json")
    return 200, {**health, "configuration": {**health["configuration"], "llm_binding": None, "llm_model": None}}
