"""Transactional use: jobs and the user's rows commit together or not at all."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

import skiplock

from .conftest import rows_in as _count
from .conftest import within


def test_complete_and_user_write_commit_together(queue: skiplock.Queue, side_table: str) -> None:
    queue.enqueue("x")
    [job] = queue.claim()
    with queue.transaction() as tx:
        tx.execute(f"INSERT INTO {side_table} (job_id, note) VALUES (%(id)s, 'ok')", {"id": job.id})
        tx.complete(job, result=1)
    assert _count(queue, side_table) == 1
    record = queue.get(job.id)
    assert record is not None and record.status == "done"


def test_lease_lost_rolls_back_the_user_write(queue: skiplock.Queue, side_table: str) -> None:
    queue.enqueue("x")
    [late] = queue.claim(lease=0.2)
    within(0.4, lambda: queue.stats().expired == 1, "the 0.2 s lease to end")
    [current] = queue.claim(lease=30)
    with pytest.raises(skiplock.LeaseLost), queue.transaction() as tx:
        tx.execute(
            f"INSERT INTO {side_table} (job_id, note) VALUES (%(id)s, 'late')", {"id": late.id}
        )
        tx.complete(late)
    assert _count(queue, side_table) == 0
    record = queue.get(current.id)
    assert record is not None and (record.status, record.attempt) == ("running", 2)


def test_enqueue_in_a_rolled_back_transaction_leaves_no_job(
    queue: skiplock.Queue, side_table: str
) -> None:
    with pytest.raises(RuntimeError), queue.transaction() as tx:
        tx.execute(f"INSERT INTO {side_table} (job_id) VALUES (1)")
        job_id = tx.enqueue("only if committed")
        raise RuntimeError("the user's work failed")
    assert queue.get(job_id) is None
    assert queue.stats().pending == 0
    assert _count(queue, side_table) == 0


def test_enqueue_on_the_users_own_connection(queue: skiplock.Queue) -> None:
    conn = queue.connection()
    try:
        job_id = queue.enqueue("mine", conn=conn)
        assert queue.claim() == []  # not committed yet: invisible to others
        conn.rollback()
        assert queue.get(job_id) is None
        job_id = queue.enqueue("mine", conn=conn)
        ids = queue.enqueue_many(["a", "b"], conn=conn)
        conn.commit()
    finally:
        conn.close()
    assert {j.id for j in queue.claim(limit=5)} == {job_id, *ids}


@pytest.mark.requires("skip_locked")
def test_a_claim_waits_for_no_transaction_that_completes_another_job(
    queue: skiplock.Queue, make_queue: Callable[..., skiplock.Queue]
) -> None:
    """A completion in the user's own open transaction locks its job's row until the user
    commits; another worker's claim of another job goes on meanwhile (on MySQL 9.7 the
    claim's compare-and-set read the claim index of a small table and waited for that row
    until its lock wait timeout)."""
    first = queue.enqueue("a")
    second = queue.enqueue("b")
    [job] = queue.claim(limit=1)
    assert job.id == first
    other = make_queue()
    with queue.transaction() as tx:
        tx.complete(job)  # held until the block ends
        done = threading.Event()
        got: list[int] = []

        def claim() -> None:
            got.extend(j.id for j in other.claim(limit=1))
            done.set()

        thread = threading.Thread(target=claim, daemon=True)
        thread.start()
        assert done.wait(10), "the claim waited for the open transaction"
    thread.join(10)
    assert got == [second]
    assert queue.get(first).status == "done"  # type: ignore[union-attr]


def test_your_blocks_and_connections_may_wait_longer_than_the_idle_limit(
    queue: skiplock.Queue, side_table: str
) -> None:
    """skiplock's pooled connections have the server end a session idle inside a
    transaction (docs/guarantees.md); a transaction() block runs your code between its
    statements, and q.connection() is yours: neither is ended, and the pool's connection
    has its limit back after the block (tests/conformance/test_lease.py)."""
    queue.enqueue("warm")  # a connection opened: the server is known
    limit = queue.dialect.idle_transaction_timeout
    if limit is None:
        pytest.skip(f"{queue.url.flavor} has no idle-transaction timeout")
    conn = queue.connection()
    try:
        cur = conn.cursor()
        cur.execute(f"INSERT INTO {side_table} (job_id, note) VALUES (1, 'own')")
        with queue.transaction() as tx:
            tx.execute(f"INSERT INTO {side_table} (job_id, note) VALUES (2, 'block')")
            time.sleep(limit + 1.5)  # idle in the block's transaction, and in conn's
            job_id = tx.enqueue({"after": "the wait"})
        cur.execute(f"INSERT INTO {side_table} (job_id, note) VALUES (3, 'own')")
        conn.commit()
        cur.close()
    finally:
        conn.close()
    assert _count(queue, side_table) == 3
    record = queue.get(job_id)
    assert record is not None and record.status == "pending"
