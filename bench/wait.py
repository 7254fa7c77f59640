"""How soon ``q.wait(job_id)`` returns after the job's completion commits (PostgreSQL: by
its notification; MySQL, MariaDB: by polling).

    cd bench && python wait.py --backend postgresql --backend mariadb --rounds 60
    python wait.py --url postgresql://postgres@127.0.0.1:5432/test --rounds 60

Each round: a thread starts ``q.wait(job_id)`` on a job just enqueued; ``--head-start``
seconds later (by then the waiter's back-off has reached its 50 ms cap) the main thread
claims the job and completes it. The latency is from ``complete()`` returning (its COMMIT
done) to ``wait()`` returning in the waiter, both on ``time.perf_counter``; a waiter that
read the committed row before ``complete()`` returned counts 0. A random 0-50 ms delay
before the completion spreads it over the waiter's polling period. The table is one of
its own (``bench_wait``), dropped at the end.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

from common import percentile
from run import URLS

import skiplock


def _wait(q: skiplock.Queue, job_id: int, returned: list[float]) -> None:
    q.wait(job_id, timeout=30)
    returned.append(time.perf_counter())


def measure(url: str, rounds: int, head_start: float, table: str = "bench_wait") -> list[float]:
    q = skiplock.connect(url, table=table, max_size=4)
    q.uninstall()
    q.install()
    latencies: list[float] = []
    try:
        for _ in range(rounds):
            job_id = q.enqueue("x")
            returned: list[float] = []
            waiter = threading.Thread(target=_wait, args=(q, job_id, returned))
            waiter.start()
            time.sleep(head_start + random.uniform(0, 0.05))
            [job] = q.claim()
            q.complete(job)
            committed = time.perf_counter()
            waiter.join(30)
            latencies.append(max(0.0, returned[0] - committed) * 1000)
    finally:
        q.uninstall()
        q.close()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", choices=sorted(URLS))
    parser.add_argument("--url", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--head-start", type=float, default=0.3)
    parser.add_argument("--table", default="bench_wait", help="its own table (dropped at the end)")
    args = parser.parse_args()
    targets = [(b, URLS[b]) for b in args.backend or []] + [(u, u) for u in args.url]
    for name, url in targets or [(b, URLS[b]) for b in sorted(URLS)]:
        ms = sorted(measure(url, args.rounds, args.head_start, args.table))
        print(
            f"{name:<12} rounds {len(ms):>4}  p50 {statistics.median(ms):6.1f} ms  "
            f"p90 {percentile(ms, 90):6.1f} ms  p99 {percentile(ms, 99):6.1f} ms  "
            f"max {ms[-1]:6.1f} ms"
        )


if __name__ == "__main__":
    main()
