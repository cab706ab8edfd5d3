"""Help for the roots form: the folders under the library base directory to
pick from, and which files a root would hold, shown before it is saved."""

import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from mnote.library.expansion import SKIPPED_DIRS, PathRefused, expand_root, included

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


@dataclass
class RootPreview:
    included: list[str]
    excluded: list[tuple[str, str]]  # (path, pattern)
    left_out: int  # files the include patterns leave out
    refused: list[str]
    problem: str = ""

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
    return RootPreview(
        included=[names(c) for c in kept if not c.excluded_by],
        excluded=[(names(c), c.excluded_by) for c in kept if c.excluded_by],
        left_out=len(candidates) - len(kept),
        refused=refused,
    )
