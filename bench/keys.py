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

Hot key (``--hot N``, the other modes are skipped): one key with N jobs
(``enqueue_many(key="hot")``), then ``--keyless M`` keyless jobs behind it, drained for
``--seconds`` by 1, 4 and 16 claiming threads (``--claimers``), each with its own Queue
(its own connection), each looping ``claim(limit=100)`` + ``complete_many``; a fresh fill
for each number of claimers. It prints the mean time inside one ``claim`` call, the time
per hot-key job (the window over the key's jobs done in it: one job of the key starts per
claim that commits) and the keyless jobs' throughput::

    python bench/keys.py --backend mysql --hot 10000 --keyless 20000 --seconds 10
"""

from __future__ import annotations

import argparse
import statistics
import threading
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


def hot(url: str, n: int, keyless: int, claimers: int, seconds: float) -> None:
    """Drain one hot key of *n* jobs (and *keyless* keyless jobs behind it) with
    *claimers* threads, each with its own Queue, for *seconds* or until all are done."""
    q = skiplock.connect(url, table=TABLE)
    q.uninstall()
    q.install()
    for start in range(0, n, 1000):
        q.enqueue_many([PAYLOAD] * min(1000, n - start), key="hot")
    for start in range(0, keyless, 1000):
        q.enqueue_many([PAYLOAD] * min(1000, keyless - start))
    queues = [skiplock.connect(url, table=TABLE) for _ in range(claimers)]
    claims: list[float] = []
    done = {"hot": 0, "keyless": 0}
    keyless_end = [0.0]
    lock = threading.Lock()
    stop = threading.Event()

    def run(mine: skiplock.Queue) -> None:
        while not stop.is_set():
            t = time.perf_counter()
            jobs = mine.claim(limit=BATCH)
            took = time.perf_counter() - t
            mine.complete_many(jobs)
            hot_jobs = sum(1 for j in jobs if j.key is not None)
            with lock:
                claims.append(took)
                done["hot"] += hot_jobs
                done["keyless"] += len(jobs) - hot_jobs
                if keyless and done["keyless"] == keyless and not keyless_end[0]:
                    keyless_end[0] = time.perf_counter()
                if done["hot"] + done["keyless"] == n + keyless:
                    stop.set()

    threads = [threading.Thread(target=run, args=(mine,)) for mine in queues]
    start = time.perf_counter()
    for th in threads:
        th.start()
    stop.wait(seconds)
    stop.set()
    for th in threads:
        th.join()
    took = time.perf_counter() - start
    for mine in queues:
        mine.close()
    q.uninstall()
    q.close()
    per_claim = statistics.mean(claims) * 1000
    line = (
        f"  {claimers:2d} claimers: {len(claims):6d} claims, {per_claim:8.1f} ms"
        f" per claim; hot key {done['hot']:5d} jobs in {took:.1f} s,"
        f" {took * 1000 / max(done['hot'], 1):8.1f} ms per job"
    )
    if keyless:
        k_took = min((keyless_end[0] or time.perf_counter()) - start, took)
        line += f"; keyless {done['keyless']:6d} done, {rate(done['keyless'], k_took):7.0f} jobs/s"
    print(line, flush=True)


def main() -> None:
    global TABLE
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backend", default="postgresql", choices=list(URLS))
    ap.add_argument("--url", help="override the backend's URL (its database must exist)")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--per-key", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--finished", type=int, default=1_000_000, help="0: no growth run")
    ap.add_argument("--hot", type=int, default=0, help="jobs of one hot key (0: no hot run)")
    ap.add_argument("--keyless", type=int, default=0, help="keyless jobs behind the hot key")
    ap.add_argument("--claimers", type=int, nargs="*", default=[1, 4, 16])
    ap.add_argument("--seconds", type=float, default=10.0, help="each hot drain's window")
    ap.add_argument("--table", default=TABLE, help="the bench table's name")
    args = ap.parse_args()
    TABLE = args.table
    url = args.url or URLS[args.backend]
    if args.hot:
        print(f"{args.backend}: hot key of {args.hot} jobs, {args.keyless} keyless behind it")
        for claimers in args.claimers:
            hot(url, args.hot, args.keyless, claimers, args.seconds)
        return
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
