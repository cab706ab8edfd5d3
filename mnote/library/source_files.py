"""The one way to open a user's file: every reader of a source's bytes (the
preview's renderers, the original download, the render cache's hash, the
workspace index) goes through ``open_source_file`` or ``source_real_path``.

A registry row says where a file *was* at the last sync. Between that sync and
an open the file may have been deleted, or replaced by a symlink to another
root's file or to ``/etc/passwd``; so the row's state is checked again, the
path is resolved again and must be inside its root's real path, the last
component is opened without following a symlink, and the kernel's own name
for the opened file is checked once more (a folder swapped for a symlink after
the check cannot redirect the open). Anything else is ``SourceUnavailable``.
"""

import os
import stat as stat_module
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.utils.translation import gettext as _

from mnote.library.models import Source

# Rows whose file is no longer part of the library, whatever is on disk now.
_OUT_OF_LIBRARY = (Source.Status.REMOVED, Source.Status.DELETE_SUBMITTED, Source.Status.EXCLUDED)
_PROC_FD = Path("/proc/self/fd")


class SourceUnavailable(Exception):
    """The file cannot be opened as this source; the message is for users.
    ``gone``: the row left the library (410) rather than the file being
    unreadable now (404)."""

    def __init__(self, message: str, *, gone: bool):
        super().__init__(message)
        self.message = message
        self.gone = gone

    @property
    def status(self) -> int:
        return 410 if self.gone else 404


def _gone() -> SourceUnavailable:
    return SourceUnavailable(_("This file is no longer in the library (it was moved, renamed or deleted)."), gone=True)


def _root_real_path(source: Source, roots: dict | None = None) -> str:
    # Strings, not Path objects: the workspace index opens every new file of a sync through here.
    if roots is not None and source.root_id in roots:
        return roots[source.root_id]
    base = os.path.realpath(settings.MNOTE_LIBRARY_BASE_DIR)
    root = os.path.realpath(os.path.join(base, source.root.path))
    if not _inside(root, base):
        raise _gone()
    if roots is not None:
        roots[source.root_id] = root
    return root


def _inside(path: str, root: str) -> bool:
    # A root may be a single file: then the file must be the root itself.
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def source_real_path(source: Source, *, roots: dict | None = None) -> Path:
    """The source's file as it is now: its real path, checked to be a regular
    file inside its root's real path, of a row still in the library. For a
    path handed to another program; to read the bytes use ``open_source_file``.
    ``roots``: a dict the caller keeps while it checks a batch of files, so
    each root's real path is worked out once for the batch, not per file."""
    if source.deleted_at is not None or source.status in _OUT_OF_LIBRARY:
        raise _gone()
    root = _root_real_path(source, roots)
    real = os.path.realpath(source.absolute_path)
    if not _inside(real, root):
        # A symlink now leads out of the root: never another file in its place.
        raise _gone()
    try:
        info = os.stat(real)
    except OSError as e:
        raise SourceUnavailable(_("This file is missing: it was moved, renamed or deleted."), gone=False) from e
    if not stat_module.S_ISREG(info.st_mode):
        raise _gone()
    return Path(real)


def open_source_file(source: Source) -> BinaryIO:
    """The source's file, opened for reading (the caller closes it), after
    the checks of ``source_real_path`` and with the race between them and
    the open closed."""
    real = source_real_path(source)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        # ELOOP: the last component became a symlink after the check.
        raise SourceUnavailable(_("This file cannot be read now; try again."), gone=False) from e
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode) or not _inside(_opened_path(fd, real), _root_real_path(source)):
            raise _gone()
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _opened_path(fd: int, expected: Path) -> str:
    """What the kernel says the open file is; where /proc is missing, the
    expected path when it is still the very same inode."""
    try:
        return os.readlink(f"{_PROC_FD}/{fd}")
    except OSError:
        opened, now = os.fstat(fd), os.stat(expected, follow_symlinks=False)
        return str(expected) if (opened.st_dev, opened.st_ino) == (now.st_dev, now.st_ino) else "/"
