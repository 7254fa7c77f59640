"""Middleware around handlers: ``Worker(middleware=...)``, ``AsyncWorker`` (``async def``
middleware around ``async def`` handlers) and ``App(middleware=...)``; the first in the list
is the outermost, each sees the job and the outcome (the value or the exception)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import skiplock
from skiplock import ConfigurationError, Job, Worker

from .conftest import drained, wait_until


def test_middleware_runs_around_every_handler_in_order(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    ok = queue.enqueue({"n": 1})
    bad = queue.enqueue({"n": 0}, max_attempts=1)
    seen: list[tuple[str, int, object]] = []

    def outer(job: Job, call_next: Callable[[Job], Any]) -> Any:
        seen.append(("outer in", job.id, None))
        try:
            result = call_next(job)
        except Exception as exc:
            seen.append(("outer raised", job.id, type(exc).__name__))
            raise
        seen.append(("outer out", job.id, result))
        return result

    def inner(job: Job, call_next: Callable[[Job], Any]) -> Any:
        seen.append(("inner in", job.id, None))
        result = call_next(job)
        return {"wrapped": result}  # a middleware may change the result

    def handler(job: Job) -> Any:
        seen.append(("handler", job.id, None))
        return 10 // job.payload["n"]

    workers.append(worker_cls(queue, handler, middleware=[outer, inner], concurrency=1).start())
    wait_until(lambda: drained(queue), what="the queue to drain")
    assert (queue.get(ok) or pytest.fail()).result == {"wrapped": 10}
    assert (queue.get(bad) or pytest.fail()).status == "failed"
    assert [s for s in seen if s[1] == ok] == [
        ("outer in", ok, None),
        ("inner in", ok, None),
        ("handler", ok, None),
        ("outer out", ok, {"wrapped": 10}),
    ]
    assert [s for s in seen if s[1] == bad] == [
        ("outer in", bad, None),
        ("inner in", bad, None),
        ("handler", bad, None),
        ("outer raised", bad, "ZeroDivisionError"),
    ]


def test_async_middleware_around_an_async_handler(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("a")
    order: list[str] = []

    async def first(job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any:
        order.append("first")
        return ["first", await call_next(job)]

    async def second(job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any:
        order.append("second")
        await asyncio.sleep(0)
        return ["second", await call_next(job)]

    async def handler(job: Job) -> str:
        order.append("handler")
        return str(job.payload)

    async def main() -> None:
        async with skiplock.AsyncWorker(queue, handler, middleware=[first, second]):
            for _ in range(200):
                if drained(queue):
                    break
                await asyncio.sleep(0.05)

    asyncio.run(main())
    assert (queue.get(job_id) or pytest.fail()).result == ["first", ["second", "a"]]
    assert order == ["first", "second", "handler"]


def test_app_middleware_runs_outside_the_workers_own(
    queue: skiplock.Queue, workers: list[Worker]
) -> None:
    order: list[str] = []

    def app_mw(job: Job, call_next: Callable[[Job], Any]) -> Any:
        order.append(f"app {job.payload['task']}")
        return call_next(job)

    def worker_mw(job: Job, call_next: Callable[[Job], Any]) -> Any:
        order.append("worker")
        return call_next(job)

    app = skiplock.App(queue, middleware=[app_mw])

    @app.task(name="greet")
    def greet(who: str) -> str:
        order.append("task")
        return f"hi {who}"

    job_id = greet.defer("ada")
    workers.append(app.worker(middleware=[worker_mw], poll_interval=0.05).start())
    wait_until(lambda: drained(queue), what="the task to run")
    assert (queue.get(job_id) or pytest.fail()).result == "hi ada"
    assert order == ["app greet", "worker", "task"]


def test_app_async_middleware_on_the_async_worker(queue: skiplock.Queue) -> None:
    order: list[str] = []

    async def app_mw(job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any:
        order.append("app")
        return await call_next(job)

    app = skiplock.App(queue, middleware=[app_mw])

    @app.task(name="add")
    async def add(a: int, b: int) -> int:
        order.append("task")
        return a + b

    job_id = add.defer(2, 3)

    async def main() -> None:
        async with app.async_worker(poll_interval=0.05):
            for _ in range(200):
                if drained(queue):
                    break
                await asyncio.sleep(0.05)

    asyncio.run(main())
    assert (queue.get(job_id) or pytest.fail()).result == 5
    assert order == ["app", "task"]


def _sync_mw(job: Job, call_next: Callable[[Job], Any]) -> Any:
    return call_next(job)


async def _async_mw(job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any:
    return await call_next(job)


async def _async_handler(job: Job) -> None:
    return None


@pytest.mark.one_table
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda q: Worker(q, print, middleware=_sync_mw), "list of functions"),
        (lambda q: Worker(q, print, middleware="mw"), "list of functions"),
        (lambda q: Worker(q, print, middleware=[42]), "not callable"),
        (lambda q: Worker(q, print, middleware=[_async_mw]), "handler is sync"),
        (lambda q: Worker(q, print, middleware=[lambda job: job]), "two arguments"),
        (
            lambda q: skiplock.AsyncWorker(q, _async_handler, middleware=[_sync_mw]),
            "not an async def",
        ),
        (lambda q: skiplock.App(q, middleware=_sync_mw), "list of functions"),
    ],
)
def test_bad_middleware_is_refused(
    queue: skiplock.Queue, make: Callable[[skiplock.Queue], Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make(queue)


def test_drain_runs_the_apps_middleware(queue: skiplock.Queue) -> None:
    from skiplock import testing

    seen: list[Any] = []

    def mw(job: Job, call_next: Callable[[Job], Any]) -> Any:
        try:
            result = call_next(job)
        except Exception as exc:
            seen.append(("raised", type(exc).__name__))
            raise
        seen.append(("returned", result))
        return result

    app = skiplock.App(queue, middleware=[mw])

    @app.task(name="half", max_attempts=1)
    def half(n: int) -> float:
        return 1 / n

    half.defer(2)
    half.defer(0)
    ended = testing.drain(app)
    assert [j.status for j in ended] == ["done", "failed"]
    assert seen == [("returned", 0.5), ("raised", "ZeroDivisionError")]


def test_task_enqueue_takes_headers_and_middleware_sees_them(
    queue: skiplock.Queue, url: str
) -> None:
    from skiplock import testing

    seen: list[dict[str, str]] = []

    def mw(job: Job, call_next: Callable[[Job], Any]) -> Any:
        seen.append(job.headers)
        return call_next(job)

    app = skiplock.App(url, table=queue.table.name, middleware=[mw])

    @app.task(name="echo")
    def echo(x: str) -> str:
        return x

    sync_id = echo.enqueue(["a"], headers={"tenant": "t1"})

    async def defer_async() -> int:
        try:
            return await echo.enqueue_async(["b"], headers={"tenant": "t2"})
        finally:
            await app.async_queue.close()

    async_id = asyncio.run(defer_async())
    assert (queue.get(sync_id) or pytest.fail()).headers == {"tenant": "t1"}
    assert (queue.get(async_id) or pytest.fail()).headers == {"tenant": "t2"}
    assert [j.result for j in testing.drain(app)] == ["a", "b"]
    assert seen == [{"tenant": "t1"}, {"tenant": "t2"}]
    app.queue.close()
