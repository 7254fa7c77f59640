"""The dashboard's pages at scale (issue 20): PostgreSQL filled with 1,000,000 finished and
100,000 pending jobs, then ``/``, ``/jobs``, ``/jobs?status=failed``, ``/jobs/{id}`` and
``/metrics`` timed in process (Starlette's test client: the application, its statements
and the rendering; no network).

    python bench/web.py --url postgresql://postgres@127.0.0.1:5432/test
    python bench/web.py --url ... --finished 1000000 --pending 100000 --runs 20 --keep

The table (``bench_web_jobs``) is filled by ``INSERT ... SELECT generate_series`` on the
server: finished jobs spread one a second over the last 11.6 days (1% failed, the rest
done), pending ones due over the last day, five queues. It is dropped at the end unless
``--keep`` (a second run with ``--reuse`` skips the fill). Each page is fetched once to
warm up, then ``--runs`` times; the median and the slowest are printed.
"""

from __future__ import annotations

import argparse
import statistics
import time

from starlette.testclient import TestClient

import skiplock
from skiplock.web import create_app

TABLE = "bench_web_jobs"

FILL_FINISHED = """
INSERT INTO {t} (queue, payload, priority, status, attempt, max_attempts, run_at,
                 idempotency_key, last_error, result, created_at, finished_at)
SELECT 'queue-' || (g %% 5),
       json_build_object('task', 'bench.task_' || (g %% 7), 'args', json_build_array(g)),
       0,
       CASE WHEN g %% 100 = 0 THEN 'failed' ELSE 'done' END,
       1, 5,
       statement_timestamp() - g * interval '1 second',
       gen_random_uuid(),
       CASE WHEN g %% 100 = 0 THEN 'Traceback (most recent call last): ValueError: ' || g END,
       CASE WHEN g %% 100 = 0 THEN NULL ELSE '{{"ok": true}}'::json END,
       statement_timestamp() - g * interval '1 second' - interval '1 second',
       statement_timestamp() - g * interval '1 second'
FROM generate_series(1, %(n)s) AS g
"""

FILL_PENDING = """
INSERT INTO {t} (queue, payload, priority, status, attempt, max_attempts, run_at,
                 idempotency_key, created_at)
SELECT 'queue-' || (g %% 5),
       json_build_object('task', 'bench.task_' || (g %% 7), 'args', json_build_array(g)),
       0, 'pending', 0, 5,
       statement_timestamp() - (g %% 86400) * interval '1 second',
       gen_random_uuid(),
       statement_timestamp() - (g %% 86400) * interval '1 second'
FROM generate_series(1, %(n)s) AS g
"""


def fill(q: skiplock.Queue, finished: int, pending: int) -> None:
    t = q.dialect.quote(TABLE)
    q.uninstall()
    q.install()
    started = time.perf_counter()
    with q.transaction() as tx:
        tx.execute(FILL_FINISHED.format(t=t), {"n": finished})
        tx.execute(FILL_PENDING.format(t=t), {"n": pending})
    with q.transaction() as tx:
        tx.execute(f"ANALYZE {t}")
    print(f"filled {finished:,} finished and {pending:,} pending jobs in "
          f"{time.perf_counter() - started:.1f} s")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="a PostgreSQL URL")
    p.add_argument("--finished", type=int, default=1_000_000)
    p.add_argument("--pending", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--keep", action="store_true", help="keep the table afterwards")
    p.add_argument("--reuse", action="store_true", help="use the table a --keep run left")
    args = p.parse_args()
    q = skiplock.connect(args.url, table=TABLE)
    try:
        if not args.reuse:
            fill(q, args.finished, args.pending)
        (some,) = q.list_jobs(status="failed", limit=1)
        c = TestClient(create_app(q))
        pages = ["/", "/jobs", "/jobs?status=failed", "/jobs?queue=queue-3&status=pending",
                 f"/jobs/{some.id}", "/metrics", "/api/queues"]  # fmt: skip
        print(f"{'page':<40} {'median ms':>10} {'max ms':>8}   ({args.runs} runs each)")
        for page in pages:
            assert c.get(page).status_code == 200, page
            times = []
            for _ in range(args.runs):
                if page == "/metrics":
                    time.sleep(1.0)  # past its one-second cache: a real read each time
                t0 = time.perf_counter()
                r = c.get(page)
                times.append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 200
            print(f"{page:<40} {statistics.median(times):>10.1f} {max(times):>8.1f}")
    finally:
        if not args.keep:
            q.uninstall()
        q.close()


if __name__ == "__main__":
    main()
