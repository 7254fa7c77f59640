"""The queue's connection pool, on every backend: the bound, the wait, recycling.

Connections are counted on the server (``Dialect.count_sessions`` over the session ids the test
saw), not by asking the pool. Each test runs on ``Queue`` and on ``AsyncQueue`` (``api``, see
conftest.py: the same pool contract, one policy under both).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import skiplock
from skiplock import Job, Worker

from .aio_view import SyncView
from .conftest import drained, wait_until
from .test_single import kill_session as _kill


def session_of(q: Any, tx: Any) -> int:
    """The server's id of the session *tx* runs on (asked through the transaction, so the
    same on both APIs)."""
    row = tx.fetchone(q.dialect.sql["session_id"])
    assert row is not None
    return int(row[0])


@contextmanager
def plain(q: Any) -> Iterator[skiplock.Queue]:
    """*q*, or for a view of an AsyncQueue a sync Queue of its own on the same table."""
    if isinstance(q, skiplock.Queue):
        yield q
        return
    sync = q.sync_queue()
    try:
        yield sync
    finally:
        sync.close()


def kill_session(q: Any, session: int) -> None:
    with plain(q) as sync:
        _kill(sync, session)


def commit_now(tx: Any) -> None:
    """End the block's transaction so far, leaving it open for more."""
    if isinstance(tx, SyncView):
        tx.execute("COMMIT")  # an asyncio connection's commit() is a coroutine
    else:
        tx.connection.commit()


@contextmanager
def observer(q: Any) -> Iterator[Callable[[list[int]], int]]:
    """A function counting how many of some session ids the server still has, on a
    connection of its own (outside every pool)."""
    with plain(q) as sync, _observer(sync) as alive:
        yield alive


@contextmanager
def _observer(q: skiplock.Queue) -> Iterator[Callable[[list[int]], int]]:
    conn = q.connection()
    lock = threading.Lock()

    def alive(sessions: list[int]) -> int:
        with lock:
            n = q.dialect.count_sessions(conn, sessions)
            conn.commit()
        return n

    try:
        yield alive
    finally:
        conn.close()


def test_the_bound_is_never_exceeded(make_queue: Callable[..., skiplock.Queue]) -> None:
    queue = make_queue(max_size=3, pool_timeout=60)
    seen: set[int] = set()
    peak: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    with observer(queue) as alive:

        def work() -> None:
            try:
                for i in range(5):
                    with queue.transaction() as tx:
                        with lock:
                            seen.add(session_of(queue, tx))
                            sessions = sorted(seen)
                        tx.enqueue(i)
                        peak.append(alive(sessions))
                        time.sleep(0.02)  # hold it: twelve threads want three connections
                    queue.enqueue(i)  # the queue's own operations share the same bound
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert len(peak) == 60
        assert max(peak) <= 3  # counted by the server, while other threads held theirs
        assert len(seen) <= 3  # nothing was recycled in this short run: the same three
    assert queue.stats().pending == 120


def test_a_full_pool_raises_pool_timeout_and_writes_nothing(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    queue = make_queue(max_size=1, pool_timeout=0.3)
    with queue.transaction() as tx:
        tx.enqueue("held")
        started = time.monotonic()
        with pytest.raises(skiplock.PoolTimeout) as caught:
            queue.enqueue("waits")  # needs a second connection: there is none
        assert time.monotonic() - started >= 0.29
    err = caught.value
    assert isinstance(err, skiplock.BackendError)
    assert err.retryable and not err.connection_lost
    assert "max_size" in str(err) and "pool_timeout" in str(err)
    assert queue.stats().pending == 1  # the held transaction's job only
    queue.enqueue("now there is one")
    assert queue.stats().pending == 2


def test_a_waiting_caller_gets_the_connection_when_it_comes_back(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    queue = make_queue(max_size=1, pool_timeout=60)
    holding = threading.Event()

    def hold() -> None:
        with queue.transaction() as tx:
            tx.enqueue("first")
            holding.set()
            time.sleep(0.3)

    t = threading.Thread(target=hold)
    t.start()
    assert holding.wait(30)
    queue.enqueue("second")  # waits for the holder's connection, then runs
    t.join(30)
    assert queue.stats().pending == 2


def test_a_connection_killed_on_the_server_is_not_handed_out_again(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    queue = make_queue(max_size=1)
    with queue.transaction() as tx:
        first = session_of(queue, tx)
    with observer(queue) as alive:
        kill_session(queue, first)
        wait_until(lambda: alive([first]) == 0, timeout=30, what="the session to end")
    # A transaction is never retried: handing out the dead connection would fail it.
    with queue.transaction() as tx:
        second = session_of(queue, tx)
        tx.enqueue("after the kill")
    assert second != first
    assert queue.stats().pending == 1


def test_a_connection_lost_during_use_is_dropped_not_returned(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    queue = make_queue(max_size=1)
    with observer(queue) as alive:
        with pytest.raises(skiplock.BackendError) as caught, queue.transaction() as tx:
            first = session_of(queue, tx)
            commit_now(tx)
            kill_session(queue, first)
            wait_until(lambda: alive([first]) == 0, timeout=30, what="the session to end")
            tx.enqueue("on a dead connection")
        assert caught.value.connection_lost
        with queue.transaction() as tx:
            assert session_of(queue, tx) != first
    queue.enqueue("next")
    assert queue.stats().pending == 1


@pytest.mark.parametrize("setting", ["max_lifetime", "max_idle_time"])
def test_old_connections_are_recycled(
    make_queue: Callable[..., skiplock.Queue], setting: str
) -> None:
    queue = make_queue(max_size=2, **{setting: 0.5})
    with queue.transaction() as tx:
        first = session_of(queue, tx)
    with queue.transaction() as tx:
        assert session_of(queue, tx) == first  # young: reused
    time.sleep(0.7)
    with queue.transaction() as tx:
        second = session_of(queue, tx)
    assert second != first
    with observer(queue) as alive:  # closed, not merely set aside
        wait_until(lambda: alive([first]) == 0, timeout=30, what="the old session to end")
        assert alive([second]) == 1


def test_close_closes_every_connection_and_refuses_more(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    make_queue()  # the fixture drops the table through its first queue: not this one
    queue = make_queue(max_size=3)
    blocks = [queue.transaction() for _ in range(3)]
    sessions = [session_of(queue, block.__enter__()) for block in blocks]
    for block in blocks[:2]:
        block.__exit__(None, None, None)  # two idle, one still lent
    with observer(queue) as alive:
        assert alive(sessions) == 3
        queue.close()
        wait_until(lambda: alive(sessions) == 1, timeout=30, what="idle ones closed")
        blocks[2].__exit__(None, None, None)  # closed as it comes back
        wait_until(lambda: alive(sessions) == 0, timeout=30, what="the lent one closed")
    with pytest.raises(skiplock.ConfigurationError, match="closed"):
        queue.enqueue("after close")


def test_a_worker_at_concurrency_100_drains_through_a_small_pool(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    api: str,
) -> None:
    if api == "async":
        pytest.skip("the sync Worker over a Queue (an AsyncWorker's queue is a sync Queue)")
    # The worker's claim, its batched completions, heartbeats and failures share the pool
    # with handlers that use the queue too; none of them holds one connection while it
    # waits for another, so two are enough to drain (slowly), never a deadlock.
    queue = make_queue(max_size=2, pool_timeout=120)
    ids = queue.enqueue_many(list(range(300)))

    def handler(job: Job) -> None:
        assert queue.get(job.id) is not None  # a handler's own use of the pool
        if job.payload % 10 == 0 and job.attempt == 1:
            raise RuntimeError("fail once: a fenced retry write")

    worker = worker_cls(queue, handler, concurrency=100, lease=30, heartbeat=0.2).start()
    workers.append(worker)
    wait_until(lambda: drained(queue), timeout=120, what="the queue to drain")
    wait_until(lambda: worker.counts["done"] == 300, timeout=30, what="all 300 done")
    assert worker.counts["retried"] == 30
    assert all(queue.get(i).status == "done" for i in ids)  # type: ignore[union-attr]
