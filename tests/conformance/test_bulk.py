"""Large batches: enqueue_many keeps ids, order, options and the caller's transaction
whichever way the dialect writes them (PostgreSQL switches to COPY for large batches)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest

import skiplock

SIZES = [199, 200, 1500]


@pytest.mark.one_table
@pytest.mark.parametrize("size", SIZES)
def test_large_batch_keeps_ids_order_and_options(queue: skiplock.Queue, size: int) -> None:
    payloads = [{"i": i, "s": "é\u2028\\\t\n'\"" * (i % 3)} for i in range(size)]
    ids = queue.enqueue_many(payloads, queue="bulk", priority=3, max_attempts=2)
    assert len(set(ids)) == size and ids == sorted(ids)
    claimed = queue.claim(queues="bulk", limit=size)
    assert [j.id for j in claimed] == ids
    assert [j.payload for j in claimed] == payloads
    assert {(j.priority, j.max_attempts, j.attempt) for j in claimed} == {(3, 2, 1)}
    assert len({j.idempotency_key for j in claimed}) == size
    assert not queue.complete_many(claimed)
    assert queue.stats().done == size


def test_large_delayed_batch_waits_on_the_database_clock(queue: skiplock.Queue) -> None:
    queue.enqueue_many(range(300), delay=60)
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    queue.enqueue_many(range(300), run_at=later)
    assert queue.claim(limit=1000) == []
    assert queue.stats().scheduled == 600


def test_large_batch_in_a_rolled_back_transaction_leaves_nothing(queue: skiplock.Queue) -> None:
    with pytest.raises(RuntimeError), queue.transaction() as tx:
        assert len(tx.enqueue_many(range(500))) == 500
        raise RuntimeError("roll back")
    assert queue.stats().pending == 0
    ids = queue.enqueue_many(range(500))
    assert len(ids) == 500 and queue.stats().pending == 500


def test_batches_enqueued_at_once_each_get_their_own_ids(queue: skiplock.Queue) -> None:
    """Four threads enqueue batches at the same time: every id a call returns is the job it
    gave, in its order. (MySQL reads a batch's ids back from its first id by the primary
    key; with innodb_autoinc_lock_mode=2, its default, other inserts can take ids in
    between, and those rows are not the batch's.)"""
    barrier = threading.Barrier(4)
    got: dict[int, list[tuple[list[int], list[dict[str, int]]]]] = {}

    def produce(t: int) -> None:
        barrier.wait()
        for b in range(10):
            payloads = [{"t": t, "b": b, "i": i} for i in range(200)]
            got.setdefault(t, []).append((queue.enqueue_many(payloads), payloads))

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = {j.id: j.payload for j in queue.claim(limit=10_000)}
    assert len(claimed) == 8000
    for batches in got.values():
        assert len(batches) == 10
        for ids, payloads in batches:
            assert ids == sorted(ids)
            assert [claimed[i] for i in ids] == payloads
