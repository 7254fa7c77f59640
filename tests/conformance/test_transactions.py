"""Transactional use: jobs and the user's rows commit together or not at all."""

from __future__ import annotations

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
