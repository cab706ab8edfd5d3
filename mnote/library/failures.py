"""Failures LightRAG reports, told apart and retried.

Transient failures (timeouts, a busy or halted pipeline, an unreachable model
service, a restart mid-document) are sent again with backoff and a cap, in
small waves and only while LightRAG is idle, so one large file cannot make the
others fail; permanent ones stay failed with LightRAG's whole message; a DOCX
the native parser found empty goes through the legacy parser, and a file no
LightRAG parser reads goes as MNote's own text of it (``derived_text``).
Every failure is told to users in one plain vocabulary (``reasons.plain_reason``).
"""

import re
import zipfile
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from mnote.library.derived_text import can_give_text
from mnote.library.ingest import mark_indexed, owe_delete, queue_many, refresh_fingerprint, submit_delete, unlink_from_inputs
from mnote.library.models import Job, Source
from mnote.library.reasons import ENCRYPTED, TOO_LARGE, reason_code, retry_can_cure
from mnote.library.source_files import SourceUnavailable, open_source_file
from mnote.lightrag import LightRAGClient

# LightRAG's words for failures that another attempt can cure: timeouts, a busy
# or halted pipeline, an unreachable model service, a restart mid-document.
TRANSIENT_MARKERS = (
    "timeout", "timed out", "busy", "halted", "connection", "refused", "cancelled", "canceled",
    "interrupted", "restart", "temporarily", "unavailable", "rate limit", "queue full", "too many requests",
    "internal storage error", "worker execution", "502", "503", "504", "429",
    # The OpenAI binding's exceptions after its own retries, and a vector store
    # flush that failed with them: the model service failed, not the file.
    "retryerror", "internalservererror", "apiconnectionerror", "apitimeouterror", "ratelimiterror",
    "flush failed", "server error",
)
NATIVE_DOCX_EMPTY = "docx parser returned empty content"
# Said when a DOCX the native parser found empty holds no text for any parser.
NO_TEXT_AT_ALL = "The file holds no text (none in its body, tables, text boxes, headers, footers or notes)."
# A run's text in WordprocessingML (w:t) or Office Math (m:t).
_DOCX_TEXT = re.compile(rb"<[wm]:t(?:\s[^>]*)?>([^<]*)</[wm]:t>")
# Past this much XML the check gives up and the legacy parser decides.
_TEXT_CHECK_MAX_BYTES = 64 * 1024 * 1024
MAX_AUTO_RETRIES = 4
RETRY_BASE = timedelta(seconds=20)
RETRY_MAX = timedelta(minutes=10)
# Sources sent again per round, and only while LightRAG is idle: a small wave,
# so one large file cannot time out the others.
RETRY_WAVE = 3


def classify_failure(message: str) -> str:
    """"legacy" (the native DOCX parser found no text: try the plain-text
    parser), "transient" (try again later) or "permanent"."""
    text = (message or "").lower()
    if NATIVE_DOCX_EMPTY in text:
        return "legacy"
    if any(marker in text for marker in TRANSIENT_MARKERS):
        return "transient"
    return "permanent"


def record_failure(source: Source, document) -> None:
    """Decide what a document LightRAG failed becomes (the caller saves)."""
    message = document.error_msg or "LightRAG reported the document failed."
    kind = classify_failure(message)
    source.progress = ""
    to_legacy = kind == "legacy" and source.parser_hint != "legacy" and source.file_name.lower().endswith(".docx")
    parts = docx_text_parts(source) if to_legacy else None
    if to_legacy and parts is not None and not parts:
        # Nothing for the legacy parser either: failed now, not after a second
        # parse that LightRAG could only run once it is idle (the ingest's tail).
        kind, to_legacy = "permanent", False
        message = f"{message} {NO_TEXT_AT_ALL}"
    elif to_legacy and parts is not None and _BODY not in parts:
        # Text only in headers, footers, notes or comments: the legacy parser
        # reads the body alone, so MNote's text goes at once.
        to_legacy = False
    if kind in ("permanent", "legacy") and not to_legacy and _mnote_text_may_cure(source, message):
        # No LightRAG parser reads it; MNote's reader may (Strict OOXML, text
        # only in headers, notes or boxes): sent again as MNote's text of it.
        source.parser_hint = Source.MNOTE_TEXT
        source.last_error = message
        schedule_retry(source, document.id, delay=timedelta(0), count=False)
        return
    if to_legacy:
        source.parser_hint = "legacy"
        source.last_error = message
        schedule_retry(source, document.id, delay=timedelta(0), count=False)
        return
    if kind == "transient" and source.attempts < MAX_AUTO_RETRIES:
        source.last_error = message
        schedule_retry(source, document.id)
        return
    source.status = Source.Status.FAILED
    source.failure_kind = Source.Failure.TRANSIENT if kind == "transient" else Source.Failure.PERMANENT
    # Kept (never citable: not indexed) so a retry, reindex or prune deletes LightRAG's failed record.
    source.lightrag_doc_id = document.id
    source.retry_at = None
    if kind == "transient":
        source.last_error = f"Gave up after {source.attempts + 1} attempts. {message}"
    else:
        source.last_error = message


def _mnote_text_may_cure(source: Source, message: str) -> bool:
    """Whether a file LightRAG failed for good is worth sending as MNote's own
    text of it: MNote reads the kind, has not tried, and the failure is not one
    no reader can cure (a password, no text anywhere)."""
    if source.parser_hint == Source.MNOTE_TEXT or not can_give_text(source):
        return False
    return NO_TEXT_AT_ALL not in message and reason_code(message, source) not in (ENCRYPTED, TOO_LARGE)


_BODY = "word/document.xml"


def docx_text_parts(source: Source) -> set[str] | None:
    """The parts of the DOCX (``word/document.xml``: the body, its tables and
    text boxes; headers, footers, notes) holding a character of text; None
    when that cannot be told (not a readable package, gone, too large), and
    the legacy parser decides."""
    try:
        with open_source_file(source) as handle:
            return package_text_parts(handle)
    except SourceUnavailable:
        return None


def package_text_parts(handle) -> set[str] | None:
    """:func:`docx_text_parts` for an open file."""
    found = set()
    try:
        with zipfile.ZipFile(handle) as package:
            parts = [info for info in package.infolist()
                     if info.filename.startswith("word/") and info.filename.lower().endswith(".xml")]
            if not parts or sum(info.file_size for info in parts) > _TEXT_CHECK_MAX_BYTES:
                return None
            for info in parts:
                if any(text.strip() for text in _DOCX_TEXT.findall(package.read(info))):
                    found.add(info.filename)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
        return None
    return found


def schedule_retry(source: Source, failed_doc_id: str = "", *, delay: timedelta | None = None, count: bool = True) -> None:
    """Wait, then send the file again under a new name. LightRAG's failed
    record goes first: LightRAG retries every failed document together with
    each later scan, which is how one large file failed the others."""
    if failed_doc_id:
        owe_delete(source, failed_doc_id)
    unlink_from_inputs(source)
    source.lightrag_doc_id = ""
    if count:
        source.attempts += 1
    if delay is None:
        delay = min(RETRY_BASE * 2 ** max(source.attempts - 1, 0), RETRY_MAX)
    source.status = Source.Status.RETRYING
    source.failure_kind = Source.Failure.TRANSIENT
    source.retry_at = timezone.now() + delay


def retry_failed(sources) -> int:
    """Send failed sources of ``sources`` (a queryset) back to LightRAG, in
    the worker's small waves, with a fresh retry budget: only those a retry
    can cure (LightRAG gave up on them); a damaged, encrypted or textless file
    stays failed until it changes (a sync sends it again then). Returns how many."""
    count = 0
    with transaction.atomic():
        for source in sources.filter(status=Source.Status.FAILED).select_for_update():
            if not retry_can_cure(source):
                continue
            source.attempts = 0
            schedule_retry(source, source.lightrag_doc_id, delay=timedelta(0), count=False)
            source.save()
            count += 1
    return count


def not_retried(sources) -> int:
    """How many failed sources of ``sources`` a retry would not cure (what
    "Retry failed" leaves, and says so)."""
    return sources.filter(status=Source.Status.FAILED, failure_kind=Source.Failure.PERMANENT).count()


# A delete LightRAG accepted but whose document it still lists this long after
# is asked for again (the background delete was refused or lost).
DELETE_SETTLE = timedelta(seconds=60)
# How a delete answered "busy" or refused while LightRAG worked says so (run_due_jobs).
_WAITING_FOR_LIGHTRAG = ("LightRAG busy", "LightRAG refused")


def _old_records(source: Source, documents: dict) -> tuple[list[Job], list]:
    """The source's delete jobs, and the documents they asked for that LightRAG still lists."""
    deletes = [job for job in source.jobs.all() if job.kind == Job.Kind.DELETE]  # prefetched
    asked = {doc_id for job in deletes for doc_id in job.payload.get("doc_ids") or []}
    return deletes, [documents[doc_id] for doc_id in sorted(asked) if doc_id in documents]


def _ready_to_resend(source: Source, documents: dict) -> bool | None:
    """Whether LightRAG has let go of every failed record of ``source`` we
    asked it to delete: True to send the file again, False to wait, None when
    a delete is still owed and was just moved up (LightRAG is idle now).

    A retry must wait: each scan makes LightRAG process its failed records
    again, and the same content sent under a new name while the old record is
    being analysed is filed as a duplicate of it. A failed record LightRAG
    itself processed meanwhile makes the source indexed; a delete that went
    through but left the record listed is asked for again."""
    deletes, still_listed = _old_records(source, documents)
    processed = [d for d in still_listed if d.status == "processed"]
    if processed and source.deleted_at is None and not source.stale:
        mark_indexed(source, processed[0])
        source.save()
        return False
    pending = [job for job in deletes if job.state == Job.State.PENDING]
    if pending:
        # Answered "busy" while LightRAG worked; it is idle now: ask at once,
        # so the wave that follows takes every file whose record is gone.
        waiting = [job for job in pending if job.last_error.startswith(_WAITING_FOR_LIGHTRAG)]
        if waiting:
            Job.objects.filter(pk__in=[job.pk for job in waiting]).update(next_attempt_at=timezone.now())
            return None
        return False
    if not still_listed:
        return True
    last = max(job.finished_at or job.updated_at for job in deletes)
    if timezone.now() - last >= DELETE_SETTLE:
        for document in still_listed:
            owe_delete(source, document.id)
    return False


def _first_legacy_attempt(source: Source) -> bool:
    """A file going to another reader after LightRAG's first could not read
    it (the legacy parser, or MNote's text), not a retry of a timeout."""
    if source.parser_hint == Source.MNOTE_TEXT:
        return bool(source.last_error) and classify_failure(source.last_error) == "permanent"
    return source.parser_hint == "legacy" and classify_failure(source.last_error) == "legacy"


def advance_retries(client: LightRAGClient) -> tuple[int, bool]:
    """Send a small wave of sources whose retry is due, when LightRAG is idle,
    owes us no scan and no longer lists their failed records; or first move
    up the deletes of their failed records, owed before the files can go.
    Returns (files sent, whether deletes were moved up)."""
    due = Source.objects.filter(status=Source.Status.RETRYING, retry_at__lte=timezone.now()).order_by("retry_at")
    if not due.exists():
        return 0, False
    if Job.objects.filter(kind=Job.Kind.SCAN, state=Job.State.PENDING).exists():
        return 0, False
    if Source.objects.filter(status__in=[Source.Status.QUEUED, Source.Status.INDEXING]).exists():
        return 0, False
    if client.health().pipeline_busy:
        return 0, False
    documents = {document.id: document for document in client.iter_documents()}
    ready, deletes_moved_up = [], False
    for source in due.prefetch_related("jobs"):
        verdict = _ready_to_resend(source, documents)
        deletes_moved_up |= verdict is None
        if verdict:
            ready.append(source)
    if deletes_moved_up:
        return 0, True  # the deletes go first; the files follow together after them
    # A file going to the legacy parser after the native one found nothing is
    # no retry of a timeout: small, cheap to parse, so all of them go at once.
    legacy = [source for source in ready if _first_legacy_attempt(source)]
    sent = []
    for source in legacy + [source for source in ready if source not in legacy][:RETRY_WAVE]:
        try:
            refresh_fingerprint(source)
        except OSError:
            submit_delete(source, missing=True)  # gone from its folder meanwhile
            continue
        source.generation += 1
        sent.append(source)
    queue_many(sent)
    return len(sent), False
