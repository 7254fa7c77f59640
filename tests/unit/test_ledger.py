"""The worker's ledger counts every outcome once, even when the worker claims a job again
before the thread that wrote the job's last outcome has counted it (a snooze of 0 s, or a
retry due at once: its write commits, the producer claims the job again at once, and only
then does the writing thread settle the older claim). A full conformance run caught
``worker.counts["snoozed"]`` short by one that way (tests/conformance/test_snooze.py)."""

from __future__ import annotations

from dataclasses import replace

from skiplock import Job
from skiplock._worker.ledger import Ledger


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
    ledger = Ledger(concurrency=2)
    first = claim_of(1)
    ledger.hold([(first, None)])
    assert ledger.begin(first)
    ledger.ended(first)
    first.status = "pending"  # its snooze committed; not settled yet

    second = claim_of(2)  # the same job, claimed again by this worker
    ledger.hold([(second, None)])
    assert ledger.held_attempts() == [(7, 2, None), (7, 1, None)]

    held, key = ledger.settle(first, "snoozed")
    assert held is not None and held.job is first and key == "snoozed"
    assert ledger.settle(first, "snoozed") == (None, None)  # once
    assert ledger.counts["snoozed"] == 1
    assert not ledger.begin(first)  # only the newer claim runs

    assert ledger.begin(second)
    ledger.ended(second)
    second.status = "done"
    held, key = ledger.settle(second, "done")
    assert held is not None and held.job is second and key == "done"
    assert ledger.counts["done"] == 1 and ledger.held_attempts() == []
    assert not ledger.busy()


def test_an_older_claim_does_not_take_the_newer_claims_place_in_line() -> None:
    ledger = Ledger(concurrency=2, prefetch=2)
    first = claim_of(1)
    ledger.hold([(first, None)])
    assert ledger.begin(first)
    ledger.ended(first)
    second = claim_of(2)
    ledger.hold([(second, None)])  # claimed ahead: waits for a runner
    held, key = ledger.settle(first, "pending")
    assert held is not None and key == "retried"
    assert ledger.take_waiting() == [second]  # the newer claim still waits, as claimed


def test_a_completion_batch_is_settled_as_each_of_its_jobs_would_be() -> None:
    # Completer._settle settles a batch in one step (Ledger.settle_many): each job counted
    # once, a job no longer held (settled already, or an older claim settled apart) not
    # at all, and each counted job returned with its record for its log line.
    ledger = Ledger(concurrency=4)
    first, other = claim_of(1), replace(claim_of(1), id=8)
    ledger.hold([(first, None), (other, None)])
    for job in (first, other):
        assert ledger.begin(job)
        ledger.ended(job, None)
    ledger.settle(other, "done")  # settled already (as a loss would have been)
    counted = ledger.settle_many([first, other], "done")
    assert [(job, held.job) for job, held in counted] == [(first, first)]
    assert ledger.counts["done"] == 2
    assert ledger.settle_many([first, other], "done") == []  # once
    assert ledger.counts["done"] == 2 and ledger.held_attempts() == []
