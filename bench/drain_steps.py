"""Where a drain's server CPU goes on MySQL / MariaDB: the claim step and the completion step
of skiplock's bare Queue loop against the raw loop's, per job.

    python bench/drain_steps.py --url mysql://root@127.0.0.1:3307/skiplock_bench --rounds 3

Each round fills a fresh table with ``--jobs`` no-op jobs (calls of 1,000) and drains it:
skiplock's ``claim(limit=100)`` + ``complete_many`` (``bench/sk.py``'s loop), then the raw
loop of ``bench/raw.py`` (``SELECT … FOR UPDATE SKIP LOCKED`` + ``UPDATE``, then the fenced
``UPDATE``). After each step (a step ends with its COMMIT) the CPU of the server threads of
every connection open on the bench's database is read (``/proc/<pid>/task/<tid>/stat``, as
in ``bench/enqueue_cost.py``) and the difference is added to that step: the kernel counts
CPU in ticks, so one step's reading is coarse, but summed over a drain's hundreds of steps
it is not biased toward either. Client CPU (``time.process_time``) is split the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import mysql.connector
from common import cpu_seconds, mysql_kwargs
from enqueue_cost import _server_pid
from raw import RawMySQL
from sk import TABLE, Skiplock

BATCH = 1000


class Threads:
    """The server threads of the connections open on one database, and their CPU."""

    def __init__(self, url: str, pid: int) -> None:
        self.pid, self.db = pid, url.rsplit("/", 1)[1]
        self.conn: Any = mysql.connector.connect(**mysql_kwargs(url), autocommit=True)
        cur = self.conn.cursor()
        cur.execute("SELECT VERSION()")
        self.mariadb = "mariadb" in str(cur.fetchall()[0][0]).lower()
        cur.close()
        self.tids: list[int] = []

    def find(self) -> None:
        cur = self.conn.cursor()
        if self.mariadb:
            cur.execute(
                "SELECT TID FROM information_schema.PROCESSLIST WHERE DB = %s"
                " AND ID <> CONNECTION_ID()",
                (self.db,),
            )
        else:
            cur.execute(
                "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_DB = %s"
                " AND PROCESSLIST_ID <> CONNECTION_ID()",
                (self.db,),
            )
        self.tids = [int(r[0]) for r in cur.fetchall()]
        cur.close()

    def check(self) -> None:
        """Fail if a connection opened after :meth:`find` (its CPU was not counted)."""
        seen = self.tids
        self.find()
        if not set(self.tids) <= set(seen):
            raise RuntimeError(f"connections opened during the drain: {self.tids} vs {seen}")

    def cpu(self) -> float:
        total = 0.0
        for tid in self.tids:
            try:
                total += cpu_seconds(self.pid, tid)
            except OSError:
                continue  # a connection that closed
        return total


class Steps:
    """``mark`` for a drain loop: the server and client CPU of each step, summed by name."""

    def __init__(self, threads: Threads) -> None:
        self.threads = threads
        self.server: dict[str, float] = {}
        self.client: dict[str, float] = {}
        self.last = (0.0, 0.0)

    def __call__(self, step: str) -> None:
        now = (self.threads.cpu(), time.process_time())
        if step != "start":
            self.server[step] = self.server.get(step, 0.0) + now[0] - self.last[0]
            self.client[step] = self.client.get(step, 0.0) + now[1] - self.last[1]
        self.last = (self.threads.cpu(), time.process_time())  # the reading itself not counted


def _drained(
    threads: Threads, fill: Callable[[], object], drain: Callable[[Steps], object]
) -> Steps:
    """*fill*, then *drain* with a fresh :class:`Steps` as its ``mark``; the steps."""
    fill()
    threads.find()
    steps = Steps(threads)
    drain(steps)
    threads.check()
    return steps


def _skiplock(url: str, threads: Threads, n: int, drop: list[str]) -> Steps:
    s = Skiplock(url)
    try:
        s.reset()
        with s.q.transaction() as tx:
            for index in drop:  # a probe: what that index costs the drain
                tx.execute(f"ALTER TABLE {TABLE} DROP INDEX {TABLE}_{index}")
        return _drained(threads, lambda: s.fill(n, BATCH), lambda mark: s.run_loop(n, mark))
    finally:
        s.close()


def _raw(url: str, threads: Threads, n: int) -> Steps:
    raw: Any = RawMySQL(url)
    try:
        raw.reset()
        return _drained(threads, lambda: raw.fill(n, BATCH), lambda mark: raw.run_drain(n, mark))
    finally:
        raw.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="mysql:// or mariadb:// (this machine)")
    parser.add_argument("--server-pid", type=int, help="the server's pid (default: found)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument(
        "--drop", action="append", default=[], help="drop this index of skiplock's table first"
    )
    args = parser.parse_args()
    threads = Threads(args.url, args.server_pid or _server_pid(args.url))
    got: dict[str, list[Steps]] = {"skiplock": [], "raw": []}
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        for name in ("skiplock", "raw") if r % 2 == 0 else ("raw", "skiplock"):
            if name == "skiplock":
                got[name].append(_skiplock(args.url, threads, args.jobs, args.drop))
            else:
                got[name].append(_raw(args.url, threads, args.jobs))
            print(f"round {r + 1} {name}: {got[name][-1].server}", file=sys.stderr)
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}")
    print(f"{args.jobs:,} jobs, µs of CPU per job, medians of {args.rounds}")
    print("| loop | server: claim | server: complete | client: claim | client: complete |")
    print("|---|---:|---:|---:|---:|")
    for name, runs in got.items():
        cells = [
            statistics.median(getattr(x, side).get(step, 0.0) / args.jobs * 1e6 for x in runs)
            for side in ("server", "client")
            for step in ("claim", "complete")
        ]
        print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
