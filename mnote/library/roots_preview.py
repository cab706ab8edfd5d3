"""Help for the roots form: the folders under the library base directory to
pick from, and which files a root would hold, shown before it is saved."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils.translation import gettext as _

from mnote.kinds import kind_of
from mnote.library.expansion import SKIPPED_DIRS, PathRefused, supported_name, expand_root, included, resolve_inside

# Bounded: the picker lists folders, it does not index the disk.
PICKER_DEPTH = 3
PICKER_LIMIT = 400
PREVIEW_LIMIT = 200


def base_folders(base: Path | None = None) -> list[str]:
    """Folders under the base directory, relative and sorted, breadth first
    to PICKER_DEPTH levels; symlinked folders and LightRAG's own are skipped."""
    base = (base or settings.MNOTE_LIBRARY_BASE_DIR).resolve()
    lightrag = {str(p.resolve()) for p in (settings.MNOTE_LIGHTRAG.input_dir, settings.MNOTE_LIGHTRAG.working_dir)}
    found: list[str] = []
    level = [(base, "")]
    for _ in range(PICKER_DEPTH):
        following = []
        for folder, rel in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name in SKIPPED_DIRS or entry.name.startswith(".") or entry.path in lightrag:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    path = f"{rel}{entry.name}"
                    found.append(path)
                    following.append((Path(entry.path), f"{path}/"))
                    if len(found) >= PICKER_LIMIT:
                        return sorted(found)
        level = following
    return sorted(found)


def suggested_root_name(folder: str) -> str:
    """A name for a root from its folder: the last part, in words
    ("papers/annual-reports" → "Annual reports")."""
    last = folder.strip("/").rsplit("/", 1)[-1].replace("_", " ").replace("-", " ").strip()
    return (last[:1].upper() + last[1:])[:120] if last else ""


@dataclass
class RootPreview:
    included: list[str]
    excluded: list[tuple[str, str]]  # (path, pattern)
    left_out: int  # files the include patterns leave out
    refused: list[str]
    problem: str = ""
    # Files the walk passes over for their kind: (path, why), the first PREVIEW_LIMIT.
    unsupported: list[tuple[str, str]] = field(default_factory=list)
    more_unsupported: int = 0

    @property
    def shown_included(self) -> list[str]:
        return self.included[:PREVIEW_LIMIT]

    @property
    def more_included(self) -> int:
        return max(0, len(self.included) - PREVIEW_LIMIT)


def preview_root(path: str, *, recursive: bool, include_patterns: list[str], exclude_patterns: list[str]) -> RootPreview:
    """What a sync of a root with these fields would take in, without saving
    anything or touching LightRAG."""
    try:
        candidates, refused = expand_root(
            settings.MNOTE_LIBRARY_BASE_DIR,
            path,
            recursive=recursive,
            exclude_patterns=exclude_patterns,
            skip_folders=(settings.MNOTE_LIGHTRAG.input_dir, settings.MNOTE_LIGHTRAG.working_dir),
        )
    except PathRefused as e:
        return RootPreview([], [], 0, [], problem=str(e))
    kept = included(candidates, include_patterns)
    names = lambda c: c.relative_path or c.absolute_path.name  # noqa: E731
    unsupported, more = unsupported_files(resolve_inside(settings.MNOTE_LIBRARY_BASE_DIR, path), recursive=recursive)
    return RootPreview(
        included=[names(c) for c in kept if not c.excluded_by],
        excluded=[(names(c), c.excluded_by) for c in kept if c.excluded_by],
        left_out=len(candidates) - len(kept),
        refused=refused,
        unsupported=unsupported,
        more_unsupported=more,
    )


def _why_not_taken(name: str) -> str:
    kind = kind_of(name)
    if kind.image:
        return _("pictures are not indexed (there is no text to search)")
    suffix = os.path.splitext(name)[1]
    if not suffix or name.startswith("."):
        return _("hidden or without a file extension")
    return _("%(suffix)s is not a kind of file the library indexes") % {"suffix": suffix.lower()}


def unsupported_files(top: Path, *, recursive: bool, limit: int = PREVIEW_LIMIT) -> tuple[list[tuple[str, str]], int]:
    """Files under ``top`` a sync passes over for their kind (the walk's
    own test), with why: the first ``limit`` and how many more. Folders are
    walked as the sync walks them (no symlinks, no skipped folders)."""
    if not top.is_dir():
        return [], 0
    found: list[tuple[str, str]] = []
    more = 0
    pending = [(str(top), "")]
    while pending:
        folder, rel = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if recursive and entry.name not in SKIPPED_DIRS:
                    pending.append((entry.path, f"{rel}{entry.name}/"))
            elif entry.is_file(follow_symlinks=False) and not supported_name(entry.name):
                if len(found) < limit:
                    found.append((f"{rel}{entry.name}", _why_not_taken(entry.name)))
                else:
                    more += 1
    return sorted(found), more
