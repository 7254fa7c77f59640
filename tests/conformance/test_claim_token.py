"""The claim's token: every claim writes a random ``claim_id`` with its attempt, and every
write after the claim names both. A claim that was rolled back (on one server: its
transaction; across a failover: the standby never received it) can hand the same attempt
out again, but never the same token, so the late holder's writes match nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

import skiplock

from .conftest import within


def forged(job: skiplock.Job) -> skiplock.Job:
    """*job* as a claim that holds the same id and attempt but another token would see it."""
    assert job.claim_id is not None
    other = job.claim_id - 1 if job.claim_id > 1 else 2
    return dataclasses.replace(job, claim_id=other)


def unchanged(queue: skiplock.Queue, job: skiplock.Job) -> None:
    record = queue.get(job.id)
    assert record is not None
    assert (record.status, record.attempt, record.claim_id) == (
        "running",
        job.attempt,
        job.claim_id,
    )
    assert (record.result, record.last_error, record.max_attempts) == (None, None, job.max_attempts)
    assert record.lease_until == job.lease_until


def test_each_claim_returns_a_token_and_the_record_keeps_it(queue: skiplock.Queue) -> None:
    queue.enqueue_many(["a", "b"])
    jobs = queue.claim(limit=2)
    tokens = {j.claim_id for j in jobs}
    assert None not in tokens and len(tokens) == 1  # one token names one claim
    (token,) = tokens
    assert isinstance(token, int) and 0 < token < 2**63
    for job in jobs:
        record = queue.get(job.id)
        assert record is not None and record.claim_id == token


def test_a_write_with_the_right_attempt_but_another_token_is_refused_and_changes_nothing(
    queue: skiplock.Queue,
) -> None:
    queue.enqueue("x", max_attempts=3)
    [job] = queue.claim(lease=30)
    stale = forged(job)
    writes: list[Callable[[], Any]] = [
        lambda: queue.complete(stale, result="late"),
        lambda: queue.heartbeat(stale, lease=600),
        lambda: queue.fail(stale, "late retry"),  # attempts left: a retry
        lambda: queue.fail(stale, "late failure", final=True),
        lambda: queue.release(stale),
        lambda: queue.mark_cancelled(stale, reason="late cancel"),
    ]
    for write in writes:
        with pytest.raises(skiplock.LeaseLost):
            write()
        unchanged(queue, job)
    with queue.transaction() as tx, pytest.raises(skiplock.LeaseLost):
        tx.complete(stale, result="late")
    unchanged(queue, job)
    assert [j.id for j in queue.complete_many([(stale, "late")])] == [job.id]
    unchanged(queue, job)

    queue.heartbeat(job)  # the real holder is untouched by all that
    queue.complete(job, result="ok")
    record = queue.get(job.id)
    assert record is not None and (record.status, record.result) == ("done", "ok")


def test_a_rolled_back_claim_handed_out_again_at_the_same_attempt_cannot_write(
    queue: skiplock.Queue,
) -> None:
    # What an asynchronous failover does, on one server: a claim is lost (here its
    # transaction rolls back; there the standby never received it), and the next claim
    # of the job takes the same attempt number.
    job_id = queue.enqueue("x")

    class Undo(Exception):
        pass

    with pytest.raises(Undo), queue.transaction() as tx:
        [ghost] = tx.claim(lease=30)
        raise Undo
    [live] = queue.claim(lease=30)
    assert (ghost.id, ghost.attempt) == (live.id, live.attempt) == (job_id, 1)
    assert ghost.claim_id != live.claim_id
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(ghost, result="ghost")
    with pytest.raises(skiplock.LeaseLost):
        queue.heartbeat(ghost)
    assert queue.complete_many([ghost]) == [ghost]
    unchanged(queue, live)
    queue.complete(live, result="live")
    record = queue.get(job_id)
    assert record is not None and record.result == "live"


def test_a_job_claimed_again_after_its_lease_ended_gets_another_token(
    queue: skiplock.Queue,
) -> None:
    queue.enqueue("x")
    [first] = queue.claim(lease=0.3)
    within(0.6, lambda: queue.stats().expired == 1, "the 0.3 s lease to end")
    [second] = queue.claim(lease=30)
    assert (second.id, second.attempt) == (first.id, 2)
    assert second.claim_id is not None and second.claim_id != first.claim_id
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(first)
    queue.complete(second)


def test_a_batch_completion_refuses_only_the_row_with_a_stale_token(
    queue: skiplock.Queue,
) -> None:
    queue.enqueue_many(["a", "b", "c"])
    jobs = queue.claim(limit=3, lease=30)
    stale = forged(jobs[1])
    lost = queue.complete_many([(jobs[0], {"r": 0}), stale, (jobs[2], {"r": 2})])
    assert lost == [stale]
    assert [queue.get(j.id).status for j in jobs] == ["done", "running", "done"]  # type: ignore[union-attr]
    unchanged(queue, jobs[1])
    queue.complete_many([jobs[1]])
    assert queue.get(jobs[1].id).status == "done"  # type: ignore[union-attr]


def test_a_job_claimed_before_tokens_existed_is_fenced_by_a_null_token(
    queue: skiplock.Queue,
) -> None:
    # A row claimed before the token's migration (0010_claim_token) has none: the job read
    # back for it has None, which matches only a NULL token, and a token only itself.
    queue.enqueue_many(["a", "b"])
    jobs = queue.claim(limit=2, lease=30)
    with queue.transaction() as tx:
        tx.execute(f"UPDATE {queue.dialect.table} SET claim_id = NULL")
    old = [dataclasses.replace(j, claim_id=None) for j in jobs]
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(jobs[0])  # its token is not the row's (NULL)
    queue.heartbeat(old[0])
    queue.complete(old[0], result="old")
    assert queue.complete_many([jobs[1]]) == [jobs[1]]
    assert queue.complete_many([old[1]]) == []
    assert [queue.get(j.id).status for j in jobs] == ["done", "done"]  # type: ignore[union-attr]
