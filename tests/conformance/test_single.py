"""Single-worker mode on every backend: one advisory lock, held on its own connection."""

from __future__ import annotations

import threading
import time

import pytest

import skiplock
from skiplock import Job, Worker

from .conftest import drained, wait_until


def kill_session(queue: skiplock.Queue, session: int) -> None:
    conn = queue.connection()
    try:
        queue.dialect.kill_session(conn, session)
    finally:
        conn.close()


@pytest.mark.requires("lock_timeouts")  # the second worker asks for the lock every second
def test_second_worker_waits_then_takes_over_when_the_lock_connection_dies(
    make_queue: object, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    q1, q2 = make_queue(), make_queue()  # type: ignore[operator]
    if not q1.dialect.supports_lock():
        pytest.skip("this database has no advisory-lock statements")
    ran: dict[str, list[int]] = {"first": [], "second": []}

    def handler_for(name: str) -> object:
        def handler(job: Job) -> None:
            ran[name].append(job.id)

        return handler

    first = worker_cls(q1, handler_for("first"), mode="single", lease=1.5, heartbeat=0.2)
    workers.append(first.start())
    assert first.lock is not None
    wait_until(lambda: first.lock.held, what="the first worker to hold the lock")  # type: ignore[union-attr]
    second = worker_cls(q2, handler_for("second"), mode="single", lease=1.5, heartbeat=0.2)
    workers.append(second.start())
    assert second.lock is not None
    q1.enqueue_many(list(range(5)))
    wait_until(lambda: drained(q1), what="the first batch")
    assert len(ran["first"]) == 5 and ran["second"] == []
    assert not second.lock.held  # still waiting

    session = first.lock.session_id()
    assert session is not None
    kill_session(q1, session)
    wait_until(lambda: second.lock.held, what="the second worker to take the lock")
    wait_until(lambda: not first.lock.held, what="the first worker to notice")  # type: ignore[union-attr]
    time.sleep(0.3)
    ids = q1.enqueue_many(list(range(5, 10)))
    wait_until(lambda: drained(q1), what="the second batch")
    assert sorted(ran["second"]) == ids
    assert not set(ids) & set(ran["first"])
    assert not first.lock.held  # it waits behind the second one now


def test_no_wait_raises_lock_not_acquired(
    make_queue: object, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    q1, q2 = make_queue(), make_queue()  # type: ignore[operator]
    if not q1.dialect.supports_lock():
        pytest.skip("this database has no advisory-lock statements")
    first = worker_cls(q1, lambda job: None, mode="single")
    workers.append(first.start())
    wait_until(lambda: first.lock.held, what="the first worker to hold the lock")  # type: ignore[union-attr]
    second = worker_cls(q2, lambda job: None, mode="single", wait_for_lock=False)
    with pytest.raises(skiplock.LockNotAcquired, match="another worker holds"):
        second.run(install_signals=False)


def test_the_lock_is_released_when_the_worker_stops(
    make_queue: object, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    q1, q2 = make_queue(), make_queue()  # type: ignore[operator]
    if not q1.dialect.supports_lock():
        pytest.skip("this database has no advisory-lock statements")
    first = worker_cls(q1, lambda job: None, mode="single").start()
    wait_until(lambda: first.lock.held, what="the lock")  # type: ignore[union-attr]
    first.stop(timeout=10)
    second = worker_cls(q2, lambda job: None, mode="single", wait_for_lock=False)
    done = threading.Event()
    second_thread = threading.Thread(target=lambda: (second.run(install_signals=False), done.set()))
    second_thread.start()
    wait_until(lambda: second.lock.held, what="the second worker to take the free lock")  # type: ignore[union-attr]
    second.stop()
    second_thread.join(10)
    assert done.is_set()


def session_gone(queue: skiplock.Queue, session: int) -> bool:
    conn = queue.connection()
    try:
        row = queue.dialect.fetch_one(conn, "count_sessions", {"sessions": [session]})
        conn.commit()
    finally:
        conn.close()
    return row is not None and int(row["n"]) == 0


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "not-committed"])
def test_a_claim_whose_commit_lost_the_lock_connection_uses_up_no_attempt(
    make_queue: object,
    workers: list[Worker],
    worker_cls: type[Worker],
    monkeypatch: pytest.MonkeyPatch,
    committed: bool,
) -> None:
    """The lock's connection dies while the claim commits: the worker cannot know whether
    it took the job (the server may have committed and died before answering). A job it
    took that way was never run, so it must not cost an attempt: with max_attempts=1 it
    still runs, once, and ends done (it used to sit out its lease unheartbeated, then end
    failed with "lease expired" without its handler ever running)."""
    q, probe = make_queue(), make_queue()  # type: ignore[operator]
    if not q.dialect.supports_lock():
        pytest.skip("this database has no advisory-lock statements")
    job_id = probe.enqueue("once", max_attempts=1)
    real = q.claim
    cut: list[int] = []

    def claim_then_lose_the_lock_connection(**kw: object) -> list[Job]:
        jobs = real(**kw)  # type: ignore[arg-type]
        conn = kw.get("conn")
        if cut or conn is None or not jobs:
            return jobs
        row = q.dialect.fetch_one(conn, "session_id")
        assert row is not None
        session = int(row["session"])
        if committed:  # the server commits, then the connection dies before it answers
            conn.commit()
            # a transaction open again, so the worker's COMMIT goes to the server (a driver
            # may skip a COMMIT with no transaction open) and finds the connection gone
            q.dialect.fetch_one(conn, "session_id")
        kill_session(probe, session)
        wait_until(lambda: session_gone(probe, session), what="the lock connection to end")
        cut.append(session)
        return jobs  # the worker's COMMIT now fails: its outcome is unknown

    monkeypatch.setattr(q, "claim", claim_then_lose_the_lock_connection)
    ran: list[int] = []
    w = worker_cls(q, lambda job: ran.append(job.attempt), mode="single", lease=2.0, heartbeat=0.2)
    workers.append(w.start())
    wait_until(lambda: cut, what="a claim on the lock connection")
    # before it counted the attempt, the claim's lease (2 s) and the hand-over's wait for
    # it (one more lease) had to pass: 15 s is plenty either way
    wait_until(lambda: drained(probe), timeout=15, what="the job to be done or failed")
    record = probe.get(job_id)
    assert record is not None
    assert (record.status, record.last_error) == ("done", None), record
    assert len(ran) == 1  # it ran once: the lost claim never ran it
    if committed:  # claimed twice, counted once
        assert (record.attempt, record.max_attempts) == (2, 2)
    else:  # the lost claim rolled back
        assert (record.attempt, record.max_attempts) == (1, 1)
