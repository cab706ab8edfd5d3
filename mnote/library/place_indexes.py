"""The worker writes each indexed file's place index (``preview.place_index``)
once per content, so a search can say where the cited words are — page,
slide, cell range, passage — without rendering anything in the request.

A few files per worker round (and while the worker is otherwise idle, so
the last files of a big sync get theirs too), newest indexed first; each one is a render
in the preview's limited child (or one read of a PDF's text layer), the
cost a first preview of the file would have. A refusal (damaged, too large,
no text) is written too, so the file is not read again; a busy reader is
tried again in a later round.
"""

import logging
import threading
import time

from django.db.models import Count, Max

from mnote.kinds import kind_of
from mnote.library.models import Source
from mnote.library.source_files import SourceUnavailable, open_source_file, source_real_path
from mnote.preview.place_index import build_place_index, has_places, index_written, place_index_path, write_place_index, write_refusal

log = logging.getLogger(__name__)

# Per round: the worker's other work (jobs, the status bridge) must not wait long.
ROUND_SECONDS = 10.0
ROUND_FILES = 20
# Contents this process has seen written (or refused): not looked for on disk again.
_DONE: set[str] = set()
_DONE_LOCK = threading.Lock()
# (data folder, indexed rows, last indexed at) when a round last found nothing left to write.
_CAUGHT_UP: tuple | None = None


def _transient(error: Exception) -> bool:
    return bool(getattr(error, "transient", False)) or getattr(error, "reason", "") in ("busy", "start") or type(error).__name__ == "PdfBusy"


def write_place_index_of(source: Source) -> bool:
    """Write the place index of this source's content unless it is there;
    False when the reader was busy (try again later)."""
    sha = source.sha256
    if index_written(sha):
        return True
    try:
        with open_source_file(source) as handle:
            index = build_place_index(kind_of(source.file_name), handle, source_real_path(source))
    except SourceUnavailable:
        return False  # the file is away for now: its next sync says so
    except Exception as e:  # a renderer's refusal (damaged, encrypted, too large …)
        if _transient(e):
            return False
        write_refusal(sha, str(e) or type(e).__name__)
        return True
    write_place_index(sha, index)
    return True


def write_place_indexes(*, max_files: int = ROUND_FILES, max_seconds: float = ROUND_SECONDS) -> int:
    """One round: the place indexes missing for indexed files, newest first;
    how many were written."""
    global _CAUGHT_UP
    deadline = time.monotonic() + max_seconds
    written = 0
    indexed = Source.objects.filter(status=Source.Status.INDEXED, stale=False, deleted_at=None).exclude(sha256="")
    # Nothing indexed since a round found every index written: one small query, not a pass over the library.
    state = (str(place_index_path("")), *indexed.aggregate(n=Count("pk"), last=Max("indexed_at")).values())
    if state == _CAUGHT_UP:
        return 0
    caught_up = True
    rows = indexed.order_by("-indexed_at").values_list("pk", "sha256", "relative_path")
    for pk, sha, relative_path in rows.iterator(chunk_size=500):
        done_key = str(place_index_path(sha))  # the data folder's, not only the content's
        with _DONE_LOCK:
            if done_key in _DONE:
                continue
        if not has_places(kind_of(relative_path)) or index_written(sha):
            with _DONE_LOCK:
                _DONE.add(done_key)
            continue
        if written >= max_files or time.monotonic() >= deadline:
            caught_up = False
            break
        source = Source.objects.select_related("root").filter(pk=pk).first()
        if source is None:
            continue
        try:
            done = write_place_index_of(source)
        except OSError as e:  # the data folder: said, and tried again next round
            log.warning("cannot write the place index of %s: %s", relative_path, e)
            done = False
        if done:
            written += 1
            with _DONE_LOCK:
                _DONE.add(done_key)
        else:
            caught_up = False
    if caught_up:
        _CAUGHT_UP = state
    return written
