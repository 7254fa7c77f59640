"""What a big table of finished jobs costs: the claim and the completion with 0, 1M and
10M finished jobs in the table, the claim's plan at each size, and a prune at the largest.

    python bench/scaling.py --backend postgresql               # 0, 1M, 10M finished
    python bench/scaling.py --backend mariadb --sizes 0,1000000 --prune 100000

One table per size, ``scaling_jobs_<size>``: on PostgreSQL in a database of its own,
``skiplock_scaling`` (made, and dropped at the end), on MariaDB and MySQL in the test
database (dropped at the end). Each table gets its finished jobs straight (bench-only SQL:
PostgreSQL ``generate_series``, the others a cross join of digits, 100,000 rows a
statement) and is analysed (PostgreSQL ``VACUUM ANALYZE``, as autovacuum would, then a
``CHECKPOINT``). Then ``--runs`` rounds, the tables taking turns in each (so the machine's
load hits every size alike): ``--pending`` jobs are enqueued (``enqueue_many``, 1,000 a
call) and drained by the bare Queue loop (``claim(limit=100)`` + ``complete_many``, one
thread); "claim ms" and "complete ms" are the time inside those calls per 100 jobs,
medians of the rounds, and the ratio is against the first size's claim. The drained jobs
stay, finished. On PostgreSQL the claim of 100 is then explained on each table
(``EXPLAIN (ANALYZE, BUFFERS)``, rolled back) with ``--pending`` jobs waiting: each scan
node's loops, rows and buffers; the rest of the buffers are the UPDATE's writes.

The finished jobs' ``finished_at`` spread back over ``--span`` days, the oldest inserted
first (the heap in the order jobs finish). At the end ``skiplock.admin.prune`` on the
largest table, with ``older_than`` cutting off its oldest ``--prune`` jobs, is timed (its
default batch of 1,000 rows, one transaction each).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from common import PAYLOAD

import skiplock
from skiplock import admin

TABLE = "scaling_jobs"  # + _<size>: one table per size
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
    start = time.perf_counter()
    try:
        if q.dialect.name == "postgresql":
            _fill_postgresql(conn, table, first, rows, total, step_ms)
        else:
            _fill_mysql(conn, table, first, rows, total, step_ms)
    finally:
        conn.close()
    return time.perf_counter() - start


def _fill_postgresql(conn: Any, table: str, first: int, rows: int, total: int, step: float) -> None:
    with conn.cursor() as cur:
        cur.execute(
            f"INSERT INTO {table} (queue, payload, status, attempt, run_at, idempotency_key, "
            "created_at, finished_at) SELECT 'default', '{\"n\":1}', 'done', 1, f, "
            "md5(g::text || random()::text)::uuid, f, f FROM (SELECT g, now() - "
            "(%(total)s::bigint - g) * %(step)s::float8 * interval '1 millisecond' AS f "
            "FROM generate_series(%(first)s::bigint, %(last)s::bigint) g) s",
            {"total": total, "step": step, "first": first, "last": first + rows - 1},
        )
        conn.commit()
        conn.autocommit = True
        cur.execute(f"VACUUM ANALYZE {table}")
        cur.execute("CHECKPOINT")  # the fill's dirty pages written now, not during the drains


def _fill_mysql(conn: Any, table: str, first: int, rows: int, total: int, step: float) -> None:
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS scaling_digits")
    cur.execute("CREATE TABLE scaling_digits (d INT)")
    cur.execute("INSERT INTO scaling_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
    for base in range(first, first + rows, 100_000):
        # g = base + the five digits' number: 100,000 rows per statement and transaction
        g = f"({int(base)} + a.d + 10*b.d + 100*c.d + 1000*d.d + 10000*e.d)"
        f = f"TIMESTAMPADD(MICROSECOND, -ROUND(({int(total)} - {g}) * {step * 1000!r}), "
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
    cur.close()


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
        "scans": _scans(top),
    }


def _scans(node: dict[str, Any]) -> list[str]:
    """Each scan node of the plan: its kind, index (or table), loops, rows per loop and
    shared buffers (hit + read, its children's included)."""
    out = []
    if "Index Name" in node or node["Node Type"] == "Seq Scan":
        name = node.get("Index Name", node.get("Relation Name"))
        buffers = node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0)
        out.append(
            f"{node['Node Type']} {name}: {node['Actual Loops']} loops x "
            f"{node['Actual Rows']:g} rows, {buffers} buffers, {node['Actual Total Time']:.3f} ms"
        )
    for child in node.get("Plans", []):
        out += _scans(child)
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


PART_COLUMNS = (
    "id bigserial, queue text NOT NULL, payload json NOT NULL, priority integer NOT NULL "
    "DEFAULT 0, status text NOT NULL DEFAULT 'pending', attempt integer NOT NULL DEFAULT 0, "
    "max_attempts integer NOT NULL DEFAULT 5, run_at timestamptz NOT NULL DEFAULT now(), "
    "lease_until timestamptz, idempotency_key uuid NOT NULL, dedupe_key text, last_error "
    "text, result json, created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz"
)


def _outcome(what: str, fn: Callable[[], object]) -> None:
    try:
        print(f"  {what}: OK {str(fn())[:100]}")
    except Exception as exc:  # the point is to show which error, whatever it is
        print(f"  {what}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")


def partitioning(url: str) -> None:
    """Whether skiplock's table can be a PostgreSQL partitioned table (``--partitioning``):
    what PostgreSQL answers to skiplock's keys on a table partitioned by status, what
    ``install`` does with such a table made beforehand, and what a completion that moves a
    row to the finished partition does to a concurrent fenced write (a heartbeat)."""
    import psycopg

    name = f"{TABLE}_part"
    dsn = urlsplit(url)._replace(scheme="postgresql").geturl()
    q = skiplock.connect(url, table=name)
    q.uninstall()
    with psycopg.connect(dsn, autocommit=True) as c:

        def ddl(sql: str) -> Callable[[], object]:
            return lambda: c.execute(sql).statusmessage

        print(f"{name}: partitioned by LIST (status), active (pending, running) and finished")
        _outcome(
            "primary key (id) alone",
            ddl(
                f"CREATE TABLE {name} ({PART_COLUMNS}, PRIMARY KEY (id)) PARTITION BY LIST (status)"
            ),
        )
        c.execute(f"DROP TABLE IF EXISTS {name}")
        c.execute(
            f"CREATE TABLE {name} ({PART_COLUMNS}, PRIMARY KEY (id, status)) "
            "PARTITION BY LIST (status)"
        )
        c.execute(
            f"CREATE TABLE {name}_active PARTITION OF {name} FOR VALUES IN ('pending', 'running')"
        )
        c.execute(f"CREATE TABLE {name}_finished PARTITION OF {name} DEFAULT")
        _outcome(
            "skiplock's unique dedupe index (migration 0001)",
            ddl(
                f"CREATE UNIQUE INDEX {name}_dedupe_idx ON {name} (dedupe_key) "
                "WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running')"
            ),
        )
        _outcome("q.install() on that table", q.install)
        have = {
            r[0]
            for r in c.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", (name,))
        }
        missing = [
            i for i in ("claim_idx", "dedupe_idx", "finished_idx") if f"{name}_{i}" not in have
        ]
        print(f"  after install, skiplock's version-1 indexes missing: {missing}")
        _outcome("enqueue", lambda: q.enqueue(PAYLOAD))
        _outcome("enqueue with a dedupe_key", lambda: q.enqueue(PAYLOAD, dedupe_key="d"))
        (job,) = q.claim()
        result: list[str] = []

        def beat() -> None:
            try:
                q.heartbeat(job)
                result.append("heartbeat OK")
            except Exception as exc:
                result.append(f"heartbeat {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")

        with q.transaction() as tx:
            tx.complete(job)  # moves the row to the finished partition, not committed yet
            waiter = threading.Thread(target=beat)
            waiter.start()
            time.sleep(1.0)  # the heartbeat waits for the row's lock
        waiter.join(30)
        print(f"  a heartbeat waiting while the completion moved the row: {result}")
        where = c.execute(f"SELECT tableoid::regclass::text, status FROM {name}").fetchall()
        print(f"  rows: {where}")
        c.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
    q.uninstall()
    q.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backend", default="postgresql", choices=list(URLS))
    ap.add_argument("--url", help="override the backend's URL (PostgreSQL: its database is made)")
    ap.add_argument("--sizes", default="0,1000000,10000000", help="finished jobs per table")
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--span", type=float, default=7.0, help="days the finished jobs span")
    ap.add_argument("--prune", type=int, default=1_000_000, help="0: no prune")
    ap.add_argument(
        "--partitioning", action="store_true", help="PostgreSQL: only the partitioning check"
    )
    args = ap.parse_args()
    if args.partitioning:
        partitioning(args.url or os.environ["SKIPLOCK_TEST_POSTGRESQL_URL"])
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if len(set(sizes)) != len(sizes) or min(sizes) < 0:
        ap.error("--sizes: distinct numbers of jobs, 0 or more")
    url = args.url or URLS[args.backend]
    pg = args.backend == "postgresql"
    if pg:
        pg_admin(url, f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
        pg_admin(url, f"CREATE DATABASE {PG_DATABASE}")
    queues = {size: skiplock.connect(url, table=f"{TABLE}_{size}") for size in sizes}
    try:
        for size, q in queues.items():
            q.uninstall()
            q.install()
            if size:
                took = add_finished(q, 1, size, size, args.span)
                print(f"  {q.table.name}: {size:,} finished jobs inserted in {took:.0f} s")
        print(
            f"{args.backend}: {args.pending:,} jobs enqueued and drained per table, the tables "
            f"taking turns, median of {args.runs}"
        )
        samples: dict[int, list[tuple[float, float, float]]] = {size: [] for size in sizes}
        for _ in range(args.runs):
            for size, q in queues.items():
                samples[size].append(drain(q, args.pending))
        base = statistics.median(r[1] for r in samples[sizes[0]])
        for size, q in queues.items():
            runs = samples[size]
            rate, claim_ms, complete_ms = (statistics.median(r[i] for r in runs) for i in range(3))
            print(
                f"  {size:>11,} finished ({table_size(q)}): {rate:6.0f} jobs/s, claim "
                f"{claim_ms:6.2f} ms/100 ({claim_ms / base:4.2f}x), complete "
                f"{complete_ms:6.2f} ms/100"
            )
            print(f"    samples: {[tuple(round(x, 2) for x in r) for r in runs]}")
        if pg:
            for size, q in queues.items():
                e = explain_claim(q, args.pending)
                buffers = f"buffers hit {e['hit']} read {e['read']}"
                print(f"  EXPLAIN claim, {size:,} finished: {e['ms']:.2f} ms, {buffers}")
                for scan in e["scans"]:
                    print(f"      {scan}")
        largest = max(sizes)
        if args.prune and largest:
            q = queues[largest]
            older = args.span * 86_400 * (largest - args.prune) / largest
            start = time.perf_counter()
            pruned = admin.prune(q, older)
            took = time.perf_counter() - start
            print(
                f"  prune older_than={older:.0f} s of {largest:,}: {pruned:,} jobs in {took:.1f} s "
                f"({pruned / took:,.0f} jobs/s), table now {table_size(q)}"
            )
    finally:
        for q in queues.values():
            q.uninstall()
            q.close()
        if pg:
            pg_admin(url, f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    main()
