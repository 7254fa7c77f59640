"""What only the asyncio worker does, on every backend: ``async def`` handlers on one event
loop, cancelled when given up, and ``async def`` App tasks. (Everything the two workers
share runs from the same test bodies for both: see ``conftest.py``.)"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import skiplock
from skiplock import AsyncWorker, Job

from .conftest import drained


async def until(probe: Callable[[], object], timeout: float = 15.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if probe():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or probe}")


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 60))


def test_async_handlers_run_concurrently_on_one_loop(queue: skiplock.Queue) -> None:
    ids = queue.enqueue_many([{"n": i} for i in range(5)])
    threads: set[int] = set()

    async def main() -> None:
        all_in = asyncio.Event()
        inside = 0

        async def handler(job: Job) -> Any:
            nonlocal inside
            threads.add(threading.get_ident())
            inside += 1
            if inside == 5:
                all_in.set()
            await asyncio.wait_for(all_in.wait(), 20)  # only if all five run at once
            return {"double": job.payload["n"] * 2}

        async with AsyncWorker(queue, handler, concurrency=5, lease=10) as w:
            await until(lambda: w.counts["done"] == 5, what="five completions")
        assert threads == {threading.get_ident()}  # the test's own loop ran every handler

    run(main)
    for i, job_id in enumerate(ids):
        record = queue.get(job_id)
        assert record is not None and record.status == "done"
        assert record.result == {"double": i * 2}


def test_an_async_handlers_exception_retries_then_fails(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x", max_attempts=2)

    async def handler(job: Job) -> None:
        await asyncio.sleep(0)
        raise ValueError(f"bad input {job.attempt}")

    async def main() -> None:
        w = AsyncWorker(queue, handler, lease=5).start()
        await until(lambda: w.counts["failed"] == 1, timeout=30, what="the job to fail")
        await w.stop()
        assert w.counts["retried"] == 1

    run(main)
    record = queue.get(job_id)
    assert record is not None and record.status == "failed"
    assert record.last_error == "ValueError: bad input 2"


def test_a_timeout_cancels_the_handlers_task_and_frees_its_slot(queue: skiplock.Queue) -> None:
    slow = queue.enqueue("slow", max_attempts=1, priority=0)
    quick = queue.enqueue("quick", priority=1)
    cancelled: list[int] = []

    async def handler(job: Job) -> str:
        if job.payload == "quick":
            return "quick"
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(job.id)
            raise
        return "too late"

    async def main() -> None:
        # one slot: the quick job can only run once the slow one's task is cancelled
        async with AsyncWorker(
            queue, handler, concurrency=1, lease=5, heartbeat=0.1, timeout=0.5
        ) as w:
            await until(lambda: w.counts["done"] == 1, timeout=30, what="the quick job")

    run(main)
    assert cancelled == [slow]
    slow_record, quick_record = queue.get(slow), queue.get(quick)
    assert slow_record is not None and slow_record.status == "failed"
    assert (slow_record.last_error or "").startswith("TimeoutError")
    assert quick_record is not None and quick_record.result == "quick"


def test_cancelling_run_stops_after_the_grace_and_releases(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("stuck")
    started = asyncio.Event()

    async def handler(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    async def main() -> None:
        w = AsyncWorker(queue, handler, lease=10, grace=0.5)
        task = asyncio.create_task(w.run(install_signals=False))
        await asyncio.wait_for(started.wait(), 20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert w.counts["released"] == 1

    run(main)
    record = queue.get(job_id)
    assert record is not None and record.status == "pending"


def test_async_app_tasks_run_on_both_workers(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    q = make_queue()
    app = skiplock.App(q)

    @app.task(queue="q")
    async def greet(name: str) -> str:
        await asyncio.sleep(0)
        return f"hello {name}"

    @app.task(queue="q")
    def shout(name: str) -> str:
        return name.upper()

    assert app.has_async_tasks
    first = [greet.defer("ada"), shout.defer("bob")]

    async def main() -> None:
        async with app.async_worker(lease=5) as w:
            await until(lambda: w.counts["done"] == 2, what="two completions")

    run(main)
    second = greet.defer("cy")  # the sync Worker runs an async task on a loop of its own
    w = app.worker(lease=5).start()
    try:
        deadline = time.monotonic() + 20
        while not drained(q) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        w.stop(timeout=15)
    results = [r.result for r in (q.get(i) for i in [*first, second]) if r is not None]
    assert results == ["hello ada", "BOB", "hello cy"]


@pytest.mark.parametrize("how", ["raises", "awaits-a-task-cancelled-elsewhere"])
def test_a_handlers_own_cancelled_error_is_a_failed_attempt(
    queue: skiplock.Queue, how: str
) -> None:
    """A CancelledError the worker did not cause (the handler raised it, or awaited a task
    that another task cancelled) is recorded as the attempt's failure, at once: not a task
    given up that writes nothing and leaves the job running until its lease ends."""
    bad = queue.enqueue("bad", max_attempts=1)
    again = queue.enqueue("again")

    async def handler(job: Job) -> str:
        if job.payload == "bad" or job.attempt == 1:
            if how == "raises":
                raise asyncio.CancelledError("inner task cancelled")
            inner = asyncio.get_running_loop().create_task(asyncio.sleep(60))
            asyncio.get_running_loop().call_later(0.05, inner.cancel)
            await inner
        return "second"

    async def main() -> None:
        # a lease far longer than the wait: only a recorded failure ends the jobs in time
        async with AsyncWorker(queue, handler, lease=120, heartbeat=0.5) as w:
            await until(lambda: w.counts["done"] == 1, timeout=30, what="the retried job")

    run(main)
    record = queue.get(bad)
    assert record is not None and record.status == "failed"
    assert record.last_error is not None and "CancelledError" in record.last_error
    retried = queue.get(again)
    assert retried is not None and (retried.status, retried.attempt) == ("done", 2)


@pytest.mark.parametrize("ending", ["unwinds", "returns"])
def test_a_cancel_request_cancels_an_async_handlers_task(
    queue: skiplock.Queue, ending: str
) -> None:
    """The task is cancelled; a handler that lets CancelledError through ends its job
    ``cancelled``, one that catches it and returns ends it ``done``; either way its slot is
    free for the next job."""
    job_id = queue.enqueue({"n": 1})
    seen: list[str] = []

    async def handler(job: Job) -> str:
        if job.payload["n"] == 2:
            return "next"
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("CancelledError")
            if ending == "returns":
                return "partial"
            raise
        return "never cancelled"

    async def main() -> None:
        async with AsyncWorker(queue, handler, concurrency=1, lease=30, heartbeat=0.3) as w:
            await until(lambda: queue.get(job_id).status == "running", what="the job to start")  # type: ignore[union-attr]
            assert await asyncio.to_thread(queue.cancel, job_id) == "running"
            await until(lambda: seen, what="the task to be cancelled")
            next_id = queue.enqueue({"n": 2})
            await until(lambda: queue.get(next_id).status == "done", what="the next job")  # type: ignore[union-attr]
            assert w.counts["lost"] == 0

    run(main)
    record = queue.get(job_id)
    assert record is not None and record.attempt == 1
    if ending == "returns":
        assert (record.status, record.result) == ("done", "partial")
    else:
        assert record.status == "cancelled"
        assert "its task was cancelled" in (record.last_error or "")
