"""The dashboard's filters over the registry, as plain queryset functions so
the pages, the JSON API and commands mean the same thing by "needs attention"."""

from dataclasses import dataclass

from django.db.models import Count, Q, Value
from django.db.models.functions import Concat
from django.utils.translation import gettext_lazy as _

from mnote.library.models import Source
from mnote.library.text_size import is_held_back

S = Source.Status

# Not in LightRAG as the file is now, and not simply on its way there:
# someone should look (or LightRAG has yet to confirm a delete).
ATTENTION_STATUSES = (S.FAILED, S.STALE, S.DUPLICATE, S.NOT_INDEXED, S.DELETE_SUBMITTED)
_INDEXED_BUT_STALE = Q(status=S.INDEXED, stale=True)


@dataclass(frozen=True)
class SourceFilter:
    key: str
    label: str
    help: str
    condition: Q | None  # None: rows come from LightRAG, not from the registry
    admin_only: bool = False
    # What members read instead: the same rows, without the engine's words.
    member_label: str = ""
    member_help: str = ""

    def words(self, *, admin: bool) -> tuple[str, str]:
        """(label, help) for an admin or a member."""
        if admin:
            return self.label, self.help
        return self.member_label or self.label, self.member_help or self.help


FILTERS = (
    SourceFilter(
        "attention",
        _("Needs attention"),
        _(
            "Files that are not in LightRAG as they are now and are not simply on their way there: "
            "failed, stale (changed or missing since indexing), duplicate, not indexed yet, "
            "and delete submitted (LightRAG has not confirmed the delete yet)."
        ),
        Q(status__in=ATTENTION_STATUSES) | _INDEXED_BUT_STALE,
        member_help=_(
            "Files that are not searchable as they are now and are not simply on their way: "
            "they could not be indexed, changed since, are the same as another file, or are not indexed yet."
        ),
    ),
    SourceFilter(
        "indexing",
        _("Indexing"),
        _("Files LightRAG is working on: queued, indexing, or delete submitted."),
        Q(status__in=Source.IN_PROGRESS),
        member_help=_("Files being indexed, or taken out of the search, right now."),
    ),
    SourceFilter(
        "failed",
        _("Failed / stale"),
        _("Files LightRAG failed to index, and files changed or missing since they were indexed."),
        Q(status__in=(S.FAILED, S.STALE)) | _INDEXED_BUT_STALE,
        member_label=_("Not indexed / changed"),
        member_help=_("Files that could not be indexed, and files changed or missing since they were indexed."),
    ),
    SourceFilter(
        "indexed",
        _("Indexed"),
        _("Files indexed by LightRAG and unchanged since: these can be cited."),
        Q(status=S.INDEXED, stale=False),
        member_label=_("Searchable"),
        member_help=_("Files indexed and unchanged since: searches find them and can cite them."),
    ),
    SourceFilter(
        "removed",
        _("Removed"),
        _("Files whose LightRAG document was removed: deleted from their folder, or their index deleted."),
        Q(status=S.REMOVED),
        member_help=_("Files taken out of the search: deleted from their folder, or taken out by an admin."),
    ),
    SourceFilter(
        "unmapped",
        _("LightRAG unmapped"),
        _("Documents in LightRAG that no registry row maps to, for example files added to LightRAG outside MNote."),
        None,
        admin_only=True,
    ),
    SourceFilter("all", _("All"), _("Every file in the registry, whatever its status."), Q()),
)
DEFAULT_FILTER = "attention"
_BY_KEY = {f.key: f for f in FILTERS}


def source_filter(key: str, *, admin: bool) -> SourceFilter:
    """The filter a key names, falling back on the default for unknown keys
    and for admin-only filters asked for by a member."""
    found = _BY_KEY.get(key)
    if found is None or (found.admin_only and not admin):
        return _BY_KEY[DEFAULT_FILTER]
    return found


def filter_counts(sources) -> dict[str, int]:
    """Rows per registry filter, in one query."""
    aggregates = {
        f.key: Count("id", filter=f.condition) if f.condition else Count("id")
        for f in FILTERS
        if f.condition is not None
    }
    return sources.order_by().aggregate(**aggregates)


def filtered_sources(sources, key: str, path_contains: str = ""):
    condition = _BY_KEY[key].condition
    rows = sources.filter(condition) if condition is not None else sources.none()
    if path_contains:
        # Matched against the path people see: the root's path, then the file's path in it.
        rows = rows.alias(library_path=Concat("root__path", Value("/"), "relative_path")).filter(
            library_path__icontains=path_contains
        )
    return rows


# --- what an admin may do to one row ------------------------------------------


def reindex_refusal(source: Source) -> str:
    """Why this file cannot be reindexed now, or "" when it can."""
    if not source.root.enabled:
        return _("“%(path)s” is in the disabled root “%(root)s”; enable the root first.") % {
            "path": source.library_path,
            "root": source.root.name,
        }
    if source.status == S.EXCLUDED and not is_held_back(source.excluded_by):
        return _("“%(path)s” is excluded by “%(pattern)s”; change the root’s exclude patterns first.") % {
            "path": source.library_path,
            "pattern": source.excluded_by,
        }
    if source.status == S.DELETE_SUBMITTED:
        return _("“%(path)s” is still being removed from LightRAG; reindex it once LightRAG confirms the delete.") % {
            "path": source.library_path
        }
    return ""


def has_index(source: Source) -> bool:
    """Whether LightRAG holds (or is building) something of this file that "delete index" would drop."""
    return bool(source.lightrag_doc_id) or source.status in (
        S.QUEUED,
        S.INDEXING,
        S.INDEXED,
        S.FAILED,
        S.STALE,
        S.DUPLICATE,
    )
