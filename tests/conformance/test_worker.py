"""The worker on every backend: outcomes, retries, lost leases, batching, wake-ups."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import skiplock
from skiplock import Job, Worker
from skiplock._worker import claiming

from .conftest import drained, take_away, wait_until, worker_log_handler


def test_return_completes_with_the_result(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    ids = queue.enqueue_many([{"n": i} for i in range(10)])
    seen: list[tuple[int, str]] = []

    def handler(job: Job) -> Any:
        seen.append((job.id, job.idempotency_key))
        return {"double": job.payload["n"] * 2}

    workers.append(worker_cls(queue, handler, concurrency=3, lease=5).start())
    wait_until(lambda: drained(queue), what="the queue to drain")
    for i, job_id in enumerate(ids):
        record = queue.get(job_id)
        assert record is not None
        assert (record.status, record.result, record.attempt) == ("done", {"double": 2 * i}, 1)
        assert (job_id, record.idempotency_key) in seen
    # counted just after the COMMIT the queue already shows
    wait_until(lambda: workers[0].counts["done"] == 10, what="ten completions counted")


def test_exception_retries_with_backoff_then_fails_with_the_last_line(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    job_id = queue.enqueue("x", max_attempts=2)
    runs: list[float] = []

    def handler(job: Job) -> None:
        runs.append(time.monotonic())
        raise ValueError(f"bad input on attempt {job.attempt}")

    workers.append(worker_cls(queue, handler, lease=5).start())
    wait_until(lambda: queue.stats().failed == 1, timeout=15, what="the job to fail")
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt) == ("failed", 2)
    assert record.last_error == "ValueError: bad input on attempt 2"
    assert len(runs) == 2
    assert runs[1] - runs[0] >= 0.7  # backoff(1) is 1 s ± 25 %, on the database's clock
    # A worker counts an outcome just after its COMMIT, so the counts may lag a moment.
    wait_until(lambda: workers[0].counts["failed"] == 1, what="the failure to be counted")
    assert workers[0].counts == {
        "done": 0,
        "retried": 1,
        "failed": 1,
        "cancelled": 0,
        "lost": 0,
        "released": 0,
        "snoozed": 0,
        "pruned": 0,
    }


def returns_once_lost(running: threading.Event, returning: threading.Event) -> Callable[[Job], str]:
    """A handler that sets *running*, waits until its job is marked lost, sets *returning*
    and returns a result (which must not be written)."""

    def handler(job: Job) -> str:
        running.set()
        wait_until(lambda: job.lost, timeout=10, what="job.lost")
        returning.set()
        return "late result"

    return handler


def test_lost_heartbeat_marks_the_job_lost_and_skips_completion(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    job_id = queue.enqueue("x")
    running, saw_lost = threading.Event(), threading.Event()
    caplog.set_level(logging.WARNING, logger="skiplock.worker")
    workers.append(worker_cls(queue, returns_once_lost(running, saw_lost), lease=1.0,
                          heartbeat=0.2).start())  # fmt: skip
    assert running.wait(10)
    take_away(queue, job_id)
    assert saw_lost.wait(10)
    wait_until(lambda: workers[0].counts["lost"] == 1, what="the loss to be counted")
    time.sleep(0.3)
    record = queue.get(job_id)
    assert record is not None
    assert (record.status, record.attempt, record.result) == ("running", 2, None)
    warnings = [r for r in caplog.records if "lost its lease" in r.getMessage()]
    assert len(warnings) == 1
    assert f"job {job_id} attempt 1" in warnings[0].getMessage()


def test_a_loss_is_counted_when_the_handler_ends_as_it_is_found(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    """The handler sees ``job.lost`` and returns while the heartbeat is still saying so in
    its log line: the loss is counted all the same (it was counted after the line, and a
    handler ending in between took the job with no outcome: a CI run failed so)."""
    job_id = queue.enqueue("x")
    running, returned = threading.Event(), threading.Event()

    class SlowLine(logging.Handler):  # the line is written once the handler has returned
        def emit(self, record: logging.LogRecord) -> None:
            if "lost its lease" in record.getMessage():
                returned.wait(10)
                time.sleep(0.3)  # its runner settles the job's end meanwhile

    with worker_log_handler(SlowLine(), logging.WARNING):
        w = worker_cls(queue, returns_once_lost(running, returned), lease=1.0, heartbeat=0.2)
        workers.append(w.start())
        assert running.wait(10)
        take_away(queue, job_id)
        assert returned.wait(10)
        wait_until(lambda: w.counts["lost"] == 1, what="the loss to be counted")
        assert w.counts["done"] == 0


def test_jobs_finishing_together_complete_in_one_batch(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue.enqueue_many(list(range(8)))
    gate = threading.Barrier(8)
    batches: list[int] = []
    real = queue.complete_many

    def counting(items: Any, **kw: Any) -> Any:
        items = list(items)
        batches.append(len(items))
        return real(items, **kw)

    monkeypatch.setattr(queue, "complete_many", counting)
    workers.append(worker_cls(queue, lambda job: gate.wait(10), concurrency=8, lease=5).start())
    wait_until(lambda: drained(queue), what="the queue to drain")
    assert sum(batches) == 8
    assert len(batches) < 8 and max(batches) > 1, batches
    assert queue.stats().done == 8


def test_a_handler_may_complete_the_job_itself(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    job_id = queue.enqueue("x")

    def handler(job: Job) -> None:
        with queue.transaction() as tx:
            tx.complete(job, result="by the handler")

    workers.append(worker_cls(queue, handler, lease=5).start())
    wait_until(lambda: workers[0].counts["done"] == 1, what="the job to be done")
    record = queue.get(job_id)
    assert record is not None and (record.status, record.result) == ("done", "by the handler")


def test_a_heartbeat_after_the_handlers_own_completion_is_not_a_lost_lease(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue.enqueue("x")

    def handler(job: Job) -> None:
        with queue.transaction() as tx:
            tx.complete(job)
        time.sleep(0.6)  # heartbeats (every 0.1 s) come before the handler returns

    worker = worker_cls(queue, handler, lease=2, heartbeat=0.1)
    workers.append(worker.start())
    wait_until(lambda: worker.counts["done"] == 1, what="the job to be done")
    assert worker.counts["lost"] == 0
    assert "lost its lease" not in caplog.text


def test_timeout_abandons_the_attempt(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    job_id = queue.enqueue("x", max_attempts=1)
    flags: list[bool] = []

    def handler(job: Job) -> str:
        wait_until(lambda: job.lost, timeout=10, what="job.lost")
        flags.append(job.lost)
        return "too late"

    workers.append(worker_cls(queue, handler, lease=5, heartbeat=0.1, timeout=0.3).start())
    wait_until(lambda: queue.stats().failed == 1, what="the job to fail")
    record = queue.get(job_id)
    assert record is not None and record.last_error is not None
    assert record.last_error.startswith("TimeoutError")
    wait_until(lambda: flags == [True], what="the handler to see job.lost")


def test_a_timeout_ends_the_attempt_at_its_deadline_not_at_the_next_heartbeat(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    """A handler that begins while the heartbeat sleeps (every 20 s here) is abandoned
    when its timeout (0.5 s) ends, not at the next beat."""
    seen: list[float] = []

    def handler(job: Job) -> None:
        began = time.monotonic()
        wait_until(lambda: job.lost, timeout=40, what="job.lost")
        seen.append(time.monotonic() - began)

    worker = worker_cls(queue, handler, lease=60, heartbeat=20, timeout=0.5)
    workers.append(worker.start())
    time.sleep(1.0)  # its heartbeat sleeps
    job_id = queue.enqueue("x", max_attempts=1)
    wait_until(lambda: seen, 40, "the handler to see job.lost")
    assert 0.5 <= seen[0] < 5.0, seen
    # job.lost is set as the timeout is seen, its fenced write follows
    wait_until(lambda: queue.stats().failed == 1, 30, "the timeout written")
    record = queue.get(job_id)
    assert record is not None and record.status == "failed"
    assert record.last_error is not None and record.last_error.startswith("TimeoutError")


@pytest.mark.parametrize(
    "timeout_of, logged",
    [
        (lambda job: 1 / 0, "raised ZeroDivisionError"),
        (lambda job: "60", "gave a bad value (timeout must be a number of seconds, not '60')"),
        (lambda job: -5, "gave a bad value (timeout must be a number of seconds greater"),
        (lambda job: float("nan"), "gave a bad value (timeout must be a number of seconds"),
    ],
)
def test_a_timeout_function_that_fails_is_logged_and_the_job_runs_without_one(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    caplog: pytest.LogCaptureFixture,
    timeout_of: Callable[[Job], Any],
    logged: str,
) -> None:
    """A ``timeout`` function is the user's code: what it raises or a bad value it returns
    (checked as a ``timeout`` given as a number is) is an error in the log, the job runs
    with no limit, and the worker goes on (before: the worker's thread died on the first,
    a runner's thread on the second, the job left running until its lease ended)."""
    first = queue.enqueue("a")
    worker = worker_cls(queue, lambda job: job.payload, timeout=timeout_of, lease=5)
    workers.append(worker.start())
    wait_until(lambda: worker.counts["done"] == 1, 30, "the job done")
    second = queue.enqueue("b")
    wait_until(lambda: worker.counts["done"] == 2, 30, "the next job done: the worker goes on")
    for job_id in (first, second):
        record = queue.get(job_id)
        assert record is not None and record.status == "done"
    assert f"job {first} attempt 1 runs with no timeout: timeout(job) {logged}" in caplog.text


def test_an_enqueue_wakes_an_idle_worker_at_once(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LISTEN/NOTIFY on PostgreSQL; elsewhere the idle worker's probe (every 25 ms)."""
    # Its poll after the first empty claim comes 5 s later: a start within 0.5 s is the
    # wake-up's (without this, the back-off from 50 ms needs 2 s of idleness for that).
    monkeypatch.setattr(claiming, "MIN_POLL", 5.0)
    done = threading.Event()
    workers.append(worker_cls(queue, lambda job: done.set(), poll_interval=20, lease=5).start())
    time.sleep(1.0)  # it has found the table empty and waits
    started = time.monotonic()
    queue.enqueue("wake up")
    assert done.wait(10)
    assert time.monotonic() - started < 0.5


def test_the_worker_survives_its_connections_being_killed(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue, theirs = make_queue(), make_queue()  # the worker's queue opens no connection yet
    ids = queue.enqueue_many(list(range(40)))
    runs: dict[int, int] = {}
    sessions: list[int] = []
    connect = theirs.dialect.connect

    def recording_connect() -> Any:  # note each new connection's server-side id
        conn = connect()
        row = theirs.dialect.fetch_one(conn, "session_id")
        conn.commit()
        assert row is not None
        sessions.append(int(row["session"]))
        return conn

    def handler(job: Job) -> None:
        runs[job.id] = runs.get(job.id, 0) + 1
        time.sleep(0.02)

    monkeypatch.setattr(theirs.dialect, "connect", recording_connect)
    workers.append(worker_cls(theirs, handler, concurrency=2, lease=1.0).start())
    killer = connect()
    try:
        for _ in range(4):  # the database drops every connection the worker has
            time.sleep(0.15)
            for session in list(sessions):
                try:  # a session that already ended is no error on every database
                    queue.dialect.kill_session(killer, session)
                except Exception:
                    killer.rollback()
    finally:
        killer.close()
    wait_until(lambda: drained(queue), timeout=30, what="the queue to drain")
    assert all(queue.get(i).status == "done" for i in ids)  # type: ignore[union-attr]
    assert set(runs) == set(ids)
    assert len(sessions) > 2  # it did connect again


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "not-committed"])
def test_a_completion_whose_commit_outcome_is_unknown_is_read_back(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    monkeypatch: pytest.MonkeyPatch,
    committed: bool,
) -> None:
    """The connection drops during COMMIT: the worker cannot know if it committed. Read
    back, a committed completion counts once; an uncommitted one is written again."""
    ids = queue.enqueue_many([1, 2, 3])
    real = queue.complete_many
    calls: list[int] = []

    def commit_then_lose_the_connection(items: Any, **kw: Any) -> Any:
        items = list(items)
        calls.append(len(items))
        if len(calls) > 1:
            return real(items, **kw)
        if committed:
            real(items, **kw)
        err = skiplock.BackendError("lost the connection while committing", retryable=True)
        err.connection_lost = True
        raise err

    monkeypatch.setattr(queue, "complete_many", commit_then_lose_the_connection)
    w = worker_cls(queue, lambda job: "ok", concurrency=3, lease=10)
    workers.append(w.start())
    wait_until(lambda: w.counts["done"] == 3, timeout=15, what="three completions")
    time.sleep(0.3)
    assert w.counts["lost"] == 0, w.counts
    for job_id in ids:
        record = queue.get(job_id)
        assert record is not None and (record.status, record.attempt) == ("done", 1)
    if not committed:
        assert len(calls) >= 2  # written again
