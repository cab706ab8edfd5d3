"""Bytes an agent receives for one search, now and in the format before
(issue: ~98 KB over the API, ~66 KB per MCP call plus a structured copy).

    .venv/bin/python bench/agent_payload_bench.py [--port-base 8560] [--chunk-top-k 10]

Everything real, in a temporary data dir: the embedded stack (local model
endpoint + lightrag-server) with the demo library loaded (``manage.py
load_demo``), and the app called in a child process through Django's test
client with a member's API token (no web server needed).

Per query (the search latency bench's English and Chinese questions, each
asked for ``--chunk-top-k`` chunks, so at most that many citations):

  - api compact   ``POST /api/search`` as an agent gets it by default;
  - api verbose   the same with ``"verbose": true``;
  - api before    the verbose result encoded as the API did before (the same
                  fields, ``\\uXXXX`` escapes for non-ASCII text): the baseline;
  - mcp compact   the JSON-RPC answer of ``tools/call search`` at ``/mcp``;
  - mcp before    what the SDK sent before for the same data: the result as
                  structured content plus an indented JSON text copy.

Prints bytes per query and the totals, and the size per 10 citations.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_latency_bench import QUERIES  # noqa: E402
from stack_harness import app_env, clean_environ, manage, start_stack  # noqa: E402

MEASURE = r"""
import json, os
import pydantic_core
from django.test import Client
from mnote.api.models import ApiToken
from django.contrib.auth import get_user_model

user = get_user_model().objects.create_user("agent-bench")
_, key = ApiToken.objects.create_token(user, "bench")
client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
rows = []
fields = {}
top = int(os.environ["BENCH_CHUNK_TOP_K"])
for query in json.loads(os.environ["BENCH_QUERIES"]):
    compact = client.post("/api/search", {"query": query, "chunkTopK": top}, content_type="application/json")
    verbose = client.post("/api/search", {"query": query, "chunkTopK": top, "verbose": True}, content_type="application/json")
    assert compact.status_code == verbose.status_code == 200, (compact.content, verbose.content)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {"query": query, "chunkTopK": top}}}
    mcp = client.post("/mcp", json.dumps(call), content_type="application/json", HTTP_ACCEPT="application/json, text/event-stream")
    assert mcp.status_code == 200, mcp.content
    data = verbose.json()
    fields["(rest of the answer)"] = fields.get("(rest of the answer)", 0) + len(compact.content) - len(
        json.dumps(compact.json()["results"], ensure_ascii=False, separators=(",", ":")).encode())
    for citation in compact.json()["results"]:
        for name, value in citation.items():
            fields[name] = fields.get(name, 0) + len(json.dumps(value, ensure_ascii=False).encode())
    before_api = json.dumps(data).encode()  # JsonResponse's encoding then: ensure_ascii
    text = pydantic_core.to_json(data, fallback=str, indent=2).decode()
    before_mcp = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": text}], "structuredContent": data, "isError": False}}).encode()
    rows.append({"query": query, "citations": len(data["results"]), "api_compact": len(compact.content),
                 "api_verbose": len(verbose.content), "api_before": len(before_api),
                 "mcp_compact": len(mcp.content), "mcp_before": len(before_mcp)})
print("FIELDS " + json.dumps(fields))
print("ROWS " + json.dumps(rows))
"""

COLUMNS = ("api_compact", "api_verbose", "api_before", "mcp_compact", "mcp_before")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port-base", type=int, default=0, help="ports BASE (model endpoint) and BASE+1 (LightRAG)")
    parser.add_argument("--chunk-top-k", type=int, default=10, help="chunks asked of LightRAG per search (default 10)")
    args = parser.parse_args(argv)
    clean_environ()
    from mnote.stack.managed import free_port

    tmp = Path(tempfile.mkdtemp(prefix="mnote-agent-payload-bench-"))
    stack = None
    try:
        (tmp / "library").mkdir()
        ports = [args.port_base, args.port_base + 1] if args.port_base else [free_port(), free_port()]
        print(f"starting the embedded stack in {tmp} …", flush=True)
        stack = start_stack(tmp, lightrag_port=ports[1], model_port=ports[0])
        env = {**app_env(tmp, stack), "MNOTE_ALLOWED_HOSTS": "testserver"}
        manage(["migrate", "--verbosity", "0"], env)
        print("  " + "\n  ".join(manage(["load_demo"], env).strip().splitlines()), flush=True)
        env.update(BENCH_QUERIES=json.dumps(QUERIES), BENCH_CHUNK_TOP_K=str(args.chunk_top_k))
        out = manage(["shell", "-c", MEASURE], env)
    finally:
        if stack is not None:
            stack.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    rows = json.loads(out.split("ROWS ", 1)[1])
    fields = json.loads(out.split("FIELDS ", 1)[1].split("\n", 1)[0])
    print(f"\n{'query':<48} {'cit.':>4} " + " ".join(f"{c:>12}" for c in COLUMNS))
    for row in rows:
        print(f"{row['query'][:48]:<48} {row['citations']:>4} " + " ".join(f"{row[c]:>12,}" for c in COLUMNS))
    citations = sum(r["citations"] for r in rows)
    totals = {c: sum(r[c] for r in rows) for c in COLUMNS}
    print(f"{'total':<48} {citations:>4} " + " ".join(f"{totals[c]:>12,}" for c in COLUMNS))
    if citations:
        print("compact bytes per citation, by field: " + ", ".join(f"{n} {b / citations:.0f}" for n, b in fields.items()))
        print("per 10 citations: " + ", ".join(f"{c} {totals[c] * 10 / citations / 1000:.1f} KB" for c in COLUMNS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
