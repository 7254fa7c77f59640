"""Single-worker mode when the holder is cut off from the database for longer than its
lease, while its handler runs (the server stays up): no two workers' handlers run at once.

Worker A reaches the server through a proxy that cuts every connection; worker B reaches
it directly and takes the lock as soon as the server drops A's lock connection. A's
leases end during the outage although its handler goes on running.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

import skiplock
from skiplock import Job, Worker

from .conftest import drained, wait_until
from .proxy import Proxy

#: worker B asks for the lock A holds every second until A's connection is dropped
pytestmark = pytest.mark.requires("lock_timeouts")


class Intervals:
    """When each worker's handlers ran, on this process's clock."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self._mutex = threading.Lock()

    def record(self, name: str, start: float) -> None:
        with self._mutex:
            self.spans.append((name, start, time.monotonic()))

    def first_start(self, name: str) -> float | None:
        starts = [s for n, s, _ in self.spans if n == name]
        return min(starts) if starts else None

    def overlaps(self) -> list[tuple[tuple[str, float, float], tuple[str, float, float]]]:
        return [
            (a, b)
            for a in self.spans
            for b in self.spans
            if a[0] < b[0] and a[1] < b[2] and b[1] < a[2]
        ]


def handlers(
    long_job: Callable[[str, Job], None],
) -> tuple[Intervals, Callable[[str], Callable[[Job], None]]]:
    """Handlers that record when they run: *long_job(worker, job)* for the job "long",
    a short sleep for the others."""
    spans = Intervals()

    def handler_for(name: str) -> Callable[[Job], None]:
        def handler(job: Job) -> None:
            start = time.monotonic()
            try:
                if job.payload == "long":
                    long_job(name, job)
                else:
                    time.sleep(0.01)
            finally:
                spans.record(name, start)

        return handler

    return spans, handler_for


@pytest.fixture
def cut_off(
    url: str, make_queue: Callable[..., skiplock.Queue]
) -> Iterator[tuple[skiplock.Queue, skiplock.Queue, Proxy]]:
    """``(direct, proxied, proxy)``: two queues on one table, the second through a proxy."""
    direct = make_queue()
    if not direct.dialect.supports_lock():
        pytest.skip("this database has no advisory-lock statements")
    with Proxy(url) as proxy:
        proxied = skiplock.connect(proxy.url, table=str(direct.table))
        try:
            yield direct, proxied, proxy
        finally:
            proxied.close()


def start_pair(
    direct: skiplock.Queue,
    proxied: skiplock.Queue,
    handler_for: Callable[[str], Callable[[Job], None]],
    workers: list[Worker],
    worker_cls: type[Worker],
    lease: float,
) -> tuple[Worker, Worker]:
    """A (through the proxy) holding the lock, then B waiting for it."""
    options = {"mode": "single", "lease": lease, "heartbeat": 0.25, "poll_interval": 0.1}
    a = worker_cls(proxied, handler_for("A"), concurrency=2, **options)  # type: ignore[arg-type]
    workers.append(a.start())
    wait_until(lambda: a.lock is not None and a.lock.held, what="A to hold the lock")
    b = worker_cls(direct, handler_for("B"), concurrency=4, **options)  # type: ignore[arg-type]
    workers.append(b.start())
    return a, b


@pytest.mark.parametrize("outage", [2.5, 3.0])
def test_a_holder_cut_off_longer_than_its_lease_is_waited_for_when_it_comes_back(
    cut_off: tuple[skiplock.Queue, skiplock.Queue, Proxy],
    workers: list[Worker],
    worker_cls: type[Worker],
    outage: float,
) -> None:
    direct, proxied, proxy = cut_off
    long_started = threading.Event()

    def long_job(name: str, job: Job) -> None:
        long_started.set()
        time.sleep(6.0)  # does not look at job.lock_lost: nothing can stop it

    spans, handler_for = handlers(long_job)
    # Unheartbeated, A's job would let B start 2 leases after A's last beat (~4.3 s after
    # the long job began), and a lease more once B has seen it running; A comes back
    # before that (3 s, 3.5 s) and beats it until it ends (6 s). With 3 s of outage, A's
    # first beat after it (a new connection: a TLS connect to MySQL) came too late for a
    # new holder that started at the first look finding A's lease 2 leases old.
    a, b = start_pair(direct, proxied, handler_for, workers, worker_cls, lease=2.0)
    [long_id] = direct.enqueue_many(["long"])
    assert long_started.wait(30), "A did not start the long job"
    time.sleep(0.5)  # a heartbeat or two
    proxy.cut()
    short = direct.enqueue_many(["short"] * 5)
    time.sleep(outage)  # longer than the lease, shorter than a lease past its end
    proxy.restore()
    wait_until(lambda: drained(direct), timeout=60, what="every job to be done")
    assert spans.overlaps() == [], "two workers ran handlers at the same time"
    assert b.lock is not None and b.lock.held, "B did not take the lock"
    record = direct.get(long_id)
    assert record is not None and (record.status, record.attempt) == ("done", 1)
    # A worker counts an outcome just after its COMMIT, so the counts may lag a moment.
    wait_until(lambda: a.counts["done"] == 1, what="A to count its job done")
    wait_until(lambda: b.counts["done"] == len(short), what="B to count its jobs done")
    assert a.counts["lost"] == 0 and b.counts["lost"] == 0


def test_a_holder_cut_off_for_good_is_told_before_the_next_holder_starts(
    cut_off: tuple[skiplock.Queue, skiplock.Queue, Proxy],
    workers: list[Worker],
    worker_cls: type[Worker],
) -> None:
    direct, proxied, proxy = cut_off
    long_started = threading.Event()
    told: list[float] = []

    def long_job(name: str, job: Job) -> None:
        if name != "A":
            return
        long_started.set()
        end = time.monotonic() + 60
        while not job.lock_lost and time.monotonic() < end:
            time.sleep(0.02)
        told.append(time.monotonic())

    spans, handler_for = handlers(long_job)
    a, b = start_pair(direct, proxied, handler_for, workers, worker_cls, lease=1.5)
    [long_id] = direct.enqueue_many(["long"])
    assert long_started.wait(30), "A did not start the long job"
    proxy.cut()
    cut_at = time.monotonic()
    short = direct.enqueue_many(["short"] * 5)
    # B starts once A's lease has ended a lease ago; A is still cut off then.
    wait_until(lambda: spans.first_start("B") is not None, timeout=30, what="B to start jobs")
    assert told, "A's handler was not told that the lock was lost"
    first_b = spans.first_start("B")
    assert first_b is not None and told[0] < first_b
    assert first_b - cut_at >= 1.5, "B started before A's lease could have ended"
    # A comes back only once B has taken the long job (its expired lease becomes claimable
    # a moment after B's first claim; A back before that would complete it as attempt 1,
    # which its lease no longer covers but nobody had taken: failed twice under load).
    wait_until(lambda: _attempt(direct, long_id) == 2, timeout=30, what="B to take A's job")
    proxy.restore()
    wait_until(lambda: drained(direct), timeout=60, what="every job to be done")
    assert spans.overlaps() == []
    # A's handler returned, but its completion is fenced: B ran the job again.
    record = direct.get(long_id)
    assert record is not None and record.status == "done" and record.attempt == 2
    wait_until(lambda: a.counts["lost"] == 1, timeout=30, what="A to see its job lost")
    wait_until(lambda: b.counts["done"] == len(short) + 1, what="B to count its jobs done")
    assert a.counts["done"] == 0


def _attempt(q: skiplock.Queue, job_id: int) -> int | None:
    job = q.get(job_id)
    return None if job is None else job.attempt
