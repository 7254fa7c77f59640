"""PGQueuer's side of bench/peers.py (see peer_step.py): its ``Queries`` over asyncpg to
enqueue, its ``QueueManager`` to run jobs."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from common import PAYLOAD, Window

ENTRYPOINT = "bench_noop"
#: ``QueueManager.run``'s ``batch_size`` (jobs a dequeue takes; its default 10): its
#: "Performance Tuning" guide says to increase it for short-lived jobs; 100, the jobs a
#: claim that the other systems' tuned configurations take
CONFIG = {"tuned": "QueueManager.run(batch_size=100)", "defaults": "QueueManager.run()"}
OPTIONS: dict[str, dict[str, Any]] = {"tuned": {"batch_size": 100}, "defaults": {}}
BODY = json.dumps(PAYLOAD).encode()


def version() -> str:
    from importlib.metadata import version

    return version("pgqueuer")


async def _queries(dsn: str) -> tuple[Any, Any]:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(dsn)
    queries = Queries(AsyncpgDriver(conn))
    if not await queries.schema_is_installed():
        await queries.install()
    return conn, queries


async def reset(dsn: str) -> None:
    conn, queries = await _queries(dsn)
    await queries.clear_queue()
    await queries.clear_queue_log()
    await conn.close()


async def _put(queries: Any, n: int, batch: int) -> None:
    if batch == 1:
        for _ in range(n):
            await queries.enqueue(ENTRYPOINT, BODY, 0)
        return
    for i in range(0, n, batch):
        k = min(batch, n - i)
        await queries.enqueue([ENTRYPOINT] * k, [BODY] * k, [0] * k)


async def fill(dsn: str, n: int, batch: int, config: str = "tuned") -> None:
    conn, queries = await _queries(dsn)
    await _put(queries, n, batch)
    await conn.close()


async def enqueue(dsn: str, n: int, batch: int) -> float:
    await reset(dsn)
    conn, queries = await _queries(dsn)
    await queries.enqueue(ENTRYPOINT, BODY, 0)  # warm, as in a running application
    start = time.perf_counter()
    await _put(queries, n, batch)
    took = time.perf_counter() - start
    await conn.close()
    return took


def _manager(conn: Any) -> Any:
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    return QueueManager(Queries(AsyncpgDriver(conn)))


async def drain(dsn: str, n: int, config: str, timeout: float) -> tuple[int, float, float]:
    """``mode=drain``: the manager returns once the queue is empty and its buffered
    completions are written."""
    import asyncpg
    from pgqueuer.types import QueueExecutionMode

    conn = await asyncpg.connect(dsn)
    qm = _manager(conn)
    done = 0

    @qm.entrypoint(ENTRYPOINT)
    async def noop(job: Any) -> None:
        nonlocal done
        done += 1

    window = Window()
    run = asyncio.ensure_future(qm.run(mode=QueueExecutionMode.drain, **OPTIONS[config]))
    finished, _ = await asyncio.wait([run], timeout=timeout)
    if not finished:
        qm.shutdown.set()
    seconds, cpu = window.stop()
    await asyncio.wait_for(run, 60)
    await conn.close()
    return done, seconds, cpu


async def latency(dsn: str, samples: int, gap: float, timeout: float) -> list[float]:
    import asyncpg

    await reset(dsn)
    conn = await asyncpg.connect(dsn)
    qm = _manager(conn)
    started = asyncio.Event()
    seen: list[float] = []

    @qm.entrypoint(ENTRYPOINT)
    async def noop(job: Any) -> None:
        seen.append(time.perf_counter())
        started.set()

    runner = asyncio.ensure_future(qm.run(**OPTIONS["tuned"]))
    pconn, producer = await _queries(dsn)
    await asyncio.sleep(1.0)  # started and idle
    out: list[float] = []
    for _ in range(samples):
        started.clear()
        start = time.perf_counter()
        await producer.enqueue(ENTRYPOINT, BODY, 0)
        try:
            await asyncio.wait_for(started.wait(), timeout)
        except TimeoutError:
            break
        out.append((seen[-1] - start) * 1000)
        await asyncio.sleep(gap)
    qm.shutdown.set()
    await asyncio.wait_for(runner, 60)
    await pconn.close()
    await conn.close()
    return out
