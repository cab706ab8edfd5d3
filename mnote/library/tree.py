"""The library as a tree: roots → folders → files, one level at a time, with
a status light per file and per folder (the worst light below it) and counts
per folder. Built from registry rows only; a level is loaded when it is
opened, so a big library never renders whole."""

from dataclasses import dataclass, field

from mnote.library.models import IndexedRoot, Source
from mnote.library.source_filters import filtered_sources

S = Source.Status
# Most files one level lists; the rest are counted and found with the path filter.
FILES_PER_LEVEL = 200
# Worst first: a folder shows the first light any file below it has.
LIGHTS = ("failed", "stale", "indexing", "waiting", "indexed", "excluded", "removed")


def light(status: str, stale: bool) -> str:
    if status == S.INDEXED:
        return "stale" if stale else "indexed"
    return {
        S.FAILED: "failed",
        S.DUPLICATE: "failed",
        S.STALE: "stale",
        S.QUEUED: "indexing",
        S.INDEXING: "indexing",
        S.DELETE_SUBMITTED: "indexing",
        S.NOT_INDEXED: "waiting",
        S.EXCLUDED: "excluded",
        S.REMOVED: "removed",
    }.get(status, "waiting")


@dataclass
class Folder:
    name: str
    root: IndexedRoot
    path: str  # inside the root, "" for the root itself
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def light(self) -> str:
        return next((key for key in LIGHTS if self.counts.get(key)), "removed")

    @property
    def light_counts(self) -> list[tuple[str, int]]:
        return [(key, self.counts[key]) for key in LIGHTS if self.counts.get(key)]


@dataclass
class Level:
    root: IndexedRoot | None
    path: str
    folders: list[Folder]
    files: list[Source]
    more_files: int = 0


def _count(folder: Folder, status: str, stale: bool) -> None:
    key = light(status, stale)
    folder.counts[key] = folder.counts.get(key, 0) + 1


def roots_level(user, filter_key: str = "all") -> Level:
    """The top of the tree: each root the user may see, as a folder."""
    roots = {r.pk: Folder(r.name, r, "") for r in IndexedRoot.objects.visible_to(user).order_by("name")}
    rows = filtered_sources(Source.objects.filter(root__in=list(roots)), filter_key)
    for root_id, status, stale in rows.values_list("root_id", "status", "stale"):
        _count(roots[root_id], status, stale)
    folders = [f for f in roots.values() if f.total or filter_key == "all"]
    return Level(None, "", folders, [])


def folder_level(user, root: IndexedRoot, path: str, filter_key: str = "all") -> Level:
    """One folder of a root: its sub-folders with counts, then its files.
    ``root`` must be one the user may see (the view checks)."""
    path = path.strip("/")
    prefix = f"{path}/" if path else ""
    rows = filtered_sources(Source.objects.filter(root=root), filter_key)
    if prefix:
        rows = rows.filter(relative_path__startswith=prefix)
    folders: dict[str, Folder] = {}
    file_ids: list[int] = []
    for pk, relative, status, stale in rows.order_by("relative_path").values_list("pk", "relative_path", "status", "stale"):
        rest = relative[len(prefix) :]
        if "/" in rest:
            name = rest.split("/", 1)[0]
            folder = folders.setdefault(name, Folder(name, root, prefix + name))
            _count(folder, status, stale)
        else:
            file_ids.append(pk)
    files = list(Source.objects.filter(pk__in=file_ids[:FILES_PER_LEVEL]).select_related("root", "duplicate_of__root").order_by("relative_path"))
    for source in files:
        source.light = light(source.status, source.stale)
    return Level(root, path, sorted(folders.values(), key=lambda f: f.name.lower()), files, max(0, len(file_ids) - FILES_PER_LEVEL))
