"""Scale-out on one server: *procs* worker processes drain one table together, next to
*procs* processes of the raw loop (the ceiling), on the same server in the same run.

Each process connects and warms up first (imports, pool, a first statement), then waits
for one start signal; the clock runs from that signal until the parent sees the last job
done in the database (it counts done rows every 10 ms), so process start-up is outside it.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable
from typing import Any

from common import rate
from raw import TABLE as RAW_TABLE
from raw import RawMySQL, RawPostgres
from sk import TABLE as SK_TABLE
from sk import Skiplock, _noop

import skiplock


def _skiplock_child(url: str, options: dict[str, Any], go: Any, stop: Any, ready: Any) -> None:
    q = skiplock.connect(url, table=SK_TABLE)
    q.ping()
    worker = skiplock.Worker(q, _noop, **options)
    ready.release()
    go.wait()
    worker.start()
    stop.wait()
    worker.stop(timeout=30)
    q.close()


def _raw_child(url: str, backend: str, go: Any, stop: Any, ready: Any) -> None:
    raw: Any = RawPostgres(url) if backend == "postgresql" else RawMySQL(url)
    ready.release()
    go.wait()
    raw.run_drain(None)
    raw.close()


def _done_rows(url: str, table: str) -> Callable[[], int]:
    q = skiplock.connect(url, table=SK_TABLE)
    conn = q.connection()
    q.close()
    name = f'"{table}"' if q.dialect.name == "postgresql" else f"`{table}`"

    def count() -> int:
        cur = conn.cursor()
        cur.execute(f"SELECT count(*) FROM {name} WHERE status = 'done'")
        (n,) = cur.fetchone()
        cur.close()
        conn.commit()
        return int(n)

    count.close = conn.close  # type: ignore[attr-defined]
    return count


def _race(
    url: str, table: str, n: int, procs: int, target: Callable[..., None], *args: Any
) -> float:
    ctx = mp.get_context("spawn")
    go, stop, ready = ctx.Event(), ctx.Event(), ctx.Semaphore(0)
    children = [
        ctx.Process(target=target, args=(url, *args, go, stop, ready)) for _ in range(procs)
    ]
    for c in children:
        c.start()
    for _ in children:
        ready.acquire(timeout=60)
    count = _done_rows(url, table)
    start = time.perf_counter()
    go.set()
    while count() < n:
        time.sleep(0.01)
    took = time.perf_counter() - start
    stop.set()
    for c in children:
        c.join(60)
    count.close()  # type: ignore[attr-defined]
    return rate(n, took)


def drain_workers(url: str, n: int, batch: int, procs: int, **options: Any) -> float:
    """*procs* processes, each a ``skiplock.Worker(**options)``, drain *n* waiting jobs."""
    sk = Skiplock(url)
    sk.reset()
    sk.fill(n, batch)
    sk.close()
    return _race(url, SK_TABLE, n, procs, _skiplock_child, options)


def drain_raw(url: str, backend: str, n: int, batch: int, procs: int) -> float:
    """*procs* processes of the raw loop drain *n* waiting jobs (each until the claim finds
    none)."""
    raw: Any = RawPostgres(url) if backend == "postgresql" else RawMySQL(url)
    raw.reset()
    raw.fill(n, batch)
    raw.close()
    return _race(url, RAW_TABLE, n, procs, _raw_child, backend)
