"""chancy's side of bench/peers.py (see peer_step.py): ``Chancy.push`` / ``push_many`` to
enqueue, its ``Worker`` to run jobs."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from common import Window, wait_finished

QUEUE = "bench"
#: Tuned: the AsyncExecutor, which its docs give for "large numbers of IO-bound jobs" (an
#: ``async def`` no-op here), 100 jobs at a time, and ``eager_polling`` ("immediately poll
#: for new jobs after a job completes, rather than waiting for the polling interval").
#: Defaults: ``Queue(name)``: the ProcessExecutor, concurrency = the CPU count, a poll every
#: 5 s (a push's NOTIFY wakes it sooner).
CONFIG = {
    "tuned": "Queue(executor=Async, concurrency=100, eager_polling=True)",
    "defaults": "Queue() (processes, concurrency = CPUs, polling_interval 5 s)",
}
#: the start of each latency sample's handler, and the event that wakes the enqueuer
SEEN: list[float] = []
STARTED: asyncio.Event | None = None


async def noop() -> None:
    SEEN.append(time.perf_counter())
    if STARTED is not None:
        STARTED.set()


def noop_sync() -> None:
    return None


def version() -> str:
    from importlib.metadata import version

    return version("chancy")


def _app(dsn: str) -> Any:
    import logging

    from chancy import Chancy

    log = logging.getLogger("bench.chancy")
    log.setLevel(logging.WARNING)
    return Chancy(dsn, log=log)


def _queue(config: str) -> Any:
    from chancy import Chancy, Queue

    if config == "tuned":
        return Queue(QUEUE, executor=Chancy.Executor.Async, concurrency=100, eager_polling=True)
    return Queue(QUEUE)


def _job(config: str) -> Any:
    from chancy import Job

    return Job.from_func(noop if config == "tuned" else noop_sync, queue=QUEUE)


async def reset(dsn: str) -> None:
    async with _app(dsn) as chancy:
        await chancy.migrate()
        async with chancy.pool.connection() as conn:
            await conn.execute(f"TRUNCATE {chancy.prefix}jobs")


async def _put(chancy: Any, n: int, batch: int, config: str = "tuned") -> None:
    job = _job(config)
    if batch == 1:
        for _ in range(n):
            await chancy.push(job)
        return
    for i in range(0, n, batch):
        async for _ in chancy.push_many([job] * min(batch, n - i), batch_size=batch):
            pass


async def fill(dsn: str, n: int, batch: int, config: str) -> None:
    """Jobs for *config*'s executor: an ``async def`` job for the async executor, a plain
    function for processes."""
    async with _app(dsn) as chancy:
        await _put(chancy, n, batch, config)


async def enqueue(dsn: str, n: int, batch: int) -> float:
    await reset(dsn)
    async with _app(dsn) as chancy:
        await chancy.push(_job("tuned"))  # warm, as in a running application
        start = time.perf_counter()
        await _put(chancy, n, batch)
        return time.perf_counter() - start


def _worker(chancy: Any, n: int = 0) -> tuple[Any, asyncio.Event]:
    """A Worker that counts the completions it hands to its outgoing batch (in this process,
    whichever executor ran the job), and the event it sets at the *n*-th."""
    from chancy import Worker

    done = [0]
    all_done = asyncio.Event()

    class Counting(Worker):  # type: ignore[misc]
        async def on_job_completed(self, *, queue: Any, job: Any) -> None:
            done[0] += 1
            if done[0] >= n:
                all_done.set()
            await super().on_job_completed(queue=queue, job=job)

    return Counting(chancy, register_signal_handlers=False), all_done


async def _succeeded(chancy: Any) -> int:
    async with chancy.pool.connection() as conn:
        cur = await conn.execute(
            f"SELECT count(*) FROM {chancy.prefix}jobs WHERE state = 'succeeded'"
        )
        row = await cur.fetchone()
    return int(row[0])


async def drain(dsn: str, n: int, config: str, timeout: float) -> tuple[int, float, float]:
    """The clock stops once the worker's batched completions (sent every second) show
    every job ``succeeded``."""
    async with _app(dsn) as chancy:
        await chancy.declare(_queue(config), upsert=True)
        worker, all_done = _worker(chancy, n)
        deadline = time.monotonic() + timeout
        window = Window()
        await worker.start()
        finished = await wait_finished(all_done, lambda: _succeeded(chancy), n, timeout, deadline)
        seconds, cpu = window.stop()
        await worker.stop()
        return finished, seconds, cpu


async def latency(dsn: str, samples: int, gap: float, timeout: float) -> list[float]:
    global STARTED
    await reset(dsn)
    STARTED = asyncio.Event()
    async with _app(dsn) as chancy:
        await chancy.declare(_queue("tuned"), upsert=True)
        worker, _ = _worker(chancy)
        await worker.start()
        await asyncio.sleep(1.0)  # started and idle
        out: list[float] = []
        job = _job("tuned")
        for _ in range(samples):
            STARTED.clear()
            start = time.perf_counter()
            await chancy.push(job)
            try:
                await asyncio.wait_for(STARTED.wait(), timeout)
            except TimeoutError:
                break
            out.append((SEEN[-1] - start) * 1000)
            await asyncio.sleep(gap)
        await worker.stop()
        return out
