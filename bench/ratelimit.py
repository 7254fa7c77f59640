"""A rate limit's accuracy: worker processes drain one rate-limited queue, and every job's
claim time (on the database's clock) is checked against the limit.

    python bench/ratelimit.py --backend postgresql            # 4 processes, 1,000 jobs, (50, 1.0)
    python bench/ratelimit.py --backend mariadb --processes 4 --jobs 1000 --rate 50 --per 1

Each process runs a :class:`skiplock.Worker` (``--concurrency`` slots, a no-op handler)
on a queue made with ``rate_limits={"api": (rate, per)}``; the handler sends its job's
claim time (the lease's end less the lease, both the database's) back to this process.
Printed: the most claims any window of ``per`` seconds holds (must be at most ``rate``),
the span from the first claim to the last (the ideal is ``(jobs / rate - 1) * per`` when
the first window starts full: 19 s for 1,000 jobs at 50 a second), and the wall time from
the workers' start to the last job done.

    python bench/ratelimit.py --backend postgresql --per-key --keys 4 --jobs 200 --rate 10

``--per-key``: no queue limit; the jobs are spread over ``--keys`` keys, each enqueued
with ``key=``, ``key_concurrency=--concurrency`` and ``key_rate=(rate, per)``, and the
workers claim no jobs ahead (``prefetch=0``). Printed per key: the most starts (claim
times) any window holds, and the span of its starts (ideal ``(jobs per key / rate - 1) *
per``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from datetime import datetime, timedelta

import skiplock

TABLE = "bench_ratelimit"
LEASE = 60.0
URLS = {
    "postgresql": "postgresql://postgres@127.0.0.1:5432/test",
    "mariadb": "mariadb://root@127.0.0.1:3306/test",
    "mysql": "mysql://root@127.0.0.1:3307/test",
}


def work(
    url: str,
    limits: dict[str, tuple[int, float]],
    concurrency: int,
    out: mp.Queue,  # type: ignore[type-arg]
    per_key: bool = False,
) -> None:
    q = skiplock.connect(url, table=TABLE, rate_limits=limits)

    def handler(job: skiplock.Job) -> None:
        assert job.lease_until is not None
        out.put((job.key, (job.lease_until - timedelta(seconds=LEASE)).timestamp()))

    # per key: a job claimed ahead would start later than its admission (docs/control.md)
    prefetch = 0 if per_key else None
    w = skiplock.Worker(
        q, handler, queues=["api"], concurrency=concurrency, lease=LEASE, prefetch=prefetch
    )
    w.run(install_signals=False)


def most_in_a_window(times: list[float], per: float) -> int:
    times = sorted(times)
    most, j = 0, 0
    for i, t in enumerate(times):
        while t - times[j] >= per:
            j += 1
        most = max(most, i - j + 1)
    return most


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="postgresql", choices=list(URLS))
    ap.add_argument("--url", help="override the backend's URL")
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=8, help="slots per worker process")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--rate", type=int, default=50)
    ap.add_argument("--per", type=float, default=1.0)
    ap.add_argument("--per-key", action="store_true", help="key_rate per key, not per queue")
    ap.add_argument("--keys", type=int, default=4, help="keys of --per-key")
    args = ap.parse_args()
    url = args.url or URLS[args.backend]
    limits = {} if args.per_key else {"api": (args.rate, args.per)}

    q = skiplock.connect(url, table=TABLE, rate_limits=limits)
    q.uninstall()
    q.install()
    if args.per_key:
        for k in range(args.keys):
            q.enqueue_many(
                [{"n": i} for i in range(args.jobs // args.keys)],
                queue="api",
                key=f"customer-{k}",
                key_concurrency=args.concurrency,
                key_rate=(args.rate, args.per),
            )
        args.jobs = args.jobs // args.keys * args.keys
    else:
        q.enqueue_many([{"n": i} for i in range(args.jobs)], queue="api")
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [
        ctx.Process(
            target=work, args=(url, limits, args.concurrency, out, args.per_key), daemon=True
        )
        for _ in range(args.processes)
    ]
    start = time.monotonic()
    for p in procs:
        p.start()
    got = [out.get(timeout=600) for _ in range(args.jobs)]
    times = [t for _, t in got]
    while q.stats("api").done < args.jobs:
        time.sleep(0.05)
    wall = time.monotonic() - start
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(10)
    span = max(times) - min(times)
    first = datetime.fromtimestamp(min(times)).strftime("%H:%M:%S.%f")
    if args.per_key:
        report_keys(q, args, got, wall)
        return
    print(
        f"{q.ping().product} {'.'.join(map(str, q.ping().version))}: {args.processes} "
        f"processes x {args.concurrency} slots, {args.jobs} jobs, rate_limits (N={args.rate}, "
        f"per={args.per:g} s)"
    )
    print(f"  most claims in any {args.per:g} s window: {most_in_a_window(times, args.per)}")
    ideal = (args.jobs / args.rate - 1) * args.per
    print(f"  first claim {first}, last {span:.2f} s later (ideal {ideal:.2f} s)")
    print(f"  wall time, workers started to last job done: {wall:.2f} s")
    q.uninstall()
    q.close()


def report_keys(
    q: skiplock.Queue, args: argparse.Namespace, got: list[tuple[str, float]], wall: float
) -> None:
    server = q.ping()
    print(
        f"{server.product} {'.'.join(map(str, server.version))}: {args.processes} processes x "
        f"{args.concurrency} slots (prefetch 0), {args.jobs} jobs over {args.keys} keys, "
        f"key_rate (N={args.rate}, per={args.per:g} s) each"
    )
    ideal = (args.jobs / args.keys / args.rate - 1) * args.per
    for key in sorted({k for k, _ in got}):
        times = [t for k, t in got if k == key]
        span = max(times) - min(times)
        most = most_in_a_window(times, args.per)
        print(
            f"  {key}: most starts in any {args.per:g} s window {most}, span {span:.2f} s "
            f"(ideal {ideal:.2f} s)"
        )
    print(f"  wall time, workers started to last job done: {wall:.2f} s")
    q.uninstall()
    q.close()


if __name__ == "__main__":
    main()
