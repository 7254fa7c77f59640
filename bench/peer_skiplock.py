"""skiplock's side of bench/peers.py (see peer_step.py), through its public API only:
``Queue.enqueue`` / ``enqueue_many`` and ``skiplock.Worker``."""

from __future__ import annotations

import threading
import time

from common import PAYLOAD, Window

import skiplock

TABLE = "bench_skiplock"
#: the headline Worker of docs/performance.md (100 jobs a claim) against its defaults
CONFIG = {"tuned": "Worker(concurrency=100)", "defaults": "Worker() (concurrency 4)"}
OPTIONS = {"tuned": {"concurrency": 100}, "defaults": {}}


def version() -> str:
    return skiplock.__version__


def _queue(dsn: str) -> skiplock.Queue:
    return skiplock.connect(dsn, table=TABLE)


def reset(dsn: str) -> None:
    q = _queue(dsn)
    q.uninstall()
    q.install()
    q.close()


def fill(dsn: str, n: int, batch: int, config: str = "tuned") -> None:
    q = _queue(dsn)
    for i in range(0, n, batch):
        q.enqueue_many([PAYLOAD] * min(batch, n - i))
    q.close()


def enqueue(dsn: str, n: int, batch: int) -> float:
    reset(dsn)
    q = _queue(dsn)
    q.enqueue(PAYLOAD)  # the connection open and warm, as in a running application
    start = time.perf_counter()
    if batch == 1:
        for _ in range(n):
            q.enqueue(PAYLOAD)
    else:
        for i in range(0, n, batch):
            q.enqueue_many([PAYLOAD] * min(batch, n - i))
    took = time.perf_counter() - start
    q.close()
    return took


def drain(dsn: str, n: int, config: str, timeout: float) -> tuple[int, float, float]:
    """Until the Worker has committed the last completion (``counts["done"]`` grows after
    the COMMIT returned)."""
    q = _queue(dsn)
    worker = skiplock.Worker(q, lambda job: None, **OPTIONS[config])
    window = Window()
    worker.start()
    deadline = time.monotonic() + timeout
    while worker.counts["done"] < n and time.monotonic() < deadline:
        time.sleep(0.001)
    seconds, cpu = window.stop()
    done = worker.counts["done"]
    worker.stop(timeout=30)
    q.close()
    return done, seconds, cpu


def latency(dsn: str, samples: int, gap: float, timeout: float) -> list[float]:
    reset(dsn)
    q = _queue(dsn)
    seen: list[float] = []
    started = threading.Event()

    def handler(job: skiplock.Job) -> None:
        seen.append(time.perf_counter())
        started.set()

    worker = skiplock.Worker(q, handler, **OPTIONS["tuned"])
    worker.start()
    time.sleep(1.0)  # started and idle
    out: list[float] = []
    for _ in range(samples):
        started.clear()
        start = time.perf_counter()
        q.enqueue(PAYLOAD)
        if not started.wait(timeout):
            break
        out.append((seen[-1] - start) * 1000)
        time.sleep(gap)
    worker.stop(timeout=30)
    q.close()
    return out
