"""Procrastinate's side of bench/peers.py (see peer_step.py): ``defer_async`` /
``batch_defer_async`` to enqueue, ``App.run_worker_async`` to run jobs (psycopg)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from common import Window

QUEUE = "bench"
#: Tuned: ``concurrency=30``, its "Execute multiple jobs at the same time" how-to's figure
#: for asynchronous tasks (an ``async def`` no-op here). Defaults: one job at a time.
CONFIG = {"tuned": "run_worker_async(concurrency=30)", "defaults": "run_worker_async()"}
OPTIONS: dict[str, dict[str, Any]] = {"tuned": {"concurrency": 30}, "defaults": {}}


def version() -> str:
    from importlib.metadata import version

    return version("procrastinate")


def _app(dsn: str) -> tuple[Any, Any, list[float], asyncio.Event]:
    import logging

    import procrastinate

    logging.getLogger("procrastinate").setLevel(logging.WARNING)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
    seen: list[float] = []
    started = asyncio.Event()

    @app.task(name="bench_noop", queue=QUEUE)
    async def noop() -> None:
        seen.append(time.perf_counter())
        started.set()

    return app, noop, seen, started


async def reset(dsn: str) -> None:
    app, *_ = _app(dsn)
    async with app.open_async():
        row = await app.connector.execute_query_one_async(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS ok"
        )
        if not row["ok"]:
            await app.schema_manager.apply_schema_async()
        await app.connector.execute_query_async(
            "TRUNCATE procrastinate_jobs, procrastinate_events CASCADE"
        )


async def _put(noop: Any, n: int, batch: int) -> None:
    if batch == 1:
        for _ in range(n):
            await noop.defer_async()
        return
    for i in range(0, n, batch):
        await noop.batch_defer_async(*[{} for _ in range(min(batch, n - i))])


async def fill(dsn: str, n: int, batch: int, config: str = "tuned") -> None:
    app, noop, *_ = _app(dsn)
    async with app.open_async():
        await _put(noop, n, batch)


async def enqueue(dsn: str, n: int, batch: int) -> float:
    await reset(dsn)
    app, noop, *_ = _app(dsn)
    async with app.open_async():
        await noop.defer_async()  # warm, as in a running application
        start = time.perf_counter()
        await _put(noop, n, batch)
        return time.perf_counter() - start


async def drain(dsn: str, n: int, config: str, timeout: float) -> tuple[int, float, float]:
    """``wait=False``: the worker returns once no job is left and its own are finished."""
    app, *_ = _app(dsn)
    async with app.open_async():
        window = Window()
        run = asyncio.ensure_future(
            app.run_worker_async(queues=[QUEUE], wait=False, **OPTIONS[config])
        )
        finished, _ = await asyncio.wait([run], timeout=timeout)
        seconds, cpu = window.stop()
        if not finished:
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
        row = await app.connector.execute_query_one_async(
            "SELECT count(*) AS n FROM procrastinate_jobs WHERE status = 'succeeded'"
        )
    return int(row["n"]), seconds, cpu


async def latency(dsn: str, samples: int, gap: float, timeout: float) -> list[float]:
    await reset(dsn)
    app, noop, seen, started = _app(dsn)
    async with app.open_async():
        runner = asyncio.ensure_future(
            app.run_worker_async(queues=[QUEUE], install_signal_handlers=False, **OPTIONS["tuned"])
        )
        await asyncio.sleep(1.0)  # started and idle
        out: list[float] = []
        for _ in range(samples):
            started.clear()
            start = time.perf_counter()
            await noop.defer_async()
            try:
                await asyncio.wait_for(started.wait(), timeout)
            except TimeoutError:
                break
            out.append((seen[-1] - start) * 1000)
            await asyncio.sleep(gap)
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
    return out
