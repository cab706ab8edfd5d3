"""MNote's own text of a file, handed to LightRAG where LightRAG cannot read
the file itself.

LightRAG 1.5.7 decodes every suffix it has no extractor for as UTF-8: an
EPUB or ODT (a ZIP archive) fails, HTML and RTF go in with their tags,
scripts and control words. Some valid DOCX fail too (Strict OOXML; text only
in headers, footers, notes, text boxes or content controls). For those, the
preview's renderer reads the file, and the text of its blocks — the very text
map a citation is found in again — is written to a file MNote owns in its
data folder (``derived-text/<sha256>.txt``; never beside the user's file).
The link in LightRAG's inputs points at that file under the source's own
LightRAG name plus ``.txt``, so LightRAG's documents and references map back
to the source's row, and a cited chunk opens the original at its words.

A text is kept while a row of the library may still hand it to LightRAG
(``clean_derived_texts``): when its file is gone, changed, taken out or its
root removed, the text goes at the next sync, action or reconcile.

This module is the one place the library reaches the preview's renderers
(``preview.plain_text``), which sit below it: they need only the file.
"""

import os
import re
import tempfile
import time
from pathlib import Path

from django.conf import settings

from mnote.kinds import kind_of
from mnote.library.models import Source
from mnote.library.source_files import SourceUnavailable, open_source_file
from mnote.preview.plain_text import refusal_on_sight, rendered_block_texts

# Source.parser_hint of a file LightRAG reads as MNote's text of it.
MNOTE_TEXT = Source.MNOTE_TEXT


class NoDerivedText(Exception):
    """MNote has no text of the file to give; ``str(e)`` says why (for the
    failure's plain reason: a renderer's refusal, or no text)."""


class DerivedTextLater(Exception):
    """The reader could not take the file now (every reader slot busy): the
    file stays queued for the next scan."""


def wants_mnote_text(source: Source) -> bool:
    """Whether LightRAG should be given MNote's text of the file from the start
    (the kind is one LightRAG cannot read, measured: ``Kind.mnote_text``)."""
    return kind_of(source.file_name).mnote_text


# Previews whose render holds no text map of the file's words: a PDF's text
# comes page by page from the PDF reader, not from its render.
_NO_TEXT_MAP = frozenset({"pdf"})


def can_give_text(source: Source) -> bool:
    """Whether MNote can read the kind's text (its preview renders the words)."""
    kind = kind_of(source.file_name)
    return bool(kind.renderer) and kind.indexed and kind.name not in _NO_TEXT_MAP


def preview_refusal(source: Source) -> str:
    """Why the preview will never show this file (a DOCX declaring a DTD, a
    "zip bomb" …), seen without rendering it, or "". Such a file is not sent
    to LightRAG, which might read it: its citations would open a refusal."""
    with open_source_file(source) as handle:
        return refusal_on_sight(handle, source.file_name)


def derived_text_dir() -> Path:
    return Path(settings.DATA_DIR) / "derived-text"


def derived_text_path(sha256: str) -> Path:
    return derived_text_dir() / f"{sha256}.txt"


def write_derived_text(source: Source, real_path: Path) -> Path:
    """The file of MNote's text of this content, written when missing; raises
    ``NoDerivedText`` when the renderer refuses the file or finds no text."""
    path = derived_text_path(source.sha256)
    if source.sha256 and path.exists():
        return path
    try:
        with open_source_file(source) as handle:
            blocks = rendered_block_texts(handle, source.file_name, real_path)
    except SourceUnavailable:
        raise
    except Exception as e:  # a renderer's refusal (damaged, encrypted, too large …): its message is for users
        if getattr(e, "transient", False) or getattr(e, "reason", "") in ("busy", "start"):
            raise DerivedTextLater(str(e)) from e
        raise NoDerivedText(str(e) or type(e).__name__) from e
    text = "\n\n".join(block for block in blocks or [] if block.strip())
    if not text.strip():
        raise NoDerivedText("")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Whole or not at all: LightRAG may follow the link the moment it exists.
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".part", delete=False) as out:
        out.write(text + "\n")
    os.replace(out.name, path)
    return path


# Rows LightRAG reads, or may read again, through MNote's text of their file:
# on their way in, indexed (LightRAG's record of the scanned input links to
# the text, and a reindex of the same content takes it again), failed (a
# retry sends it again), or a duplicate of it (sent when the original goes).
_KEEP_TEXT = (
    Source.Status.QUEUED, Source.Status.INDEXING, Source.Status.RETRYING, Source.Status.INDEXED,
    Source.Status.FAILED, Source.Status.DUPLICATE,
)
# Only MNote's own files in the folder: a text, or a write that died halfway.
_TEXT_NAME = re.compile(r"[0-9a-f]{64}\.txt")
_PART_NAME = re.compile(r"tmp[0-9a-z_]{1,32}\.part")
# A ".part" younger than this may be a write still going on.
PART_PATIENCE_SECONDS = 3600


def texts_still_wanted() -> set[str]:
    """The hashes of content some row of the library may hand LightRAG as MNote's text."""
    rows = Source.objects.filter(parser_hint=MNOTE_TEXT, status__in=_KEEP_TEXT, deleted_at__isnull=True)
    return set(rows.order_by().values_list("sha256", flat=True).distinct())


def clean_derived_texts() -> int:
    """Remove MNote's texts no row of the library refers to any more (the
    file gone, changed, taken out, its root removed), and writes that died
    halfway. Only MNote's own files in its data folder; never a user's.
    Returns how many files went."""
    try:
        # Listed before the rows are read: a text written meanwhile (for a
        # row queued meanwhile) is not in the listing, so never removed.
        entries = list(os.scandir(derived_text_dir()))
    except FileNotFoundError:
        return 0
    if not entries:
        return 0
    wanted = texts_still_wanted()
    old_part = time.time() - PART_PATIENCE_SECONDS
    removed = 0
    for entry in entries:
        if _TEXT_NAME.fullmatch(entry.name):
            unwanted = entry.name.removesuffix(".txt") not in wanted
        elif _PART_NAME.fullmatch(entry.name):
            unwanted = _mtime(entry) < old_part
        else:
            continue
        if unwanted and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                continue  # another worker's clean got there first
            removed += 1
    return removed


def _mtime(entry: os.DirEntry) -> float:
    try:
        return entry.stat(follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return time.time()
