"""The web tier's own CPU per search, in-process: /api/search (what the scale
bench drives), the search page's htmx results and the whole search page,
against a LightRAG stand-in that costs this thread nothing.

    .venv/bin/python bench/search_cpu_bench.py [--n 200] [--chunks 20] [--blocks 600] [--breakdown] [--profile] [--against CHECKOUT] [--port 18710]

The library is mapping_bench's synthetic DOCX-style document (sidecar, chunk
store, one indexed registry row); LightRAG's ``/query/data`` answer holds
``--chunks`` of its chunks (20: what a search shows), served pre-encoded by
bench/recorded_lightrag.py's protocol on a thread of this process (its CPU is
not this thread's). Requests go through Django's test client with the whole
middleware stack, as a member: a bearer token for the API, a logged-in session
for the pages. Per kind, after a warm-up: the median CPU time of this thread
per request (``time.thread_time``, which load on the machine does not
stretch), the SQL queries per request, and with ``--profile`` a cProfile of
the ``--n`` requests of each kind (cumulative and own time).

``--against CHECKOUT`` (a copy of main, say ``git worktree`` or ``git archive``
into a folder): /api/search with that checkout's API search code and this
one's, swapped in one process every 15 requests, 300 requests each, their
JSON checked equal: the same-run baseline for a change to the API's search
path (two processes run one after the other differ by more than such a
change on a busy machine).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from mapping_bench import DOC_ID, DOC_NAME, chunk_document, chunk_store, generate_sidecar, pick_result_chunks, query_data_result
from stack_harness import PASSWORD, USERNAME, in_process_app  # bench/stack_harness.py, beside this file

import recorded_lightrag  # bench/recorded_lightrag.py: the stand-in's protocol

QUERY = "primary mirror calibration temperature"


def serve_in_thread(port: int, query_data: dict) -> None:
    """The stand-in on a daemon thread: recorded /health, this /query/data."""
    recorded_lightrag.ROUTES[(b"POST", b"/query/data")] = recorded_lightrag._response(200, json.dumps(query_data).encode())
    ready = threading.Event()

    def run():
        async def main():
            server = await asyncio.get_running_loop().create_server(recorded_lightrag.Recorded, "127.0.0.1", port)
            ready.set()
            async with server:
                await server.serve_forever()

        asyncio.run(main())

    threading.Thread(target=run, daemon=True, name="lightrag-stand-in").start()
    if not ready.wait(10):
        raise SystemExit(f"the LightRAG stand-in did not start on port {port}")


def breakdown_patches():
    """(owner, attribute, row name) of the pieces ``--breakdown`` times, each
    patched where it is called."""
    from mnote.api import endpoint, views
    from mnote.library.models import IndexedRoot
    from mnote.lightrag.client import LightRAGClient
    from mnote.pages import search as page
    from mnote.search import answers

    return [
        (endpoint, "authenticate", "authenticate (bearer token / session user)"),
        (views, "read_json", "read_json (parse the body)"),
        (views, "validated", "validated (SearchForm)"),
        (answers, "check_scope", "check_scope"),
        (answers, "recent_health", "recent_health"),
        (answers, "lightrag_client", "lightrag_client"),
        (views, "full_library_search", "full_library_search: the rest (client, health, diagnostics)"),
        (page, "full_library_search", "full_library_search: the rest (client, health, diagnostics)"),
        (LightRAGClient, "query_data", "POST /query/data (request, JSON decode)"),
        (answers, "map_query_data", "map_query_data (mapper)"),
        (answers, "_drop_unreadable", "_drop_unreadable"),
        (answers, "_weak_match", "_weak_match"),
        (views, "not_in_lightrag", "not_in_lightrag (name matches)"),
        (page, "not_in_lightrag", "not_in_lightrag (name matches)"),
        (type(IndexedRoot.objects.all()), "visible_ids", "visible_ids (visible roots)"),
        (views, "_citation_json", "_citation_json (API items)"),
        (views, "_diagnostics", "_diagnostics"),
        (views, "_agent_json", "_agent_json (JSON response)"),
        (views, "link_base", "link_base"),
        (page, "remember", "remember (recent questions)"),
        (page, "cards_html", "cards_html (cards)"),
        (page, "render", "render (template)"),
    ]


def breakdown(request, runs: int) -> dict:
    """Exclusive CPU time of this thread per piece of a request, without a
    profiler: each piece's timer subtracts the wrapped pieces inside it, and
    the remainder (middleware, session, auth, URL, response) is its own row."""
    exclusive: dict[str, float] = {}
    stack: list[float] = []

    def wrap(name, func):
        def timed(*args, **kwargs):
            stack.append(0.0)
            started = time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                elapsed = time.thread_time() - started
                inner = stack.pop()
                exclusive[name] = exclusive.get(name, 0.0) + elapsed - inner
                if stack:
                    stack[-1] += elapsed

        return timed

    saved = []
    for owner, attr, name in breakdown_patches():
        saved.append((owner, attr, owner.__dict__[attr]))
        setattr(owner, attr, wrap(name, getattr(owner, attr)))
    total = 0.0
    try:
        for _ in range(runs):
            started = time.thread_time()
            request()
            total += time.thread_time() - started
    finally:
        for owner, attr, old in reversed(saved):
            setattr(owner, attr, old)
    exclusive["the rest: middleware, session, URL, response, test client"] = total - sum(exclusive.values())
    return {name: round(seconds / runs * 1000, 2) for name, seconds in sorted(exclusive.items(), key=lambda kv: -kv[1])}


def set_up(port: int, chunks_in_answer: int, blocks: int):
    """Django set up in this process on a fresh data dir with the synthetic
    library, a member with an API token, and the stand-in serving a
    ``/query/data`` answer of ``chunks_in_answer`` chunks: (API client, logged-in page client)."""
    tmp = Path(tempfile.mkdtemp(prefix="mnote-search-cpu-"))
    data_dir, library_dir = tmp / "data", tmp / "library"
    data_dir.mkdir()
    library_dir.mkdir()
    inputs, storage = tmp / "inputs", tmp / "rag_storage"
    storage.mkdir()
    in_process_app(data_dir, library_dir, MNOTE_LIGHTRAG_URL=f"http://127.0.0.1:{port}",
                   MNOTE_LIGHTRAG_INPUT_DIR=str(inputs), MNOTE_LIGHTRAG_WORKING_DIR=str(storage))  # fmt: skip
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from mnote.api.models import ApiToken
    from mnote.library.models import IndexedRoot, Source

    call_command("migrate", verbosity=0, interactive=False)
    meta, rows = generate_sidecar(blocks)
    chunks = chunk_document(rows)
    picked = pick_result_chunks(chunks, chunks_in_answer)
    sidecar = inputs / "__parsed__" / f"{DOC_NAME}.parsed" / f"{Path(DOC_NAME).stem}.blocks.jsonl"
    sidecar.parent.mkdir(parents=True)
    sidecar.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [meta, *rows]) + "\n", encoding="utf-8")
    (storage / "kv_store_text_chunks.json").write_text(json.dumps(chunk_store(chunks), ensure_ascii=False), encoding="utf-8")
    root = IndexedRoot.objects.create(name="Handbooks", path="handbooks", visible_to_all=True)
    Source.objects.create(root=root, relative_path="observatory-handbook.docx",
                          absolute_path=str(library_dir / "handbooks" / "observatory-handbook.docx"), sha256="b" * 64,
                          lightrag_name=DOC_NAME, lightrag_doc_id=DOC_ID, status=Source.Status.INDEXED,
                          chunk_count=len(chunks))  # fmt: skip
    # Names that match the query's words but are not indexed: the "not in LightRAG" list has rows to show.
    for i in range(3):
        Source.objects.create(root=root, relative_path=f"drafts/mirror-notes-{i}.docx", absolute_path="/x",
                              sha256=str(i) * 64, status=Source.Status.QUEUED)  # fmt: skip
    user = get_user_model().objects.create_user(USERNAME, password=PASSWORD)
    token = ApiToken.objects.create_token(user, "bench")[1]
    serve_in_thread(port, query_data_result(picked))

    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
    pages = Client(HTTP_HOST="127.0.0.1")
    pages.login(username=USERNAME, password=PASSWORD)
    return api, pages


def api_code_of(checkout: Path) -> tuple:
    """Another checkout's API search code (``views.search_result``,
    ``views._agent_json``, the token lookup ``ApiTokenQuerySet.authenticate``),
    loaded beside this one's: its views module as a module of its own (it
    imports the rest from this checkout), the lookup compiled in this
    checkout's models module (a second models module would register the models again)."""
    import ast
    import importlib.util

    from mnote.api import models

    spec = importlib.util.spec_from_file_location("other_api_views", checkout / "mnote" / "api" / "views.py")
    other_views = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other_views)
    tree = ast.parse((checkout / "mnote" / "api" / "models.py").read_text())
    queryset = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ApiTokenQuerySet")
    method = next(n for n in queryset.body if isinstance(n, ast.FunctionDef) and n.name == "authenticate")
    namespace = dict(vars(models))
    exec(compile(ast.Module([method], []), str(checkout / "mnote" / "api" / "models.py"), "exec"), namespace)
    return other_views.search_result, other_views._agent_json, namespace["authenticate"]


def against(request, checkout: Path, blocks: int = 20, per_block: int = 15) -> dict:
    """CPU per API search of this checkout's search code and ``checkout``'s, in
    this process, swapped every ``per_block`` requests (the order turned each
    block), so load on the machine lands on both alike; their JSON must agree."""
    from mnote.api import models, views

    def install(parts):
        views.search_result, views._agent_json, models.ApiTokenQuerySet.authenticate = parts

    mine = (views.search_result, views._agent_json, models.ApiTokenQuerySet.authenticate)
    codes = {"this checkout": mine, str(checkout): api_code_of(checkout)}
    answers, cpu = {}, {name: [] for name in codes}
    try:
        for name, parts in codes.items():
            install(parts)
            for _ in range(10):
                response = request()
            answers[name] = json.loads(response.content)
        assert len({json.dumps(a, sort_keys=True) for a in answers.values()}) == 1, "the two answer differently"
        for block in range(blocks):
            for name in list(codes) if block % 2 == 0 else reversed(list(codes)):
                install(codes[name])
                for _ in range(per_block):
                    started = time.thread_time()
                    request()
                    cpu[name].append(time.thread_time() - started)
    finally:
        install(mine)
    return {name: round(statistics.median(times) * 1000, 2) for name, times in cpu.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="requests per kind (after 20 of warm-up)")
    parser.add_argument("--chunks", type=int, default=20, help="chunks in LightRAG's answer")
    parser.add_argument("--blocks", type=int, default=600, help="blocks in the synthetic document")
    parser.add_argument("--port", type=int, default=18710, help="the stand-in's port")
    parser.add_argument("--profile", action="store_true", help="also cProfile the requests of each kind")
    parser.add_argument("--breakdown", action="store_true", help="also the CPU ms of each piece (no profiler)")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT",
                        help="also /api/search with another checkout's API search code, alternated in this process")
    parser.add_argument("--kinds", default="api,partial,page", help="which of api, partial, page")
    args = parser.parse_args(argv)

    api, pages = set_up(args.port, args.chunks, args.blocks)
    from django.db import connection

    body = json.dumps({"query": QUERY})
    kinds = {
        "api": lambda: api.post("/api/search", body, content_type="application/json"),
        "partial": lambda: pages.get("/search/", {"q": QUERY, "mode": "library"}, HTTP_HX_REQUEST="true"),
        "page": lambda: pages.get("/search/", {"q": QUERY, "mode": "library"}),
    }
    results = {}
    for kind in args.kinds.split(","):
        request = kinds[kind]
        for _ in range(20):
            response = request()
            assert response.status_code == 200, (kind, response.status_code, response.content[:500])
        assert b"cite-" in response.content or b'"citationId"' in response.content, response.content[:2000]
        queries = []
        with connection.execute_wrapper(lambda execute, sql, params, many, context: queries.append(sql) or execute(sql, params, many, context)):
            request()
        cpu = []
        for _ in range(args.n):
            started = time.thread_time()
            request()
            cpu.append(time.thread_time() - started)
        results[kind] = {
            "cpu_ms_median": round(statistics.median(cpu) * 1000, 2),
            "cpu_ms_mean": round(statistics.fmean(cpu) * 1000, 2),
            "sql_queries": len(queries),
            "response_bytes": len(response.content),
        }
        print(kind, json.dumps(results[kind]), flush=True)
        if args.breakdown:
            results[kind]["breakdown_ms"] = breakdown(request, args.n)
            print(*(f"  {ms:7.2f}  {name}" for name, ms in results[kind]["breakdown_ms"].items()), sep="\n", flush=True)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.n):
                request()
            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("cumulative").print_stats(60)
            stats.sort_stats("tottime").print_stats(40)
            print(f"--- cProfile: {args.n} {kind} requests ---\n{out.getvalue()}", flush=True)
        if kind == "api" and args.against:
            results["against"] = against(request, args.against)
            print("CPU ms per /api/search, alternated in one process:", json.dumps(results["against"]), flush=True)
        if kind == "api":
            print("SQL:", *(sql[:300] for sql in queries), sep="\n  ")
    print(json.dumps({"chunks": args.chunks, "blocks": args.blocks, "n": args.n, "python": sys.version.split()[0],
                      "loadavg": [round(v, 2) for v in __import__("os").getloadavg()], **results}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
