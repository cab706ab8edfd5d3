"""What a benchmark result was measured on, recorded beside every result."""

import os
import platform
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent


def _git(*args) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=REPO_DIR, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine_info(*, dirty: tuple[str, ...] = ("mnote",), **extra) -> dict:
    """Cores, load, versions and the commit; ``git_dirty`` says whether the
    measured code (the ``dirty`` paths) had uncommitted changes. ``extra``
    adds the benchmark's own parameters."""
    try:
        import django

        django_version = django.get_version()
    except ImportError:
        django_version = None
    return {
        **extra,
        "nproc": os.cpu_count(),
        "nproc_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "loadavg_at_start": os.getloadavg(),
        "python": sys.version.split()[0],
        "django": django_version,
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "git_head": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--", *dirty)),
        "git_dirty_paths": list(dirty),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
