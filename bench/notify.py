"""What the statement-level NOTIFY trigger costs concurrent enqueuers on PostgreSQL.

    python bench/notify.py                               # PostgreSQL at run.py's URL
    python bench/notify.py --embedded --runs 5           # an embedded PostgreSQL 18, durable

16 threads (``--threads``) each call ``Queue.enqueue`` ``--jobs`` times (one job, one
transaction per call) through one Queue with ``max_size`` = threads pooled connections.
One fresh table per trigger setting, in one database, rounds interleaved so the machine's
noise hits them alike:

- ``always`` (schema version 5's trigger: ``pg_notify`` after every INSERT statement);
  bench-only DDL puts that function body back on a bench table;
- ``when waited for`` (version 6, what ``install()`` makes: ``pg_notify`` only while a
  worker has marked itself waiting in ``<table>_idle``);
- ``none`` (the trigger dropped).

Each setting runs with no consumer, and again with a ``skiplock.Worker``
(``--worker-concurrency``, a no-op handler) draining the table while the threads enqueue:
that worker goes idle whenever it catches up, and marks itself waiting.

A NOTIFY makes its transaction take the notification queue's lock at commit and hold it
until the commit record is flushed, so committing enqueuers queue behind one another. Prints
enqueues/s per variant (median of ``--runs``, with the samples) and the ratio to the same
consumer's ``none``. A clock measurement: on a shared machine, trust the same-run ratio
only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from typing import Any

from common import pg_dsn
from run import URLS

import skiplock

TRIGGERS = ("always", "when waited for", "none")
CONSUMERS = ("no consumer", "a Worker")
VARIANTS = [(t, c) for c in CONSUMERS for t in TRIGGERS]
#: schema version 5's trigger function body (dialects/migrations/postgresql/0001_initial.sql)
ALWAYS = "BEGIN PERFORM pg_notify('{channel}', ''); RETURN NULL; END"


def _table(trigger: str) -> str:
    return "bench_notify_" + {"always": "always", "when waited for": "idle", "none": "off"}[trigger]


def prepare(url: str) -> None:
    """Fresh tables, one per trigger setting."""
    import psycopg

    for trigger in TRIGGERS:
        table = _table(trigger)
        q = skiplock.connect(url, table=table)
        q.uninstall()
        q.install()
        q.close()
        with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
            if trigger == "none":
                conn.execute(f'DROP TRIGGER "{table}_notify" ON "{table}"')
            elif trigger == "always":
                body = ALWAYS.format(channel=table)
                conn.execute(
                    f'CREATE OR REPLACE FUNCTION "{table}_notify"() RETURNS trigger '
                    f"LANGUAGE plpgsql AS $$ {body} $$"
                )


def one_round(url: str, trigger: str, consumer: str, args: argparse.Namespace) -> float:
    table, threads, jobs = _table(trigger), args.threads, args.jobs
    worker: Any = None
    if consumer == "a Worker":
        worker = skiplock.Worker(
            skiplock.connect(url, table=table),
            lambda job: None,
            concurrency=args.worker_concurrency,
        )
        worker.start()
        time.sleep(1.0)  # it has found the table empty and marked itself waiting
    q = skiplock.connect(url, table=table, max_size=threads)
    start = threading.Barrier(threads + 1)

    def work() -> None:
        q.enqueue({"warm": True})  # the pool's connections open before the clock starts
        start.wait()
        for i in range(jobs):
            q.enqueue({"n": i})

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in pool:
        t.join()
    took = time.perf_counter() - began
    q.close()
    if worker is not None:
        worker.stop()
        worker.queue.close()
    return threads * jobs / took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=URLS["postgresql"])
    ap.add_argument("--embedded", action="store_true", help="an embedded, durable PostgreSQL 18")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=200, help="enqueue() calls per thread")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--worker-concurrency", type=int, default=4)
    args = ap.parse_args()
    server = None
    url = args.url
    if args.embedded:
        from cost import _embedded

        server, url, _ = _embedded()
    try:
        import psycopg

        with psycopg.connect(pg_dsn(url)) as c:
            version = c.execute("SHOW server_version").fetchone()[0]
            settings = c.execute(
                "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings "
                "WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')"
            ).fetchone()[0]
        prepare(url)
        rates: dict[tuple[str, str], list[float]] = {v: [] for v in VARIANTS}
        for r in range(args.runs):
            for trigger, consumer in VARIANTS:
                got = one_round(url, trigger, consumer, args)
                rates[trigger, consumer].append(got)
                print(f"round {r + 1} {trigger}, {consumer}: {got:,.0f}/s", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    print(f"PostgreSQL {version} ({settings}); {args.threads} threads x {args.jobs} enqueue()")
    print(f"calls each, a pooled connection per thread; medians of {args.runs}, rounds interleaved")
    print("| trigger | consumer | enqueues/s | samples | ÷ none, same consumer |")
    print("|---|---|---:|---|---:|")
    for trigger, consumer in VARIANTS:
        med = statistics.median(rates[trigger, consumer])
        base = statistics.median(rates["none", consumer])
        samples = ", ".join(f"{s:,.0f}" for s in rates[trigger, consumer])
        print(f"| {trigger} | {consumer} | {med:,.0f} | {samples} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
