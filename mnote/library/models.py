"""The registry: which folders are in the library, every source file in them
with its state, and the persistent ledger of work sent to LightRAG.

The user's files are the truth; these rows are MNote's map of them, and
LightRAG's storage is a cache derived from them.
"""

import hashlib
import re
from datetime import timedelta
from pathlib import PurePosixPath

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Concat
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class IndexedRootQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Roots a user may see anything of: admins see all; members see roots
        open to all members and roots shared with one of their groups."""
        if not (user.is_authenticated and user.is_active):
            return self.none()
        if user.is_staff:
            return self
        return self.filter(models.Q(visible_to_all=True) | models.Q(visible_to_groups__in=user.groups.all())).distinct()

    def visible_ids(self, user) -> list[int]:
        """The ids of the roots ``visible_to(user)``, each once."""
        return list(self.visible_to(user).order_by().values_list("pk", flat=True))


class IndexedRoot(models.Model):
    """A folder (or a single file) under MNOTE_LIBRARY_BASE_DIR that an admin
    put in the library. Nothing outside an enabled root is ever indexed."""

    name = models.CharField(_("name"), max_length=120, unique=True)
    path = models.CharField(
        _("path"),
        max_length=1024,
        unique=True,
        help_text=_("Relative to the library base directory."),
    )
    recursive = models.BooleanField(_("recursive"), default=True)
    exclude_patterns = models.JSONField(
        _("exclude patterns"),
        default=list,
        blank=True,
        help_text=_("Globs such as **/draft-private/**"),
    )
    include_patterns = models.JSONField(
        _("include patterns"),
        default=list,
        blank=True,
        help_text=_("Globs such as **/*.docx; when given, only files matching one are in the root."),
    )
    run_on_change = models.BooleanField(_("run on change"), default=True)
    enabled = models.BooleanField(_("enabled"), default=True)
    visible_to_all = models.BooleanField(_("visible to all members"), default=True)
    uploads_open = models.BooleanField(
        _("open for uploads"),
        default=False,
        help_text=_(
            "Members who may see this root can add files to its folder from the browser (never overwriting one)."
        ),
    )
    visible_to_groups = models.ManyToManyField(
        Group, blank=True, related_name="visible_roots", verbose_name=_("visible to groups")
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = IndexedRootQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("indexed root")
        verbose_name_plural = _("indexed roots")

    def __str__(self):
        return self.name

    @property
    def absolute_path(self):
        return settings.MNOTE_LIBRARY_BASE_DIR / self.path


# Source.parser_hint of a file LightRAG reads as MNote's text of it (mnote.library.derived_text).
MNOTE_TEXT = "mnote"


class SourceQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Every page and API goes through this: a member never sees a source,
        a quote or a file name from a root they may not see."""
        return self.filter(root__in=IndexedRoot.objects.visible_to(user))

    def within(self, scope: list[str] | None):
        """Sources whose library path is one of ``scope``'s paths or inside one
        of them (a folder); every source when there is no scope."""
        if not scope:
            return self
        match = Q()
        for path in (p.rstrip("/") for p in scope):
            match |= Q(root__path=path) | Q(root__path__startswith=path + "/")
            match |= Q(in_root=path) | Q(in_root__startswith=path + "/")
        return self.alias(in_root=Concat("root__path", Value("/"), "relative_path", output_field=models.CharField())).filter(match)

    def in_progress(self):
        return self.filter(status__in=Source.IN_PROGRESS)

    def citable(self):
        """Only these may back a citation: indexed, current, not deleted."""
        return self.filter(status=Source.Status.INDEXED, stale=False, deleted_at__isnull=True).exclude(
            lightrag_doc_id=""
        )


class Source(models.Model):
    """One file of the library, as MNote last saw it."""

    class Status(models.TextChoices):
        NOT_INDEXED = "not_indexed", _("not indexed")
        QUEUED = "queued", _("queued")
        INDEXING = "indexing", _("indexing")
        INDEXED = "indexed", _("indexed")
        FAILED = "failed", _("failed")
        STALE = "stale", _("stale")
        DELETE_SUBMITTED = "delete_submitted", _("delete submitted")
        REMOVED = "removed", _("removed")
        EXCLUDED = "excluded", _("excluded")
        DUPLICATE = "duplicate", _("duplicate")
        RETRYING = "retrying", _("waiting to retry")

    class Failure(models.TextChoices):
        TRANSIENT = "transient", _("transient")
        PERMANENT = "permanent", _("permanent")

    IN_PROGRESS = (Status.QUEUED, Status.INDEXING, Status.DELETE_SUBMITTED, Status.RETRYING)
    # parser_hint of a file LightRAG reads as MNote's text of it (mnote.library.derived_text).
    MNOTE_TEXT = MNOTE_TEXT

    root = models.ForeignKey(IndexedRoot, on_delete=models.CASCADE, related_name="sources")
    relative_path = models.CharField(_("path in root"), max_length=1024)
    absolute_path = models.CharField(_("absolute path"), max_length=4096)
    sha256 = models.CharField(max_length=64, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    mtime = models.FloatField(null=True, blank=True)
    # With size, what a sync compares to know a file unchanged without reading
    # it: nanosecond mtime and the inode (an editor's save-by-rename gives a
    # new inode even when size and mtime come out the same).
    mtime_ns = models.BigIntegerField(null=True, blank=True)
    inode = models.BigIntegerField(null=True, blank=True)
    lightrag_name = models.CharField(
        _("LightRAG file name"),
        max_length=512,
        blank=True,
        db_index=True,
        help_text=_("The unique name LightRAG knows this file by (its file_path)."),
    )
    lightrag_doc_id = models.CharField(_("LightRAG doc id"), max_length=80, blank=True, db_index=True)
    chunk_count = models.PositiveIntegerField(_("chunks"), null=True, blank=True)
    parse_engine = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.NOT_INDEXED, db_index=True)
    stale = models.BooleanField(default=False)
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    excluded_by = models.CharField(max_length=255, blank=True)
    allow_large_text = models.BooleanField(
        default=False, help_text="An admin sent it to LightRAG although it has more text than MNOTE_MAX_TEXT_MB."
    )
    generation = models.PositiveIntegerField(
        default=0, help_text="Bumped by a forced reindex so LightRAG sees a new document name."
    )
    last_error = models.TextField(blank=True)
    failure_kind = models.CharField(max_length=10, choices=Failure.choices, blank=True)
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Automatic retries since the last success or the last manual retry."
    )
    retry_at = models.DateTimeField(null=True, blank=True)
    progress = models.CharField(max_length=120, blank=True, help_text="LightRAG's stage while it works on the file.")
    parser_hint = models.CharField(
        max_length=20, blank=True, help_text="LightRAG parser engine asked for by the file name, e.g. legacy."
    )
    indexed_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SourceQuerySet.as_manager()

    class Meta:
        ordering = ["root__name", "relative_path"]
        constraints = [models.UniqueConstraint(fields=["root", "relative_path"], name="unique_source_path_in_root")]

    def __str__(self):
        return self.library_path

    @property
    def library_path(self) -> str:
        """The path users see: the root's path joined with the file's path in it."""
        if self.relative_path in ("", "."):
            return self.root.path
        return str(PurePosixPath(self.root.path) / self.relative_path)

    @property
    def file_name(self) -> str:
        return PurePosixPath(self.relative_path or self.root.path).name

    def unique_lightrag_name(self) -> str:
        """LightRAG keeps only a basename and ids a document by md5(basename),
        so the name must be unique per file *and* content: a changed file gets
        a new document while the old one is still being deleted."""
        key = f"{self.root_id}\0{self.relative_path}\0{self.sha256}\0{self.generation}"
        digest = hashlib.sha256(key.encode()).hexdigest()
        # LightRAG refuses a source name holding a control character (a newline
        # in a file name) on every scan; the name is ours, so it goes.
        name = f"mnote-{digest[:16]}-{_UNSAFE_NAME_CHARS.sub('_', self.file_name)}"
        # MNote's text of the file: LightRAG picks its reader by the suffix.
        return f"{name}.txt" if self.parser_hint == MNOTE_TEXT else name

    @property
    def link_name(self) -> str:
        """The symlink's name in LightRAG's inputs: the LightRAG name, with a
        parser hint (``x.[legacy].docx``) when one is asked for. LightRAG strips
        the hint, so its documents carry ``lightrag_name``."""
        if not self.parser_hint or not self.lightrag_name or self.parser_hint == MNOTE_TEXT:
            return self.lightrag_name
        stem, dot, extension = self.lightrag_name.rpartition(".")
        if not dot:
            return self.lightrag_name
        return f"{stem}.[{self.parser_hint}].{extension}"

    @property
    def file_level_citations(self) -> bool:
        """Parsed without LightRAG's sidecar blocks, so citations point at the
        file, not a paragraph."""
        mnote_text = self.parser_hint == MNOTE_TEXT  # cited through the preview's own text map
        return self.parse_engine == "legacy" and self.file_name.lower().endswith(".docx") and not mnote_text


# lightrag.api.routers.document_routes._UNSAFE_DOCUMENT_SOURCE_CHAR_PATTERN (1.5.7)
_UNSAFE_NAME_CHARS = re.compile("[\u0000-\u001f\u007f\ud800-\udfff\ufffe\uffff]")


class JobQuerySet(models.QuerySet):
    def due(self, now=None):
        now = now or timezone.now()
        return self.filter(state=Job.State.PENDING, next_attempt_at__lte=now).order_by("next_attempt_at", "id")

    def unclaimed(self, now=None):
        """Jobs no live worker holds: never claimed, or their lease ran out."""
        now = now or timezone.now()
        return self.filter(models.Q(lease_until__isnull=True) | models.Q(lease_until__lt=now))


class Job(models.Model):
    """Work owed to LightRAG, persisted so a crash or restart of either
    process loses nothing: scans answered "busy" and deletes are retried with
    backoff from here."""

    class Kind(models.TextChoices):
        SCAN = "scan", _("scan")
        DELETE = "delete", _("delete document")

    class State(models.TextChoices):
        PENDING = "pending", _("pending")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    MAX_ATTEMPTS = 12
    BACKOFF_BASE_SECONDS = 2
    BACKOFF_MAX_SECONDS = 300
    BUSY_BACKOFF_MAX = timedelta(seconds=30)

    kind = models.CharField(max_length=10, choices=Kind.choices)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    payload = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now, db_index=True)
    last_error = models.TextField(blank=True)
    track_id = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Set while a worker carries the job out (mnote/library/jobs.py): other
    # workers skip it until the lease runs out, so a dead worker's job is
    # claimed again, by someone else, only then.
    claimed_by = models.CharField(_("claimed by"), max_length=120, blank=True)
    lease_until = models.DateTimeField(_("lease until"), null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.get_kind_display()} #{self.pk} ({self.state})"

    def backoff(self) -> timedelta:
        seconds = min(self.BACKOFF_BASE_SECONDS * 2 ** max(self.attempts - 1, 0), self.BACKOFF_MAX_SECONDS)
        return timedelta(seconds=seconds)

    def retry_later(self, error: str, *, give_up: bool = True) -> None:
        """Record a transient failure; give up after MAX_ATTEMPTS (never, when
        LightRAG only said "busy": the work is owed until it is free)."""
        self.attempts += 1
        self.last_error = error
        if give_up and self.attempts >= self.MAX_ATTEMPTS:
            self.state = self.State.FAILED
            self.finished_at = timezone.now()
        elif give_up:
            self.next_attempt_at = timezone.now() + self.backoff()
        else:
            # Busy ends when LightRAG finishes its batch: ask again soon after, not minutes later.
            self.next_attempt_at = timezone.now() + min(self.backoff(), self.BUSY_BACKOFF_MAX)
        self.save(update_fields=["attempts", "last_error", "state", "finished_at", "next_attempt_at", "updated_at"])

    def finish(self, track_id: str = "") -> None:
        self.attempts += 1
        self.state = self.State.DONE
        self.track_id = track_id or self.track_id
        self.finished_at = timezone.now()
        self.last_error = ""
        self.save(update_fields=["attempts", "state", "track_id", "finished_at", "last_error", "updated_at"])


class WorkerLease(models.Model):
    """A named lease one worker holds at a time (the leader for the file
    watcher, the periodic full sync, the reconcile and the status bridge):
    renewed while the holder lives, taken over by another once it runs out."""

    name = models.CharField(_("name"), max_length=40, unique=True)
    holder = models.CharField(_("holder"), max_length=120, blank=True)
    expires_at = models.DateTimeField(_("expires at"), default=timezone.now)
    acquired_at = models.DateTimeField(_("acquired at"), null=True, blank=True)

    class Meta:
        verbose_name = _("worker lease")
        verbose_name_plural = _("worker leases")

    def __str__(self):
        return f"{self.name}: {self.holder or '-'} until {self.expires_at:%H:%M:%S}"
