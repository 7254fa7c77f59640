"""Where a Worker drain's client CPU goes: cProfile on every thread, merged.

    python profile_drain.py --url URL [--jobs 20000] [--concurrency 100] [--top 40]

Fills the bench table (bench/sk.py) with *jobs* no-op jobs, then drains them with
``skiplock.Worker`` while every thread of the process (the claiming loop, the runners, the
completion writer, the heartbeat) runs under a ``cProfile.Profile`` of its own; the
profiles are merged and printed by total time (``tottime``; each thread's CPU time,
``time.thread_time``, not the clock), with the process's CPU
seconds per job (``time.process_time``: a counter, not a clock) next to the raw loop's
(bench/raw.py), same run. cProfile slows every Python call, so the profile's shares are
the figure to read, not its times; ``--no-profile`` gives the counters alone, and with
them each thread's CPU per job, by thread name, from ``/proc/self/task/<tid>/schedstat``
(nanoseconds on the CPU: the claiming loop ``skiplock-worker``, the completion writer
``skiplock-flush``, the handler runners ``skiplock-runner``; ``MainThread`` is this
script's wait for the count) and the process's context switches per job.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import threading
import time
from collections import Counter
from typing import Any

from raw import RawMySQL, RawPostgres
from sk import Skiplock, _noop

import skiplock

_profiles: list[cProfile.Profile] = []
_run = threading.Thread.run


def _profiled_run(self: threading.Thread) -> None:
    p = cProfile.Profile(time.thread_time)
    _profiles.append(p)
    p.enable()
    try:
        _run(self)
    finally:
        p.disable()


def drain_cpu(url: str, n: int, profile: bool, **options: Any) -> float:
    """CPU µs per job of this process for a Worker drain of *n* jobs, profiled."""
    s = Skiplock(url)
    s.reset()
    s.fill(n, 1000)
    main = cProfile.Profile(time.thread_time)
    if profile:
        threading.Thread.run = _profiled_run  # type: ignore[method-assign]
        _profiles.append(main)
        main.enable()
    cpu = time.process_time()
    try:
        s.run_worker(n, **options)
    finally:
        took = time.process_time() - cpu
        main.disable()
        threading.Thread.run = _run  # type: ignore[method-assign]
        s.close()
    return took / n * 1e6


def _thread_ns(native_id: int) -> int:
    with open(f"/proc/self/task/{native_id}/schedstat") as f:
        return int(f.read().split()[0])


def drain_threads(url: str, n: int, **options: Any) -> tuple[float, dict[str, float]]:
    """A Worker drain of *n* jobs: CPU µs per job of the process, and of its threads by
    name (read before the worker stops, while they are alive)."""
    s = Skiplock(url)
    s.reset()
    s.fill(n, 1000)
    worker = skiplock.Worker(s.q, _noop, **options)
    main = threading.main_thread().native_id
    assert main is not None
    main0, cpu = _thread_ns(main), time.process_time()
    switches = _switches()
    worker.start()
    while worker.counts["done"] < n:
        time.sleep(0.001)
    took = time.process_time() - cpu
    switches = _switches() - switches
    by: Counter[str] = Counter()
    for t in threading.enumerate():
        if t.native_id is not None:
            by[t.name.rstrip("0123456789-_")] += _thread_ns(t.native_id)
    by["MainThread"] -= main0
    worker.stop(timeout=30)
    s.close()
    by_thread = {name: ns / n / 1000 for name, ns in by.most_common()}
    by_thread["context switches per job"] = switches / n
    return took / n * 1e6, by_thread


def _switches() -> int:
    """The process's context switches so far, voluntary and not (``getrusage``)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def raw_cpu(url: str, n: int) -> float:
    r: Any = RawPostgres(url) if url.startswith("postgres") else RawMySQL(url)
    r.reset()
    r.fill(n, 1000)
    cpu = time.process_time()
    r.run_drain(n)
    took = time.process_time() - cpu
    r.close()
    return took / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args()
    raw = raw_cpu(args.url, args.jobs)
    if args.no_profile:
        sk, threads = drain_threads(args.url, args.jobs, concurrency=args.concurrency)
        print(f"client CPU µs/job: raw loop {raw:.1f}, Worker c{args.concurrency} {sk:.1f}")
        print("by thread: " + ", ".join(f"{k} {v:.2f}" for k, v in threads.items()))
        return
    sk = drain_cpu(args.url, args.jobs, True, concurrency=args.concurrency)
    print(f"client CPU µs/job: raw loop {raw:.1f}, Worker c{args.concurrency} {sk:.1f}")
    out = io.StringIO()
    stats = pstats.Stats(_profiles[0], stream=out)
    for p in _profiles[1:]:
        stats.add(p)
    stats.sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
