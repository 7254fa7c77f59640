"""skiplock's side of the benchmark, through its public API only.

Drain is measured twice: through ``skiplock.Worker`` (the figure the targets are about)
and through a bare loop of ``claim(limit=100)`` + ``complete_many`` on the Queue API (what
the Worker's machinery costs on top of the statements). Latency goes through the Worker.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from common import PAYLOAD, percentile, rate

import skiplock

TABLE = "bench_skiplock"
BATCH = 100


def _noop(job: skiplock.Job) -> None:
    return None


async def _anoop(job: skiplock.Job) -> None:
    return None


class Skiplock:
    name = "skiplock"

    def __init__(self, url: str) -> None:
        self.q = skiplock.connect(url, table=TABLE)

    def reset(self) -> None:
        # every table of the queue, its schema version too (bench/ab.py installs two
        # releases' schemas in turn)
        self.q.uninstall()
        self.q.install()

    def fill(self, n: int, batch: int) -> None:
        for i in range(0, n, batch):
            self.q.enqueue_many([PAYLOAD] * min(batch, n - i))

    def enqueue(self, n: int, batch: int) -> float:
        self.reset()
        start = time.perf_counter()
        self.fill(n, batch)
        return rate(n, time.perf_counter() - start)

    def drain(self, n: int, batch: int, *, fresh: bool = True) -> tuple[float, float]:
        """The bare Queue loop: ``claim(limit=100)`` + ``complete_many`` until empty.
        (jobs/s, seconds spent in claim per 100 jobs) for *n* jobs."""
        if fresh:
            self.reset()
        self.fill(n, batch)
        return self.run_loop(n)

    def run_loop(self, n: int, mark: Callable[[str], object] | None = None) -> tuple[float, float]:
        """The bare Queue loop's drain of the *n* jobs already waiting (see :meth:`drain`).
        *mark*, if given, is called after each step with its name ("claim", "complete"), and
        once before the first ("start")."""
        claim_s = 0.0
        done = 0
        start = time.perf_counter()
        if mark:
            mark("start")
        while True:
            t0 = time.perf_counter()
            jobs = self.q.claim(limit=BATCH)
            claim_s += time.perf_counter() - t0
            if mark:
                mark("claim")
            if not jobs:
                break
            lost = self.q.complete_many(jobs)
            done += len(jobs) - len(lost)
            if mark:
                mark("complete")
        took = time.perf_counter() - start
        if done != n:
            raise RuntimeError(f"skiplock completed {done} of {n}")
        return rate(n, took), claim_s / n * BATCH

    def drain_worker(self, n: int, batch: int, **options: Any) -> float:
        """``skiplock.Worker`` with a no-op handler (and *options*, e.g. concurrency) in this
        process: jobs/s from ``start()`` until the worker has committed the last of *n*
        completions (its ``counts["done"]`` grows only after the COMMIT returned)."""
        self.reset()
        self.fill(n, batch)
        return self.run_worker(n, **options)

    def run_worker(self, n: int, **options: Any) -> float:
        """The Worker's drain of the *n* jobs already waiting (see :meth:`drain_worker`)."""
        worker = skiplock.Worker(self.q, _noop, **options)
        start = time.perf_counter()
        worker.start()
        while worker.counts["done"] < n:
            time.sleep(0.001)
        took = time.perf_counter() - start
        worker.stop(timeout=30)
        left = self.q.stats()
        if left.done != n or left.pending or left.running:
            raise RuntimeError(f"skiplock Worker left {left}")
        return rate(n, took)

    def drain_async_worker(self, n: int, batch: int, **options: Any) -> float:
        """``skiplock.AsyncWorker`` with an ``async def`` no-op handler, on an event loop of
        its own in this process, timed like :meth:`drain_worker`."""
        self.reset()
        self.fill(n, batch)
        return self.run_async_worker(n, **options)

    def run_async_worker(self, n: int, **options: Any) -> float:
        """The AsyncWorker's drain of the *n* jobs already waiting; jobs/s."""

        async def drain() -> float:
            worker = skiplock.AsyncWorker(self.q, _anoop, **options)
            start = time.perf_counter()
            worker.start()
            while worker.counts["done"] < n:
                await asyncio.sleep(0.001)
            took = time.perf_counter() - start
            await worker.stop(timeout=30)
            return took

        took = asyncio.run(drain())
        left = self.q.stats()
        if left.done != n or left.pending or left.running:
            raise RuntimeError(f"skiplock AsyncWorker left {left}")
        return rate(n, took)

    def latency(self, count: int, gap: float, **options: Any) -> tuple[float, float, str]:
        """p50, p99 in ms from just before ``enqueue`` to the handler's first line, one job
        at a time into an idle ``skiplock.Worker`` (LISTEN/NOTIFY where the database has it,
        otherwise its idle probe, every 25 ms)."""
        self.reset()
        seen: list[float] = []

        def handler(job: skiplock.Job) -> None:
            seen.append(time.time() - job.payload["t"])

        worker = skiplock.Worker(self.q, handler, **options).start()
        time.sleep(max(0.5, 2 * float(options.get("poll_interval", 1.0))))  # idle now
        for _ in range(count):
            self.q.enqueue({"t": time.time()})
            time.sleep(gap)
        deadline = time.monotonic() + 30
        while len(seen) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        worker.stop(timeout=30)
        ms = [s * 1000 for s in seen]
        wake = "LISTEN/NOTIFY" if self.q.dialect.supports_notify else "idle probe"
        poll = float(options.get("poll_interval", 1.0))
        how = f"Worker, {wake}, poll_interval {poll:g} s, one job every {gap * 1000:g} ms"
        return percentile(ms, 50), percentile(ms, 99), how

    def add_finished(self, rows: int) -> float:
        """Insert *rows* finished jobs straight into the table; seconds taken."""
        return add_finished(self.q, rows)

    def close(self) -> None:
        self.q.close()


def add_finished(q: skiplock.Queue, rows: int, keys: int = 0) -> float:
    """Insert *rows* finished (``done``) jobs straight into *q*'s table (bench-only SQL),
    spread over the keys ``k0`` .. ``k<keys-1>`` when *keys* is given, then let the
    database gather statistics, as autovacuum / InnoDB would; seconds taken."""
    table = q.dialect.quote(q.table.name)
    conn = q.connection()
    cur = conn.cursor()
    start = time.perf_counter()
    if q.dialect.name == "postgresql":
        key = "'k' || (g %% %(keys)s)" if keys else "NULL"
        cur.execute(
            f"INSERT INTO {table} (queue, payload, status, attempt, run_at, "
            "idempotency_key, finished_at, order_key) SELECT 'default', '{\"n\":1}', 'done', "
            f"1, now(), md5(g::text || random()::text)::uuid, now(), {key} "
            "FROM generate_series(1, %(n)s) g",
            {"n": rows, "keys": keys},
        )
        conn.commit()
        conn.autocommit = True
        cur.execute(f"VACUUM ANALYZE {table}")
    else:
        key = f"CONCAT('k', FLOOR(RAND() * {int(keys)}))" if keys else "NULL"
        # a plain table: MySQL cannot open one temporary table twice in a query
        cur.execute("DROP TABLE IF EXISTS bench_digits")
        cur.execute("CREATE TABLE bench_digits (d INT)")
        cur.execute("INSERT INTO bench_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
        for _ in range(rows // 100_000):
            # five copies of the ten digits: 100,000 rows per transaction
            cur.execute(
                f"INSERT INTO {table} (queue, payload, status, attempt, run_at, "
                "idempotency_key, created_at, finished_at, order_key) "
                "SELECT 'default', '{\"n\":1}', 'done', 1, UTC_TIMESTAMP(6), UUID(), "
                f"UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), {key} FROM bench_digits a, "
                "bench_digits b, bench_digits c, bench_digits d, bench_digits e"
            )
            conn.commit()
        cur.execute(f"ANALYZE TABLE {table}")
        cur.fetchall()
        conn.commit()
    took = time.perf_counter() - start
    cur.close()
    conn.close()
    return took


def migrate_while(q: skiplock.Queue, round_: Callable[[], object], what: str) -> None:
    """Run ``q.migrate()`` while another thread calls *round_* again and again; print the
    migration's wall time, the rounds finished meanwhile and the slowest (a migration that
    blocked writes shows a round as long as the block)."""
    stop = threading.Event()
    rounds: list[float] = []

    def work() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            round_()
            rounds.append(time.perf_counter() - start)

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(1.0)
    before = len(rounds)
    start = time.perf_counter()
    try:
        applied = q.migrate()
    finally:
        took = time.perf_counter() - start
        during = rounds[before:]
        stop.set()
        worker.join()
    print(f"migrate() applied {applied} in {took:.1f} s")
    print(
        f"meanwhile: {len(during)} rounds of {what}, "
        f"slowest {max(during, default=0) * 1000:.0f} ms, "
        f"median {sorted(during)[len(during) // 2] * 1000 if during else 0:.0f} ms"
    )
