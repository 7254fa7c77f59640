"""oban-py's side of bench/peers.py (see peer_step.py): ``Oban.enqueue`` /
``enqueue_many`` to enqueue, an ``Oban`` instance with a queue (embedded, as its
"Running Embedded" guide starts one) to run jobs. It needs Python 3.12 or later."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from common import PAYLOAD, Window, wait_finished
from oban import Oban, worker

QUEUE = "bench"
#: A queue's limit is how many of its jobs run at once (``Producer``'s default 10, the
#: figure its guides configure); "I/O-bound jobs (like sending emails) can often use higher
#: concurrency" (its "Defining Queues" guide): 100, as the others' tuned configurations.
CONFIG = {"tuned": "queues={'bench': 100}", "defaults": "queues={'bench': 10}"}
LIMITS = {"tuned": 100, "defaults": 10}
#: the handler's starts; the event it sets after each (latency) and once TARGET jobs ran
SEEN: list[float] = []
STARTED: asyncio.Event | None = None
TARGET = 0


@worker(queue=QUEUE)
class Noop:
    async def process(self, job: Any) -> None:
        SEEN.append(time.perf_counter())
        if STARTED is not None and len(SEEN) >= TARGET:
            STARTED.set()


def version() -> str:
    from importlib.metadata import version

    return version("oban")


async def _pool(dsn: str) -> Any:
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(conninfo=dsn, min_size=1, max_size=10, open=False)
    await pool.open()
    return pool


async def reset(dsn: str) -> None:
    from oban.schema import install

    pool = await _pool(dsn)
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT to_regclass('oban_jobs') IS NOT NULL")
        row = await cur.fetchone()
    if not row[0]:
        await install(pool)
    async with pool.connection() as conn:
        await conn.execute("TRUNCATE oban_jobs")
    await pool.close()


async def _put(oban: Any, n: int, batch: int) -> None:
    if batch == 1:
        for _ in range(n):
            await oban.enqueue(Noop.new(PAYLOAD))
        return
    for i in range(0, n, batch):
        await oban.enqueue_many([Noop.new(PAYLOAD) for _ in range(min(batch, n - i))])


async def fill(dsn: str, n: int, batch: int, config: str = "tuned") -> None:
    pool = await _pool(dsn)
    await _put(Oban(pool=pool), n, batch)
    await pool.close()


async def enqueue(dsn: str, n: int, batch: int) -> float:
    await reset(dsn)
    pool = await _pool(dsn)
    oban = Oban(pool=pool)  # no queues: a client, as a web application holds one
    await oban.enqueue(Noop.new(PAYLOAD))  # warm, as in a running application
    start = time.perf_counter()
    await _put(oban, n, batch)
    took = time.perf_counter() - start
    await pool.close()
    return took


async def _completed(pool: Any) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM oban_jobs WHERE state = 'completed'")
        row = await cur.fetchone()
    return int(row[0])


async def drain(dsn: str, n: int, config: str, timeout: float) -> tuple[int, float, float]:
    """The clock stops once the producer's batched acknowledgements show every job
    ``completed``."""
    global STARTED, TARGET
    STARTED, TARGET = asyncio.Event(), n
    pool = await _pool(dsn)
    oban = Oban(pool=pool, queues={QUEUE: LIMITS[config]})
    deadline = time.monotonic() + timeout
    window = Window()
    await oban.start()
    done = await wait_finished(STARTED, lambda: _completed(pool), n, timeout, deadline)
    seconds, cpu = window.stop()
    await oban.stop()
    await pool.close()
    return done, seconds, cpu


async def latency(dsn: str, samples: int, gap: float, timeout: float) -> list[float]:
    global STARTED
    await reset(dsn)
    STARTED = asyncio.Event()
    pool = await _pool(dsn)
    oban = Oban(pool=pool, queues={QUEUE: LIMITS["tuned"]})
    await oban.start()
    await asyncio.sleep(1.0)  # started and idle
    out: list[float] = []
    for _ in range(samples):
        STARTED.clear()
        start = time.perf_counter()
        await oban.enqueue(Noop.new(PAYLOAD))
        try:
            await asyncio.wait_for(STARTED.wait(), timeout)
        except TimeoutError:
            break
        out.append((SEEN[-1] - start) * 1000)
        await asyncio.sleep(gap)
    await oban.stop()
    await pool.close()
    return out
