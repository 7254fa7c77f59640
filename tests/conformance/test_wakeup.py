"""Wake-ups: a job enqueued while workers wait starts at once, on every database, and none
is lost in the race between a worker going idle and an enqueue.

The producer's own back-off polls (from 50 ms up) would hide a lost wake-up, so the race
tests stretch them to seconds (``MIN_POLL``, ``poll_interval``): a job that starts within
``BOUND`` was started by the wake-up path (LISTEN/NOTIFY on PostgreSQL, the idle probe
elsewhere), and one that waited for a poll fails the test.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import skiplock
from skiplock import Job, Worker
from skiplock._worker import producer

from .conftest import wait_until

#: far below the polls of these tests (5 s), generous for a loaded machine
BOUND = 1.5
POLL = 5.0


@pytest.fixture
def no_quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The producer's first poll after activity comes after POLL, not 50 ms."""
    monkeypatch.setattr(producer, "MIN_POLL", POLL)


class Starts:
    """A handler that notes when each job started."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.cond = threading.Condition()

    def __call__(self, job: Job) -> None:
        with self.cond:
            self.at.setdefault(job.id, time.monotonic())
            self.cond.notify_all()

    def wait(self, job_id: int, timeout: float) -> float | None:
        with self.cond:
            self.cond.wait_for(lambda: job_id in self.at, timeout)
            return self.at.get(job_id)


def _start(workers: list[Worker], queue: skiplock.Queue, starts: Starts, n: int) -> None:
    for _ in range(n):
        workers.append(Worker(queue, starts, concurrency=2, lease=30, poll_interval=POLL).start())


def test_idle_workers_start_each_job_at_once(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    no_quick_polls: None,
) -> None:
    """Two idle workers; jobs enqueued one at a time from another queue (its own pool, as
    another process would be), some right after the previous job started (while the
    worker that ran it goes idle again: the race), some after a pause."""
    enqueuer = make_queue()
    starts = Starts()
    _start(workers, make_queue(), starts, 2)
    time.sleep(1.0)  # both have found the table empty and wait
    rnd = random.Random(13)
    late = []
    for i in range(80):
        began = time.monotonic()
        job_id = enqueuer.enqueue({"i": i})
        at = starts.wait(job_id, POLL * 3)
        assert at is not None, f"job {i} never started"
        if at - began > BOUND:
            late.append((i, round(at - began, 2)))
        time.sleep(rnd.choice([0, 0, 0.0005, 0.001, 0.002, 0.003, 0.01, 0.2]))
    assert not late, f"jobs that waited for a poll (index, seconds): {late}"


def test_a_burst_into_idle_workers_starts_within_the_bound(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    no_quick_polls: None,
) -> None:
    """Eight threads enqueue at once into idle workers, 5 rounds: every job starts fast."""
    enqueuer = make_queue(max_size=8)
    starts = Starts()
    _start(workers, make_queue(), starts, 2)
    time.sleep(1.0)
    for _ in range(5):
        ids: list[int] = []
        began = time.monotonic()
        threads = [
            threading.Thread(target=lambda: ids.append(enqueuer.enqueue({"n": 1})))
            for _ in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for job_id in ids:
            at = starts.wait(job_id, POLL * 3)
            assert at is not None and at - began < BOUND + 1.0, "a job waited for a poll"
        time.sleep(0.3)


@pytest.fixture
def listener(queue: skiplock.Queue) -> Iterator[object]:
    """A bare LISTEN session on the queue's channel (PostgreSQL)."""
    if not queue.dialect.supports_notify:
        pytest.skip("this database has no LISTEN/NOTIFY")
    conn = queue.dialect.listen()
    yield conn
    conn.close()


def test_enqueues_notify_only_while_a_worker_waits(
    queue: skiplock.Queue, listener: object, workers: list[Worker]
) -> None:
    """No waiting worker, no NOTIFY (so enqueuers are not made to commit one at a time);
    a waiting worker's mark makes the next enqueue notify; a stopped worker's mark goes."""
    d = queue.dialect
    queue.enqueue({"n": 1})
    assert not d.wait_notify(listener, 0.5)
    worker = Worker(queue, lambda job: None, poll_interval=POLL).start()
    workers.append(worker)
    wait_until(lambda: queue.stats().done == 1, 10, "the worker to run the first job")
    time.sleep(0.5)  # it has gone idle again and marked itself waiting
    while d.wait_notify(listener, 0.1):  # what the first job's enqueue may have sent
        pass
    queue.enqueue({"n": 2})
    assert d.wait_notify(listener, 5.0)
    wait_until(lambda: queue.stats().done == 2, 10, "the worker to run the second job")
    worker.stop(timeout=15)
    queue.enqueue({"n": 3})
    assert not d.wait_notify(listener, 0.5)


def test_an_enqueue_outside_read_committed_always_notifies(
    queue: skiplock.Queue, listener: object
) -> None:
    """The trigger's look at the marks would use a REPEATABLE READ transaction's old
    snapshot and could miss a worker that marked itself since: such an enqueue notifies."""
    with queue.transaction() as tx:
        tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        tx.enqueue({"n": 1})
    assert queue.dialect.wait_notify(listener, 5.0)
