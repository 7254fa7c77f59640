"""An App made from a Queue or an AsyncQueue: both halves on that queue's URL, table and
settings, whatever ``$SKIPLOCK_URL`` says (unset, or another database)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest
from conftest import new_database

import skiplock

MakeQueue = Callable[..., skiplock.Queue]
LIMITS = {"queue_limits": {"capped": 1}, "rate_limits": {"slow": (50, 60.0)}}
POOL = {"max_size": 3, "pool_timeout": 7.5}


@pytest.fixture(params=["unset", "another-database"])
def elsewhere(
    request: pytest.FixtureRequest, url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """``$SKIPLOCK_URL`` unset, or naming another database (with the default table in it)."""
    if request.param == "unset":
        monkeypatch.delenv("SKIPLOCK_URL", raising=False)
        yield
        return
    with new_database(url, "app_elsewhere") as other:
        with skiplock.connect(other) as q:
            q.install()
        monkeypatch.setenv("SKIPLOCK_URL", other)
        yield


@pytest.mark.parametrize("given", ["Queue", "AsyncQueue"])
def test_an_app_made_from_a_queue_keeps_its_url_table_and_limits_in_both_halves(
    make_queue: MakeQueue, url: str, given: str, elsewhere: None
) -> None:
    q = make_queue(**LIMITS, **POOL)

    async def run() -> None:
        aq = skiplock.connect_async(url, table=str(q.table), **LIMITS, **POOL)  # type: ignore[arg-type]
        app = skiplock.App(q if given == "Queue" else aq)

        @app.task(name="double", queue="capped")
        async def double(x: int) -> int:
            return 2 * x

        @app.task(name="plus", queue="slow")
        def plus(x: int) -> int:
            return x + 1

        try:
            for half in (app.queue, app.async_queue):
                assert (str(half.url), half.table) == (str(q.url), q.table)
                assert (half.queue_limits, half.rate_limits) == (q.queue_limits, q.rate_limits)
                assert half.pool_settings == q.pool_settings  # max_size 3, pool_timeout 7.5
            first = await double.defer_async(1)
            flow = await skiplock.chain(double.s(4), plus.s()).enqueue_async()
            second = plus.defer(2)
            assert all(q.get(i) is not None for i in (first, second, *flow.ids))
            worker = app.async_worker(poll_interval=0.05)
            assert (worker.queue.table, worker.queue.rate_limits) == (q.table, q.rate_limits)
            assert worker.prefetch == 0  # limited queues: nothing claimed ahead
            async with worker:
                assert await double.call_async(5, timeout=60) == 10
                assert await flow.wait_async(timeout=60) == 9
                for job_id, result in ((first, 2), (second, 3)):
                    job = await app.async_queue.wait(job_id, timeout=60)
                    assert (job.status, job.result) == ("done", result)
            assert q.stats().done == 5  # every job in q's table, none elsewhere
        finally:
            await aq.close()
            await app.async_queue.close()
            if given == "AsyncQueue":
                app.queue.close()

    asyncio.run(run())


def test_what_belongs_to_a_given_queue_is_refused_beside_it(make_queue: MakeQueue) -> None:
    q = make_queue()
    for name, value in (("table", "other"), *LIMITS.items()):
        with pytest.raises(skiplock.ConfigurationError, match=f"pass {name} to the queue"):
            skiplock.App(q, **{name: value})  # type: ignore[arg-type]
    with pytest.raises(skiplock.ConfigurationError, match=r"a database URL, a skiplock\.Queue"):
        skiplock.App(42)  # type: ignore[arg-type]
