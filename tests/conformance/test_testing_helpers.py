"""skiplock.testing on every backend: drain (the worker's outcomes, retries due at once),
isolate, assert_enqueued, and their asyncio forms."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import skiplock
from skiplock import testing


@pytest.fixture
def app(url: str) -> skiplock.App:
    """An App whose own table is never installed: only an isolated queue works."""
    return skiplock.App(url, table="skiplock_not_installed")


@pytest.fixture
def isolated(app: skiplock.App, queue: skiplock.Queue) -> Iterator[skiplock.Queue]:
    with testing.isolate(app, queue):
        yield queue


def test_drain_runs_retries_to_the_final_failure_without_the_backoff(
    app: skiplock.App, isolated: skiplock.Queue
) -> None:
    calls: list[int] = []

    @app.task(name="flaky", max_attempts=4)
    def flaky(n: int) -> None:
        calls.append(n)
        raise ValueError(f"boom {n}")

    job_id = flaky.defer(7)
    started = time.monotonic()
    [job] = testing.drain(app)
    # the back-off alone would wait 1 + 2 + 4 s (±25%); a drain writes retry_in=0
    assert time.monotonic() - started < 5.0
    assert (job.id, job.status, job.attempt, job.max_attempts) == (job_id, "failed", 4, 4)
    assert job.last_error == "ValueError: boom 7"
    assert job.finished_at is not None
    assert calls == [7, 7, 7, 7]
    assert testing.drain(app) == []  # nothing is due any more


def test_drain_returns_the_jobs_in_the_order_they_ended(
    app: skiplock.App, isolated: skiplock.Queue
) -> None:
    tries: dict[str, int] = {}

    @app.task(name="twice_then_ok")
    def twice_then_ok(name: str) -> dict[str, Any]:
        tries[name] = tries.get(name, 0) + 1
        if tries[name] < 3:
            raise RuntimeError("not yet")
        return {"name": name, "tries": tries[name]}

    @app.task(name="parent")
    def parent(n: int) -> int:
        child.defer(n + 1)  # a job enqueued by a job is drained too
        return n

    @app.task(name="child")
    def child(n: int) -> int:
        return n * 10

    first = twice_then_ok.defer("a")
    second = parent.defer(1)
    jobs = testing.drain(app)
    assert [(j.payload["task"], j.status, j.result) for j in jobs] == [
        ("parent", "done", 1),
        ("child", "done", 20),
        ("twice_then_ok", "done", {"name": "a", "tries": 3}),
    ]
    assert (jobs[0].id, jobs[2].id) == (second, first)
    assert jobs[2].attempt == 3  # two failed attempts, retried at once, then done


def test_drain_ends_jobs_as_the_worker_does(app: skiplock.App, isolated: skiplock.Queue) -> None:
    @app.task(name="discarded", max_attempts=5)
    def discarded() -> None:
        raise skiplock.Discard("bad input")

    @app.task(name="cancelled")
    def cancelled() -> None:
        raise skiplock.Cancelled("stopped")

    @app.task(name="not_json")
    def not_json() -> object:
        return object()

    @app.task(name="slow", timeout=0.05)
    def slow() -> str:
        time.sleep(0.3)  # past its timeout: a drain has no heartbeat to abandon it
        return "finished"

    ids = [discarded.defer(), cancelled.defer(), not_json.defer()]
    unknown = app.enqueue("nobody.knows", queue="default")
    late = slow.defer()
    jobs = {j.id: j for j in testing.drain(app)}
    assert (jobs[late].status, jobs[late].result) == ("done", "finished")
    assert (jobs[ids[0]].status, jobs[ids[0]].attempt) == ("failed", 1)  # no retries
    assert jobs[ids[0]].last_error == "skiplock.errors.Discard: bad input"
    assert (jobs[ids[1]].status, jobs[ids[1]].attempt) == ("cancelled", 1)
    assert (jobs[ids[2]].status, jobs[ids[2]].attempt) == ("failed", 5)
    assert "PayloadError" in (jobs[ids[2]].last_error or "")
    assert (jobs[unknown].status, jobs[unknown].attempt) == ("failed", 1)
    assert "no task named 'nobody.knows'" in (jobs[unknown].last_error or "")


def test_drain_max_jobs_queues_and_jobs_not_yet_due(
    app: skiplock.App, isolated: skiplock.Queue
) -> None:
    @app.task(name="echo")
    def echo(n: int) -> int:
        return n

    @app.task(name="mail", queue="email")
    def mail(to: str) -> str:
        return to

    ids = [echo.defer(n) for n in range(5)]
    later = echo.enqueue([99], delay=3600)
    mailed = mail.defer("ada@example.com")
    assert [j.id for j in testing.drain(app, max_jobs=2, queues=["default"])] == ids[:2]
    assert [j.id for j in testing.assert_enqueued(app, task=echo, count=4)] == [*ids[2:], later]
    assert [j.id for j in testing.drain(app, queues="email")] == [mailed]
    assert [j.id for j in testing.drain(app)] == ids[2:]  # every queue of the app's tasks
    [waiting] = testing.assert_enqueued(app, task="echo", args=[99])
    assert (waiting.id, waiting.status, waiting.attempt) == (later, "pending", 0)


def test_drain_raise_on_failure_raises_the_handlers_error(
    app: skiplock.App, isolated: skiplock.Queue
) -> None:
    @app.task(name="broken", max_attempts=2)
    def broken() -> None:
        raise KeyError("missing")

    @app.task(name="fine")
    def fine() -> None:
        pass

    failing = broken.defer()
    after = fine.defer()
    with pytest.raises(testing.JobFailed, match=r"task 'broken'\) failed after 2 of 2") as info:
        testing.drain(app, raise_on_failure=True)
    assert isinstance(info.value.__cause__, KeyError)
    assert (info.value.job.id, info.value.job.status) == (failing, "failed")
    assert isinstance(info.value, AssertionError)
    # the retried attempt was due after the job enqueued next (claims go by run_at), so
    # that one ran between the two attempts; the drain stopped at the failure
    assert testing.drain(app) == []
    job = isolated.get(after)
    assert job is not None and job.status == "done"


def test_drain_of_a_queue_takes_a_handler(queue: skiplock.Queue, app: skiplock.App) -> None:
    queue.enqueue({"order": 1})
    queue.enqueue({"order": 2}, queue="other")
    with pytest.raises(skiplock.ConfigurationError, match="drain the App"):
        testing.drain(queue)
    with pytest.raises(skiplock.ConfigurationError, match="pass handler= only with a Queue"):
        testing.drain(app, handler=lambda job: None)
    with pytest.raises(skiplock.ConfigurationError, match="App, Queue or AsyncQueue"):
        testing.drain("postgresql://x/y")  # type: ignore[arg-type]
    with pytest.raises(skiplock.ConfigurationError, match="max_jobs"):
        testing.drain(queue, handler=lambda job: None, max_jobs=0)

    async def nope(job: skiplock.Job) -> None:
        pass

    with pytest.raises(skiplock.ConfigurationError, match="drain_async"):
        testing.drain(queue, handler=nope)
    [job] = testing.drain(queue, handler=lambda job: {"seen": job.payload["order"]})
    assert (job.status, job.result, job.queue) == ("done", {"seen": 1}, "default")
    [other] = testing.drain(queue, handler=lambda job: None, queues=["other"])
    assert other.payload == {"order": 2}


def test_isolate_points_the_app_at_the_queue_and_restores_it(
    app: skiplock.App, queue: skiplock.Queue, url: str
) -> None:
    @app.task(name="note")
    def note(text: str) -> None:
        pass

    own = app.queue
    inner = skiplock.connect(url, table=f"{queue.table.name}_in")
    inner.install()
    try:
        with testing.isolate(app, queue) as entered:
            assert entered is queue and app.queue is queue
            assert str(app.async_queue.table) == str(queue.table)
            note.defer("outer")
            with testing.isolate(app, inner):
                note.defer("inner")
                # another thread sees the App isolated too (a Worker's runner, to_thread)
                done = threading.Thread(target=note.defer, args=("thread",))
                done.start()
                done.join()
            assert app.queue is queue
            note.defer("outer again")
            with pytest.raises(RuntimeError), testing.isolate(app, inner):
                raise RuntimeError("the test failed")
            assert app.queue is queue
        assert app.queue is own
        assert [j.payload["args"] for j in testing.assert_enqueued(queue, count=2)] == [
            ["outer"],
            ["outer again"],
        ]
        found = testing.assert_enqueued(inner, task="note", count=2)
        assert [j.payload["args"] for j in found] == [["inner"], ["thread"]]
    finally:
        inner.uninstall()
        inner.close()


def test_isolate_refuses_another_thread_and_a_wrong_order(
    app: skiplock.App, queue: skiplock.Queue
) -> None:
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            with testing.isolate(app, queue):
                pass
        except skiplock.ConfigurationError as exc:
            errors.append(exc)

    with testing.isolate(app, queue):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert len(errors) == 1 and "another thread" in str(errors[0])
    outer, inner = testing.isolate(app, queue), testing.isolate(app, queue)
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(skiplock.ConfigurationError, match="reverse order"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    with pytest.raises(skiplock.ConfigurationError, match=r"takes a skiplock\.Queue"):
        testing.isolate(app, "a url")  # type: ignore[arg-type]


def test_a_worker_started_inside_isolate_enqueues_into_the_queue(
    app: skiplock.App, isolated: skiplock.Queue
) -> None:
    @app.task(name="first")
    def first() -> None:
        second.defer()  # on a runner thread of the worker

    @app.task(name="second", queue="later")
    def second() -> None:
        pass

    first.defer()
    worker = app.worker(queues=["default"], poll_interval=0.05).start()
    try:
        deadline = time.monotonic() + 15
        while isolated.stats().done < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.stop(timeout=15)
    testing.assert_enqueued(app, task=second, count=1)


def test_assert_enqueued_lists_what_is_there(app: skiplock.App, isolated: skiplock.Queue) -> None:
    @app.task(name="send")
    def send(to: str, *, retries: int = 0) -> None:
        pass

    a = send.defer("ada@example.com", retries=2)
    b = send.defer("bob@example.com")
    raw = isolated.enqueue({"order": 7}, queue="orders")
    [found] = testing.assert_enqueued(app, task=send, args=("ada@example.com",))
    assert found.id == a
    assert testing.assert_enqueued(app, kwargs={}, count=1)[0].id == b
    assert testing.assert_enqueued(isolated, payload={"order": 7})[0].id == raw
    assert testing.assert_enqueued(app, count=3) != []
    with pytest.raises(AssertionError) as info:
        testing.assert_enqueued(app, task="send", args=["eve@example.com"])
    message = str(info.value)
    assert "expected at least 1 job matching task='send', args=['eve@example.com']" in message
    assert f"found 0 matching of 3:\n  job {a} [pending, queue 'default'] send(" in message
    assert "send('ada@example.com', retries=2)  <- args ['ada@example.com'] != " in message
    assert f"job {raw} [pending, queue 'orders'] payload " + '{"order": 7}  <- task differs' in (
        message
    )
    with pytest.raises(AssertionError, match=r"expected 1 job\(s\) matching task='send'"):
        testing.assert_enqueued(app, task=send, count=1)
    assert testing.assert_enqueued(app, task=send, kwargs={"retries": 3}, count=0) == []
    with pytest.raises(AssertionError, match="retries=2\\)  <- matches"):
        testing.assert_enqueued(app, task=send, kwargs={"retries": 2}, count=0)
    testing.drain(app, max_jobs=1)
    with pytest.raises(AssertionError, match="not looked at: 1 done job"):
        testing.assert_enqueued(app, task=send, args=["ada@example.com"])
    [done] = testing.assert_enqueued(app, task=send, status="done")
    assert done.id == a
    for bad in ({"args": "ada"}, {"payload": {}, "task": "send"}, {"status": "queued"}):
        with pytest.raises(skiplock.ConfigurationError):
            testing.assert_enqueued(app, **bad)
    with pytest.raises(skiplock.ConfigurationError, match="assert_enqueued_async"):
        testing.assert_enqueued(skiplock.connect_async("postgresql://h/db"))  # type: ignore[arg-type]


def test_drain_async_and_assert_enqueued_async(
    app: skiplock.App, queue: skiplock.Queue, url: str
) -> None:
    calls: list[str] = []

    @app.task(name="fetch")
    async def fetch(page: str) -> str:
        await asyncio.sleep(0)
        calls.append(page)
        return page.upper()

    @app.task(name="fails", max_attempts=3)
    async def fails() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("down")

    @app.task(name="plain")
    def plain() -> str:
        return threading.current_thread().name

    with testing.isolate(app, queue):  # no loop runs here: each async def task gets one
        fetch.defer("first")
        [first] = testing.drain(app)
        assert (first.status, first.result) == ("done", "FIRST")
    calls.clear()
    made: list[skiplock.AsyncQueue] = []

    async def run() -> list[skiplock.Job]:
        async with testing.isolate(app, queue):
            made.append(app.async_queue)
            await fetch.defer_async("home")
            await fails.defer_async()
            await plain.defer_async()
            [job] = await testing.assert_enqueued_async(app.async_queue, task=fetch)
            assert job.payload["args"] == ["home"]
            await testing.assert_enqueued_async(app, count=3)
            with pytest.raises(AssertionError, match="fetch\\('home'\\)"):
                await testing.assert_enqueued_async(app.async_queue, task=fetch, args=["x"])
            with pytest.raises(skiplock.ConfigurationError, match="drain_async"):
                testing.drain(app)  # async def tasks with a loop running here
            return await testing.drain_async(app)

    jobs = {j.payload["task"]: j for j in asyncio.run(run())}
    with pytest.raises(skiplock.ConfigurationError, match="closed"):
        asyncio.run(made[0].stats())  # the AsyncQueue made for the app: closed by async with
    assert (jobs["fetch"].status, jobs["fetch"].result) == ("done", "HOME")
    assert (jobs["fails"].status, jobs["fails"].attempt) == ("failed", 3)
    assert jobs["fails"].last_error == "ConnectionError: down"
    assert jobs["plain"].status == "done" and jobs["plain"].result != "MainThread"
    assert calls == ["home"]

    async def bare() -> list[skiplock.Job]:
        async with skiplock.connect_async(url, table=str(queue.table)) as aq:
            await aq.enqueue({"n": 2})

            async def handler(job: skiplock.Job) -> int:
                return int(job.payload["n"]) * 2

            return await testing.drain_async(aq, handler=handler)

    [job] = asyncio.run(bare())
    assert (job.status, job.result) == ("done", 4)

    async def given_an_async_queue() -> skiplock.Queue:
        async with skiplock.connect_async(url, table=str(queue.table)) as aq:
            with testing.isolate(app, aq):
                plain.defer()  # the sync queue made for the app, on aq's table
                await testing.assert_enqueued_async(aq, task=plain, count=1)
                return app.queue

    sync = asyncio.run(given_an_async_queue())
    assert sync is not queue and app.queue is not sync
    with pytest.raises(skiplock.ConfigurationError, match="closed"):
        sync.stats()  # made by isolate, closed when the block ended
