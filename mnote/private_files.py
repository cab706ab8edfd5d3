import os
from pathlib import Path


def write_private_file(path: Path, text: str) -> None:
    """Write a secret readable by its owner only, from the first byte on
    (a chmod after writing leaves a moment where anyone may read it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
