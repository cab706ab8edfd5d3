"""Does one large document hold the small files queued with it? Small files
alone, against the same small files queued right after a large document,
with the worker's size ordering (``MNOTE_SCAN_ALONE_KB``) on and off, each on
a fresh embedded stack in the same run.

    .venv/bin/python bench/large_first_bench.py [--small 20] [--large-chunks 60] [--ports 8604]

The small files are distinct notes of about one chunk each; the large one a
Markdown file of about ``--large-chunks`` chunks (CHUNK_SIZE 400 tokens).
Each scenario: sync one root (the large file queued first, by an earlier
queue time), then the worker's own loop (``work_once``) until every small
file is indexed: the seconds until the last one is (and the median). The
target: small files behind the large one searchable within 1.5x the time
they take alone. ``large_in_pipeline``: the small files are written and
synced only once LightRAG has taken the large document (it is being
processed), the case the size ordering cannot help. Writes bench/results/large_first_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from stack_harness import REPO_DIR, clean_environ, start_stack  # bench/stack_harness.py, beside this file

RESULTS_FILE = REPO_DIR / "bench" / "results" / "large_first_bench.json"
WORDS = ("mirror telescope dome shutter night observer calibration filter exposure guide star focus "
         "aluminium coating humidity wind seeing cloud archive frame dark flat bias pointing model").split()


def small_note(i: int) -> str:
    # About 300 words: one chunk, distinct from every other note.
    return f"# Night note {i}\n\n" + " ".join(WORDS[(i * 7 + k) % len(WORDS)] + (str(k) if k % 9 == 0 else "") for k in range(300))


def large_document(chunks: int) -> str:
    # About 400 tokens (one chunk) a section: ``chunks`` sections.
    sections = []
    for s in range(chunks):
        sections.append(f"## Section {s}\n\n" + " ".join(f"{WORDS[(s + k) % len(WORDS)]}{s}x{k % 13}" for k in range(100)))
    return "# The large manual\n\n" + "\n\n".join(sections)


def insert_texts(config, texts: dict[str, str]) -> None:
    """LightRAG's own way in while its pipeline is busy (a scan is refused
    then): ``POST /documents/text``, each note under its own source name."""
    import httpx

    headers = {"X-API-Key": config.resolved_api_key()}
    with httpx.Client(base_url=config.lightrag_url, headers=headers, timeout=60) as http:
        for name, text in texts.items():
            http.post("/documents/text", json={"text": text, "file_source": name}).raise_for_status()


def scenario(tmp: Path, name: str, small: int, large_chunks: int, alone_kb: int | None, ports, *,
             in_pipeline: bool = False, via_text: bool = False, parallel_insert: int = 1, max_seconds: float = 3600) -> dict:
    from django.conf import settings
    from django.core.management import call_command
    from django.utils import timezone as dj_timezone

    from mnote.library.worker import work_once
    from mnote.library.models import IndexedRoot, Source
    from mnote.library.sync import sync_root
    from mnote.lightrag import LightRAGError, load_config
    from mnote.lightrag.provider import lightrag_client

    data_dir = tmp / name
    folder = data_dir / "library" / "notes"
    folder.mkdir(parents=True)
    if large_chunks:
        (folder / "large-manual.md").write_text(large_document(large_chunks))

    def write_smalls():
        for i in range(small):
            (folder / f"note-{i:03d}.md").write_text(small_note(i))

    if not in_pipeline:
        write_smalls()
    lightrag_port, model_port = ports or (None, None)
    stack = start_stack(data_dir, lightrag_port=lightrag_port, model_port=model_port,
                        embedding_overrides={"parallel_insert": parallel_insert})
    try:
        config = stack.config
        settings.MNOTE_LIBRARY_BASE_DIR = data_dir / "library"
        settings.MNOTE_LIGHTRAG = load_config({"MNOTE_LIGHTRAG_ENV_FILE": str(config.env_file)}, default_url=config.lightrag_url,
                                              default_input_dir=config.input_dir, default_working_dir=config.working_dir)
        settings.MNOTE_SCAN_ALONE_KB = alone_kb if alone_kb is not None else 10**9  # off: every file "small"
        call_command("flush", interactive=False, verbosity=0)
        root = IndexedRoot.objects.create(name="Notes", path="notes")
        large_row = root.sources.filter(relative_path="large-manual.md")
        large_taken_seconds = None
        if in_pipeline:
            # The large document alone, until LightRAG has taken it (its scan
            # started and LightRAG lists it as being worked on); the small
            # files arrive only then.
            sync_root(root, batch_limit=100_000)
            t_large = time.monotonic()
            with lightrag_client() as client:
                while time.monotonic() - t_large < max_seconds:
                    work_once(client)
                    taken = [d for d in client.iter_documents() if d.status in ("processing", "processed")]
                    if taken:
                        break
                    time.sleep(0.5)
            large_taken_seconds = round(time.monotonic() - t_large, 1)
            if not via_text:
                write_smalls()
        t0 = time.monotonic()
        if via_text:
            return _via_text(name, config, small, large_chunks, t0, large_taken_seconds, parallel_insert, max_seconds)
        sync_root(root, batch_limit=100_000)
        if not in_pipeline:
            # The large file was queued first (the oldest in the queue).
            large_row.update(updated_at=dj_timezone.now() - timedelta(minutes=1))
        done_at: dict[str, float] = {}
        large_done_seconds = None
        smalls = root.sources.exclude(relative_path="large-manual.md")
        with lightrag_client() as client:
            while len(done_at) < small and time.monotonic() - t0 < max_seconds:
                try:
                    work_once(client)
                except LightRAGError as e:
                    print(f"  LightRAG: {e}", flush=True)
                for path in smalls.filter(status=Source.Status.INDEXED).values_list("relative_path", flat=True):
                    done_at.setdefault(path, time.monotonic() - t0)
                if large_done_seconds is None and large_row.filter(status=Source.Status.INDEXED).exists():
                    large_done_seconds = round(time.monotonic() - t0, 1)
                time.sleep(0.5)
        large = root.sources.filter(relative_path="large-manual.md").values_list("status", "chunk_count").first()
        times = sorted(done_at.values())
        return {"scenario": name, "small_files": small, "large_chunks_asked": large_chunks,
                "scan_alone_kb": alone_kb, "small_indexed": len(times),
                "last_small_seconds": round(times[-1], 1) if times else None,
                "median_small_seconds": round(statistics.median(times), 1) if times else None,
                "large_state_when_smalls_done": large,
                "large_taken_after_seconds": large_taken_seconds, "large_indexed_seconds": large_done_seconds,
                "embedding_seconds_per_chunk": stack.config.embedding_limits.env().get("MNOTE_EMBEDDING_SECONDS_PER_CHUNK")
                if stack.config.embedding_limits else None}
    finally:
        stack.stop()


def _via_text(name, config, small, large_chunks, t0, large_taken_seconds, parallel_insert, max_seconds) -> dict:
    """The small notes sent as texts (not files MNote links and LightRAG
    scans), timed until LightRAG lists each processed."""
    from mnote.lightrag.provider import lightrag_client

    notes = {f"note-{i:03d}.md": small_note(i) for i in range(small)}
    stack_config = config
    insert_texts(config, notes)
    done_at: dict[str, float] = {}
    large_done_seconds = None
    with lightrag_client() as client:
        while len(done_at) < small and time.monotonic() - t0 < max_seconds:
            for document in client.iter_documents():
                if document.status != "processed":
                    continue
                if document.file_path in notes:
                    done_at.setdefault(document.file_path, time.monotonic() - t0)
                elif large_done_seconds is None:
                    large_done_seconds = round(time.monotonic() - t0, 1)
            time.sleep(1)
    times = sorted(done_at.values())
    return {"scenario": name, "small_files": small, "large_chunks_asked": large_chunks, "via": "POST /documents/text",
            "max_parallel_insert": parallel_insert, "small_indexed": len(times),
            "last_small_seconds": round(times[-1], 1) if times else None,
            "median_small_seconds": round(statistics.median(times), 1) if times else None,
            "large_taken_after_seconds": large_taken_seconds, "large_indexed_seconds": large_done_seconds,
            "embedding_seconds_per_chunk": stack_config.embedding_limits.env().get("MNOTE_EMBEDDING_SECONDS_PER_CHUNK")
            if stack_config.embedding_limits else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=20)
    ap.add_argument("--large-chunks", type=int, default=60)
    ap.add_argument("--ports", type=int, help="first of two loopback ports to use (default: free ones)")
    ap.add_argument("--scenarios", default="alone,large_first_ordered,large_first_unordered",
                    help="comma-separated, 'alone' first: alone, large_first_ordered, large_first_unordered, "
                         "large_in_pipeline (the small files arrive once LightRAG has taken the large one); "
                         "texts_alone, texts_in_pipeline: the same, the small notes sent by POST /documents/text")
    ap.add_argument("--max-minutes", type=float, default=60, help="a scenario's cap (the small files not done by then: not counted)")
    ap.add_argument("--parallel-insert", type=int, default=1, help="LightRAG's MAX_PARALLEL_INSERT (the stack's: 1)")
    args = ap.parse_args(argv)
    clean_environ()
    tmp = Path(tempfile.mkdtemp(prefix="mnote-large-first-"))
    (tmp / "app").mkdir()
    os.environ.update({"DJANGO_SETTINGS_MODULE": "mnote.settings", "MNOTE_DATA_DIR": str(tmp / "app"),
                       "MNOTE_LIBRARY_BASE_DIR": str(tmp), "MNOTE_SECRET_KEY": "bench-only-not-secret",
                       "MNOTE_LOG_LEVEL": "WARNING"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    ports = (args.ports, args.ports + 1) if args.ports else None
    runs = []
    try:
        # The threshold scaled with the document (about 1 KB of this Markdown a
        # chunk; 600 chunks of real prose are past the default 256 KB).
        alone_kb = max(1, args.large_chunks // 2)
        known = {"alone": (0, alone_kb), "large_first_ordered": (args.large_chunks, alone_kb),
                 "large_first_unordered": (args.large_chunks, None), "large_in_pipeline": (args.large_chunks, alone_kb),
                 "texts_alone": (0, alone_kb), "texts_in_pipeline": (args.large_chunks, alone_kb)}
        for name in args.scenarios.split(","):
            large, threshold = known[name]
            result = scenario(tmp, name, args.small, large, threshold, ports, in_pipeline=name.endswith("in_pipeline"),
                              via_text=name.startswith("texts_"), parallel_insert=args.parallel_insert,
                              max_seconds=args.max_minutes * 60)
            print(result, flush=True)
            runs.append(result)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    alone = runs[0]["last_small_seconds"]
    summary = {run["scenario"]: round(run["last_small_seconds"] / alone, 2) if alone and run["last_small_seconds"] else None
               for run in runs}
    print("last small file indexed, against alone (target <= 1.5 behind a large one):", summary)
    RESULTS_FILE.write_text(json.dumps({"when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "runs": runs,
                                        "ratio_to_alone": summary}, indent=2) + "\n")
    print(f"written {RESULTS_FILE.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
