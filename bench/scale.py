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

Next to each rate it prints the client CPU µs per job: user + system time of the draining
processes (``/proc/<pid>/stat``, all their threads), read when the clock starts and when
the last job is done (a raw process whose claim found the table empty waits for the
parent's stop signal then). On PostgreSQL it also prints the CPU of the drain's server sessions
(the backends on the bench's database, ``/proc/<pid>/stat``, read at the same two points;
the server's shared processes, WAL writer and checkpointer, are not in it; nor is the
parent's session, which counts done rows and, for the fleet, moves the jobs into the
queue). Counters, not clocks: steadier than the rates on a shared machine.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
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
    stop.wait()  # its server session lives on until the parent has read its CPU
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

    def backends() -> list[int]:
        """PostgreSQL: the pids of the other sessions on this database (the bench's own:
        the database is the bench's); elsewhere none."""
        if q.dialect.name != "postgresql":
            return []
        cur = conn.cursor()
        cur.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        pids = [int(r[0]) for r in cur.fetchall()]
        cur.close()
        conn.commit()
        return pids

    def run(sql: str) -> None:
        """One statement of the parent's, committed (not counted in the server's CPU)."""
        cur = conn.cursor()
        cur.execute(sql)
        cur.close()
        conn.commit()

    count.close = conn.close  # type: ignore[attr-defined]
    count.backends = backends  # type: ignore[attr-defined]
    count.run = run  # type: ignore[attr-defined]
    return count


class Meter:
    """Client and (PostgreSQL) server CPU of one drain, from the processes' counters."""

    def __init__(self, clients: list[int], count: Callable[[], int]) -> None:
        self.clients, self.backends = clients, count.backends  # type: ignore[attr-defined]
        self.client0 = proc_cpu(clients)
        self.server0 = {pid: proc_cpu([pid]) for pid in self.backends()}

    def done(self, n: int) -> None:
        """Record the CPU µs per job of the *n* jobs drained since the meter was made (a
        session opened meanwhile counts whole; one that ended meanwhile is not seen)."""
        CPU.append((proc_cpu(self.clients) - self.client0) / n * 1e6)
        server = 0.0
        for pid in self.backends():
            try:
                server += proc_cpu([pid]) - self.server0.get(pid, 0.0)
            except OSError:  # ended just now
                continue
        SERVER_CPU.append(server / n * 1e6)


#: the rates' client CPU µs per job, in the order the steps ran (see :func:`proc_cpu`)
CPU: list[float] = []
#: the same for the server's sessions of the drain (PostgreSQL, on this machine; else 0)
SERVER_CPU: list[float] = []


def proc_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system, every thread) of the processes *pids* so far."""
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


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
    meter = Meter([c.pid for c in children if c.pid is not None], count)
    start = time.perf_counter()
    go.set()
    while count() < n:
        time.sleep(0.01)
    took = time.perf_counter() - start
    meter.done(n)
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
        pids = [c.process.pid for c in fleet._children if c.process is not None]
        meter = Meter(pids, count)
        count.run(f"UPDATE {name} SET queue = 'default' WHERE queue = 'held'")  # type: ignore[attr-defined]
        start = time.perf_counter()
        while count() < n:
            time.sleep(0.01)
        took = time.perf_counter() - start
        meter.done(n)
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
    import skiplock.dialects

    print(f"skiplock from {os.path.dirname(skiplock.__file__)}, dialects from", end=" ")
    print(os.path.realpath(os.path.dirname(skiplock.dialects.__file__)), flush=True)
    backend = skiplock.connect(args.url).dialect.name
    backend = "postgresql" if backend == "postgresql" else "mysql"
    url, n, b, k, c = args.url, args.jobs, args.batch, args.processes, args.concurrency
    rows: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    servers: dict[str, list[float]] = {}
    steps: list[tuple[str, Callable[[], float]]] = [
        (f"raw SQL, {k} processes", lambda: drain_raw(url, backend, n, b, k)),
        (f"skiplock.Fleet, {k} processes, c{c}", lambda: drain_fleet(url, n, b, k, concurrency=c)),
        (f"Worker x {k} processes, c{c}", lambda: drain_workers(url, n, b, k, concurrency=c)),
    ]
    for run in range(args.runs):
        for name, step in steps:
            rows.setdefault(name, []).append(step())
            cpus.setdefault(name, []).append(CPU[-1])
            servers.setdefault(name, []).append(SERVER_CPU[-1])
            print(
                f"run {run + 1}: {name}: {rows[name][-1]:,.0f} jobs/s, "
                f"client CPU {CPU[-1]:.1f} µs/job, server sessions {SERVER_CPU[-1]:.1f}",
                flush=True,
            )
    raw = statistics.median(rows[steps[0][0]])
    raw_cpu = statistics.median(cpus[steps[0][0]])
    print(f"\n{n:,} no-op jobs, median of {args.runs} runs, against the raw loop:")
    for name, samples in rows.items():
        median = statistics.median(samples)
        cpu = statistics.median(cpus[name])
        server = statistics.median(servers[name])
        print(
            f"  {name:<40} {median:>9,.0f} jobs/s  {median / raw:.2f}x raw   "
            f"client CPU {cpu:5.1f} µs/job  {cpu / raw_cpu:.2f}x raw   "
            f"server sessions' CPU {server:5.1f} µs/job"
        )


if __name__ == "__main__":
    main()
