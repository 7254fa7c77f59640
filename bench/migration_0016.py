"""MySQL/MariaDB migration 0016 (a hot key's flag) on a large table: its time, and whether
writes go on while it runs.

    python bench/migration_0016.py --url mariadb://root@127.0.0.1:3306/skiplock_bench
    python bench/migration_0016.py --url mysql://root@127.0.0.1:3307/skiplock_bench

Makes ``bench_migration16`` at version 15 (``migrate(to=15)``), puts *rows* finished jobs
into it (``sk.add_finished``, default 1,000,000), then runs ``migrate()`` (0016) while
another thread writes as any release would, each its own transaction: one INSERT of a
pending job, one UPDATE of a job's status (plain SQL on version 1's columns, so it runs at
any version). It prints the migration's wall time, the rounds written meanwhile and the
slowest: a migration that blocked writes (a table rebuild under LOCK=SHARED) shows a round
as long as the rebuild.
"""

from __future__ import annotations

import argparse

from sk import add_finished, migrate_while

import skiplock

TABLE = "bench_migration16"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000, help="finished jobs")
    args = parser.parse_args()
    q = skiplock.connect(args.url, table=TABLE)
    q.uninstall()
    q.migrate(to=15)
    fill = add_finished(q, args.rows)
    print(f"{args.rows:,} finished jobs in {fill:.1f} s")
    table = q.dialect.quote(TABLE)
    conn = q.connection()
    cur = conn.cursor()
    n = [0]

    def round_() -> None:
        n[0] += 1
        cur.execute(
            f"INSERT INTO {table} (queue, payload, run_at, idempotency_key, created_at) "
            "VALUES ('default', '{}', UTC_TIMESTAMP(6), UUID(), UTC_TIMESTAMP(6))"
        )
        conn.commit()
        cur.execute(f"UPDATE {table} SET status = 'done' WHERE id = %s", (n[0],))
        conn.commit()

    try:
        migrate_while(q, round_, "INSERT + UPDATE")
    finally:
        conn.close()
    q.uninstall()
    q.close()


if __name__ == "__main__":
    main()
