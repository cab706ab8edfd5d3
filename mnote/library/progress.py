"""How far indexing has got, in words people use: per root, files done of
files in it, each file's stage on its way in (queued → sent → parsing →
indexed, or failed), and an estimate of the time left from the pace of the
last few minutes. Read from registry rows only; the worker and the status
bridge keep those rows current.

    progress = root_progress(root)
    progress.done, progress.total, progress.eta_seconds, progress.log_line()
"""

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Count, Max, Min, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mnote.library.models import IndexedRoot, Source

S = Source.Status

# The stages a file goes through, in order, with the words the pages use.
STAGES = {
    "queued": _("queued"),
    "sent": _("sent"),
    "parsing": _("parsing"),
    "indexed": _("indexed"),
    "failed": _("failed"),
}
# LightRAG's document states once it has started on a file (its own words,
# as the status bridge stores them in Source.progress).
_LIGHTRAG_WORKING = ("processing", "preprocessed", "processed")
_WORKING = Q(status=S.INDEXING) & (
    Q(progress__startswith=_LIGHTRAG_WORKING[0])
    | Q(progress__startswith=_LIGHTRAG_WORKING[1])
    | Q(progress__startswith=_LIGHTRAG_WORKING[2])
)
_CONDITIONS = {
    "queued": Q(status__in=(S.QUEUED, S.RETRYING)),
    "sent": Q(status=S.INDEXING) & ~_WORKING,
    "parsing": _WORKING,
    "indexed": Q(status=S.INDEXED),
    "failed": Q(status__in=(S.FAILED, S.DUPLICATE)),
    # Registered but not sent (the batch limit, LightRAG down at the sync):
    # counted in the total, not "on the way".
    "waiting": Q(status=S.NOT_INDEXED),
}
ON_THE_WAY = ("queued", "sent", "parsing")
# Files listed by name per root while it indexes; the rest are counted.
LISTED_FILES = 12
# The pace behind the estimate: files indexed in this window.
PACE_WINDOW = timedelta(minutes=10)


def file_stage(source: Source) -> str:
    """A file's stage on its way in, or "" when it is not on its way in
    (excluded, removed, being taken out)."""
    if source.status == S.INDEXED:
        return "indexed"
    if source.status in (S.FAILED, S.DUPLICATE):
        return "failed"
    if source.status == S.INDEXING:
        return "parsing" if (source.progress or "").startswith(_LIGHTRAG_WORKING) else "sent"
    if source.status in (S.QUEUED, S.RETRYING, S.NOT_INDEXED):
        return "queued"
    return ""


@dataclass
class RootProgress:
    root: IndexedRoot
    counts: dict[str, int]
    eta_seconds: float | None = None
    files: list[Source] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def done(self) -> int:
        return self.counts["indexed"] + self.counts["failed"]

    @property
    def on_the_way(self) -> int:
        return sum(self.counts[stage] for stage in ON_THE_WAY)

    @property
    def in_progress(self) -> bool:
        return self.on_the_way > 0

    @property
    def stage_counts(self) -> list[tuple[str, str, int]]:
        return [(key, label, self.counts[key]) for key, label in STAGES.items() if self.counts[key]]

    @property
    def eta_minutes(self) -> int | None:
        """The estimate in whole minutes, at least 1 (None: not known yet)."""
        return None if self.eta_seconds is None else max(1, round(self.eta_seconds / 60))

    @property
    def more_files(self) -> int:
        return max(0, self.on_the_way - len(self.files))

    def log_line(self) -> str:
        """For the log of ``make run`` (English, as the rest of the log)."""
        line = f"{self.counts['indexed']} of {self.total} files indexed"
        if self.counts["failed"]:
            line += f", {self.counts['failed']} failed"
        if self.in_progress:
            stages = ", ".join(f"{self.counts[s]} {s}" for s in ON_THE_WAY if self.counts[s])
            line += f"; on the way: {stages}"
            if self.eta_seconds is not None:
                line += f" (about {format_duration(self.eta_seconds)} left)"
        else:
            line += "; done"
        return line


def format_duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{max(1, round(seconds))} s" if minutes < 1 else f"{minutes} min"


def _counts(sources) -> dict[str, int]:
    return sources.aggregate(**{key: Count("id", filter=condition) for key, condition in _CONDITIONS.items()})


def seconds_per_file(now=None) -> float | None:
    """The library's recent pace: LightRAG takes files one after another,
    so the pace is the whole library's, not a root's. None until at least
    three files were indexed in the last PACE_WINDOW."""
    now = now or timezone.now()
    recent = Source.objects.filter(status=S.INDEXED, indexed_at__gte=now - PACE_WINDOW).aggregate(
        n=Count("id"), first=Min("indexed_at"), last=Max("indexed_at")
    )
    if recent["n"] < 3 or recent["last"] <= recent["first"]:
        return None
    return (recent["last"] - recent["first"]).total_seconds() / (recent["n"] - 1)


def root_progress(root: IndexedRoot, *, pace=..., listed: int = LISTED_FILES) -> RootProgress:
    """``pace``: seconds per file when the caller measured it already (None: unknown)."""
    counts = _counts(root.sources.all())
    progress = RootProgress(root, counts)
    if progress.in_progress:
        pace = seconds_per_file() if pace is ... else pace
        if pace is not None:
            progress.eta_seconds = pace * progress.on_the_way
        on_the_way = root.sources.filter(
            _CONDITIONS["queued"] | _CONDITIONS["sent"] | _CONDITIONS["parsing"]
        ).order_by("-status", "relative_path")[:listed]
        progress.files = list(on_the_way)
        for source in progress.files:
            source.stage = file_stage(source)
            source.stage_label = STAGES.get(source.stage, "")
    return progress


def library_progress(user, root_ids=None) -> list[RootProgress]:
    """The progress of every root the user may see that has files on the
    way in (or of ``root_ids`` among them, whatever their state)."""
    roots = IndexedRoot.objects.visible_to(user).order_by("name")
    if root_ids is not None:
        roots = roots.filter(pk__in=root_ids)
    else:
        busy = Source.objects.filter(_CONDITIONS["queued"] | _CONDITIONS["sent"] | _CONDITIONS["parsing"])
        roots = roots.filter(pk__in=busy.values("root_id"))
    pace = seconds_per_file()
    return [root_progress(root, pace=pace) for root in roots]
