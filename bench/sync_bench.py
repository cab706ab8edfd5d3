"""Benchmark of ``mnote.library.sync.sync_root`` against baselines measured in
the same run.

    .venv/bin/python bench/sync_bench.py [--files 10000] [--repeat 3] [--profile]

Measures, on a generated root of N small text files (nested in ~100 folders):

  (a) first sync   — ``sync_root(root, batch_limit=N)`` into a fresh registry:
                     walk + stat + sha256 of every file, a Source row each, a
                     symlink in LightRAG's input dir each, one pending scan Job.
                     Measured once per fresh DB, so the DB (copied from a
                     migrated template) and the input dir are recreated for
                     every repeat.
  (b) re-sync      — ``sync_root`` again with nothing changed (stat only).
  (c) sha256sum    — ``find … -print0 | xargs -0 sha256sum`` over the same
                     files (one sha256sum process at a time, like the sync),
                     page cache warmed by one untimed run.
  (d) walk+stat    — pure Python ``os.walk`` + ``os.stat`` of every file.

plus two informational rows: ``expand_root`` alone (the sync's own walk) and a
pure Python walk + read + hashlib.sha256.

Prints a table and the ratios first sync / sha256sum, re-sync / sha256sum and
re-sync / walk+stat, and writes everything to bench/results/sync_bench.json.
Everything lives in a temporary directory that is removed at the end; nothing
touches the real data dir, DB or LightRAG (no network).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import hashlib
import io
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import machine_info  # bench/machine.py, beside this file

REPO_DIR = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_DIR / "bench" / "results"
RESULTS_FILE = RESULTS_DIR / "sync_bench.json"
ROOT_NAME = "bench-root"
FOLDERS = 100  # leaf folders: 10 top-level folders x 10 sub-folders each

WORDS = (
    "library note index source root file sync hash registry queue scan document chunk graph "
    "entity relation query answer citation member group admin folder path status stale batch "
    "limit watcher bridge ledger job retry backoff delete removed excluded duplicate indexed "
    "quarterly report meeting minutes draft review summary appendix figure table section chapter "
    "the a of and to in is for on with as by at from that this be it or an are was were"
).split()


# --- environment --------------------------------------------------------------


def prepare_environment(data_dir: Path, base_dir: Path) -> None:
    """Point the app at the temporary dirs, before Django reads its settings."""
    # Nothing from the caller's environment may redirect the DB or LightRAG.
    for name in list(os.environ):
        if name == "DATABASE_URL" or name.startswith("MNOTE_") or name in (
            "INPUT_DIR",
            "WORKING_DIR",
            "LIGHTRAG_API_KEY",
        ):
            del os.environ[name]
    os.environ["DJANGO_SETTINGS_MODULE"] = "mnote.settings"
    os.environ["MNOTE_DATA_DIR"] = str(data_dir)
    os.environ["MNOTE_LIBRARY_BASE_DIR"] = str(base_dir)
    os.environ["MNOTE_DEBUG"] = "0"  # DEBUG would keep every query in memory
    os.environ["MNOTE_LOG_LEVEL"] = "WARNING"
    os.environ["MNOTE_SECRET_KEY"] = "bench-only-not-secret"
    if str(REPO_DIR) not in sys.path:
        sys.path.insert(0, str(REPO_DIR))


# --- the generated root ---------------------------------------------------------


def leaf_folders(root: Path) -> list[Path]:
    return [root / f"area-{a:02d}" / f"topic-{t:02d}" for a in range(FOLDERS // 10) for t in range(10)]


def generate_root(root: Path, n: int, seed: int = 1234) -> int:
    """N files of 200–2,000 bytes of varied text, .md / .txt, spread over the
    leaf folders. Returns the total bytes written."""
    rng = random.Random(seed)
    folders = leaf_folders(root)
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(n):
        target = rng.randint(200, 2000)
        ext = ".md" if i % 2 == 0 else ".txt"
        lines = [f"# Note {i}" if ext == ".md" else f"Note {i}"]
        size = len(lines[0]) + 1
        while size < target:
            line = " ".join(rng.choices(WORDS, k=rng.randint(4, 16))).capitalize() + f". ({rng.random():.6f})"
            lines.append(line)
            size += len(line) + 1
        data = ("\n".join(lines) + "\n").encode()[:target]
        (folders[i % len(folders)] / f"note-{i:06d}{ext}").write_bytes(data)
        total += len(data)
    return total


# --- baselines -----------------------------------------------------------------


def sha256sum_cmd(root: Path) -> str:
    return f"find '{root}' -type f \\( -name '*.md' -o -name '*.txt' \\) -print0 | xargs -0 sha256sum > /dev/null"


def run_sha256sum(root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(sha256sum_cmd(root), shell=True, check=True)
    return time.perf_counter() - start


def walk_stat(root: Path) -> int:
    count = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            os.stat(os.path.join(dirpath, name))
            count += 1
    return count


def walk_read_sha256(root: Path) -> int:
    count = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                hashlib.sha256(f.read()).hexdigest()
            count += 1
    return count


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def stats(times: list[float]) -> dict:
    return {"best_s": min(times), "median_s": statistics.median(times), "runs_s": times}


# --- the bench -----------------------------------------------------------------


class Registry:
    """A fresh migrated SQLite DB and an empty LightRAG input dir, on demand."""

    def __init__(self, data_dir: Path, input_dir: Path):
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connections

        self.connections = connections
        self.db = Path(settings.DATABASES["default"]["NAME"])
        assert self.db.is_relative_to(data_dir), self.db
        self.template = data_dir / "template.sqlite3"
        self.input_dir = input_dir
        settings.MNOTE_LIGHTRAG = dataclasses.replace(settings.MNOTE_LIGHTRAG, input_dir=input_dir)
        start = time.perf_counter()
        call_command("migrate", verbosity=0, interactive=False)
        self.migrate_s = time.perf_counter() - start
        connections.close_all()
        shutil.copyfile(self.db, self.template)

    def fresh(self):
        from mnote.library.models import IndexedRoot

        self.connections.close_all()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.db}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.template, self.db)
        shutil.rmtree(self.input_dir, ignore_errors=True)
        return IndexedRoot.objects.create(name="Bench", path=ROOT_NAME)


def check(summary, n: int, *, first: bool) -> None:
    expected = (n, 0, 0, n) if first else (0, 0, n, 0)
    got = (summary.new, summary.changed, summary.unchanged, summary.queued)
    if got != expected or summary.error or summary.missing or summary.capped:
        raise SystemExit(f"unexpected sync summary (new, changed, unchanged, queued) {got} != {expected}: {summary}")


def profile(fn) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    out = io.StringIO()
    ps = pstats.Stats(profiler, stream=out)
    ps.sort_stats("cumulative").print_stats(30)
    ps.sort_stats("cumulative").print_stats(r"mnote/|posix\.|builtins\.open|sha256")
    ps.sort_stats("tottime").print_stats(20)
    return out.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000, help="number of files in the root (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (default 3)")
    parser.add_argument("--profile", action="store_true", help="also cProfile one first sync and one re-sync")
    parser.add_argument("--no-json", action="store_true", help="do not write bench/results/sync_bench.json")
    args = parser.parse_args(argv)
    n, repeat = args.files, max(args.repeat, 1)

    tmp = Path(tempfile.mkdtemp(prefix="mnote-sync-bench-"))
    try:
        data_dir, base_dir = tmp / "data", tmp / "library"
        data_dir.mkdir()
        base_dir.mkdir()
        prepare_environment(data_dir, base_dir)
        import django

        django.setup()
        from mnote.library.expansion import expand_root
        from mnote.library.sync import sync_root

        root_dir = base_dir / ROOT_NAME
        print(f"generating {n} files in {FOLDERS} folders under {root_dir} …", flush=True)
        total_bytes = generate_root(root_dir, n)
        registry = Registry(data_dir, tmp / "lightrag-inputs")

        # Warm the page cache (and the dentry cache) before anything is timed.
        run_sha256sum(root_dir)
        walk_stat(root_dir)

        rows: dict[str, dict] = {}

        # (c) sha256sum, (d) walk+stat and the informational baselines.
        rows["sha256sum"] = stats([run_sha256sum(root_dir) for _ in range(repeat)])
        times = []
        for _ in range(repeat):
            t, count = timed(walk_stat, root_dir)
            assert count == n, count
            times.append(t)
        rows["walk_stat"] = stats(times)
        times = []
        for _ in range(repeat):
            t, _ = timed(walk_read_sha256, root_dir)
            times.append(t)
        rows["python_walk_read_sha256"] = stats(times)
        times = []
        for _ in range(repeat):
            t, (found, _refused) = timed(lambda: expand_root(base_dir, ROOT_NAME, recursive=True, exclude_patterns=[]))
            assert len(found) == n, len(found)
            times.append(t)
        rows["expand_root"] = stats(times)

        # (a) first sync: a fresh registry for every run.
        times = []
        for _ in range(repeat):
            root = registry.fresh()
            t, summary = timed(lambda: sync_root(root, batch_limit=n))
            check(summary, n, first=True)
            times.append(t)
        rows["first_sync"] = stats(times)
        links = sum(1 for _ in registry.input_dir.iterdir())
        assert links == n, f"{links} links in the input dir, expected {n}"

        # (b) re-sync of the last registry, nothing changed.
        times = []
        for _ in range(repeat):
            t, summary = timed(lambda: sync_root(root, batch_limit=n))
            check(summary, n, first=False)
            times.append(t)
        rows["resync"] = stats(times)

        profiles = {}
        if args.profile:
            root = registry.fresh()
            profiles["first_sync"] = profile(lambda: sync_root(root, batch_limit=n))
            profiles["resync"] = profile(lambda: sync_root(root, batch_limit=n))
        registry.connections.close_all()

        def ratio(a, b, key="median_s"):
            return rows[a][key] / rows[b][key]

        ratios = {
            "first_sync / sha256sum": ratio("first_sync", "sha256sum"),
            "resync / sha256sum": ratio("resync", "sha256sum"),
            "resync / walk_stat": ratio("resync", "walk_stat"),
        }
        ratios_best = {
            "first_sync / sha256sum": ratio("first_sync", "sha256sum", "best_s"),
            "resync / sha256sum": ratio("resync", "sha256sum", "best_s"),
            "resync / walk_stat": ratio("resync", "walk_stat", "best_s"),
        }

        info = machine_info(dirty=("mnote/library",), files=n, total_bytes=total_bytes, folders=FOLDERS, repeat=repeat)
        labels = {
            "first_sync": "(a) first sync (batch_limit=N)",
            "resync": "(b) re-sync, nothing changed",
            "sha256sum": "(c) find | xargs sha256sum",
            "walk_stat": "(d) python os.walk + os.stat",
            "expand_root": "    expand_root only (sync's walk)",
            "python_walk_read_sha256": "    python walk + read + sha256",
        }
        print()
        print(
            f"N={n} files, {total_bytes / 1e6:.1f} MB, {FOLDERS} folders; repeat={repeat}; "
            f"nproc={info['nproc']}; python {info['python']}; sqlite {info['sqlite']}"
        )
        print(f"{'measurement':<36} {'best s':>9} {'median s':>9} {'µs/file':>9}")
        for key, label in labels.items():
            r = rows[key]
            print(f"{label:<36} {r['best_s']:>9.3f} {r['median_s']:>9.3f} {r['median_s'] / n * 1e6:>9.1f}")
        print()
        print("ratios (median; best in parentheses):")
        for key, value in ratios.items():
            print(f"  {key:<24} {value:>7.2f}x   ({ratios_best[key]:.2f}x)")
        for label, text in profiles.items():
            print(f"\n--- cProfile: {label} ---\n{text}")

        if not args.no_json:
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            result = {
                "benchmark": "sync_bench",
                "command": " ".join([".venv/bin/python", "bench/sync_bench.py", *(argv if argv is not None else sys.argv[1:])]),
                "machine": info,
                "baseline_commands": {"sha256sum": sha256sum_cmd(Path("<root>"))},
                "migrate_s": registry.migrate_s,
                "results": rows,
                "ratios_median": ratios,
                "ratios_best": ratios_best,
            }
            RESULTS_FILE.write_text(json.dumps(result, indent=2) + "\n")
            print(f"\nwrote {RESULTS_FILE.relative_to(REPO_DIR)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
