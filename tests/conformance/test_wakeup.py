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
from skiplock._worker import claiming

from .conftest import as_release, wait_until
from .test_migrations import FIXTURES, v1_statements

V4 = FIXTURES.parent / "schema_v4"  # version 4's release (its stats is version 5's too)
#: version 7's release: its statements are version 5's but for the wake-up ones and stats
V7 = FIXTURES.parent / "schema_v7"

#: far below the polls of these tests (5 s), generous for a loaded machine
BOUND = 1.5
POLL = 5.0


@pytest.fixture
def no_quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The producer's first poll after activity comes after POLL, not 50 ms."""
    monkeypatch.setattr(claiming, "MIN_POLL", POLL)


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


def _start(
    workers: list[Worker], worker_cls: type[Worker], queue: skiplock.Queue, starts: Starts, n: int
) -> None:
    for _ in range(n):
        workers.append(
            worker_cls(queue, starts, concurrency=2, lease=30, poll_interval=POLL).start()
        )


def test_idle_workers_start_each_job_at_once(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    no_quick_polls: None,
) -> None:
    """Two idle workers; jobs enqueued one at a time from another queue (its own pool, as
    another process would be), some right after the previous job started (while the
    worker that ran it goes idle again: the race), some after a pause."""
    enqueuer = make_queue()
    starts = Starts()
    _start(workers, worker_cls, make_queue(), starts, 2)
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


def test_a_job_committed_by_a_transaction_open_while_the_worker_went_idle_starts_at_once(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    no_quick_polls: None,
) -> None:
    """The race in its slowest form: a transaction enqueues while the worker is busy (so
    it notifies nobody), and stays open while the worker finishes, finds nothing and goes
    idle (on PostgreSQL it cannot be armed while that enqueuer has not ended). The job it
    commits starts at once, not at the next poll; so does the next one."""
    enqueuer = make_queue()
    starts = Starts()
    gate = threading.Event()

    def handler(job: Job) -> None:
        starts(job)
        if job.payload.get("hold"):
            gate.wait(10)

    # one slot, nothing claimed ahead: busy, it does not wait (so it is not marked) at all
    worker = worker_cls(
        make_queue(), handler, concurrency=1, prefetch=0, lease=30, poll_interval=POLL
    )
    workers.append(worker.start())
    time.sleep(1.0)  # it has found the table empty and waits
    held = enqueuer.enqueue({"hold": True})
    assert starts.wait(held, BOUND) is not None
    time.sleep(0.3)  # its producer has claimed no more and, busy, no longer waits
    with enqueuer.transaction() as tx:
        job_id = tx.enqueue({"in": "the transaction"})
        gate.set()
        time.sleep(1.5)  # the worker ends the held job, finds nothing, goes idle, and is idle
    committed = time.monotonic()
    at = starts.wait(job_id, POLL * 3)
    assert at is not None and at - committed < BOUND, f"it waited {at and at - committed} s"
    began = time.monotonic()
    after = enqueuer.enqueue({"after": True})
    at = starts.wait(after, POLL * 3)
    assert at is not None and at - began < BOUND, f"the next job waited {at and at - began} s"


def test_a_burst_into_idle_workers_starts_within_the_bound(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    no_quick_polls: None,
) -> None:
    """Eight threads enqueue at once into idle workers, 5 rounds: every job starts fast."""
    enqueuer = make_queue(max_size=8)
    starts = Starts()
    _start(workers, worker_cls, make_queue(), starts, 2)
    time.sleep(1.0)
    for _ in range(5):
        ids: list[int] = []

        def enqueue(into: list[int] = ids) -> None:
            into.append(enqueuer.enqueue({"n": 1}))

        began = time.monotonic()
        threads = [threading.Thread(target=enqueue) for _ in range(8)]
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
    conn = queue.dialect.wake_listen()
    yield conn
    conn.close()


def test_enqueues_notify_only_while_a_worker_waits(
    queue: skiplock.Queue, listener: object, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    """No waiting worker, no NOTIFY (so enqueuers are not made to commit one at a time);
    a waiting worker's mark makes the next enqueue notify; a stopped worker's mark goes."""
    d = queue.dialect
    queue.enqueue({"n": 1})
    assert not d.wake_wait(listener, 0.5)
    worker = worker_cls(queue, lambda job: None, poll_interval=POLL).start()
    workers.append(worker)
    wait_until(lambda: queue.stats().done == 1, 10, "the worker to run the first job")
    time.sleep(0.5)  # it has gone idle again and marked itself waiting
    while d.wake_wait(listener, 0.1):  # what the first job's enqueue may have sent
        pass
    queue.enqueue({"n": 2})
    assert d.wake_wait(listener, 5.0)
    wait_until(lambda: queue.stats().done == 2, 10, "the worker to run the second job")
    worker.stop(timeout=15)
    queue.enqueue({"n": 3})
    assert not d.wake_wait(listener, 0.5)


def test_an_enqueue_outside_read_committed_always_notifies(
    queue: skiplock.Queue, listener: object
) -> None:
    """The trigger's look at the marks would use a REPEATABLE READ transaction's old
    snapshot and could miss a worker that marked itself since: such an enqueue notifies."""
    with queue.transaction() as tx:
        tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        tx.enqueue({"n": 1})
    assert queue.dialect.wake_wait(listener, 5.0)


def test_upgrade_from_version_5_keeps_every_job_and_wakes_idle_workers(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    no_quick_polls: None,
) -> None:
    """Schema version 6 (PostgreSQL: the conditional NOTIFY and ``<table>_idle``; a no-op
    elsewhere) on a table of version 5 holding jobs in every state, while enqueues go on:
    nothing lost or changed, fencing intact, and idle workers are woken afterwards."""
    setup = make_queue()
    setup.uninstall()
    assert setup.migrate(to=5) == [1, 2, 3, 4, 5]
    old = make_queue()  # version 5's statements are version 7's release's, bar the wake-up
    # ones and stats, which reads version 7's counters table: version 5's is version 4's
    as_release(old, {**v1_statements(old, V7), "stats": v1_statements(old, V4)["stats"]})
    old._schema_ok = True
    done_id = old.enqueue({"state": "done"})
    old.complete(old.claim()[0])
    failed_id = old.enqueue({"state": "failed"}, max_attempts=1)
    old.fail(old.claim()[0], "boom")
    cancelled_id = old.enqueue({"state": "cancelled"}, queue="other")
    assert old.cancel(cancelled_id) == "cancelled"
    live_id = old.enqueue({"state": "live"}, queue="held")
    (live,) = old.claim(queues="held", lease=300)
    # a job claimed before the token's migration has none (MySQL's dialect code, which the
    # simulation keeps, fills in the token its statements would have written)
    live.claim_id = None
    stale_id = old.enqueue({"state": "expired"}, priority=-1)
    (stale,) = old.claim(lease=0.5)
    scheduled_id = old.enqueue({"state": "scheduled"}, delay=3600)
    pending = old.enqueue_many([{"n": i} for i in range(20)])
    wait_until(lambda: old.stats().expired == 1, 30, "the short lease to expire")
    listen = old.dialect.wake_listen() if old.dialect.supports_notify else None
    try:
        if listen is not None:  # version 5 notifies at every enqueue
            old.enqueue({"state": "pending"}, queue="other")
            assert old.dialect.wake_wait(listen, 5.0)
        before = old.stats()
        during: list[int] = []
        stop = threading.Event()

        def enqueue_meanwhile() -> None:
            while not stop.is_set():
                during.append(old.enqueue({"during": True}, queue="other"))

        t = threading.Thread(target=enqueue_meanwhile)
        t.start()
        try:
            time.sleep(0.1)
            assert make_queue().migrate(to=6) == [6]
            make_queue().migrate()  # any later version
            time.sleep(0.1)
        finally:
            stop.set()
            t.join(30)
        new = make_queue()
        assert new.schema_version() == new.schema.latest
        after = new.stats()
        assert (after.done, after.failed, after.running, after.expired, after.scheduled) == (
            before.done,
            before.failed,
            before.running,
            before.expired,
            before.scheduled,
        )
        assert after.pending == before.pending + len(during)
        assert all(new.get(i) is not None for i in during)
        for job_id, status in [
            (done_id, "done"),
            (failed_id, "failed"),
            (cancelled_id, "cancelled"),
            (scheduled_id, "pending"),
        ]:
            assert new.get(job_id).status == status  # type: ignore[union-attr]
        if listen is not None:
            while old.dialect.wake_wait(listen, 0.1):
                pass
            new.enqueue({"state": "pending"}, queue="other")  # nobody waits: no NOTIFY
            assert not old.dialect.wake_wait(listen, 0.5)
    finally:
        if listen is not None:
            listen.close()
    starts = Starts()
    workers.append(worker_cls(new, starts, concurrency=4, lease=30, poll_interval=POLL).start())
    wait_until(lambda: all(i in starts.at for i in [*pending, stale_id]), 60, "the drain")
    with pytest.raises(skiplock.LeaseLost):  # fencing: the expired attempt is rejected
        old.complete(stale)
    assert new.get(stale_id).attempt == 2  # type: ignore[union-attr]
    new.complete(live, result="kept")  # the live lease held through the upgrade
    assert new.get(live_id).status == "done"  # type: ignore[union-attr]
    time.sleep(1.0)  # idle again
    began = time.monotonic()
    job_id = new.enqueue({"after": "upgrade"})
    at = starts.wait(job_id, POLL * 3)
    assert at is not None and at - began < BOUND
