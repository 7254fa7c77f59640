"""What a big table of finished jobs costs: the claim and the completion with 0, 1M and
10M finished jobs in the table, the claim's plan at each size, and a prune at the largest.

    python bench/scaling.py --backend postgresql               # 0, 1M, 10M finished
    python bench/scaling.py --backend mariadb --sizes 0,1000000

PostgreSQL runs in a database of its own, ``skiplock_scaling`` (made, and dropped at the
end); MariaDB and MySQL in a table of their own, ``scaling_jobs``, in the test database
(dropped at the end). One table grows through ``--sizes``: at each size the finished jobs
are inserted straight into the table (bench-only SQL: PostgreSQL ``generate_series``, the
others a cross join of digits, 100,000 rows a statement), the table analysed (PostgreSQL
``VACUUM ANALYZE``, as autovacuum would, then a ``CHECKPOINT``), then ``--runs`` times:
``--pending`` jobs are enqueued (``enqueue_many``, 1,000 a call) and drained by the bare Queue loop
(``claim(limit=100)`` + ``complete_many``, one thread); "claim ms" and "complete ms" are the
time inside those calls per 100 jobs, medians of the runs. The drained jobs stay, finished,
so each run adds ``--pending`` rows to the table. On PostgreSQL the claim of 100 is
explained (``EXPLAIN (ANALYZE, BUFFERS)``, rolled back) with ``--pending`` jobs waiting.

The finished jobs' ``finished_at`` spread back over ``--span`` days, the oldest inserted
first (the heap in the order jobs finish). At the last size, ``skiplock.admin.prune`` with
``older_than`` cutting off the oldest ``--prune`` of them is timed (its default batch of
1,000 rows, one transaction each), then one claim + complete drain again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any
from urllib.parse import urlsplit

from common import PAYLOAD

import skiplock
from skiplock import admin

TABLE = "scaling_jobs"
PG_DATABASE = "skiplock_scaling"
BATCH = 100
URLS = {
    "postgresql": f"postgresql://postgres@127.0.0.1:5432/{PG_DATABASE}",
    "mariadb": os.environ.get("SKIPLOCK_TEST_MARIADB_URL", "mariadb://root@127.0.0.1:3306/test"),
    "mysql": os.environ.get("SKIPLOCK_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3307/test"),
}


def pg_admin(url: str, sql: str) -> None:
    """*sql* run on the server's ``postgres`` database (CREATE / DROP DATABASE)."""
    import psycopg

    dsn = urlsplit(url)._replace(scheme="postgresql", path="/postgres").geturl()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)


def add_finished(q: skiplock.Queue, first: int, rows: int, total: int, span_days: float) -> float:
    """Insert finished jobs number *first* .. *first + rows - 1* of *total*: job g finished
    ``(total - g) / total * span_days`` ago (the oldest first); then analyse. Seconds."""
    table = q.dialect.quote(q.table.name)
    step_ms = span_days * 86_400_000 / total
    conn = q.connection()
    cur = conn.cursor()
    start = time.perf_counter()
    if q.dialect.name == "postgresql":
        cur.execute(
            f"INSERT INTO {table} (queue, payload, status, attempt, run_at, idempotency_key, "
            "created_at, finished_at) SELECT 'default', '{\"n\":1}', 'done', 1, f, "
            "md5(g::text || random()::text)::uuid, f, f FROM (SELECT g, now() - "
            "(%(total)s::bigint - g) * %(step)s::float8 * interval '1 millisecond' AS f "
            "FROM generate_series(%(first)s::bigint, %(last)s::bigint) g) s",
            {"total": total, "step": step_ms, "first": first, "last": first + rows - 1},
        )
        conn.commit()
        conn.autocommit = True
        cur.execute(f"VACUUM ANALYZE {table}")
        cur.execute("CHECKPOINT")  # the fill's dirty pages written now, not during the drains
    else:
        cur.execute("DROP TABLE IF EXISTS scaling_digits")
        cur.execute("CREATE TABLE scaling_digits (d INT)")
        cur.execute("INSERT INTO scaling_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
        for base in range(first, first + rows, 100_000):
            # g = base + the five digits' number: 100,000 rows per statement and transaction
            g = f"({int(base)} + a.d + 10*b.d + 100*c.d + 1000*d.d + 10000*e.d)"
            f = f"TIMESTAMPADD(MICROSECOND, -ROUND(({int(total)} - {g}) * {step_ms * 1000!r}), "
            f += "UTC_TIMESTAMP(6))"
            cur.execute(
                f"INSERT INTO {table} (queue, payload, status, attempt, run_at, "
                "idempotency_key, created_at, finished_at) "
                f"SELECT 'default', '{{\"n\":1}}', 'done', 1, {f}, UUID(), {f}, {f} "
                "FROM scaling_digits a, scaling_digits b, scaling_digits c, scaling_digits d, "
                "scaling_digits e"
            )
            conn.commit()
        cur.execute("DROP TABLE scaling_digits")
        cur.execute(f"ANALYZE TABLE {table}")
        cur.fetchall()
        conn.commit()
    took = time.perf_counter() - start
    cur.close()
    conn.close()
    return took


def drain(q: skiplock.Queue, n: int) -> tuple[float, float, float]:
    """Enqueue *n* jobs, drain them; (jobs/s, claim ms per 100, complete ms per 100)."""
    for i in range(0, n, 1000):
        q.enqueue_many([PAYLOAD] * min(1000, n - i))
    claim_s = complete_s = 0.0
    done = 0
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        jobs = q.claim(limit=BATCH)
        t1 = time.perf_counter()
        claim_s += t1 - t0
        if not jobs:
            break
        done += len(jobs) - len(q.complete_many(jobs))
        complete_s += time.perf_counter() - t1
    took = time.perf_counter() - start
    if done != n:
        raise RuntimeError(f"completed {done} of {n}")
    return n / took, claim_s * 1000 * BATCH / n, complete_s * 1000 * BATCH / n


def explain_claim(q: skiplock.Queue, pending: int) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of one claim of 100 with *pending* jobs waiting, rolled
    back; the jobs are then drained. PostgreSQL only."""
    for i in range(0, pending, 1000):
        q.enqueue_many([PAYLOAD] * min(1000, pending - i))
    params = {"queue": "default", "limit": BATCH, "lease_ms": 30_000, "claim_id": 1}
    conn = q.connection()
    try:
        cur = conn.cursor()
        cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + q.dialect.sql["claim"], params)
        value = cur.fetchone()[0]
        plan = (json.loads(value) if isinstance(value, str) else value)[0]
        conn.rollback()
    finally:
        conn.close()
    while jobs := q.claim(limit=1000):
        q.complete_many(jobs)
    top = plan["Plan"]
    return {
        "ms": plan["Execution Time"],
        "hit": top.get("Shared Hit Blocks", 0),
        "read": top.get("Shared Read Blocks", 0),
        "scans": sorted(_scans(top)),
    }


def _scans(node: dict[str, Any]) -> set[str]:
    out = set()
    if "Index Name" in node or node["Node Type"] == "Seq Scan":
        out.add(f"{node['Node Type']} {node.get('Index Name', node.get('Relation Name'))}")
    for child in node.get("Plans", []):
        out |= _scans(child)
    return out


def table_size(q: skiplock.Queue) -> str:
    conn = q.connection()
    try:
        cur = conn.cursor()
        if q.dialect.name == "postgresql":
            cur.execute("SELECT pg_size_pretty(pg_total_relation_size(%s))", (q.table.name,))
        else:
            cur.execute(
                "SELECT CONCAT(ROUND((data_length + index_length) / 1048576), ' MB') "
                "FROM information_schema.tables WHERE table_schema = DATABASE() "
                "AND table_name = %s",
                (q.table.name,),
            )
        size = str(cur.fetchone()[0])
        conn.commit()
        return size
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backend", default="postgresql", choices=list(URLS))
    ap.add_argument("--url", help="override the backend's URL (PostgreSQL: its database is made)")
    ap.add_argument("--sizes", default="0,1000000,10000000", help="finished jobs, growing")
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--span", type=float, default=7.0, help="days the finished jobs span")
    ap.add_argument("--prune", type=int, default=1_000_000, help="0: no prune")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes != sorted(sizes):
        ap.error("--sizes must grow")
    url = args.url or URLS[args.backend]
    pg = args.backend == "postgresql"
    if pg:
        pg_admin(url, f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
        pg_admin(url, f"CREATE DATABASE {PG_DATABASE}")
    q = skiplock.connect(url, table=TABLE)
    total = sizes[-1]
    have = 0
    try:
        q.uninstall()
        q.install()
        print(f"{args.backend}: {args.pending:,} jobs enqueued and drained, median of {args.runs}")
        base_claim = 0.0
        for size in sizes:
            if size > have:
                took = add_finished(q, have + 1, size - have, total, args.span)
                print(f"  inserted {size - have:,} finished jobs in {took:.0f} s")
                have = size
            runs = [drain(q, args.pending) for _ in range(args.runs)]
            rate, claim_ms, complete_ms = (statistics.median(r[i] for r in runs) for i in range(3))
            base_claim = base_claim or claim_ms
            print(
                f"  {size:>11,} finished ({table_size(q)}): {rate:6.0f} jobs/s, claim "
                f"{claim_ms:6.2f} ms/100 ({claim_ms / base_claim:4.2f}x), complete "
                f"{complete_ms:6.2f} ms/100"
            )
            print(f"    samples: {[tuple(round(x, 2) for x in r) for r in runs]}")
            if pg:
                e = explain_claim(q, args.pending)
                print(
                    f"    EXPLAIN claim: {e['ms']:.2f} ms, buffers hit {e['hit']} read {e['read']}"
                )
                print(f"      scans: {json.dumps(e['scans'])}")
        if args.prune:
            older = args.span * 86_400 * (total - args.prune) / total
            start = time.perf_counter()
            pruned = admin.prune(q, older)
            took = time.perf_counter() - start
            print(
                f"  prune older_than={older:.0f} s: {pruned:,} jobs in {took:.1f} s "
                f"({pruned / took:,.0f} jobs/s), table now {table_size(q)}"
            )
            runs = [drain(q, args.pending) for _ in range(args.runs)]
            claim_ms = statistics.median(r[1] for r in runs)
            print(f"  after the prune: claim {claim_ms:.2f} ms/100")
    finally:
        q.uninstall()
        q.close()
        if pg:
            pg_admin(url, f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    main()
