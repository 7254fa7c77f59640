"""Large batches: enqueue_many keeps ids, order, options and the caller's transaction
whichever way the dialect writes them (PostgreSQL switches to COPY for large batches)."""

from __future__ import annotations

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
