"""Enqueue throughput through the connection pool: 16 threads, one job per call.

    python bench/pool.py --backend postgresql         # or mariadb, mysql, all
    python bench/pool.py --backend all --threads 16 --jobs 300 --runs 3

Each setting gets a fresh queue on the same table, in one run, rounds interleaved
(setting A, B, C, then A, B, C again) so that the machine's noise falls on all of them
alike. "old code" is the Queue of commit ``--old-rev`` (default: the last one before the
bounded pool), loaded from git beside the current one: 8 idle connections kept, no bound,
and on MySQL/MariaDB a ping at every check-in. "old default, new pool" is the new pool set
like the old one (``max_size`` very large, ``max_idle=8``). Prints the median enqueues/s
per setting, the most connections each one had open at once (counted on the server,
sampled every 10 ms) and how many it opened.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from run import URLS

import skiplock

TABLE = "bench_pool"
OLD = "old code (unbounded, 8 idle)"
SETTINGS: dict[str, dict[str, Any]] = {
    OLD: {"max_idle": 8},
    "old default, new pool": {"max_size": 10_000, "max_idle": 8},
    "new default (max_size=10)": {},
    "max_size=16": {"max_size": 16},
    "max_size=4": {"max_size": 4},
}


def old_queue_class(rev: str) -> Any:
    """The Queue class of commit *rev*, imported as a module of the installed package (its
    relative imports find today's dialects and helpers)."""
    root = Path(__file__).resolve().parent.parent
    text = subprocess.run(
        ["git", "show", f"{rev}:src/skiplock/queue.py"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_queue.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("skiplock._bench_old_queue", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.Queue


def one_round(
    url: str, make: Any, options: dict[str, Any], threads: int, jobs: int
) -> tuple[float, int, int]:
    """(enqueues per second, most server sessions of this pool seen at once, connections
    opened)."""
    q = make(url, table=TABLE, **options)
    watch = q.connection()
    sessions: set[int] = set()
    peak = 0
    lock = threading.Lock()
    start = threading.Barrier(threads + 1)

    def work() -> None:
        start.wait()
        for i in range(jobs):
            q.enqueue({"n": i})

    def sample() -> None:  # the server's count of sessions named by this pool's connections
        nonlocal peak
        n = q.dialect.count_sessions(watch, sorted(sessions))
        watch.commit()
        peak = max(peak, n)

    # the pool took the bound method when it was made; today's pool holds adapters
    # (Queue._open), the old code's raw connections (Queue._new_connection)
    adapters = hasattr(q, "_open")
    real_open = q._open if adapters else q._new_connection

    def recording_open() -> Any:  # note each connection's session id as it is opened
        opened = real_open()
        conn = opened.connection if adapters else opened
        row = q.dialect.fetch_one(conn, "session_id")
        conn.commit()
        with lock:
            sessions.add(int(row["session"]) if row else 0)
        return opened

    if hasattr(q, "_pool"):
        q._pool._opener = recording_open
    else:
        q._new_connection = recording_open
    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    began = time.perf_counter()
    while any(t.is_alive() for t in pool):
        with lock:
            known = bool(sessions)
        if known:
            sample()
        time.sleep(0.01)
    elapsed = time.perf_counter() - began
    watch.close()
    q.close()
    return threads * jobs / elapsed, peak, len(sessions)


def bench(backend: str, url: str, old: Any, threads: int, jobs: int, runs: int) -> None:
    q = skiplock.connect(url, table=TABLE)
    with q.transaction() as tx:
        tx.execute(f"DROP TABLE IF EXISTS {q.dialect.quote(TABLE)}")
    q.install()
    q.close()
    rates: dict[str, list[float]] = {name: [] for name in SETTINGS}
    peaks: dict[str, int] = dict.fromkeys(SETTINGS, 0)
    opened: dict[str, list[int]] = {name: [] for name in SETTINGS}
    for r in range(runs):
        for name, options in SETTINGS.items():
            make = old if name == OLD else skiplock.Queue
            rate, peak, n = one_round(url, make, options, threads, jobs)
            rates[name].append(rate)
            peaks[name] = max(peaks[name], peak)
            opened[name].append(n)
            print(f"{backend} round {r + 1} {name}: {rate:,.0f}/s, {peak} open", file=sys.stderr)
    print(f"\n{backend}: {threads} threads x {jobs} enqueue() calls, {runs} rounds")
    print(f"{'setting':34} {'enqueues/s':>11} {'samples':>30} {'most open':>10} {'opened':>7}")
    for name in SETTINGS:
        samples = " ".join(f"{s:,.0f}" for s in rates[name])
        med = statistics.median(rates[name])
        opens = round(statistics.median(opened[name]))
        print(f"{name:34} {med:>11,.0f} {samples:>30} {peaks[name]:>10} {opens:>7}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="postgresql", choices=[*URLS, "all"])
    parser.add_argument("--url", help="another server (its database must exist)")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=300, help="enqueue() calls per thread")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--old-rev", default="ec8f4ee", help="the commit of 'old code'")
    args = parser.parse_args()
    old = old_queue_class(args.old_rev)
    backends = list(URLS) if args.backend == "all" else [args.backend]
    for backend in backends:
        bench(backend, args.url or URLS[backend], old, args.threads, args.jobs, args.runs)


if __name__ == "__main__":
    main()
