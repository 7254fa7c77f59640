"""skiplock's side of the benchmark, through its public API only.

Drain uses ``skiplock.Worker`` when the package has one; until then a tight loop of
``claim(limit=100)`` + ``complete_many`` on the public Queue API. Which one ran is part of
every figure's note.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from common import PAYLOAD, percentile, rate

import skiplock

TABLE = "bench_skiplock"
BATCH = 100


class Skiplock:
    name = "skiplock"

    def __init__(self, url: str) -> None:
        self.q = skiplock.connect(url, table=TABLE)
        self.drain_mode = "Worker" if hasattr(skiplock, "Worker") else "Queue loop"

    def reset(self) -> None:
        name = self.q.dialect.quote(TABLE)
        with self.q.transaction() as tx:
            tx.execute(f"DROP TABLE IF EXISTS {name}")
        self.q.install()

    def _fill(self, n: int, batch: int) -> None:
        for i in range(0, n, batch):
            self.q.enqueue_many([PAYLOAD] * min(batch, n - i))

    def enqueue(self, n: int, batch: int) -> float:
        self.reset()
        start = time.perf_counter()
        self._fill(n, batch)
        return rate(n, time.perf_counter() - start)

    def drain(self, n: int, batch: int, *, fresh: bool = True) -> tuple[float, float]:
        """(jobs/s, seconds spent in claim per 100 jobs) for *n* jobs."""
        if fresh:
            self.reset()
        self._fill(n, batch)
        if self.drain_mode == "Worker":
            return self._drain_worker(n), float("nan")
        claim_s = 0.0
        done = 0
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            jobs = self.q.claim(limit=BATCH)
            claim_s += time.perf_counter() - t0
            if not jobs:
                break
            lost = self.q.complete_many(jobs)
            done += len(jobs) - len(lost)
        took = time.perf_counter() - start
        if done != n:
            raise RuntimeError(f"skiplock completed {done} of {n}")
        return rate(n, took), claim_s / n * BATCH

    def _drain_worker(self, n: int) -> float:
        # The Worker API of issue 4: Worker(queue, handler, *, queues, concurrency, ...).
        worker: Any = skiplock.Worker(self.q, lambda job: None)  # type: ignore[attr-defined]
        before = self.q.stats().done
        start = time.perf_counter()
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        while self.q.stats().done - before < n:
            time.sleep(0.005)
        took = time.perf_counter() - start
        worker.stop()
        thread.join(30)
        return rate(n, took)

    def latency(self, count: int, gap: float) -> tuple[float, float, str]:
        """p50, p99 in ms of enqueue → claimed, one job at a time into an idle consumer."""
        self.reset()
        seen: list[float] = []
        stop = threading.Event()
        poll = 0.005

        def consume() -> None:
            while not stop.is_set():
                jobs = self.q.claim(limit=BATCH)
                now = time.time()
                for job in jobs:
                    seen.append(now - job.payload["t"])
                if jobs:
                    self.q.complete_many(jobs)
                else:
                    time.sleep(poll)

        thread = threading.Thread(target=consume, daemon=True)
        thread.start()
        time.sleep(0.2)
        for _ in range(count):
            self.q.enqueue({"t": time.time()})
            time.sleep(gap)
        deadline = time.monotonic() + 30
        while len(seen) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.set()
        thread.join(10)
        ms = [s * 1000 for s in seen]
        how = f"Queue loop polling every {poll * 1000:g} ms"
        return percentile(ms, 50), percentile(ms, 99), how

    def add_finished(self, rows: int) -> float:
        """Insert *rows* finished jobs straight into the table (bench-only SQL), then let
        the database gather statistics, as autovacuum / InnoDB would; seconds taken."""
        conn = self.q.connection()
        cur = conn.cursor()
        start = time.perf_counter()
        if self.q.dialect.name == "postgresql":
            cur.execute(
                f'INSERT INTO "{TABLE}" (queue, payload, status, attempt, run_at, '
                "idempotency_key, finished_at) SELECT 'default', '{\"n\":1}', 'done', 1, "
                "now(), md5(g::text || random()::text)::uuid, now() "
                "FROM generate_series(1, %(n)s) g",
                {"n": rows},
            )
            conn.commit()
            conn.autocommit = True
            cur.execute(f'VACUUM ANALYZE "{TABLE}"')
        else:
            # a plain table: MySQL cannot open one temporary table twice in a query
            cur.execute("DROP TABLE IF EXISTS bench_digits")
            cur.execute("CREATE TABLE bench_digits (d INT)")
            cur.execute("INSERT INTO bench_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
            for _ in range(rows // 100_000):
                # five copies of the ten digits: 100,000 rows per transaction
                cur.execute(
                    f"INSERT INTO `{TABLE}` (queue, payload, status, attempt, run_at, "
                    "idempotency_key, created_at, finished_at) "
                    "SELECT 'default', '{\"n\":1}', 'done', 1, UTC_TIMESTAMP(6), UUID(), "
                    "UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM bench_digits a, bench_digits b, "
                    "bench_digits c, bench_digits d, bench_digits e"
                )
                conn.commit()
            cur.execute(f"ANALYZE TABLE `{TABLE}`")
            cur.fetchall()
            conn.commit()
        took = time.perf_counter() - start
        cur.close()
        conn.close()
        return took

    def close(self) -> None:
        self.q.close()
