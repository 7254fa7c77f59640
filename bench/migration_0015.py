"""MySQL/MariaDB migration 0015 on a large table: how long it takes, and whether writes go on.

Run it on the release it measured (``git checkout a4fe8be``): it reads that release's
statements back as version 14's, and later releases' statements need later versions
(bench/migration_0016.py measures the next MySQL/MariaDB migration).

    python bench/migration_0015.py --url mysql://root@127.0.0.1:3307/skiplock_bench
    python bench/migration_0015.py --url mariadb://root@127.0.0.1:3306/skiplock_bench

Makes ``bench_migration`` at version 14 (``migrate(to=14)``), puts *rows* finished jobs into
it (``sk.add_finished``, default 1,000,000) and 10,000 pending ones, then runs ``migrate()``
(0015) while another thread works the queue as the previous release would (its statements:
this release's with 0015's columns read as ``status`` again, and the ids of a batch read
back by key): claim 10, complete them, enqueue 10, each its own transaction, again and
again. It prints the migration's wall time, the rounds that thread finished while it ran,
and its slowest round: with an online migration (``LOCK=NONE`` / ``INSTANT``) that stays far
below the migration's time; a migration that blocked writes would show a round as long as
the migration.
"""

from __future__ import annotations

import argparse

from common import PAYLOAD
from sk import add_finished, migrate_while

import skiplock

TABLE = "bench_migration"


def _v14(sql: str) -> str:
    for column in ("key_status", "debounce_status", "finished_status"):
        sql = sql.replace(column, "status")
    return sql


def _v14_queue(url: str) -> skiplock.Queue:
    q = skiplock.connect(url, table=TABLE)
    q._schema_ok = True  # (bench only) it runs version 14's statements:
    q.dialect.sql = {name: _v14(sql) for name, sql in q.dialect.sql.items()}
    q.dialect.sql.pop("ids_in_range")
    return q


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000, help="finished jobs")
    args = parser.parse_args()
    q = skiplock.connect(args.url, table=TABLE)
    q.uninstall()
    q.migrate(to=14)
    old = _v14_queue(args.url)
    fill = add_finished(old, args.rows)
    for _ in range(10):
        old.enqueue_many([PAYLOAD] * 1000)
    old.close()
    print(f"{args.rows:,} finished + 10,000 pending jobs in {fill:.1f} s")
    w = _v14_queue(args.url)

    def round_() -> None:
        w.complete_many(w.claim(limit=10, lease=60))
        w.enqueue_many([PAYLOAD] * 10)

    try:
        migrate_while(q, round_, "claim 10 + complete 10 + enqueue 10")
    finally:
        w.close()
    q.uninstall()
    q.close()


if __name__ == "__main__":
    main()
