"""Workflows (issue 22): a chain's step-to-step latency, and what a group with a callback
costs to enqueue against a plain ``enqueue_many``.

    python bench/workflow.py                         # each database of run.py's URLS
    python bench/workflow.py --url postgresql://postgres@127.0.0.1:5432/test --runs 3

- **chain**: ``skiplock.chain`` of ``--steps`` steps (default 100) drained by one
  ``app.worker()`` with its defaults (concurrency 4, ``poll_interval`` 1 s: on PostgreSQL
  the release's NOTIFY wakes it, elsewhere it claims again after a completion or at its
  next poll). Per step: its handler's start (the wall clock) minus the previous step's
  ``finished_at`` (the database's clock, written by the completing statement just before
  its commit; same machine, so the same clock). Prints the median and p99 of the gaps.
- **group**: ``group(--group jobs).then(callback).enqueue()`` (one transaction: the
  members by ``enqueue_many``, then the callback with its ``--group`` edges) against
  ``Queue.enqueue_many`` of as many payloads of the same shape; rounds interleaved,
  the table emptied between them. Prints the median of each and their ratio.

A clock measurement: on a shared machine, trust the ratios of one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from typing import Any

from run import URLS

import skiplock

TABLE = "bench_workflow"


def chain_latency(url: str, steps: int, table: str = TABLE) -> list[float]:
    """Seconds from each step's completion to the next step's start."""
    app = skiplock.App(url, table=table)
    starts: dict[int, float] = {}
    lock = threading.Lock()

    @app.task(pass_job=True)
    def step(job: skiplock.Job, previous: Any = None) -> int:
        with lock:
            starts[job.id] = time.time()
        return job.id

    q = app.queue
    q.uninstall()
    q.install()
    worker = app.worker()
    worker.start()
    try:
        time.sleep(1.0)  # the worker is up and idle, as in a running system
        handle = skiplock.chain(*(step.s() for _ in range(steps))).enqueue()
        handle.wait(timeout=600, interval=0.05)
    finally:
        worker.stop()
    gaps = []
    for before, after in zip(handle.ids, handle.ids[1:], strict=False):
        job = q.get(before)
        assert job is not None and job.finished_at is not None
        gaps.append(starts[after] - job.finished_at.timestamp())
    q.uninstall()
    q.close()
    return gaps


def group_enqueue(
    url: str, size: int, runs: int, table: str = TABLE
) -> tuple[list[float], list[float]]:
    """Seconds to enqueue a group of *size* with a callback, and *size* by enqueue_many."""
    app = skiplock.App(url, table=table)

    @app.task
    def member(i: int) -> int:
        return i

    @app.task
    def callback(results: list[int]) -> int:
        return len(results)

    q = app.queue
    q.uninstall()
    q.install()
    payloads = [app.call_of(member.name, [i], None, {})[0] for i in range(size)]
    workflow, plain = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        handle = skiplock.group(*(member.s(i) for i in range(size))).then(callback.s()).enqueue()
        workflow.append(time.perf_counter() - t0)
        assert len(handle.ids) == size + 1
        _empty(q)
        t0 = time.perf_counter()
        ids = q.enqueue_many(payloads)
        plain.append(time.perf_counter() - t0)
        assert len(ids) == size
        _empty(q)
    q.uninstall()
    q.close()
    return workflow, plain


def _empty(q: skiplock.Queue) -> None:
    with q.transaction() as tx:
        tx.execute(f"DELETE FROM {q.dialect.quote(q.table.name + '_deps')}")
        tx.execute(f"DELETE FROM {q.dialect.quote(q.table.name)}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", action="append", help="a database URL (repeatable)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--group", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--table", default=TABLE, help="its own table (dropped at the end)")
    args = parser.parse_args(argv)
    for url in args.url or list(URLS.values()):
        name = skiplock.connect(url).url.masked()
        gaps = sorted(chain_latency(url, args.steps, args.table))
        p99 = gaps[min(len(gaps) - 1, round(0.99 * (len(gaps) - 1)))]
        print(
            f"{name}: chain of {args.steps}: step to step median "
            f"{statistics.median(gaps) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"max {gaps[-1] * 1000:.1f} ms",
            flush=True,
        )
        workflow, plain = group_enqueue(url, args.group, args.runs, args.table)
        w, p = statistics.median(workflow), statistics.median(plain)
        print(
            f"{name}: group of {args.group} + callback {w:.3f} s, enqueue_many {p:.3f} s, "
            f"ratio {w / p:.2f} (samples {[round(x, 3) for x in workflow]} / "
            f"{[round(x, 3) for x in plain]})",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
