"""Files only MNote's own user may read: secrets, the SQLite database and
the data folder that holds them (registry rows name every file of every
root, restricted ones included)."""

import os
import threading
from pathlib import Path


def write_private_file(path: Path, content: str | bytes) -> None:
    """Write a file readable by its owner only, from the first byte on (a
    chmod after writing leaves a moment where anyone may read it), whole or
    not at all: a temporary file of this process and thread, then renamed, so
    two writers of one cache file never mix their bytes."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)
    os.replace(tmp, path)


def make_private_dir(path: Path) -> None:
    """Create the folder owner-only; an existing one loses its access for others."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777
    if mode & 0o007:
        path.chmod(mode & 0o770)


def make_private_file(path: Path) -> None:
    """Create an empty file owner-only before anyone else writes it (SQLite
    then creates its journal files with the same mode); an existing one that
    others may read is made owner-only."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
