"""How much text a file would hand LightRAG, estimated without reading it,
so a file that would flood LightRAG (tens of thousands of chunks, hours of
ingest) is held back at sync until an admin allows it.

The estimate is an upper bound that costs no more than a ZIP directory: the
uncompressed size of an Office or EPUB package's XML/HTML parts (markup
included), the size of any other text file. PDFs are not estimated: their
text cannot be measured without parsing them.
"""

import os
import zipfile
from pathlib import Path

from django.conf import settings

PACKAGES = frozenset({".docx", ".pptx", ".xlsx", ".odt", ".epub"})
NOT_ESTIMATED = frozenset({".pdf"})
_TEXT_PARTS = (".xml", ".html", ".xhtml", ".htm")
# Stored in Source.excluded_by; the dashboard shows it after "Excluded by".
HELD_BACK = "the text-size limit"


def estimated_text_bytes(path: Path | str, size: int | None = None) -> int | None:
    """An upper bound of the file's text in bytes, or None when unknown.
    ``size``: the file's size when the caller has just stat'ed it."""
    suffix = _suffix(os.fspath(path))
    if suffix in NOT_ESTIMATED:
        return None
    if suffix not in PACKAGES:
        return os.stat(path).st_size if size is None else size
    return package_text_bytes(path)


def package_text_bytes(package_file) -> int | None:
    """The uncompressed size of a package's XML/HTML parts (a path or an open
    file), or None when it is not a readable package."""
    try:
        with zipfile.ZipFile(package_file) as package:
            return sum(i.filename.lower().endswith(_TEXT_PARTS) and i.file_size for i in package.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return None  # LightRAG will say what is wrong with it


def _suffix(path: str) -> str:
    """``os.path.splitext(path)[1].lower()`` at a fraction of its cost: a
    sync asks for every new file (a name's leading dots start no suffix)."""
    name = path.rpartition(os.sep)[2]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 and name[:dot].strip(".") else ""


def held_back_reason(path: Path | str, size: int | None = None, *, limit_mb: int | None = None) -> str:
    """Why this file is held back from LightRAG, or "" when it may go.
    ``limit_mb``: ``MNOTE_MAX_TEXT_MB`` when the caller (a sync asking for
    every file) has read it already."""
    limit_mb = settings.MNOTE_MAX_TEXT_MB if limit_mb is None else limit_mb
    limit = limit_mb * 1024 * 1024
    if not limit:
        return ""
    try:
        size = estimated_text_bytes(path, size)
    except OSError:
        return ""
    if size is None or size <= limit:
        return ""
    return (
        f"{HELD_BACK} (about {size / 2**20:,.0f} MB of text, more than MNOTE_MAX_TEXT_MB={limit_mb}); "
        "reindex it to send it to LightRAG anyway"
    )


def is_held_back(excluded_by: str) -> bool:
    return excluded_by.startswith(HELD_BACK)
