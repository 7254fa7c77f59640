"""Waiting for a job's end: q.wait, aq.wait, task.call."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import skiplock
from skiplock import Worker
from skiplock._shell.waits import CAP

from .conftest import wait_until


def _later(seconds: float, fn: object) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        fn()  # type: ignore[operator]

    t = threading.Thread(target=run)
    t.start()
    return t


def test_wait_returns_the_job_once_done(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    [job] = queue.claim()
    t = _later(0.2, lambda: queue.complete(job, result={"ok": True}))
    start = time.monotonic()
    done = queue.wait(job_id, timeout=10)
    t.join()
    assert (done.status, done.result) == ("done", {"ok": True})
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("end", ["failed", "cancelled"])
def test_wait_returns_a_failed_or_cancelled_job(queue: skiplock.Queue, end: str) -> None:
    job_id = queue.enqueue("x", max_attempts=1)
    if end == "cancelled":
        queue.cancel(job_id)
    else:
        [job] = queue.claim()
        queue.fail(job, "broken")
    finished = queue.wait(job_id, timeout=5)
    assert finished.status == end


def test_wait_times_out_with_the_builtin_error(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=f"job {job_id} is still pending"):
        queue.wait(job_id, timeout=0.3)
    assert 0.25 <= time.monotonic() - start < 2


def test_wait_for_no_such_job_is_a_configuration_error(queue: skiplock.Queue) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="no job 424242"):
        queue.wait(424242, timeout=1)
    with pytest.raises(skiplock.ConfigurationError):
        queue.wait(1, timeout=-1)


def test_task_call_returns_the_result_or_raises_job_failed(
    url: str, queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    app = skiplock.App(url, table=queue.table.name)

    @app.task(max_attempts=1)
    def add(a: int, b: int) -> int:
        return a + b

    @app.task(max_attempts=1)
    def broken() -> None:
        raise ValueError("no such customer")

    workers.append(
        app.worker(lease=5, poll_interval=0.1).start()
        if worker_cls is Worker
        else worker_cls(
            app.queue,
            app.handle_async,
            queues=["default"],
            timeout=app.timeout_of,
            lease=5,
            poll_interval=0.1,
        ).start()
    )
    try:
        assert add.call(2, 3, timeout=10) == 5
        with pytest.raises(skiplock.JobFailed, match="no such customer") as info:
            broken.call(timeout=10)
        assert info.value.job.status == "failed"
        assert info.value.job.last_error == "ValueError: no such customer"

        async def from_asyncio() -> int:
            try:
                result: int = await add.call_async(4, 5, timeout=10)
                return result
            finally:
                await app.async_queue.close()

        assert asyncio.run(from_asyncio()) == 9
    finally:
        for w in workers:
            w.stop(timeout=15)
        app.queue.close()


def test_a_jobs_end_notifies_only_while_someone_waits(queue: skiplock.Queue) -> None:
    """Where the dialect declares it (PostgreSQL), q.wait is woken by a notification that
    the job's end sends only when a waiter marked the job."""
    if not isinstance(queue, skiplock.Queue) or not queue.dialect.finish_notify:
        pytest.skip("the dialect has no end-of-job notification (q.wait polls)")
    listening = queue.connection()
    try:
        listening.autocommit = True
        listening.execute(queue.dialect.sql["listen_finished"])
        unwaited, waited = queue.enqueue("a"), queue.enqueue("b")
        jobs = {j.id: j for j in queue.claim(limit=2)}
        queue.complete(jobs[unwaited])
        assert list(listening.notifies(timeout=0.3, stop_after=1)) == []

        got: list[skiplock.Job] = []
        t = threading.Thread(target=lambda: got.append(queue.wait(waited, timeout=30)))
        t.start()
        table = queue.dialect.quote(queue.table.name)

        def marked() -> bool:
            with queue.transaction() as tx:
                row = tx.fetchone(f"SELECT waited FROM {table} WHERE id = %(id)s", {"id": waited})
            return bool(row and row[0])

        deadline = time.monotonic() + 10
        while not marked():
            assert time.monotonic() < deadline, "the waiter never marked the job"
            time.sleep(0.01)
        queue.complete(jobs[waited], result="b done")
        [note] = list(listening.notifies(timeout=5, stop_after=1))
        assert note.payload == str(waited)
        t.join(10)
        assert got and (got[0].status, got[0].result) == ("done", "b done")
    finally:
        listening.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_many_waits_share_one_look_up_per_tick(
    queue: skiplock.Queue, url: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where q.wait polls (forced on PostgreSQL too), 100 waits at once on one queue
    object, sync threads or asyncio tasks, cost one look-up statement per tick, not one per
    wait: once the ticks have grown to every ``CAP`` seconds, a second holds at most
    1 / CAP + 2 of them (polling per wait as before: 100 x 20). Each wait returns its job
    once a completion of all of them commits."""
    if not isinstance(queue, skiplock.Queue):
        pytest.skip("one run per kind: the kinds are this test's own parameter")
    monkeypatch.setattr(type(queue.dialect), "finish_notify", False)  # poll everywhere
    ids = queue.enqueue_many([{"i": i} for i in range(100)])

    def end_all() -> None:
        jobs = queue.claim(limit=100)
        assert len(jobs) == 100
        assert queue.complete_many([(j, j.id) for j in jobs]) == []

    window: list[tuple[float, int]] = []  # (time, look-ups so far), 1 s apart
    if kind == "sync":
        q = skiplock.connect(url, table=str(queue.table), max_size=10)
        got: list[skiplock.Job] = []
        threads = [
            threading.Thread(target=lambda i=i: got.append(q.wait(i, timeout=60))) for i in ids
        ]
        for t in threads:
            t.start()
        wait_until(lambda: q._waits.looks > 0, 30, "a first look-up")
        time.sleep(0.5)  # the waits have read their jobs once and wait; the ticks have grown
        window.append((time.monotonic(), q._waits.looks))
        time.sleep(1.0)
        window.append((time.monotonic(), q._waits.looks))
        end_all()
        for t in threads:
            t.join(60)
        q.close()
    else:

        async def waits() -> list[skiplock.Job]:
            aq = skiplock.connect_async(url, table=str(queue.table), max_size=10)
            try:
                tasks = [asyncio.ensure_future(aq.wait(i, timeout=60)) for i in ids]
                while aq._waits.looks == 0:
                    await asyncio.sleep(0.02)  # (bounded by the test's own timeout)
                await asyncio.sleep(0.5)
                window.append((time.monotonic(), aq._waits.looks))
                while aq._waits.looks == 0:
                    await asyncio.sleep(0.02)  # (bounded by the test's own timeout)
                await asyncio.sleep(0.5)
                window.append((time.monotonic(), aq._waits.looks))
                await asyncio.to_thread(end_all)
                return list(await asyncio.gather(*tasks))
            finally:
                await aq.close()

        got = asyncio.run(waits())
    assert sorted((j.id, j.status, j.result) for j in got) == [(i, "done", i) for i in ids]
    (t0, n0), (t1, n1) = window
    assert 1 <= n1 - n0 <= 2 + (t1 - t0) / CAP, f"{n1 - n0} look-ups in {t1 - t0:.2f} s"


def test_a_job_gone_while_polled_for_is_a_configuration_error(
    queue: skiplock.Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where q.wait polls (forced on PostgreSQL too): a waited job deleted meanwhile (as a
    user's DELETE would) ends the wait with ConfigurationError at the next look-up, not
    at its timeout."""
    monkeypatch.setattr(type(queue.dialect), "finish_notify", False)
    waited, other = queue.enqueue("gone"), queue.enqueue("stays")
    errors: list[BaseException] = []

    def wait(job_id: int) -> None:
        try:
            queue.wait(job_id, timeout=30)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=wait, args=(i,)) for i in (waited, other)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # both read their job once and wait
    table = queue.dialect.quote(queue.table.name)
    with queue.transaction() as tx:
        tx.execute(f"DELETE FROM {table} WHERE id = %(id)s", {"id": waited})
    start = time.monotonic()
    threads[0].join(30)
    assert time.monotonic() - start < 10
    assert len(errors) == 1 and isinstance(errors[0], skiplock.ConfigurationError), errors
    assert f"no job {waited}" in str(errors[0])
    [job] = queue.claim()
    queue.complete(job)
    threads[1].join(30)
    assert len(errors) == 1  # the other wait returned its job
