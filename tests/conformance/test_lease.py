"""Lease, heartbeat and fencing: a crashed worker's job comes back by itself, a live one
keeps its job, and a late worker's write never counts."""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from typing import Any

import pytest

import skiplock

from .aio_view import Loop, SyncView
from .conftest import within
from .proxy import Proxy


def leases_ended(queue: skiplock.Queue, n: int = 1) -> bool:
    return queue.stats().expired == n


def test_expired_lease_is_claimed_again_and_late_complete_is_rejected(
    queue: skiplock.Queue,
) -> None:
    job_id = queue.enqueue({"task": "charge"})
    [first] = queue.claim(lease=0.3)  # this worker "crashes": it never writes again
    assert first.attempt == 1
    assert queue.claim() == []
    within(0.6, lambda: leases_ended(queue), "the 0.3 s lease to end")
    [second] = queue.claim(lease=30)
    assert (second.id, second.attempt) == (job_id, 2)

    with pytest.raises(skiplock.LeaseLost):
        queue.complete(first, result="late")
    with pytest.raises(skiplock.LeaseLost):
        queue.heartbeat(first)
    with pytest.raises(skiplock.LeaseLost):
        queue.fail(first, "late failure")
    with pytest.raises(skiplock.LeaseLost):
        queue.release(first)
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt, record.result, record.last_error) == (
        "running",
        2,
        None,
        None,
    )

    queue.complete(second, result="ok")
    record = queue.get(job_id)
    assert record is not None and (record.status, record.result) == ("done", "ok")


def test_heartbeat_keeps_a_slow_job(queue: skiplock.Queue) -> None:
    queue.enqueue("slow")
    [job] = queue.claim(lease=1.0)  # five heartbeats a lease: room for a slow one
    stolen: list[skiplock.Job] = []
    stop = threading.Event()

    def thief() -> None:
        while not stop.is_set():
            stolen.extend(queue.claim(lease=30))
            time.sleep(0.05)

    t = threading.Thread(target=thief)
    t.start()
    try:
        deadline = time.monotonic() + 3.5  # more than three first leases
        while time.monotonic() < deadline:
            queue.heartbeat(job)
            time.sleep(0.2)
    finally:
        stop.set()
        t.join()
    assert stolen == []
    queue.complete(job)
    record = queue.get(job.id)
    assert record is not None and (record.status, record.attempt) == ("done", 1)


def test_heartbeat_moves_lease_forward(queue: skiplock.Queue) -> None:
    queue.enqueue("x")
    [job] = queue.claim(lease=1)
    before = job.lease_until
    time.sleep(0.1)
    queue.heartbeat(job, lease=10)
    assert before is not None and job.lease_until is not None
    assert (job.lease_until - before).total_seconds() > 8


def test_without_heartbeat_a_slow_job_is_taken_back(queue: skiplock.Queue) -> None:
    queue.enqueue("slow")
    [job] = queue.claim(lease=0.3)
    within(0.6, lambda: leases_ended(queue), "the 0.3 s lease to end")
    [taken] = queue.claim()
    assert taken.attempt == 2
    with pytest.raises(skiplock.LeaseLost):
        queue.heartbeat(job)


def test_spent_attempts_by_expired_leases_end_failed(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("crashy", max_attempts=2)
    for attempt in (1, 2):
        [job] = queue.claim(lease=0.2)
        assert job.attempt == attempt
        within(0.4, lambda: leases_ended(queue), "the 0.2 s lease to end")
    assert queue.claim() == []
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt) == ("failed", 2)
    assert record.last_error is not None and "lease expired" in record.last_error
    assert queue.stats().failed == 1


def test_fail_with_retries_left_comes_back_after_the_backoff(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("flaky", max_attempts=3)
    [job] = queue.claim()
    assert queue.fail(job, RuntimeError("boom"), retry_in=1.2) == "pending"
    assert queue.claim() == []
    time.sleep(0.6)
    assert queue.claim() == []
    claimed: list[skiplock.Job] = []
    within(0.9, lambda: claimed.extend(queue.claim()) or claimed, "the backoff to end")
    [again] = claimed
    assert (again.id, again.attempt) == (job_id, 2)
    assert again.last_error == "RuntimeError: boom"
    with pytest.raises(skiplock.LeaseLost):
        queue.fail(job, "late")


def test_fail_on_the_last_attempt_ends_failed(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("doomed", max_attempts=2)
    [job] = queue.claim()
    assert queue.fail(job, "first", retry_in=0) == "pending"
    [job] = queue.claim()
    assert queue.fail(job, "second", retry_in=0) == "failed"
    assert queue.claim() == []
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt, record.last_error) == ("failed", 2, "second")
    assert record.finished_at is not None


def test_release_gives_the_job_back_now(queue: skiplock.Queue) -> None:
    queue.enqueue("x")
    [job] = queue.claim(lease=60)
    queue.release(job)
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(job)
    [again] = queue.claim()
    assert (again.id, again.attempt) == (job.id, 2)


def test_a_release_uses_up_no_attempt(queue: skiplock.Queue) -> None:
    """A released claim is not one of the job's max_attempts: neither a failure nor a
    lease that ended counts it (a single-mode worker that loses its lock releases every
    job it claimed ahead, however often that happens)."""
    job_id = queue.enqueue("x", max_attempts=3)
    for _ in range(2):
        [job] = queue.claim(lease=60)
        queue.release(job)
    [job] = queue.claim(lease=60)
    assert job.attempt == 3
    assert queue.fail(job, "first", retry_in=0) == "pending"  # 1 of 3 used
    [job] = queue.claim(lease=0.3)  # this worker "crashes": 2 of 3 used when it ends
    within(0.6, lambda: leases_ended(queue), "the 0.3 s lease to end")
    [job] = queue.claim(lease=60)  # the last of the 3
    assert (job.id, job.attempt, job.status) == (job_id, 5, "running")
    assert queue.fail(job, "last", retry_in=0) == "failed"
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt, record.max_attempts, record.last_error) == (
        "failed",
        5,
        5,  # max_attempts grew by one at each release
        "last",
    )


def test_complete_many_fences_each_row_by_its_own_attempt(queue: skiplock.Queue) -> None:
    queue.enqueue_many(["a", "b", "c"])
    jobs = queue.claim(limit=3, lease=0.3)
    keep, lose = jobs[:2], jobs[2]
    for j in keep:
        queue.heartbeat(j, lease=30)
    within(0.5, lambda: leases_ended(queue), "the third job's 0.3 s lease to end")
    [retaken] = queue.claim()
    assert retaken.id == lose.id
    lost = queue.complete_many([(keep[0], {"r": 0}), keep[1], lose])
    assert [j.id for j in lost] == [lose.id]
    assert [queue.get(j.id).status for j in jobs] == ["done", "done", "running"]  # type: ignore[union-attr]
    first = queue.get(keep[0].id)
    assert first is not None and first.result == {"r": 0}


def test_error_text_is_kept_even_when_hostile(queue: skiplock.Queue) -> None:
    queue.enqueue("x")
    [job] = queue.claim()
    queue.fail(job, "quote ' semicolon ; nul \x00 surrogate \ud800 ü" + "x" * 20000, retry_in=0)
    record = queue.get(job.id)
    assert record is not None and record.last_error is not None
    assert record.last_error.startswith("quote ' semicolon ; nul \\x00 surrogate \\ud800 ü")
    assert len(record.last_error) <= 8000


def test_leases_are_measured_when_the_statement_runs_not_when_its_transaction_began(
    queue: skiplock.Queue,
) -> None:
    # A claim and a heartbeat late in a long transaction: with the transaction's clock
    # (PostgreSQL's now()) their leases would end half a second before they were written;
    # measured from the statement, a second of each is left for the checks below.
    lease, late = 1.5, 2.0
    beaten_id = queue.enqueue("heartbeated")
    [beaten] = queue.claim(lease=30)
    taken_id = queue.enqueue("claimed late")
    with queue.transaction() as tx:
        assert tx.claim(queues="nothing here") == []  # the transaction has begun
        time.sleep(late)
        tx.heartbeat(beaten, lease=lease)
        [taken] = tx.claim(lease=lease)
        assert taken.id == taken_id
    assert queue.claim(limit=10, lease=30) == []
    stats = queue.stats()
    assert (stats.running, stats.expired) == (2, 0)
    queue.complete(beaten)
    queue.complete(taken)
    assert beaten.id == beaten_id


def test_run_at_from_delay_is_measured_when_the_statement_runs(queue: skiplock.Queue) -> None:
    with queue.transaction() as tx:
        assert tx.claim(queues="nothing here") == []
        time.sleep(1.5)  # from the transaction's start, run_at would be past already
        tx.enqueue("later", delay=1.0)
    assert queue.claim() == []
    assert queue.stats().scheduled == 1


#: the servers that end a session left idle inside a transaction (dialects/*.py)
_IDLE_LIMITED = ("postgresql", "mariadb")


def test_an_ended_lease_is_claimed_while_its_holder_is_frozen_inside_a_heartbeat(
    queue: skiplock.Queue, url: str, api: str, aio_loop: Loop
) -> None:
    """A holder frozen (SIGSTOP, a path that drops packets) between its heartbeat's UPDATE
    and its COMMIT keeps that row's lock; the server ends such a session after skiplock's
    idle-transaction timeout, so another worker claims the job once its lease has ended."""
    job_id = queue.enqueue({"task": "slow"})  # a connection opened: the server is known
    assert queue.server is not None
    flavor = queue.server.product.lower()
    limit = queue.dialect.idle_transaction_timeout
    if flavor not in _IDLE_LIMITED:
        assert limit is None  # docs/guarantees.md: the job waits until the holder resumes
        pytest.skip(f"{flavor} has no idle-transaction timeout (docs/guarantees.md)")
    assert limit is not None
    with Proxy(url) as proxy:
        if api == "sync":
            # one connection: the heartbeat runs on the one a transaction() block had
            holder: Any = skiplock.connect(proxy.url, table=str(queue.table), max_size=1)
        else:
            aq = skiplock.connect_async(proxy.url, table=str(queue.table), max_size=1)
            holder = SyncView(aq, aio_loop)
        try:
            with holder.transaction() as tx:  # exempt from the limit, then given it back
                tx.enqueue({"task": "other"}, queue="elsewhere")
            [job] = holder.claim(lease=1)
            # the heartbeat's second statement: its UPDATE has run, the COMMIT is not sent
            proxy.freeze_on(b"SELECT lease_until, cancel_requested")
            beat = threading.Thread(target=_heartbeat_quietly, args=(holder, job), daemon=True)
            beat.start()
            assert proxy.frozen.wait(10), "the heartbeat never came"
            start = time.monotonic()
            again: list[skiplock.Job] = []
            while not again and time.monotonic() < start + limit + 15:
                again = queue.claim(lease=30, queues=["default"])
                time.sleep(0.2)
            assert [(j.id, j.attempt) for j in again] == [(job_id, 2)], (
                f"not claimed within {limit + 15:.0f} s of the freeze"
            )
            assert time.monotonic() - start >= 1 - 0.2  # not before the lease had ended
        finally:
            proxy.close()
            holder.close()
    beat.join(15)
    queue.complete(again[0], result="after the freeze")
    with pytest.raises(skiplock.LeaseLost):
        holder_job_write(queue, job)


def _heartbeat_quietly(holder: Any, job: skiplock.Job) -> None:
    """The frozen holder's heartbeat: it fails once its connection is gone, as it should."""
    with suppress(skiplock.SkiplockError):
        holder.heartbeat(job)


def holder_job_write(queue: skiplock.Queue, job: skiplock.Job) -> None:
    """The frozen holder, resumed, writing its outcome late (fenced: refused)."""
    queue.complete(job, result="late")
