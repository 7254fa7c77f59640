"""MySQL migration 0015 before and after, per job: the server's CPU spent by this bench's own
sessions, the client's CPU and jobs/s, for the enqueue and the drain, with the raw loop.

    python bench/indexes_0015.py --url mysql://root@127.0.0.1:3307/skiplock_bench --rounds 3

The server's CPU is read per session, not per process: the ``mysqld`` threads of this
bench's connections (``performance_schema.threads.THREAD_OS_ID`` of the connections open
on the bench's database, ``/proc/<pid>/task/<tid>/stat``), so other sessions' work on a
shared server does not count (InnoDB's purge threads, which clean up after every variant,
are not counted either). MySQL only (MariaDB has no ``THREAD_OS_ID`` without its
performance schema); the server must run on this machine.

Variants, in turn within each round: ``before`` (the table as version 14 had its three
status indexes, the key test on ``status`` and the ids of a batch read back by key),
``after`` (version 15 as installed) and ``none`` (version 15 without the three indexes: what
they cost at all), then the raw loop of ``bench/raw.py``. Each enqueues 20,000 no-op jobs in
calls of 1,000, then drains them with the bare Queue loop (``claim(limit=100)`` +
``complete_many``).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from typing import Any

import mysql.connector
from common import PAYLOAD, cpu_seconds, mysql_kwargs
from raw import RawMySQL

import skiplock

TABLE = "bench_indexes_0015"
INDEXES = ("key_state", "debounce", "finished")
BEFORE = [
    f"ALTER TABLE {TABLE} DROP INDEX {TABLE}_key_state, "
    f"ADD INDEX {TABLE}_key_state (order_key, status, id), "
    f"DROP INDEX {TABLE}_debounce, ADD INDEX {TABLE}_debounce (debounce_key, status, id), "
    f"DROP INDEX {TABLE}_finished, ADD INDEX {TABLE}_finished (status, finished_at)",
    f"ALTER TABLE {TABLE} DROP COLUMN key_status, DROP COLUMN debounce_status, "
    "DROP COLUMN finished_status",
]
NONE = [f"ALTER TABLE {TABLE} " + ", ".join(f"DROP INDEX {TABLE}_{i}" for i in INDEXES)]
Sample = tuple[float, float, float]


class Sessions:
    """The server threads of the connections open on one database."""

    def __init__(self, url: str, pid: int) -> None:
        self.pid = pid
        self.db = url.rsplit("/", 1)[1]
        self.conn: Any = mysql.connector.connect(**mysql_kwargs(url), autocommit=True)

    def threads(self) -> list[int]:
        cur = self.conn.cursor()
        cur.execute(
            "SELECT t.THREAD_OS_ID FROM performance_schema.threads AS t"
            " WHERE t.PROCESSLIST_DB = %s AND t.PROCESSLIST_ID <> CONNECTION_ID()",
            (self.db,),
        )
        found = [int(r[0]) for r in cur.fetchall()]
        cur.close()
        return found

    def cpu(self, threads: list[int]) -> float:
        return sum(cpu_seconds(self.pid, tid) for tid in threads)


def _timed(sessions: Sessions, n: int, work: Any) -> Sample:
    """(jobs/s, client µs/job, server µs/job of this bench's sessions) of *work*()."""
    threads = sessions.threads()
    server, client, start = sessions.cpu(threads), time.process_time(), time.perf_counter()
    work()
    took = time.perf_counter() - start
    return (
        n / took,
        (time.process_time() - client) / n * 1e6,
        (sessions.cpu(threads) - server) / n * 1e6,
    )


def _skiplock(url: str, sessions: Sessions, variant: str, n: int) -> tuple[Sample, Sample]:
    q = skiplock.connect(url, table=TABLE)
    try:
        q.uninstall()
        q.install()
        with q.transaction() as tx:
            for statement in {"before": BEFORE, "none": NONE}.get(variant, []):
                tx.execute(statement)
        if variant == "before":
            q.dialect.sql = {k: v.replace("key_status", "status") for k, v in q.dialect.sql.items()}
            q.dialect.sql.pop("ids_in_range")
        elif variant == "none":
            hint = re.compile(rf"FORCE INDEX \(`{TABLE}_key_state`\)")
            q.dialect.sql = {k: hint.sub("", v) for k, v in q.dialect.sql.items()}
        q.enqueue_many([PAYLOAD])  # the pool's connection is open before the timing

        def enqueue() -> None:
            for _ in range(0, n, 1000):
                q.enqueue_many([PAYLOAD] * 1000)

        def drain() -> None:
            done = 0
            while jobs := q.claim(limit=100, lease=60):
                q.complete_many(jobs)
                done += len(jobs)
            if done != n + 1:
                raise RuntimeError(f"drained {done} of {n + 1}")

        return _timed(sessions, n, enqueue), _timed(sessions, n, drain)
    finally:
        q.uninstall()
        q.close()


def _raw(url: str, sessions: Sessions, n: int) -> tuple[Sample, Sample]:
    raw: Any = RawMySQL(url)
    try:
        raw.reset()
        return _timed(sessions, n, lambda: raw.fill(n, 1000)), _timed(
            sessions, n, lambda: raw.run_drain(n)
        )
    finally:
        raw.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="mysql://… (a server on this machine)")
    parser.add_argument("--server-pid", type=int, required=True, help="mysqld's pid")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000)
    args = parser.parse_args()
    sessions = Sessions(args.url, args.server_pid)
    got: dict[str, list[tuple[Sample, Sample]]] = {}
    variants = ["before", "after", "none"]
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC", file=sys.stderr)
    for r in range(args.rounds):
        for variant in variants if r % 2 == 0 else variants[::-1]:
            got.setdefault(variant, []).append(_skiplock(args.url, sessions, variant, args.jobs))
            print(f"round {r + 1} {variant}: {got[variant][-1]}", file=sys.stderr)
        got.setdefault("raw loop", []).append(_raw(args.url, sessions, args.jobs))
        print(f"round {r + 1} raw: {got['raw loop'][-1]}", file=sys.stderr)
    print(f"{args.jobs:,} jobs, medians of {args.rounds}; µs per job")
    print(
        "| variant | enqueue jobs/s | client | server (sessions) "
        "| drain jobs/s | client | server (sessions) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for variant, samples in got.items():
        cells = [
            statistics.median(s[step][i] for s in samples) for step in (0, 1) for i in range(3)
        ]
        print(f"| {variant} | " + " | ".join(f"{c:,.1f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
