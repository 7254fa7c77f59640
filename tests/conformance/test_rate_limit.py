"""Rate limits (docs/control.md): with ``rate_limits={"api": (N, per)}``, no window of
*per* seconds holds more than N claimed jobs of the queue, counted on the database's
clock across every claimer; and the limit costs no more time than it must."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

import skiplock
from skiplock import Worker

from .conftest import wait_until

MakeQueue = Callable[..., Any]
LEASE = 60.0


def claimed_at(job: skiplock.Job) -> datetime:
    """The database's time of the claim that took *job*: its lease's end less the lease
    (no heartbeat has moved it yet)."""
    assert job.lease_until is not None
    return job.lease_until - timedelta(seconds=LEASE)


def most_in_a_window(times: list[datetime], per: float) -> int:
    """The most of *times* that any half-open window of *per* seconds holds."""
    times = sorted(times)
    most, j = 0, 0
    for i, t in enumerate(times):
        while (t - times[j]).total_seconds() >= per:
            j += 1
        most = max(most, i - j + 1)
    return most


@pytest.mark.requires("lock_timeouts")  # claims refused the queue's lock (queue_lock) many times
def test_threads_claiming_never_exceed_the_rate(make_queue: MakeQueue) -> None:
    q = make_queue(rate_limits={"api": (20, 1.0)})
    q.enqueue_many([{"n": i} for i in range(50)], queue="api")
    q.enqueue_many([{"n": i} for i in range(50)], queue="free")
    times: list[datetime] = []
    free: list[int] = []
    lock = threading.Lock()

    def claimer() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            jobs = q.claim(queues=["api", "free"], limit=3, lease=LEASE)
            with lock:
                times.extend(claimed_at(j) for j in jobs if j.queue == "api")
                free.extend(j.id for j in jobs if j.queue == "free")
                if len(times) == 50:
                    return
            if not jobs:
                time.sleep(0.005)

    start = time.monotonic()
    threads = [threading.Thread(target=claimer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    took = time.monotonic() - start
    assert len(times) == 50 and len(free) == 50
    # Never more than the limit; windows are filled (exactly, in the single-claim test
    # below): racing threads on a loaded machine may leave a window short, not empty.
    assert 10 <= most_in_a_window(times, 1.0) <= 20
    span = (max(times) - min(times)).total_seconds()
    assert 2.0 <= span < 10.0, span  # 50 claims at 20 a second: the third window's
    assert took < 30.0, took


def test_a_claim_takes_the_room_left_and_says_when_there_is_more(make_queue: MakeQueue) -> None:
    q = make_queue(rate_limits={"api": (5, 0.6)})
    q.enqueue_many([{"n": i} for i in range(12)], queue="api")
    first = q.claim(queues="api", limit=3, lease=LEASE)
    assert len(first) == 3 and first.retry_in is None  # the limit did not hold it back
    time.sleep(0.2)  # so that the two claims leave the window 0.2 s apart
    second = q.claim(queues="api", limit=10, lease=LEASE)
    assert len(second) == 2
    assert second.retry_in is not None and 0 < second.retry_in <= 0.6
    third = q.claim(queues="api", limit=10, lease=LEASE)
    assert third == [] and third.retry_in is not None and third.retry_in <= 0.6
    time.sleep(third.retry_in + 0.05)
    later = q.claim(queues="api", limit=10, lease=LEASE)
    assert len(later) == 3  # the first claim's 3 left the window; the second's 2 not yet
    assert most_in_a_window([claimed_at(j) for j in [*first, *second, *later]], 0.6) == 5


def test_a_rate_limit_and_a_queue_limit_together(make_queue: MakeQueue) -> None:
    q = make_queue(rate_limits={"api": (4, 10.0)}, queue_limits={"api": 2})
    q.enqueue_many([{"n": i} for i in range(6)], queue="api")
    a = q.claim(queues="api", limit=5, lease=LEASE)
    assert len(a) == 2  # the queue limit
    q.complete_many(a)
    b = q.claim(queues="api", limit=5, lease=LEASE)
    assert len(b) == 2
    q.complete_many(b)
    assert q.claim(queues="api", limit=5, lease=LEASE) == []  # the rate: 4 in 10 s


def test_a_paused_rate_limited_queue_gives_nothing_and_uses_no_room(
    make_queue: MakeQueue,
) -> None:
    q = make_queue(rate_limits={"api": (3, 10.0)})
    q.enqueue_many([{"n": i} for i in range(5)], queue="api")
    q.pause("api")
    assert q.claim(queues="api", limit=5) == []
    q.resume("api")
    assert len(q.claim(queues="api", limit=5)) == 3


@pytest.mark.parametrize(
    "limits",
    [
        {"api": (0, 1.0)},
        {"api": (5, 0)},
        {"api": (5, -1.0)},
        {"api": ("5", 1.0)},
        {"api": (5, "1")},
        {"api": (True, 1.0)},
        {"api": (5, float("nan"))},
        {"api": (5, 1.0, 2)},
        {"api": 5},
        {"": (5, 1.0)},
        [("api", (5, 1.0))],
        "api",
    ],
)
def test_bad_rate_limits_are_refused(limits: object) -> None:
    url = "postgresql://u@127.0.0.1:1/db"  # nothing connects: refused before that
    with pytest.raises(skiplock.ConfigurationError, match=r"rate_limits|queue name"):
        skiplock.connect(url, rate_limits=limits)  # type: ignore[arg-type]
    with pytest.raises(skiplock.ConfigurationError, match=r"rate_limits|queue name"):
        skiplock.connect_async(url, rate_limits=limits)  # type: ignore[arg-type]
    with pytest.raises(skiplock.ConfigurationError, match=r"rate_limits|queue name"):
        skiplock.App(url, rate_limits=limits)  # type: ignore[arg-type]


@pytest.mark.requires("lock_timeouts")  # claims refused the queue's lock (queue_lock) many times
def test_workers_drain_a_rate_limited_queue_at_its_rate(
    make_queue: MakeQueue, worker_cls: type[Worker], workers: list[Worker]
) -> None:
    q = make_queue(rate_limits={"api": (10, 1.0)})
    times: list[datetime] = []
    lock = threading.Lock()

    def handler(job: skiplock.Job) -> None:
        with lock:
            times.append(claimed_at(job))

    q.enqueue_many([{"n": i} for i in range(25)], queue="api")
    for _ in range(2):
        w = worker_cls(q, handler, queues=["api"], concurrency=4, lease=LEASE)
        workers.append(w)
    start = time.monotonic()
    for w in workers:
        w.start()
    wait_until(lambda: len(times) == 25, 15, "the queue to drain")
    took = time.monotonic() - start
    assert most_in_a_window(times, 1.0) == 10
    span = (max(times) - min(times)).total_seconds()
    assert 2.0 <= span < 3.0, span  # 25 jobs at 10 a second: claims in three windows
    assert took < 4.5, took
