"""The jobs a worker holds: each outcome is counted once, even when the worker claims a job again
before the thread that wrote the job's last outcome has counted it (a snooze of 0 s, or a
retry due at once: its write commits, the producer claims the job again at once, and only
then does the writing thread settle the older claim). A full conformance run caught
``worker.counts["snoozed"]`` short by one that way (tests/conformance/test_snooze.py)."""

from __future__ import annotations

from dataclasses import replace

from skiplock import Job
from skiplock._worker.state import HeldJobs


def claim_of(attempt: int) -> Job:
    return Job(
        id=7,
        queue="q",
        payload=None,
        priority=0,
        status="running",
        attempt=attempt,
        max_attempts=5,
        run_at=None,
        lease_until=None,
        idempotency_key="k",
    )


def test_an_outcome_settled_after_the_job_was_claimed_again_is_counted_once() -> None:
    jobs = HeldJobs(concurrency=2)
    first = claim_of(1)
    jobs.hold([(first, None)])
    assert jobs.begin(first)
    jobs.ended(first)
    first.status = "pending"  # its snooze committed; not settled yet

    second = claim_of(2)  # the same job, claimed again by this worker
    jobs.hold([(second, None)])
    assert jobs.held_attempts() == [(7, 2, None), (7, 1, None)]

    held, key = jobs.settle(first, "snoozed")
    assert held is not None and held.job is first and key == "snoozed"
    assert jobs.settle(first, "snoozed") == (None, None)  # once
    assert jobs.counts["snoozed"] == 1
    assert not jobs.begin(first)  # only the newer claim runs

    assert jobs.begin(second)
    jobs.ended(second)
    second.status = "done"
    held, key = jobs.settle(second, "done")
    assert held is not None and held.job is second and key == "done"
    assert jobs.counts["done"] == 1 and jobs.held_attempts() == []
    assert not jobs.busy()


def test_an_older_claim_does_not_take_the_newer_claims_place_in_line() -> None:
    jobs = HeldJobs(concurrency=2, prefetch=2)
    first = claim_of(1)
    jobs.hold([(first, None)])
    assert jobs.begin(first)
    jobs.ended(first)
    second = claim_of(2)
    jobs.hold([(second, None)])  # claimed ahead: waits for a runner
    held, key = jobs.settle(first, "pending")
    assert held is not None and key == "retried"
    assert jobs.take_waiting() == [second]  # the newer claim still waits, as claimed


def test_a_completion_batch_is_settled_as_each_of_its_jobs_would_be() -> None:
    # Completer._settle settles a batch in one step (HeldJobs.settle_many): each job counted
    # once, a job no longer held (settled already, or an older claim settled apart) not
    # at all, and each counted job returned with its record for its log line.
    jobs = HeldJobs(concurrency=4)
    first, other = claim_of(1), replace(claim_of(1), id=8)
    jobs.hold([(first, None), (other, None)])
    for job in (first, other):
        assert jobs.begin(job)
        jobs.ended(job, None)
    jobs.settle(other, "done")  # settled already (as a loss would have been)
    counted = jobs.settle_many([first, other], "done")
    assert [(job, held.job) for job, held in counted] == [(first, first)]
    assert jobs.counts["done"] == 2
    assert jobs.settle_many([first, other], "done") == []  # once
    assert jobs.counts["done"] == 2 and jobs.held_attempts() == []
