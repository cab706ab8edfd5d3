"""Which files of a root belong in the library.

Paths are resolved and must stay inside the library base directory: ``..``,
absolute paths and symlinks pointing outside are refused. A file belongs to a
root only when its real path is inside *that root's* real path: a symlink in
an open root to a restricted root's file would otherwise show the restricted
file to everyone who may see the open root.
"""

import fnmatch
import os
from operator import attrgetter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.utils.translation import gettext as _

from mnote.kinds import SUPPORTED_EXTENSIONS  # the one table of kinds (mnote/kinds.py)

SKIPPED_DIRS = frozenset({".mnote", ".git", "node_modules", "target", "__parsed__", ".venv"})


class PathRefused(ValueError):
    """A path that would leave the library base directory, or is not there."""


def resolve_inside(base_dir: Path, relative: str) -> Path:
    """The real path of ``relative`` under ``base_dir``, or PathRefused."""
    if not relative or relative.strip() in ("", "."):
        raise PathRefused(_("Give a folder or file inside the library base directory."))
    candidate = PurePosixPath(relative.strip())
    if candidate.is_absolute() or Path(relative).is_absolute():
        raise PathRefused(_("“%(path)s” is absolute; give a path relative to the library base directory.") % {"path": relative})
    if ".." in candidate.parts:
        raise PathRefused(_("“%(path)s” contains “..”; paths must stay inside the library base directory.") % {"path": relative})
    base = base_dir.resolve()
    resolved = (base / candidate).resolve()
    if not resolved.is_relative_to(base):
        raise PathRefused(_("“%(path)s” leads outside the library base directory (through a symlink).") % {"path": relative})
    if not resolved.exists():
        raise PathRefused(_("“%(path)s” does not exist in the library base directory.") % {"path": relative})
    return resolved


@dataclass(slots=True)  # not frozen: a frozen dataclass costs 4x to build, 10,000 per sync
class Candidate:
    relative_path: str  # inside the root, POSIX style
    path: str  # absolute, resolved, inside the base directory
    excluded_by: str = ""
    stat: os.stat_result | None = None

    @property
    def absolute_path(self) -> Path:
        return Path(self.path)


def supported_name(name: str) -> bool:
    """``os.path.splitext(name)[1].lower() in SUPPORTED_EXTENSIONS``, without
    its cost on every file of a walk (a name's leading dots start no suffix)."""
    dot = name.rfind(".")
    # The strip only for a name that starts with a dot (".x.md" counts, "..md" not).
    return dot > 0 and name[dot:].lower() in SUPPORTED_EXTENSIONS and (name[0] != "." or name[:dot].strip(".") != "")


_supported = supported_name


def matches_exclude(relative_path: str, patterns: list[str]) -> str:
    """The first exclude glob matching the path, or "".

    fnmatch's ``*`` also crosses ``/``, which is what people mean by ``**``;
    ``**/x/**`` must also match ``x/...`` at the top of the root.
    """
    for pattern in patterns:
        pattern = pattern.strip()
        if pattern and any(fnmatch.fnmatchcase(relative_path, p) for p in (pattern, pattern.removeprefix("**/"))):
            return pattern
    return ""


def included(candidates: list[Candidate], include_patterns: list[str]) -> list[Candidate]:
    """Only the candidates an include glob matches (all of them when there
    are no include patterns). Globs match as exclude patterns do."""
    patterns = [p.strip() for p in include_patterns or [] if p.strip()]
    if not patterns:
        return candidates
    return [c for c in candidates if matches_exclude(c.relative_path or c.absolute_path.name, patterns)]


def expand_root(
    base_dir: Path,
    root_path: str,
    *,
    recursive: bool,
    exclude_patterns: list[str],
    skip_folders: tuple[Path, ...] = (),
) -> tuple[list[Candidate], list[str]]:
    """Files the root holds, and the paths refused on the way (symlinks whose
    target is outside this root: in another root, elsewhere in the library or
    outside it), both sorted.

    The walk starts from the resolved root and never follows a symlinked
    folder, so only symlinks need resolving: everything else is inside.
    ``skip_folders`` are never entered (LightRAG's own folders, should an
    admin put them inside a root: our links there are not library files).
    """
    skipped = {str(p.resolve()) for p in skip_folders}
    base = base_dir.resolve()
    top = resolve_inside(base_dir, root_path)
    if top.is_file():
        if top.suffix.lower() not in SUPPORTED_EXTENSIONS:
            return [], []
        # The root is the file: its path inside the root is empty.
        return [Candidate("", str(top), matches_exclude(top.name, exclude_patterns), top.stat())], []

    found: list[Candidate] = []
    refused: list[str] = []
    # Plain strings, not Path objects, per entry: a sync of 10,000 unchanged
    # files should cost little more than the walk itself.
    top_str = str(top)
    inside_top, inside_base = top_str + os.sep, str(base) + os.sep
    patterns = [p for p in exclude_patterns if p.strip()]
    pending = [(top_str, "")]
    while pending:
        folder, rel_dir = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable folder: nothing from it, the rest goes on
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}{name}"
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                inside = real == top_str or real.startswith(inside_top)
                if not (inside and real.startswith(inside_base)):
                    refused.append(rel)
                elif os.path.splitext(name)[1].lower() in SUPPORTED_EXTENSIONS and os.path.isfile(real):
                    # A link to a file of this same root counts; linked folders are not followed.
                    try:
                        info = os.stat(real)
                    except OSError:
                        continue
                    found.append(Candidate(rel, real, matches_exclude(rel, patterns) if patterns else "", info))
            elif entry.is_dir(follow_symlinks=False):
                if recursive and name not in SKIPPED_DIRS and entry.path not in skipped:
                    pending.append((entry.path, f"{rel}/"))
            elif _supported(name) and entry.is_file(follow_symlinks=False):
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone since the folder was listed
                found.append(Candidate(rel, entry.path, matches_exclude(rel, patterns) if patterns else "", info))
    found.sort(key=attrgetter("relative_path"))
    refused.sort()
    return found, refused
