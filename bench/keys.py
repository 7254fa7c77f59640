"""Per-key order's cost: a drain of jobs spread over distinct keys against the keyless
drain, in the same run, on one database.

    python bench/keys.py --backend postgresql --keys 1000 --per-key 10

Three fills of the same size on a fresh table each, drained by the bare Queue loop
(``claim(limit=100)`` + ``complete_many``, one thread), median of ``--runs``, taking turns:

- keyless: ``enqueue_many`` without a key;
- keyed, interleaved: round by round, one job of every key, then the next (customers'
  work as it arrives); a claim finds a key's head among the first rows it reads;
- keyed, grouped: each key's jobs enqueued together (``enqueue_many(key=...)``), the worst
  order for the claim: it reads past up to ``per_key - 1`` waiting jobs for each head.

Then the keyed claim's growth (``--finished``, 0 skips it): the grouped fill drained
``--runs`` times into one table (no reset, so dead rows weigh on both sides alike), then
``--finished`` finished keyed jobs (spread over the same keys) are inserted directly and
the table analysed, and it is drained ``--runs`` times again; "claim ms per 100" is the
time spent inside ``Queue.claim`` per 100 jobs.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import PAYLOAD, rate
from run import URLS
from sk import add_finished

import skiplock

TABLE = "bench_keys"
BATCH = 100


def fill(q: skiplock.Queue, mode: str, keys: int, per_key: int, fresh: bool = True) -> int:
    if fresh:
        q.uninstall()
        q.install()
    if mode == "keyless":
        q.enqueue_many([PAYLOAD] * (keys * per_key))
    elif mode == "grouped":
        for k in range(keys):
            q.enqueue_many([PAYLOAD] * per_key, key=f"k{k}")
    else:
        for _ in range(per_key):
            for k in range(keys):
                q.enqueue(PAYLOAD, key=f"k{k}")
    return keys * per_key


def drain(q: skiplock.Queue, n: int) -> tuple[float, float]:
    """Jobs per second, and milliseconds spent inside claim per 100 jobs."""
    done = 0
    claiming = 0.0
    start = time.perf_counter()
    while True:
        t = time.perf_counter()
        jobs = q.claim(limit=BATCH)
        claiming += time.perf_counter() - t
        if not jobs:
            break
        done += len(jobs) - len(q.complete_many(jobs))
    took = time.perf_counter() - start
    if done != n:
        raise RuntimeError(f"completed {done} of {n}")
    return rate(n, took), claiming * 1000 * 100 / n


def growth(q: skiplock.Queue, keys: int, per_key: int, runs: int, rows: int) -> None:
    """The keyed claim's cost with *rows* finished keyed jobs in the table against none."""
    empty: list[float] = []
    full: list[float] = []
    q.uninstall()
    q.install()
    for _ in range(runs):
        empty.append(drain(q, fill(q, "grouped", keys, per_key, fresh=False))[1])
    q.uninstall()
    q.install()
    took = add_finished(q, rows, keys)
    print(f"  added {rows:,} finished keyed jobs in {took:.1f} s")
    for _ in range(runs):
        full.append(drain(q, fill(q, "grouped", keys, per_key, fresh=False))[1])
    a, b = statistics.median(empty), statistics.median(full)
    print(f"  keyed claim ms per 100, grouped: empty {a:.2f}, +{rows:,} done {b:.2f}: {b / a:.2f}x")
    print(f"    samples: empty {[round(x, 2) for x in empty]}, full {[round(x, 2) for x in full]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backend", default="postgresql", choices=list(URLS))
    ap.add_argument("--url", help="override the backend's URL (its database must exist)")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--per-key", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--finished", type=int, default=1_000_000, help="0: no growth run")
    args = ap.parse_args()
    q = skiplock.connect(args.url or URLS[args.backend], table=TABLE)
    figures: dict[str, list[float]] = {"keyless": [], "interleaved": [], "grouped": []}
    try:
        for _ in range(args.runs):
            for mode, samples in figures.items():
                n = fill(q, mode, args.keys, args.per_key)
                samples.append(drain(q, n)[0])
        base = statistics.median(figures["keyless"])
        print(f"{args.backend}: {args.keys} keys x {args.per_key} jobs, median of {args.runs}")
        for mode, samples in figures.items():
            med = statistics.median(samples)
            print(f"  {mode:12s} {med:9.0f} jobs/s  {med / base:5.2f}x keyless")
            print(f"    samples: {[round(x) for x in samples]}")
        if args.finished:
            growth(q, args.keys, args.per_key, args.runs, args.finished)
    finally:
        q.uninstall()
        q.close()


if __name__ == "__main__":
    main()
