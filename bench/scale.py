"""Scale-out on one server: *procs* worker processes drain one table together, next to
*procs* processes of the raw loop (the ceiling), on the same server in the same run.

Each process connects and warms up first (imports, pool, a first statement), then waits
for one start signal; the clock runs from that signal until the parent sees the last job
done in the database (it counts done rows every 10 ms), so process start-up is outside it.

``python scale.py --url URL --processes 4`` (from ``bench/``) also drains through
``skiplock.Fleet`` (the supervisor of ``skiplock worker --processes N``), in turns with
the raw loop and the plain Worker processes, and prints each against raw. The fleet's
processes cannot wait for a start signal: they start idle (polling every 50 ms) on a table
whose jobs sit in another queue, and the clock starts when one UPDATE has moved them all
into theirs (so up to one poll, 50 ms, of their start is inside it).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from common import PAYLOAD, rate
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


def drain_fleet(url: str, n: int, batch: int, procs: int, **options: Any) -> float:
    """A ``skiplock.Fleet`` of *procs* processes drains *n* jobs (see the module's docstring
    for where its clock starts)."""
    sk = Skiplock(url)
    sk.reset()
    fleet = skiplock.Fleet(
        "sk:_noop", procs, url=url, table=SK_TABLE, poll_interval=0.05, retention=None, **options
    )
    runner = threading.Thread(target=fleet.run)
    runner.start()
    try:
        for i in range(0, n, batch):
            sk.q.enqueue_many([PAYLOAD] * min(batch, n - i), queue="held")
        while not all(child.ready for child in fleet._children):
            time.sleep(0.05)
        time.sleep(3)  # each worker connects and goes idle
        count = _done_rows(url, SK_TABLE)
        name = sk.q.dialect.quote(SK_TABLE)
        with sk.q.transaction() as tx:
            tx.execute(f"UPDATE {name} SET queue = 'default' WHERE queue = 'held'")
        start = time.perf_counter()
        while count() < n:
            time.sleep(0.01)
        took = time.perf_counter() - start
        count.close()  # type: ignore[attr-defined]
    finally:
        fleet.stop()
        runner.join(120)
        sk.close()
    return rate(n, took)


def main() -> None:
    ap = argparse.ArgumentParser(description="skiplock.Fleet against the raw loop, one run")
    ap.add_argument("--url", required=True)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    backend = skiplock.connect(args.url).dialect.name
    backend = "postgresql" if backend == "postgresql" else "mysql"
    url, n, b, k, c = args.url, args.jobs, args.batch, args.processes, args.concurrency
    rows: dict[str, list[float]] = {}
    steps: list[tuple[str, Callable[[], float]]] = [
        (f"raw SQL, {k} processes", lambda: drain_raw(url, backend, n, b, k)),
        (f"skiplock.Fleet, {k} processes, c{c}", lambda: drain_fleet(url, n, b, k, concurrency=c)),
        (f"Worker x {k} processes, c{c}", lambda: drain_workers(url, n, b, k, concurrency=c)),
    ]
    for run in range(args.runs):
        for name, step in steps:
            rows.setdefault(name, []).append(step())
            print(f"run {run + 1}: {name}: {rows[name][-1]:,.0f} jobs/s", flush=True)
    raw = statistics.median(rows[steps[0][0]])
    print(f"\n{n:,} no-op jobs, median of {args.runs} runs, against the raw loop:")
    for name, samples in rows.items():
        median = statistics.median(samples)
        print(f"  {name:<40} {median:>9,.0f} jobs/s  {median / raw:.2f}x raw")


if __name__ == "__main__":
    main()
