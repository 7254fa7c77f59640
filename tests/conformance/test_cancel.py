"""Cancel and discard: a cancelled pending job is never claimed; a running one sees the
request at its next heartbeat and ends ``cancelled``, fenced; Discard fails at once."""

from __future__ import annotations

import threading
import time

import pytest

import skiplock
from skiplock import Worker

from .conftest import take_away, wait_until


def test_pending_and_scheduled_jobs_are_cancelled_and_never_claimed(
    queue: skiplock.Queue,
) -> None:
    pending = queue.enqueue({"n": 1})
    scheduled = queue.enqueue({"n": 2}, delay=3600)
    assert queue.cancel(pending) == "cancelled"
    assert queue.cancel(scheduled) == "cancelled"
    assert queue.cancel(pending) == "cancelled"  # again: nothing changes
    assert queue.claim(limit=10) == []
    job = queue.get(pending)
    assert job is not None and job.status == "cancelled" and job.finished_at is not None
    s = queue.stats()
    assert (s.pending, s.scheduled, s.cancelled) == (0, 0, 2)


def test_cancel_of_a_finished_or_missing_job_changes_nothing(queue: skiplock.Queue) -> None:
    done = queue.enqueue({"n": 1})
    queue.complete(queue.claim()[0])
    assert queue.cancel(done) == "done"
    assert queue.get(done).status == "done"  # type: ignore[union-attr]
    assert queue.cancel(2**62) is None
    with pytest.raises(skiplock.ConfigurationError):
        queue.cancel("1")  # type: ignore[arg-type]


def test_a_cancelled_job_frees_its_dedupe_key(queue: skiplock.Queue) -> None:
    first = queue.enqueue({"n": 1}, dedupe_key="report")
    assert queue.cancel(first) == "cancelled"
    assert queue.enqueue({"n": 2}, dedupe_key="report") != first


def test_heartbeat_reports_the_request_and_the_handler_raises(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue({"n": 1})
    (job,) = queue.claim(lease=30)
    queue.heartbeat(job)
    assert not job.cancel_requested
    job.raise_if_cancelled()  # nothing asked yet
    assert queue.cancel(job_id) == "running"
    assert job.cancel_requested is False  # seen at the next heartbeat, not before
    queue.heartbeat(job)
    assert job.cancel_requested
    with pytest.raises(skiplock.Cancelled):
        job.raise_if_cancelled()
    queue.mark_cancelled(job)
    record = queue.get(job_id)
    assert record is not None and record.status == "cancelled"
    assert queue.claim() == []


def test_the_final_cancelled_write_is_fenced(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue({"n": 1})
    (stale,) = queue.claim(lease=0.5)
    assert queue.cancel(job_id) == "running"
    wait_until(lambda: queue.stats().expired == 1, 30, "the lease to expire")
    (again,) = queue.claim(lease=30)
    assert again.attempt == stale.attempt + 1
    assert again.cancel_requested  # the request outlives the attempt that was asked
    with pytest.raises(skiplock.LeaseLost):
        queue.mark_cancelled(stale)
    assert queue.get(job_id).status == "running"  # type: ignore[union-attr]
    queue.mark_cancelled(again, reason="stopped by the user")
    record = queue.get(job_id)
    assert record is not None and record.status == "cancelled"
    assert record.last_error == "stopped by the user"


def test_a_worker_stops_a_running_job_on_request(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    started: list[int] = []

    def handler(job: skiplock.Job) -> str:
        started.append(job.id)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            job.raise_if_cancelled()
            time.sleep(0.02)
        return "never cancelled"

    job_id = queue.enqueue({"n": 1})
    other = queue.enqueue({"n": 2}, queue="other")
    w = worker_cls(queue, handler, lease=3, heartbeat=0.2, poll_interval=0.1).start()
    workers.append(w)
    wait_until(lambda: started, 30, "the job to start")
    assert queue.cancel(job_id) == "running"
    wait_until(lambda: queue.get(job_id).status == "cancelled", 30, "the job to be cancelled")  # type: ignore[union-attr]
    wait_until(lambda: w.counts["cancelled"] == 1, 10, "the worker to count it")
    record = queue.get(job_id)
    assert record is not None and record.attempt == 1
    assert "Cancelled" in (record.last_error or "")
    assert queue.get(other).status == "pending"  # type: ignore[union-attr]


def test_discard_fails_the_job_at_once(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    def handler(job: skiplock.Job) -> None:
        raise skiplock.Discard("the address does not exist")

    job_id = queue.enqueue({"n": 1}, max_attempts=5)
    w = worker_cls(queue, handler, lease=5, poll_interval=0.1).start()
    workers.append(w)
    wait_until(lambda: queue.get(job_id).status == "failed", 30, "the job to fail")  # type: ignore[union-attr]
    record = queue.get(job_id)
    assert record is not None and record.attempt == 1
    assert "the address does not exist" in (record.last_error or "")
    # a worker counts an outcome just after its COMMIT, so the count may lag a moment
    wait_until(lambda: w.counts["failed"] == 1, 10, "the worker to count it")
    assert w.counts["retried"] == 0


def test_a_cancel_reaches_a_running_handler_at_the_heartbeat_or_by_notification(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    """Where the database has a notification channel (PostgreSQL) the request reaches the
    handler well before the next heartbeat; elsewhere at the next heartbeat."""
    heartbeat = 1.5
    started, seen = threading.Event(), threading.Event()
    asked: list[float] = []

    def handler(job: skiplock.Job) -> None:
        started.set()
        end = time.monotonic() + 60
        while not job.cancel_requested and time.monotonic() < end:
            time.sleep(0.005)
        asked.append(time.monotonic())
        seen.set()
        job.raise_if_cancelled()

    job_id = queue.enqueue({"n": 1})
    w = worker_cls(queue, handler, lease=30, heartbeat=heartbeat, poll_interval=0.1).start()
    workers.append(w)
    assert started.wait(30)
    if queue.dialect.supports_notify:  # the listener, started with the worker, is ready
        wait_until(lambda: listening(queue), 30, "the worker's LISTEN")
    assert queue.cancel(job_id) == "running"
    sent = time.monotonic()
    assert seen.wait(heartbeat + 10)
    took = asked[0] - sent
    if queue.dialect.supports_notify:
        assert took < heartbeat / 3, f"the notification took {took:.2f}s"
    else:
        assert took < heartbeat + 2.0, f"the request took {took:.2f}s"
    wait_until(lambda: w.counts["cancelled"] == 1, 30, "the job to be cancelled")
    record = queue.get(job_id)
    assert record is not None and (record.status, record.attempt) == ("cancelled", 1)


def listening(queue: skiplock.Queue) -> bool:
    """A session (the worker's listener) has run its last LISTEN, of the cancel channel
    (PostgreSQL's catalog: only dialects with supports_notify are asked)."""
    with queue.transaction() as tx:
        row = tx.fetchone(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE %(q)s",
            {"q": f'%LISTEN "{queue.table.name}_cancel"'},
        )
    return bool(row and row[0])


@pytest.mark.parametrize("ending", ["raises Cancelled", "raises ValueError", "returns"])
def test_how_the_handler_ends_after_a_cancel_request_decides_the_state(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker], ending: str
) -> None:
    """Cancelled, or any error, ends the job ``cancelled`` (never retried); a handler that
    returns anyway did its work: the job ends ``done`` with its result."""

    def handler(job: skiplock.Job) -> str:
        end = time.monotonic() + 60
        while not job.cancel_requested and time.monotonic() < end:
            time.sleep(0.01)
        if ending == "raises Cancelled":
            job.raise_if_cancelled()
        if ending == "raises ValueError":
            raise ValueError("interrupted half-way")
        return "finished anyway"

    job_id = queue.enqueue({"n": 1}, max_attempts=5)
    w = worker_cls(queue, handler, lease=5, heartbeat=0.2, poll_interval=0.1).start()
    workers.append(w)
    wait_until(lambda: queue.get(job_id).status == "running", 30, "the job to start")  # type: ignore[union-attr]
    assert queue.cancel(job_id) == "running"
    wait_until(lambda: queue.get(job_id).status != "running", 30, "the job to end")  # type: ignore[union-attr]
    record = queue.get(job_id)
    assert record is not None and record.attempt == 1
    if ending == "returns":
        assert (record.status, record.result) == ("done", "finished anyway")
        wait_until(lambda: w.counts["done"] == 1, 10, "the worker to count it")
        return
    assert record.status == "cancelled"
    wait_until(lambda: w.counts["cancelled"] == 1, 10, "the worker to count it")
    assert w.counts["retried"] == 0 and w.counts["failed"] == 0
    if ending == "raises ValueError":
        assert "ValueError: interrupted half-way" in (record.last_error or "")


def test_a_late_workers_cancelled_write_is_fenced(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    seen, go = threading.Event(), threading.Event()

    def handler(job: skiplock.Job) -> None:
        end = time.monotonic() + 60
        while not job.cancel_requested and time.monotonic() < end:
            time.sleep(0.01)
        seen.set()
        go.wait(30)
        job.raise_if_cancelled()

    job_id = queue.enqueue({"n": 1})
    w = worker_cls(queue, handler, lease=30, heartbeat=0.5, poll_interval=0.1).start()
    workers.append(w)
    wait_until(lambda: queue.get(job_id).status == "running", 30, "the job to start")  # type: ignore[union-attr]
    assert queue.cancel(job_id) == "running"
    assert seen.wait(30)
    take_away(queue, job_id)
    go.set()
    wait_until(lambda: w.counts["lost"] == 1, 30, "the loss to be counted")
    time.sleep(0.3)
    record = queue.get(job_id)
    assert record is not None and (record.status, record.attempt) == ("running", 2)
    assert w.counts["cancelled"] == 0


def test_a_worker_never_runs_a_cancelled_job_nor_one_claimed_with_a_request(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    ran: list[int] = []
    cancelled = queue.enqueue({"n": 1})
    asked = queue.enqueue({"n": 2}, priority=-1)
    (stale,) = queue.claim(lease=0.5)
    assert stale.id == asked and queue.cancel(asked) == "running"
    assert queue.cancel(cancelled) == "cancelled"
    other = queue.enqueue({"n": 3})
    wait_until(lambda: queue.stats().expired == 1, 30, "the lease to expire")
    w = worker_cls(queue, lambda job: ran.append(job.id), lease=5, poll_interval=0.1).start()
    workers.append(w)
    wait_until(lambda: queue.get(asked).status == "cancelled", 30, "the asked job to end")  # type: ignore[union-attr]
    wait_until(lambda: queue.get(other).status == "done", 30, "the other job to run")  # type: ignore[union-attr]
    assert ran == [other]
    assert queue.get(asked).attempt == 2  # type: ignore[union-attr]
    assert queue.get(cancelled).attempt == 0  # type: ignore[union-attr]
