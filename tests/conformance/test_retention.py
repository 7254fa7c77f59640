"""Retention: a worker deletes finished jobs older than ``retention``, in batches, one
worker of a table at a time, and counts what it deleted: in its own ``counts`` and in the
table's ``pruned`` total that every queue's ``stats()`` reads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest

import skiplock
from conformance.aio_view import Loop, SyncView
from conformance.conftest import rows_in, wait_until
from skiplock import Worker
from skiplock._worker.lifecycle import DEFAULT_RETENTION, Retention


def _finish(q: skiplock.Queue, n: int) -> list[int]:
    """*n* jobs finished now: two thirds done, the rest failed; and one cancelled."""
    cancelled = q.enqueue("never", queue="cancelled")
    assert q.cancel(cancelled) == "cancelled"
    ids = q.enqueue_many(range(n), max_attempts=1)
    for i, job in enumerate(q.claim(limit=n)):
        if i % 3 == 2:
            q.fail(job, "boom")
        else:
            q.complete(job)
    return [cancelled, *ids]


def test_a_worker_prunes_only_finished_jobs_older_than_its_retention(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    old = _finish(queue, 30)
    time.sleep(1.0)  # older than the retention below, by the database's clock
    waiting = queue.enqueue("later", delay=3600)
    pending = queue.enqueue("now", queue="elsewhere")
    held = queue.enqueue("x", queue="held", max_attempts=1)
    (running,) = queue.claim(queues="held", lease=60)
    assert running.id == held

    w = worker_cls(queue, lambda job: None, queues=["none"], retention=0.5)
    assert w.retention is not None and w.retention.batch > 0
    w.retention.batch = 7  # several batches for 30 rows
    workers.append(w.start())
    wait_until(lambda: w.counts["pruned"] == 31, timeout=30, what="31 jobs pruned")
    assert all(queue.get(i) is None for i in old)
    assert {j.id for j in queue.list_jobs()} == {waiting, held, pending}
    s = queue.stats()
    assert (s.pending, s.scheduled, s.running, s.done, s.failed, s.cancelled) == (1, 1, 1, 0, 0, 0)
    assert s.pruned == 31 and s.last_pruned_at is not None
    assert s.last_pruned_at >= queue.get(waiting).created_at  # type: ignore[union-attr,operator]


def test_the_pruned_total_is_the_tables_across_workers_and_prune_calls(
    make_queue: Callable[..., skiplock.Queue], url: str, aio_loop: Loop
) -> None:
    """Each batch adds its rows to the table's total in its own transaction: two workers'
    retention and skiplock.prune add up, and a queue of another process (a fresh Queue),
    whatever queues it asks about, reads the same total."""
    q = make_queue()
    assert (q.stats().pruned, q.stats().last_pruned_at) == (0, None)
    _finish(q, 12)
    time.sleep(0.7)
    assert Retention(q, 0.5, batch=5).run_once() == 13
    _finish(make_queue(), 6)
    time.sleep(0.7)
    assert Retention(make_queue(), 0.5, batch=4).run_once() == 7
    q.enqueue_many(range(3))
    for job in q.claim(limit=3):
        q.complete(job)
    assert skiplock.prune(q, 0, batch=2) == 3
    other = make_queue()
    assert other.stats().pruned == 23
    assert other.stats(queues="nosuch").pruned == 23  # the table's, whatever the queues
    assert other.stats().done == 0
    aq = SyncView(skiplock.connect_async(url, table=str(q.table)), aio_loop)
    try:
        s = aq.stats()
        assert (s.pruned, s.last_pruned_at) == (23, other.stats().last_pruned_at)
    finally:
        aq.close()


def test_recent_jobs_are_kept_and_none_keeps_everything(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    _finish(queue, 6)
    keeper = worker_cls(queue, lambda job: None, retention=None)
    assert keeper.retention is None
    recent = Retention(queue, 3600.0)
    assert recent.run_once() == 0
    s = queue.stats()
    assert (s.done, s.failed, s.cancelled) == (4, 2, 1)
    assert worker_cls(queue, lambda job: None).retention.keep == DEFAULT_RETENTION  # type: ignore[union-attr]
    assert worker_cls(queue, lambda job: None, retention=timedelta(days=1)).retention.keep == 86400  # type: ignore[union-attr]


def test_one_worker_prunes_at_a_time(queue: skiplock.Queue) -> None:
    _finish(queue, 12)
    time.sleep(0.7)
    first, second = Retention(queue, 0.5, batch=5), Retention(queue, 0.5, batch=5)
    entered, go_on = threading.Event(), threading.Event()
    seen: list[int | None] = []
    run = first.queue._run

    def slow_run(*args, **kwargs):  # type: ignore[no-untyped-def]
        entered.set()  # the first round holds the lock while its batch waits here
        go_on.wait(30)
        return run(*args, **kwargs)

    first.queue._run = slow_run  # type: ignore[method-assign]
    t = threading.Thread(target=lambda: seen.append(first.run_once()))
    t.start()
    try:
        assert entered.wait(30)
        assert second.run_once() is None  # skipped: the lock is held, nothing waited
        assert second.counts["pruned"] == 0 and second.rounds == 0
    finally:
        go_on.set()
        t.join(30)
    first.queue._run = run  # type: ignore[method-assign]
    assert seen == [13] and first.counts["pruned"] == 13
    assert second.run_once() == 0 and second.rounds == 1  # the lock is free again


@pytest.mark.one_table
@pytest.mark.parametrize("bad", [-1, float("nan"), "7d", True, timedelta(days=-1)])
def test_bad_retention_is_a_configuration_error(queue: skiplock.Queue, bad: object) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="retention"):
        Worker(queue, lambda job: None, retention=bad)  # type: ignore[arg-type]


def test_a_prune_forgets_rate_records_older_than_the_longest_window(
    queue: skiplock.Queue,
) -> None:
    rates = queue.dialect.quote(queue.table.rates_table)
    queue.enqueue({"n": 1}, key="customer-1", key_rate=(5, 1.0))
    assert len(queue.claim()) == 1  # its admission is recorded now
    with queue.transaction() as tx:  # a key's record no claim will prune (never seen again)
        tx.execute(
            f"INSERT INTO {rates} (queue, claimed_at, n) VALUES ('gone', '2000-01-01 00:00:00', 1)"
        )
    assert rows_in(queue, rates) == 2
    skiplock.prune(queue, older_than=3600)
    assert rows_in(queue, rates) == 1  # the old one went; this window's stays
