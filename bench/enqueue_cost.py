"""What a bulk enqueue costs on MySQL / MariaDB, per job, against the raw loop's INSERT:
the server CPU of this bench's own session, its handler and statement counters, the
redo it wrote, the client's CPU and jobs/s.

    python bench/enqueue_cost.py --url mysql://root@127.0.0.1:3307/skiplock_bench --rounds 3
    python bench/enqueue_cost.py --url mariadb://root@127.0.0.1:3306/skiplock_bench

Each variant enqueues ``--jobs`` no-op jobs in calls of 1,000 on one connection of its own
(skiplock's own connect, its session settings), one COMMIT per call, into a fresh table.
The server CPU is that session's ``mysqld`` thread (``/proc/<pid>/task/<tid>/stat``; the
thread from ``performance_schema.threads.THREAD_OS_ID`` on MySQL,
``information_schema.PROCESSLIST.TID`` on MariaDB), so other sessions on a shared server do
not count; InnoDB's background threads (purge, page cleaner, log writer) are not counted.
Counters are the session's own (``SHOW SESSION STATUS`` on that connection, the probe's own
statements subtracted); the redo is the server's log sequence number (MySQL
``Innodb_redo_log_current_lsn``, MariaDB ``Innodb_lsn_current``): global, so another
session's writes in the same seconds count too (the minimum of the rounds is given).

Variants: ``skiplock`` (``Queue.enqueue_many`` with ``conn=``), ``raw`` (bench/raw.py's table
and INSERT), and probes of the gap between them on tables and statements built here:
``raw+json`` (the raw table filled through skiplock's ``JSON_TABLE`` form), ``sk-values``
(skiplock's table, its columns given as a multi-row ``VALUES`` like the raw loop's), and
``sk-no-<index>[+<index>…]`` (skiplock's enqueue on its table without those secondary
indexes; ``rebuilt`` for an index: the table rebuilt by ``ALTER TABLE … FORCE`` first, so
that no column is one that a migration added ``INSTANT``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from common import PAYLOAD, cpu_seconds, v1_claim_index
from raw import MY_INSTALL
from raw import TABLE as RAW_TABLE

import skiplock
from skiplock._core.calls import uuid4_batch

TABLE = "bench_enqueue_cost"
COUNTERS = (
    "Questions",
    "Handler_write",
    "Handler_read_key",
    "Handler_read_next",
    "Handler_read_rnd_next",
    "Handler_update",
    "Created_tmp_tables",
    "Sort_rows",
    "Bytes_received",
    "Bytes_sent",
)
#: the secondary indexes as installed, the claim's (``ready``) last
INDEXES = (
    "ikey",
    "dedupe",
    "dedupe_window",
    "key_state",
    "debounce",
    "finished",
    "key_wait",
    "ready",
)


class Session:
    """One connection and what its server thread has spent."""

    def __init__(self, q: Any, server_pid: int) -> None:
        self.q = q
        self.conn: Any = q.dialect.connect()
        self.pid = server_pid
        cur = self.conn.cursor()
        cur.execute("SELECT VERSION()")
        self.mariadb = "mariadb" in str(cur.fetchall()[0][0]).lower()
        if self.mariadb:
            cur.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        else:
            cur.execute(
                "SELECT THREAD_OS_ID FROM performance_schema.threads"
                " WHERE PROCESSLIST_ID = CONNECTION_ID()"
            )
        self.tid = int(cur.fetchall()[0][0])
        cur.close()
        self.conn.commit()

    def cpu(self) -> float:
        return cpu_seconds(self.pid, self.tid)

    def status(self) -> dict[str, float]:
        cur = self.conn.cursor()
        cur.execute("SHOW SESSION STATUS")
        got = {str(k): v for k, v in cur.fetchall()}
        lsn = "Innodb_lsn_current" if self.mariadb else "Innodb_redo_log_current_lsn"
        cur.execute(f"SHOW GLOBAL STATUS LIKE '{lsn}'")
        got["lsn"] = cur.fetchall()[0][1]
        cur.close()
        self.conn.commit()
        return {k: float(got[k]) for k in (*COUNTERS, "lsn")}

    def close(self) -> None:
        self.conn.close()


def _sample(s: Session, n: int, work: Callable[[], None]) -> dict[str, float]:
    zero = s.status()
    empty = s.status()  # what one status probe itself adds to the counters
    probe = {k: empty[k] - zero[k] for k in COUNTERS}
    server, client, start = s.cpu(), time.process_time(), time.perf_counter()
    work()
    took = time.perf_counter() - start
    client_s, server_s = time.process_time() - client, s.cpu() - server
    end = s.status()
    out = {
        "jobs/s": n / took,
        "client µs": client_s / n * 1e6,
        "server µs": server_s / n * 1e6,
        "redo B": (end["lsn"] - empty["lsn"]) / n,
    }
    for k in COUNTERS:
        out[k] = (end[k] - empty[k] - probe[k]) / n
    return out


def _batches(n: int) -> list[int]:
    return [min(1000, n - i) for i in range(0, n, 1000)]


def _skiplock_variant(url: str, pid: int, n: int, drop: str | None, form: str) -> dict[str, float]:
    q = skiplock.connect(url, table=TABLE)
    q.uninstall()
    q.install()
    s = Session(q, pid)
    try:
        cur = s.conn.cursor()
        for index in drop.split("+") if drop else ():
            if index == "rebuilt":  # a table copy: no columns added INSTANT any more
                cur.execute(f"ALTER TABLE {TABLE} FORCE")
            else:
                cur.execute(f"ALTER TABLE {TABLE} DROP INDEX {TABLE}_{index}")
        if form == "sk-with-claim":
            # version 1's claim index, dropped by migration 0017, added back
            cur.execute(v1_claim_index(q.dialect.name, TABLE, q.dialect.quote))
        cur.close()
        q.enqueue_many([PAYLOAD], conn=s.conn)  # the schema check, once
        s.conn.commit()
        if form in ("skiplock", "sk-with-claim"):

            def work() -> None:
                for k in _batches(n):
                    q.enqueue_many([PAYLOAD] * k, conn=s.conn)
                    s.conn.commit()

        else:  # sk-values: skiplock's columns, a multi-row VALUES, no read-back

            def work() -> None:
                cur = s.conn.cursor()
                for k in _batches(n):
                    body = json.dumps(PAYLOAD)
                    keys = uuid4_batch(k)
                    row = (
                        "('default', %s, 0, 5, UTC_TIMESTAMP(6), %s, UTC_TIMESTAMP(6), "
                        "NULL, NULL, NULL, NULL, NULL, NULL)"
                    )
                    cur.execute(
                        f"INSERT INTO {TABLE} (queue, payload, priority, max_attempts, run_at, "
                        "idempotency_key, created_at, order_key, key_limit, key_rate, "
                        "key_rate_ms, headers, has_children) VALUES " + ", ".join([row] * k),
                        [v for key in keys for v in (body, key)],
                    )
                    s.conn.commit()
                cur.close()

        return _sample(s, n, work)
    finally:
        s.close()
        q.uninstall()
        q.close()


def _raw_variant(url: str, pid: int, n: int, form: str) -> dict[str, float]:
    q = skiplock.connect(url, table=TABLE)  # for its connect() only
    s = Session(q, pid)
    try:
        cur = s.conn.cursor()
        for statement in MY_INSTALL:
            cur.execute(statement)
        s.conn.commit()
        body = json.dumps(PAYLOAD)

        def values() -> None:
            for k in _batches(n):
                rows = ", ".join(["('default', %s, UTC_TIMESTAMP(6))"] * k)
                cur.execute(
                    f"INSERT INTO {RAW_TABLE} (queue, payload, run_at) VALUES {rows}", [body] * k
                )
                s.conn.commit()

        def json_table() -> None:
            for k in _batches(n):
                cur.execute(
                    f"INSERT INTO {RAW_TABLE} (queue, payload, run_at) "
                    "SELECT 'default', v.payload, UTC_TIMESTAMP(6) FROM JSON_TABLE(%s, '$[*]' "
                    "COLUMNS (n FOR ORDINALITY, payload LONGTEXT CHARACTER SET utf8mb4 "
                    "PATH '$[0]')) AS v ORDER BY v.n",
                    [json.dumps([[body]] * k)],
                )
                s.conn.commit()

        got = _sample(s, n, values if form == "raw" else json_table)
        cur.execute(f"DROP TABLE {RAW_TABLE}")
        cur.close()
        return got
    finally:
        s.close()
        q.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="mysql:// or mariadb:// (this machine)")
    parser.add_argument("--server-pid", type=int, help="mysqld's / mariadbd's pid (default: found)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument(
        "--variants",
        default="skiplock,raw",
        help="comma-separated: skiplock, raw, raw+json, sk-values, sk-with-claim (version 1's "
        "claim index added back), sk-no-<index> "
        f"(index: {', '.join(INDEXES)}), or all",
    )
    args = parser.parse_args()
    pid = args.server_pid or _server_pid(args.url)
    variants = args.variants.split(",")
    if variants == ["all"]:
        variants = ["skiplock", "raw", "raw+json", "sk-values", *(f"sk-no-{i}" for i in INDEXES)]
        variants += ["sk-no-" + "+".join(INDEXES[:-1]), "sk-no-rebuilt"]
    got: dict[str, list[dict[str, float]]] = {}
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        for v in variants if r % 2 == 0 else variants[::-1]:
            if v in ("raw", "raw+json"):
                sample = _raw_variant(args.url, pid, args.jobs, v)
            elif v.startswith("sk-no-"):
                sample = _skiplock_variant(args.url, pid, args.jobs, v[6:], "skiplock")
            else:
                sample = _skiplock_variant(args.url, pid, args.jobs, None, v)
            got.setdefault(v, []).append(sample)
            print(f"round {r + 1} {v}: {sample['jobs/s']:,.0f} jobs/s", file=sys.stderr)
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}")
    names = list(next(iter(got.values()))[0])
    print(f"{args.jobs:,} jobs in calls of 1,000, per job, medians of {args.rounds} (redo: min)")
    print("| variant | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for v, samples in got.items():
        pick = {k: min if k == "redo B" else statistics.median for k in names}
        cells = [pick[k](x[k] for x in samples) for k in names]
        print(f"| {v} | " + " | ".join(_fmt(c) for c in cells) + " |")


def _fmt(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:,.2f}" if abs(x) >= 0.1 or x == 0 else f"{x:.4f}"  # Questions: 3 per call


def _server_pid(url: str) -> int:
    name = "mariadbd" if url.startswith("mariadb") else "mysqld"
    port = url.rsplit(":", 1)[1].split("/")[0]
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if cmd.split("\0")[0].endswith(name) and (name == "mariadbd" or f"/{port}/" in cmd):
            return int(pid)
    raise SystemExit(f"no {name} process found: give --server-pid")


if __name__ == "__main__":
    main()
