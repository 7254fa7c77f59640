"""What the statement-level NOTIFY trigger costs concurrent enqueuers on PostgreSQL.

    python bench/notify.py                               # PostgreSQL at run.py's URL
    python bench/notify.py --embedded --runs 5           # an embedded PostgreSQL 18, durable

16 threads (``--threads``) each call ``Queue.enqueue`` ``--jobs`` times (one job, one
transaction per call) through one Queue with ``max_size`` = threads pooled connections.
Three tables in one database, rounds interleaved so the machine's noise hits them alike:

- ``trigger``: as ``install()`` makes it (``AFTER INSERT … FOR EACH STATEMENT`` →
  ``pg_notify``);
- ``trigger + listener``: the same, with one idle session LISTENing on its channel, as an
  idle Worker would be;
- ``no trigger``: the trigger dropped (bench-only DDL on a bench table).

A NOTIFY makes its transaction take the notification queue's lock at commit and hold it
until the commit record is flushed, so committing enqueuers queue behind one another. Prints
enqueues/s per variant (median of ``--runs``, with the samples) and the ratio to ``no
trigger``. A clock measurement: on a shared machine, trust the same-run ratio only.
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

VARIANTS = ("trigger", "trigger + listener", "no trigger")


def _table(variant: str) -> str:
    return (
        "bench_notify_"
        + {"trigger": "on", "trigger + listener": "listen", "no trigger": "off"}[variant]
    )


def prepare(url: str) -> dict[str, str]:
    """Fresh tables; the channel each one's trigger notifies (empty: no trigger)."""
    import psycopg

    channels = {}
    for variant in VARIANTS:
        q = skiplock.connect(url, table=_table(variant))
        with q.transaction() as tx:
            tx.execute(f"DROP TABLE IF EXISTS {q.dialect.quote(_table(variant))}")
        q.install()
        q.close()
        with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
            name = conn.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                (_table(variant),),
            ).fetchone()[0]
            if variant == "no trigger":
                conn.execute(f'DROP TRIGGER "{name}" ON "{_table(variant)}"')
                channels[variant] = ""
            else:
                # the trigger's function is "<channel>_notify"
                channels[variant] = name.removesuffix("_notify")
    return channels


def one_round(url: str, variant: str, channel: str, threads: int, jobs: int) -> float:
    import psycopg

    listener: Any = None
    if variant == "trigger + listener":
        listener = psycopg.connect(pg_dsn(url), autocommit=True)
        listener.execute(f'LISTEN "{channel}"')
    q = skiplock.connect(url, table=_table(variant), max_size=threads)
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
    if listener is not None:
        listener.close()
    return threads * jobs / took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=URLS["postgresql"])
    ap.add_argument("--embedded", action="store_true", help="an embedded, durable PostgreSQL 18")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=200, help="enqueue() calls per thread")
    ap.add_argument("--runs", type=int, default=5)
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
        channels = prepare(url)
        rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for r in range(args.runs):
            for variant in VARIANTS:
                got = one_round(url, variant, channels[variant], args.threads, args.jobs)
                rates[variant].append(got)
                print(f"round {r + 1} {variant}: {got:,.0f}/s", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    base = statistics.median(rates["no trigger"])
    print(f"PostgreSQL {version} ({settings}); {args.threads} threads x {args.jobs} enqueue()")
    print(f"calls each, a pooled connection per thread; medians of {args.runs}, rounds interleaved")
    print("| variant | enqueues/s | samples | ÷ no trigger |")
    print("|---|---:|---|---:|")
    for variant in VARIANTS:
        med = statistics.median(rates[variant])
        samples = ", ".join(f"{s:,.0f}" for s in rates[variant])
        print(f"| {variant} | {med:,.0f} | {samples} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
