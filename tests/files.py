"""Files on disk as a test's library holds them."""

from pathlib import Path


def write_files(folder: Path, files: dict[str, str | bytes]) -> Path:
    """Each relative path's content (text or bytes) written under ``folder``,
    its folders made as needed; returns ``folder``."""
    for relative, content in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder
