"""Claims, leases and the leader, in one process (on SQLite, and on
PostgreSQL in `make test`'s PostgreSQL run). Several processes at once:
tests/library/test_workers_postgres.py."""

from datetime import timedelta

import pytest
from django.utils import timezone

from mnote.library.ingest import owe_scan, run_due_jobs
from mnote.library.jobs import claim_due_jobs, claim_next, give_up_lease, hold_lease, release
from mnote.library.models import Job
from mnote.lightrag.provider import lightrag_client

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def delete_job(doc_id: str, **fields) -> Job:
    return Job.objects.create(kind=Job.Kind.DELETE, payload={"doc_ids": [doc_id]}, **fields)


def test_two_workers_claim_different_jobs():
    first, second = delete_job("doc-a"), delete_job("doc-b")
    assert claim_next("host:1") == first
    assert claim_next("host:2") == second
    assert claim_next("host:3") is None  # both held: nothing for a third


def test_a_job_whose_lease_ran_out_is_claimed_again_by_another_worker():
    job = delete_job("doc-a")
    claim_next("host:1", lease=timedelta(seconds=60))
    assert claim_next("host:2") is None
    Job.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert claim_next("host:2") == job
    # The first worker, back from the dead, cannot release the claim it lost.
    release(job, "host:1")
    job.refresh_from_db()
    assert job.claimed_by == "host:2" and job.lease_until is not None


def test_a_released_job_says_who_carried_it_out_and_waits_for_its_retry_time():
    job = delete_job("doc-a")
    for claimed in claim_due_jobs("host:1"):
        claimed.retry_later("LightRAG busy", give_up=False)
    job.refresh_from_db()
    assert job.claimed_by == "host:1" and job.lease_until is None
    assert job.state == Job.State.PENDING and claim_next("host:2") is None  # not due yet


def test_a_job_another_worker_holds_is_not_sent_to_lightrag(fake_lightrag):
    held, free = delete_job("doc-held"), delete_job("doc-free")
    claim_next("host:other")
    fake_lightrag.on("DELETE", "/documents/delete_document", "delete_document.json")
    with lightrag_client() as client:
        assert run_due_jobs(client) == 1
    assert [request.read() for request in fake_lightrag.requests] == [
        b'{"doc_ids":["doc-free"],"delete_file":false,"delete_llm_cache":false}'
    ]
    held.refresh_from_db()
    free.refresh_from_db()
    assert held.state == Job.State.PENDING and free.state == Job.State.DONE


def test_files_linked_while_a_scan_is_under_way_are_owed_a_scan_of_their_own():
    waiting = owe_scan()
    assert owe_scan() == waiting  # one pending scan covers every file waiting
    claim_next("host:1")  # a worker is sending it: files linked now may be too late for it
    assert owe_scan() != waiting


def test_one_leader_at_a_time_and_another_takes_over_when_its_lease_runs_out():
    assert hold_lease("leader", "host:1", lease=timedelta(seconds=30))
    assert not hold_lease("leader", "host:2")
    assert hold_lease("leader", "host:1")  # renewed
    from mnote.library.models import WorkerLease

    WorkerLease.objects.filter(name="leader").update(expires_at=timezone.now() - timedelta(seconds=1))
    assert hold_lease("leader", "host:2")
    assert not hold_lease("leader", "host:1")


def test_a_leader_stopping_cleanly_hands_over_at_once():
    assert hold_lease("leader", "host:1")
    give_up_lease("leader", "host:1")
    assert hold_lease("leader", "host:2")


def test_admins_see_who_holds_a_job_and_who_leads(client, admin_user):
    job = delete_job("doc-a")
    claim_next("web-1:4242")
    hold_lease("leader", "worker-2:77")
    client.force_login(admin_user)
    jobs = client.get("/admin/library/job/").content.decode()
    assert "web-1:4242" in jobs
    leases = client.get("/admin/library/workerlease/").content.decode()
    assert "worker-2:77" in leases
    assert client.get(f"/admin/library/job/{job.pk}/change/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_leader_keeps_its_lease_between_rounds_and_hands_over_when_it_stops():
    import time

    from mnote.library.jobs import Leadership

    lease = timedelta(seconds=1.5)
    first = Leadership("host:1", lease=lease).start()
    second = Leadership("host:2", lease=lease).start()
    try:
        assert first.beat() and not second.beat()
        time.sleep(3 * lease.total_seconds())  # no round of the loop for longer than the lease: renewed all the same
        assert first.beat() and not second.beat()
        first.stop()
        deadline = time.monotonic() + 10
        while not second.beat() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert second.beat()
    finally:
        first.stop()
        second.stop()
