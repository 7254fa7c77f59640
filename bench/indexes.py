"""What each secondary index costs a MySQL/MariaDB server per drained job.

    python bench/indexes.py --url mysql://root@127.0.0.1:3307/skiplock_bench
    python bench/indexes.py --url mariadb://root@127.0.0.1:3306/skiplock_bench --runs 3

skiplock's MySQL table has no partial indexes (MySQL has none), so every index holds every
row, and an index whose key includes ``status`` gets a new entry whenever a claim or a
completion changes the status. This script drains *n* no-op jobs with the bare Queue loop
(``claim(limit=200)`` + ``complete_many``) into the table as ``install`` makes it, then into
copies with the ``finished`` index, the ``key_state`` index, or both dropped, or with version
1's claim index ``(claimable, queue, priority, run_at, id)`` added back (as before migration
0017 dropped it; ``--variants`` picks some of them by number) (the claim's
``FORCE INDEX`` of ``key_state`` is taken out of the statements for the copies without it:
those copies are for measuring only, they cannot run keyed jobs correctly fast), and next to
it the raw loop of ``bench/raw.py``. For each it reports jobs/s, the client's CPU per job
(``time.process_time``) and the server's CPU per job: user + system time of the server
process read from ``/proc/<pid>/stat``, the pid from ``@@pid_file`` (or ``--server-pid``,
e.g. for a server in a chroot like ``scripts/mysql-server``'s), so the server must run on
this machine, and other sessions' work on it counts too (run it on a quiet server; the
runs alternate so that a burst of load lands on every variant alike).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from typing import Any

from common import PAYLOAD, cpu_seconds, v1_claim_index
from raw import RawMySQL

import skiplock

TABLE = "bench_indexes"
#: (label, indexes dropped, indexes added back: "claim", version 1's, v1_claim_index)
VARIANTS: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("as installed", (), ()),
    ("without finished", ("finished",), ()),
    ("without key_state", ("key_state",), ()),
    ("without both", ("finished", "key_state"), ()),
    ("with version 1's claim index (before 0017)", (), ("claim",)),
]


def _server_pid(q: skiplock.Queue) -> int:
    with q.transaction() as tx:
        row = tx.fetchone("SELECT @@pid_file")
    assert row is not None
    path = str(row[0])
    if not os.path.isabs(path):
        with q.transaction() as tx:
            datadir = tx.fetchone("SELECT @@datadir")
        assert datadir is not None
        path = os.path.join(str(datadir[0]), path)
    with open(path) as f:
        return int(f.read().split()[0])


def _settle(q: skiplock.Queue) -> None:
    """Wait (up to 60 s) until InnoDB has purged the undo of earlier work (the history list
    is short): the purge threads' CPU would otherwise land in the next variant's figure."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with q.transaction() as tx:
            row = tx.fetchone(
                "SELECT count FROM information_schema.INNODB_METRICS"
                " WHERE name = 'trx_rseg_history_len'"
            )
        if row is None or int(row[0]) < 1000:
            return
        time.sleep(0.2)


def _drain(
    url: str, dropped: tuple[str, ...], added: tuple[str, ...], n: int, pid: int
) -> tuple[float, float, float]:
    q = skiplock.connect(url, table=TABLE)
    try:
        with q.transaction() as tx:
            tx.execute(f"DROP TABLE IF EXISTS {q.dialect.quote(TABLE)}")
        q.install()
        for name in dropped:
            with q.transaction() as tx:
                tx.execute(f"ALTER TABLE {TABLE} DROP INDEX {TABLE}_{name}")
        if "claim" in added:
            with q.transaction() as tx:
                tx.execute(v1_claim_index(q.dialect.name, TABLE, q.dialect.quote))
        if "key_state" in dropped:
            hint = re.compile(rf"FORCE INDEX \(`{TABLE}_key_state`\)")
            q.dialect.sql = {k: hint.sub("", v) for k, v in q.dialect.sql.items()}
        for i in range(0, n, 1000):
            q.enqueue_many([PAYLOAD] * min(1000, n - i))
        _settle(q)
        server, client, start = cpu_seconds(pid), time.process_time(), time.perf_counter()
        done = 0
        while jobs := q.claim(limit=200, lease=60):
            q.complete_many(jobs)
            done += len(jobs)
        took = time.perf_counter() - start
        if done != n:
            raise RuntimeError(f"drained {done} of {n}")
        return n / took, (time.process_time() - client) / n, (cpu_seconds(pid) - server) / n
    finally:
        with q.transaction() as tx:
            tx.execute(f"DROP TABLE IF EXISTS {q.dialect.quote(TABLE)}")
        q.close()


def _raw(url: str, n: int, pid: int) -> tuple[float, float, float]:
    raw: Any = RawMySQL(url)
    settler = skiplock.connect(url, table=TABLE)
    try:
        raw.reset()
        raw.fill(n, 1000)
        _settle(settler)
        server, client = cpu_seconds(pid), time.process_time()
        rate = raw.run_drain(n)
        return rate, (time.process_time() - client) / n, (cpu_seconds(pid) - server) / n
    finally:
        raw.close()
        settler.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="mysql:// or mariadb:// (local server)")
    parser.add_argument("--jobs", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--server-pid", type=int, help="default: read from @@pid_file")
    parser.add_argument(
        "--variants",
        default=",".join(str(i) for i in range(len(VARIANTS))),
        help="which tables, by number (0 as installed ... 4 with the claim index; default all)",
    )
    args = parser.parse_args()
    probe = skiplock.connect(args.url, table=TABLE)
    pid = args.server_pid or _server_pid(probe)
    info = probe.ping()
    probe.close()
    got: dict[str, list[tuple[float, float, float]]] = {}
    for run in range(args.runs):
        for i in (int(v) for v in args.variants.split(",")):
            label, dropped, added = VARIANTS[i]
            print(f"run {run + 1}: {label}", file=sys.stderr)
            got.setdefault(label, []).append(_drain(args.url, dropped, added, args.jobs, pid))
        print(f"run {run + 1}: raw loop", file=sys.stderr)
        got.setdefault("raw loop", []).append(_raw(args.url, args.jobs, pid))
    print(f"{info.product} {'.'.join(map(str, info.version))}, {args.jobs:,} jobs, medians of")
    print(f"{args.runs} (bare Queue loop, claim 200 + complete_many; raw: bench/raw.py)\n")
    print("| table | jobs/s | client CPU µs/job | server CPU µs/job |")
    print("|---|---:|---:|---:|")
    for label, samples in got.items():
        rate, client, server = (statistics.median(s[i] for s in samples) for i in range(3))
        print(f"| {label} | {rate:,.0f} | {client * 1e6:.1f} | {server * 1e6:.1f} |")


if __name__ == "__main__":
    main()
