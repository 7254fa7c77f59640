"""Snooze: a job put back for later without an error and without using up an attempt
(q.snooze, raise skiplock.Snooze in a handler), fenced like every write after a claim."""

from __future__ import annotations

import time
from typing import Any

import pytest

import skiplock
from skiplock import Job, Worker
from skiplock.testing import drain

from .conftest import take_away, wait_until, within


def test_snoozes_use_no_attempt_only_failures_end_the_job(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x", max_attempts=2)
    for _ in range(2):
        [job] = queue.claim()
        assert queue.snooze(job, 0) == "pending"
        assert job.status == "pending"
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.snoozes, record.last_error) == ("pending", 2, None)
    [job] = queue.claim()
    assert queue.fail(job, "first real failure", retry_in=0) == "pending"
    [job] = queue.claim()
    assert queue.fail(job, "second real failure", retry_in=0) == "failed"
    record = queue.get(job_id)
    assert record is not None
    # four claims (the fencing token grew each time), two of them failures
    assert (record.status, record.attempt, record.snoozes) == ("failed", 4, 2)
    assert record.last_error == "second real failure"


def test_a_snoozed_job_is_due_after_its_delay(queue: skiplock.Queue) -> None:
    queue.enqueue("x")
    [job] = queue.claim()
    queue.snooze(job, 0.4)
    assert queue.claim() == []
    assert queue.stats().scheduled == 1
    within(3.0, lambda: queue.stats().pending == 1, "the snoozed job due again")
    [again] = queue.claim()
    assert again.id == job.id and again.attempt == job.attempt + 1


def test_a_job_at_its_snooze_cap_ends_failed(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    for _ in range(2):
        [job] = queue.claim()
        assert queue.snooze(job, 0, max_snoozes=2) == "pending"
    [job] = queue.claim()
    assert queue.snooze(job, 0, max_snoozes=2) == "failed"
    record = queue.get(job_id)
    assert record is not None and record.status == "failed"
    assert record.last_error is not None and "max_snoozes=2" in record.last_error
    assert record.snoozes == 2


def test_a_late_snooze_after_the_lease_expired_changes_nothing(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    [old] = queue.claim(lease=0.3)
    within(3.0, lambda: queue.stats().expired == 1, "the lease to end")
    [new] = queue.claim(lease=30)
    assert new.attempt == old.attempt + 1
    with pytest.raises(skiplock.LeaseLost):
        queue.snooze(old, 10)
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt, record.snoozes) == ("running", new.attempt, 0)
    assert record.max_attempts == 5  # the late snooze gave it no extra attempt


def test_a_snooze_of_a_job_taken_away_raises_lease_lost(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    [job] = queue.claim()
    take_away(queue, job_id)
    with pytest.raises(skiplock.LeaseLost):
        queue.snooze(job, 0)
    record = queue.get(job_id)
    assert record is not None and (record.status, record.snoozes) == ("running", 0)


@pytest.mark.one_table
@pytest.mark.parametrize(
    ("seconds", "options"), [(-1, {}), (float("nan"), {}), ("1", {}), (1, {"max_snoozes": 0})]
)
def test_bad_snooze_arguments_write_nothing(
    queue: skiplock.Queue, seconds: Any, options: dict[str, Any]
) -> None:
    job_id = queue.enqueue("x")
    [job] = queue.claim()
    with pytest.raises(skiplock.ConfigurationError):
        queue.snooze(job, seconds, **options)
    record = queue.get(job_id)
    assert record is not None and (record.status, record.snoozes) == ("running", 0)


def test_snooze_exception_checks_its_arguments() -> None:
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.Snooze(-1)
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.Snooze(1, max_snoozes=0)
    assert isinstance(skiplock.Snooze(1), skiplock.SkiplockError)


def test_a_handler_snoozes_then_fails_only_after_max_attempts_failures(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    job_id = queue.enqueue("x", max_attempts=2)
    runs: list[int] = []

    def handler(job: Job) -> None:
        runs.append(job.attempt)
        if len(runs) <= 2:
            raise skiplock.Snooze(0)
        raise ValueError(f"real failure on attempt {job.attempt}")

    w = worker_cls(queue, handler, lease=5, poll_interval=0.1).start()
    workers.append(w)
    wait_until(lambda: queue.stats().failed == 1, timeout=15, what="the job to fail")
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt, record.snoozes) == ("failed", 4, 2)
    assert record.last_error == "ValueError: real failure on attempt 4"
    assert runs == [1, 2, 3, 4]
    wait_until(lambda: w.counts["failed"] == 1, what="the failure counted")
    assert (w.counts["snoozed"], w.counts["retried"]) == (2, 1)


def test_an_app_task_snoozes(queue: skiplock.Queue) -> None:
    app = skiplock.App(queue)
    runs: list[float] = []

    @app.task
    def poll_export() -> str:
        runs.append(time.monotonic())
        if len(runs) < 3:
            raise skiplock.Snooze(0)
        return "ready"

    job_id = poll_export.defer()
    [ended] = drain(app)
    assert (ended.id, ended.status, ended.result, ended.attempt) == (job_id, "done", "ready", 3)
    assert ended.snoozes == 2 and ended.last_error is None


def test_a_snooze_in_a_transaction_that_rolls_back_changes_nothing(
    queue: skiplock.Queue,
) -> None:
    job_id = queue.enqueue("x")
    [job] = queue.claim()
    with pytest.raises(RuntimeError), queue.transaction() as tx:
        tx.set_progress(job, "never seen")
        assert tx.snooze(job, 0) == "pending"
        raise RuntimeError("roll back")
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.snoozes, record.progress) == ("running", 0, None)
    with queue.transaction() as tx:
        tx.set_progress(job, "half")
    assert queue.get(job_id).progress == "half"  # type: ignore[union-attr]


def test_an_async_handler_snoozes_on_the_asyncio_worker(
    queue: skiplock.Queue, workers: list[Worker]
) -> None:
    from .conftest import LoopWorker

    job_id = queue.enqueue("x")
    runs: list[int] = []

    async def handler(job: Job) -> str:
        runs.append(job.snoozes)
        if job.snoozes < 2:
            raise skiplock.Snooze(0, max_snoozes=5)
        return "done after two snoozes"

    w = LoopWorker(queue, handler, lease=5, poll_interval=0.1).start()
    workers.append(w)  # type: ignore[arg-type]
    wait_until(lambda: queue.stats().done == 1, what="the job to finish")
    record = queue.get(job_id)
    assert record is not None
    assert (record.result, record.snoozes, record.attempt) == ("done after two snoozes", 2, 3)
    assert runs == [0, 1, 2]  # the claim reads snoozes
    wait_until(lambda: w.counts["done"] == 1, what="the completion counted")
    assert w.counts["snoozed"] == 2


def test_a_handler_at_its_snooze_cap_fails(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    job_id = queue.enqueue("x")

    def handler(job: Job) -> None:
        raise skiplock.Snooze(0, max_snoozes=3)

    w = worker_cls(queue, handler, lease=5, poll_interval=0.1).start()
    workers.append(w)
    wait_until(lambda: queue.stats().failed == 1, what="the job to fail at its cap")
    record = queue.get(job_id)
    assert record is not None and record.snoozes == 3
    assert record.last_error is not None and "max_snoozes=3" in record.last_error
    wait_until(lambda: w.counts["failed"] == 1, what="the failure counted")
    assert w.counts["snoozed"] == 3
