"""The application's own connection, through every accepted driver and framework object.

Each test runs once per (backend, client) pair (see clients.py): a job and the
application's rows commit or roll back together, whatever the driver.
"""

from __future__ import annotations

import pytest

import skiplock

from .clients import Client, by_client
from .conftest import rows_in, within

pytestmark = by_client()


def test_enqueue_commits_and_rolls_back_with_the_application(
    queue: skiplock.Queue, client: Client, side_table: str
) -> None:
    client.execute(f"INSERT INTO {side_table} (job_id) VALUES (1)")
    gone = queue.enqueue({"n": 1}, conn=client.conn)
    assert queue.get(gone) is None  # not committed: invisible to others
    client.rollback()
    assert queue.get(gone) is None and rows_in(queue, side_table) == 0

    client.execute(f"INSERT INTO {side_table} (job_id) VALUES (2)")
    kept = queue.enqueue({"n": 2}, conn=client.conn)
    many = queue.enqueue_many(["a", "b"], conn=client.conn)
    client.commit()
    assert rows_in(queue, side_table) == 1
    assert {j.id for j in queue.claim(limit=5)} == {kept, *many}


def test_fenced_complete_and_the_applications_row_commit_together(
    queue: skiplock.Queue, client: Client, side_table: str
) -> None:
    queue.enqueue({"k": "v"})
    [job] = queue.claim()
    client.execute(f"INSERT INTO {side_table} (job_id) VALUES ({job.id})")
    queue.complete(job, result={"ok": True}, conn=client.conn)
    record = queue.get(job.id)
    assert record is not None and record.status == "running"  # not yet committed
    client.commit()
    assert rows_in(queue, side_table) == 1
    record = queue.get(job.id)
    assert record is not None and (record.status, record.result) == ("done", {"ok": True})


def test_after_a_lost_lease_the_applications_row_rolls_back(
    queue: skiplock.Queue, client: Client, side_table: str
) -> None:
    queue.enqueue("x")
    [late] = queue.claim(lease=0.2)
    within(0.5, lambda: queue.stats().expired == 1, "the 0.2 s lease to end")
    [current] = queue.claim(lease=60)
    client.execute(f"INSERT INTO {side_table} (job_id) VALUES ({late.id})")
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(late, conn=client.conn)
    client.rollback()
    assert rows_in(queue, side_table) == 0
    record = queue.get(current.id)
    assert record is not None and (record.status, record.attempt) == ("running", 2)


def test_get_and_claim_through_the_applications_connection(
    queue: skiplock.Queue, client: Client
) -> None:
    job_id = queue.enqueue({"text": "é ü", "n": [1, 2.5, None]}, queue="q1")
    queue.enqueue("a JSON string", queue="q2")
    record = queue.get(job_id, conn=client.conn)
    assert record is not None and record.payload == {"text": "é ü", "n": [1, 2.5, None]}
    assert record.created_at is not None and record.created_at.tzinfo is not None
    jobs = queue.claim(queues=["q1", "q2"], limit=5, lease=60, conn=client.conn)
    assert sorted(str(j.payload) for j in jobs) == sorted(
        ["a JSON string", str({"text": "é ü", "n": [1, 2.5, None]})]
    )
    assert all(j.status == "running" and j.attempt == 1 for j in jobs)
    assert queue.claim(conn=client.conn, queues="q2") == []
    client.rollback()  # the claims were in the application's transaction
    assert queue.stats().pending == 2
    [one] = queue.claim(queues="q2", conn=client.conn)
    client.commit()
    assert one.payload == "a JSON string" and queue.stats().running == 1


def test_every_queue_method_through_conn(queue: skiplock.Queue, client: Client) -> None:
    c = client.conn
    first = queue.enqueue("first", conn=c, dedupe_key="k1")
    assert queue.enqueue("again", conn=c, dedupe_key="k1") == first
    bulk = queue.enqueue_many([{"i": i} for i in range(250)], conn=c, queue="bulk")  # COPY
    assert len(bulk) == 250 and len(set(bulk)) == 250
    ids = queue.enqueue_many(["b", "d", "e"], conn=c)
    assert queue.stats(conn=c).pending == 254 and queue.stats("bulk", conn=c).pending == 250
    jobs = queue.claim(limit=4, lease=60, conn=c)
    assert [j.id for j in jobs] == [first, *ids]
    a, b, d, e = jobs
    before = a.lease_until
    queue.heartbeat(a, lease=120, conn=c)
    assert a.lease_until is not None and before is not None and a.lease_until > before
    queue.complete(a, result=[1], conn=c)
    assert queue.complete_many([(b, {"r": 2}), d], conn=c) == []
    assert queue.fail(e, RuntimeError("boom"), retry_in=0, conn=c) == "pending"
    [again] = queue.claim(conn=c, lease=60)
    assert again.id == e.id and again.attempt == 2
    queue.release(again, conn=c)
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(a, conn=c)
    client.rollback()  # LeaseLost leaves the transaction usable only on some databases
    assert queue.stats().pending == 0  # all of it was in the rolled-back transaction


def test_every_write_through_conn_commits_with_the_application(
    queue: skiplock.Queue, client: Client
) -> None:
    c = client.conn
    ids = queue.enqueue_many(["a", "b", "c"], conn=c)
    client.commit()
    a, b, d = queue.claim(limit=3, lease=60)
    queue.heartbeat(a, conn=c)
    queue.complete(a, result="done", conn=c)
    queue.complete_many([b], conn=c)
    queue.release(d, conn=c)
    client.commit()
    stats = queue.stats()
    assert (stats.done, stats.pending) == (2, 1)
    record = queue.get(ids[0])
    assert record is not None and record.result == "done"


def test_a_transaction_block_on_the_applications_connection(
    queue: skiplock.Queue, client: Client, side_table: str
) -> None:
    queue.enqueue("x")
    with queue.transaction(conn=client.conn) as tx:
        [job] = tx.claim(lease=60)
        client.execute(f"INSERT INTO {side_table} (job_id) VALUES ({job.id})")
        tx.complete(job)
        assert tx.get(job.id) is not None and tx.stats().done == 1
    assert queue.stats().done == 0  # the block does not commit the application's work
    client.commit()
    assert queue.stats().done == 1 and rows_in(queue, side_table) == 1
