"""Shared by the commands that send work to LightRAG and may wait for it
(not a command itself: the leading underscore hides it from Django)."""

from django.db.models import Count

from mnote.library.worker import wait_until_settled
from mnote.library.models import Job, Source
from mnote.lightrag.provider import lightrag_client


def settle(stdout, seconds: float) -> bool:
    """Work the job ledger and follow LightRAG for at most ``seconds``, then
    say where things stand. Returns whether everything settled."""
    with lightrag_client() as client:
        settled = wait_until_settled(client, timeout=seconds)
    labels = dict(Source.Status.choices)
    if settled:
        stdout.write("Settled: nothing in progress.")
        return True
    in_progress = Source.objects.in_progress().values_list("status").annotate(n=Count("id")).order_by("status")
    pending = Job.objects.filter(state=Job.State.PENDING)
    parts = [f"{n} {labels[status]}" for status, n in in_progress]
    parts.append(f"{pending.count()} jobs owed to LightRAG")
    last_error = pending.exclude(last_error="").values_list("last_error", flat=True).first()
    if last_error:
        parts.append(f"last error: {last_error}")
    stdout.write(f"Not settled after {seconds:g} s: " + ", ".join(parts) + ". The worker carries on.")
    return False
