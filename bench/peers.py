"""The peers on PostgreSQL: PGQueuer 1.6 (its own QueueManager, asyncpg) and Procrastinate
3.10 (its own worker, psycopg). Each runs in its own event loop, in the dedicated bench
database, with its own schema installed there (``pgqueuer`` / ``procrastinate_*`` tables).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from common import PAYLOAD, percentile, rate

ENTRYPOINT = "bench_noop"
BATCH = 100


# -- PGQueuer -----------------------------------------------------------------------------


async def _pgq_queries(dsn: str) -> tuple[Any, Any]:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(dsn)
    queries = Queries(AsyncpgDriver(conn))
    if not await queries.schema_is_installed():
        await queries.install()
    return conn, queries


async def _pgq_reset(dsn: str) -> None:
    conn, queries = await _pgq_queries(dsn)
    await queries.clear_queue()
    await conn.close()


async def _pgq_enqueue(dsn: str, n: int, batch: int) -> float:
    conn, queries = await _pgq_queries(dsn)
    body = json.dumps(PAYLOAD).encode()
    start = time.perf_counter()
    for i in range(0, n, batch):
        k = min(batch, n - i)
        await queries.enqueue([ENTRYPOINT] * k, [body] * k, [0] * k)
    took = time.perf_counter() - start
    await conn.close()
    return took


async def _pgq_drain(dsn: str, n: int, batch_size: int = BATCH) -> float:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    conn = await asyncpg.connect(dsn)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))
    done = 0

    @qm.entrypoint(ENTRYPOINT)
    async def noop(job: Any) -> None:
        nonlocal done
        done += 1

    start = time.perf_counter()
    await qm.run(batch_size=batch_size, mode=QueueExecutionMode.drain)
    took = time.perf_counter() - start
    await conn.close()
    if done != n:
        raise RuntimeError(f"PGQueuer ran {done} of {n} jobs")
    return took


async def _pgq_latency(dsn: str, count: int, gap: float) -> list[float]:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(dsn)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))
    seen: list[float] = []

    @qm.entrypoint(ENTRYPOINT)
    async def noop(job: Any) -> None:
        seen.append(time.time() - json.loads(job.payload)["t"])
        if len(seen) >= count:
            qm.shutdown.set()

    runner = asyncio.create_task(qm.run(batch_size=BATCH))
    pconn, producer = await _pgq_queries(dsn)
    await asyncio.sleep(0.5)  # the worker is up and idle
    for _ in range(count):
        await producer.enqueue(ENTRYPOINT, json.dumps({"t": time.time()}).encode(), 0)
        await asyncio.sleep(gap)
    await asyncio.wait_for(runner, 30)
    await pconn.close()
    await conn.close()
    return [s * 1000 for s in seen]


# -- Procrastinate ------------------------------------------------------------------------


def _proc_app(dsn: str) -> tuple[Any, Any]:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
    seen: list[float] = []

    @app.task(name="bench_noop", queue="bench")
    async def noop(t: float = 0.0) -> None:
        if t:
            seen.append(time.time() - t)

    app.seen = seen  # type: ignore[attr-defined]
    return app, noop


async def _proc_reset(dsn: str) -> None:
    app, _ = _proc_app(dsn)
    async with app.open_async():
        rows = await app.connector.execute_query_one_async(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS ok"
        )
        if not rows["ok"]:
            await app.schema_manager.apply_schema_async()
        await app.connector.execute_query_async(
            "TRUNCATE procrastinate_jobs, procrastinate_events CASCADE"
        )


async def _proc_enqueue(dsn: str, n: int, batch: int) -> float:
    app, noop = _proc_app(dsn)
    async with app.open_async():
        start = time.perf_counter()
        for i in range(0, n, batch):
            await noop.batch_defer_async(*[{} for _ in range(min(batch, n - i))])
        return time.perf_counter() - start


async def _proc_drain(dsn: str, n: int) -> float:
    app, _ = _proc_app(dsn)
    async with app.open_async():
        start = time.perf_counter()
        await app.run_worker_async(queues=["bench"], wait=False, concurrency=1)
        took = time.perf_counter() - start
        row = await app.connector.execute_query_one_async(
            "SELECT count(*) AS n FROM procrastinate_jobs WHERE status = 'succeeded'"
        )
    if row["n"] != n:
        raise RuntimeError(f"Procrastinate ran {row['n']} of {n} jobs")
    return took


async def _proc_latency(dsn: str, count: int, gap: float) -> list[float]:
    app, noop = _proc_app(dsn)
    async with app.open_async():
        runner = asyncio.create_task(app.run_worker_async(queues=["bench"], concurrency=1))
        await asyncio.sleep(0.5)
        for _ in range(count):
            await noop.defer_async(t=time.time())
            await asyncio.sleep(gap)
        deadline = time.monotonic() + 30
        while len(app.seen) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
    return [s * 1000 for s in app.seen]


# -- the public face ----------------------------------------------------------------------


class Peer:
    """One peer queue: reset, enqueue, drain and latency, each a blocking call."""

    def __init__(self, name: str, dsn: str) -> None:
        self.name = name
        self.dsn = dsn
        logging.getLogger("procrastinate").setLevel(logging.WARNING)
        logging.getLogger("pgqueuer").setLevel(logging.WARNING)
        mod = {"pgqueuer": "_pgq", "procrastinate": "_proc"}[name]
        self._fns = {k: globals()[f"{mod}_{k}"] for k in ("reset", "enqueue", "drain", "latency")}

    def enqueue(self, n: int, batch: int) -> float:
        asyncio.run(self._fns["reset"](self.dsn))
        return rate(n, asyncio.run(self._fns["enqueue"](self.dsn, n, batch)))

    def drain(self, n: int, batch: int, **options: Any) -> float:
        self.reset()
        self.fill(n, batch)
        return self.run_drain(n, **options)

    def reset(self) -> None:
        asyncio.run(self._fns["reset"](self.dsn))

    def fill(self, n: int, batch: int) -> None:
        """Enqueue *n* jobs (every connection closed afterwards)."""
        asyncio.run(self._fns["enqueue"](self.dsn, n, batch))

    def run_drain(self, n: int, **options: Any) -> float:
        """The peer's worker drains the *n* jobs already waiting; jobs/s. *options*: PGQueuer's
        ``batch_size`` (its default is 10; the drain rows use 100)."""
        return rate(n, asyncio.run(self._fns["drain"](self.dsn, n, **options)))

    def latency(self, count: int, gap: float) -> tuple[float, float]:
        asyncio.run(self._fns["reset"](self.dsn))
        seen = asyncio.run(self._fns["latency"](self.dsn, count, gap))
        return percentile(seen, 50), percentile(seen, 99)
