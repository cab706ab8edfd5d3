"""Files added from the browser into a root an admin opened for uploads.

The rules are the sync's: only kinds the library takes in (``mnote.kinds``
through the walk's own check), the root's include and exclude patterns, the
text-size limit. The file is written into the root's real folder without
ever following a symlink: every folder is opened relative to the one above
it with ``O_NOFOLLOW``, the file is created with ``O_CREAT | O_EXCL`` (never
over an existing file: a name taken gets " (2)", " (3)"…), and its real path
is checked to be inside the root's. Then the root is synced, which queues
the file for LightRAG like any file an admin put there.

    stored = store_upload(root, "reports/q3.pdf", uploaded_file)
    stored.relative_path, stored.source.status
"""

import os
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.conf import settings
from django.utils.translation import gettext as _

from mnote.library.expansion import SKIPPED_DIRS, supported_name, included, matches_exclude, Candidate
from mnote.library.models import IndexedRoot, Source
from mnote.library.sync import sync_root
from mnote.library.text_size import held_back_reason

# Folders below the root an upload may create, and the names tried on a clash.
MAX_DEPTH = 12
MAX_NAME_BYTES = 255
MAX_CLASH_SUFFIX = 99
_CHUNK = 1024 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_EXCL: never an existing file (nor a symlink in its place).
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UploadRefused(Exception):
    """The upload breaks a rule; the message says which, for the uploader."""


@dataclass
class Stored:
    relative_path: str  # inside the root, as saved (maybe with " (2)")
    renamed: bool
    source: Source | None


def max_upload_bytes() -> int:
    return settings.MNOTE_UPLOAD_MAX_MB * 1024 * 1024


def may_upload(user, root: IndexedRoot) -> bool:
    """Into an enabled folder root opened for uploads, by anyone who may see it."""
    return (
        root.uploads_open
        and root.enabled
        and IndexedRoot.objects.visible_to(user).filter(pk=root.pk).exists()
    )


def upload_path(name: str) -> list[str]:
    """The parts of a path inside the root as the browser sent it (a file's
    name, or its path in a dropped folder), or UploadRefused."""
    text = (name or "").replace("\\", "/").strip("/")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if not parts:
        raise UploadRefused(_("The file has no name."))
    if len(parts) > MAX_DEPTH + 1:
        raise UploadRefused(_("“%(path)s” is nested too deep.") % {"path": text})
    for part in parts:
        if part == ".." or part.startswith(".") or part in SKIPPED_DIRS:
            raise UploadRefused(_("“%(path)s”: hidden folders and “..” are not taken.") % {"path": text})
        if any(ord(c) < 32 or c == "\x7f" for c in part) or len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise UploadRefused(_("“%(path)s” has a name the library cannot store.") % {"path": text})
    return parts


def refusal(root: IndexedRoot, relative: str, size: int | None) -> str:
    """Why this file may not go into this root ("" when it may), before a
    byte is written: its kind, its size, the root's patterns."""
    name = PurePosixPath(relative).name
    if not supported_name(name):
        return _("“%(name)s”: the library does not take this kind of file.") % {"name": name}
    if size is not None and size > max_upload_bytes():
        return _("“%(name)s” is larger than %(mb)d MB, the most one upload may be.") % {
            "name": name,
            "mb": settings.MNOTE_UPLOAD_MAX_MB,
        }
    pattern = matches_exclude(relative, root.exclude_patterns or [])
    if pattern:
        return _("“%(name)s”: this root leaves out files matching %(pattern)s.") % {
            "name": relative,
            "pattern": pattern,
        }
    if not included([Candidate(relative, "")], root.include_patterns or []):
        return _("“%(name)s”: this root takes only files matching %(patterns)s.") % {
            "name": relative,
            "patterns": ", ".join(root.include_patterns),
        }
    return ""


def _root_folder_fd(root: IndexedRoot) -> tuple[int, str]:
    base = os.path.realpath(settings.MNOTE_LIBRARY_BASE_DIR)
    real = os.path.realpath(os.path.join(base, root.path))
    if not (real == base or real.startswith(base + os.sep)):
        raise UploadRefused(_("This root’s folder is not inside the library base directory."))
    try:
        return os.open(real, _DIR_FLAGS), real
    except OSError as e:
        raise UploadRefused(_("This root’s folder cannot be written to: %(error)s") % {"error": e.strerror}) from e


def _open_folders(fd: int, folders: list[str]) -> int:
    """The innermost folder, made where missing, each opened relative to its
    parent without following a symlink (a symlinked folder is refused)."""
    for folder in folders:
        try:
            os.mkdir(folder, 0o755, dir_fd=fd)
        except FileExistsError:
            pass
        try:
            inner = os.open(folder, _DIR_FLAGS, dir_fd=fd)
        except OSError as e:
            os.close(fd)
            raise UploadRefused(
                _("“%(folder)s” is not a folder the library can write into.") % {"folder": folder}
            ) from e
        os.close(fd)
        fd = inner
    return fd


def _candidates(name: str):
    yield name, False
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        stem, suffix = name, ""
    for n in range(2, MAX_CLASH_SUFFIX + 1):
        yield (f"{stem} ({n}).{suffix}" if suffix else f"{stem} ({n})"), True


def _create(fd: int, name: str) -> tuple[int, str, bool]:
    """A new file in the folder, never an existing one."""
    for candidate, renamed in _candidates(name):
        try:
            return os.open(candidate, _NEW_FILE_FLAGS, 0o644, dir_fd=fd), candidate, renamed
        except FileExistsError:
            continue
    raise UploadRefused(
        _("“%(name)s” and %(n)d numbered copies exist already.") % {"name": name, "n": MAX_CLASH_SUFFIX}
    )


def store_upload(root: IndexedRoot, name: str, upload) -> Stored:
    """Write ``upload`` (a Django UploadedFile) into the root at ``name``
    (a path inside it), then sync the root so the file is queued."""
    parts = upload_path(name)
    reason = refusal(root, "/".join(parts), upload.size)
    if reason:
        raise UploadRefused(reason)
    fd, root_real = _root_folder_fd(root)
    folder_fd = _open_folders(fd, parts[:-1])
    try:
        file_fd, saved_name, renamed = _create(folder_fd, parts[-1])
        try:
            with os.fdopen(file_fd, "wb") as out:
                for chunk in upload.chunks(_CHUNK):
                    out.write(chunk)
                out.flush()
                # What the kernel says the written file is (no /proc: trust the folder fds).
                written_path = os.readlink(f"/proc/self/fd/{out.fileno()}") if os.path.isdir("/proc/self/fd") else ""
        except BaseException:
            os.unlink(saved_name, dir_fd=folder_fd)
            raise
        relative = "/".join([*parts[:-1], saved_name])
        final = os.path.join(root_real, *parts[:-1], saved_name)
        if written_path and written_path != final:
            # Some folder moved under us: not where the root's files are.
            os.unlink(saved_name, dir_fd=folder_fd)
            raise UploadRefused(_("The folder changed while the file was written; try again."))
        held = held_back_reason(final, os.stat(saved_name, dir_fd=folder_fd, follow_symlinks=False).st_size)
        if held:
            # Our own file of this request, not one of the library's: it goes.
            os.unlink(saved_name, dir_fd=folder_fd)
            raise UploadRefused(
                _("“%(name)s” has more text than the library takes (MNOTE_MAX_TEXT_MB=%(mb)d).")
                % {"name": relative, "mb": settings.MNOTE_MAX_TEXT_MB}
            )
    finally:
        os.close(folder_fd)
    sync_root(root)
    return Stored(relative, renamed, root.sources.filter(relative_path=relative).first())
