"""A MySQL/MariaDB claim on a big table: the claim index as installed (since migration
0017) against the same index on the VIRTUAL column ``claim_ready`` (1 while running, or
pending and not waiting), as migration 0016 built it.

    python bench/claim_at_scale.py --url mariadb://root@127.0.0.1:3306/skiplock_bench

Fills a table with ``--rows`` jobs in calls of 1,000, ends all but every ``--keep``-th one
``done`` (one UPDATE), waits ``--settle`` seconds (InnoDB's purge), runs ``ANALYZE TABLE``,
then makes ``--claims`` claims of 100 and prints each one's time (the clock: a claim's
round trips are in it). Then, on MariaDB, the pick alone through each index, with the pages
it read (``ANALYZE FORMAT=JSON``: ``r_engine_stats.pages_accessed``).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import skiplock

TABLE = "bench_claim_at_scale"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="mysql:// or mariadb://")
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--keep", type=int, default=300, help="every N-th job stays pending")
    ap.add_argument("--claims", type=int, default=8)
    ap.add_argument("--settle", type=float, default=30.0)
    args = ap.parse_args()
    q = skiplock.connect(args.url, table=TABLE)
    original = dict(q.dialect.sql)
    try:
        for label in ("as installed", "claim index on a VIRTUAL column"):
            q.uninstall()
            q.install()
            if label != "as installed":
                with q.transaction() as tx:
                    tx.execute(f"ALTER TABLE {TABLE} DROP INDEX {TABLE}_ready")
                    tx.execute(
                        f"ALTER TABLE {TABLE} ADD INDEX {TABLE}_ready "
                        "(claim_ready, queue, priority, run_at, id)"
                    )
                q.dialect.sql = {
                    k: v.replace("claimable = 1 AND c.key_wait IS NULL", "claim_ready = 1")
                    for k, v in q.dialect.sql.items()
                }
            for i in range(0, args.rows, 1000):
                q.enqueue_many([{"n": j} for j in range(min(1000, args.rows - i))])
            with q.transaction() as tx:
                tx.execute(
                    f"UPDATE {TABLE} SET status = 'done', finished_at = UTC_TIMESTAMP(6) "
                    f"WHERE id % {args.keep} <> 0"
                )
            time.sleep(args.settle)
            with q.transaction() as tx:
                tx.execute(f"ANALYZE TABLE {TABLE}")
            took = []
            for _ in range(args.claims):
                start = time.perf_counter()
                jobs = q.claim(limit=100, lease=600)
                took.append((time.perf_counter() - start) * 1000)
                assert len(jobs) == 100
            print(
                f"{label}: {args.claims} claims of 100, ms each: "
                + ", ".join(f"{t:.1f}" for t in took)
            )
            pick = q.dialect.sql["claim_pick"]
            pick = pick.replace("%(queue)s", "'default'").replace("%(limit)s", "100")
            with q.transaction() as tx:
                if "mariadb" in q.ping().product.lower():
                    out: Any = json.loads(tx.fetchall("ANALYZE FORMAT=JSON " + pick)[0][0])
                    t = out["query_block"]["nested_loop"][0]["table"]
                    print(
                        f"  the pick alone: index {t['key']}, {t['r_rows']} rows, "
                        f"{t.get('r_engine_stats', {}).get('pages_accessed')} pages, "
                        f"{out['query_block']['r_total_time_ms']:.1f} ms"
                    )
            q.dialect.sql = dict(original)
    finally:
        q.uninstall()
        q.close()


if __name__ == "__main__":
    main()
