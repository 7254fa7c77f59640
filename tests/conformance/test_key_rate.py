"""Rate limits per key (docs/control.md, "Rate limits per key"): with ``enqueue(...,
key=k, key_rate=(N, per))``, no window of *per* seconds holds more than N starts of key
*k*'s jobs (their admission, read back on the database's clock), across every claimer;
other keys and keyless jobs are not held back; the key's order holds; a job held back
uses no attempt; and a bad ``key_rate`` writes nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

import skiplock
from skiplock import Worker

from .conftest import wait_until
from .test_rate_limit import LEASE, claimed_at, most_in_a_window

MakeQueue = Callable[..., Any]


def test_threads_racing_on_one_key_never_exceed_its_rate(make_queue: MakeQueue) -> None:
    q = make_queue()
    ids = q.enqueue_many(
        [{"n": i} for i in range(25)], key="cust-1", key_concurrency=25, key_rate=(10, 1.0)
    )
    other = q.enqueue_many(
        [{"n": i} for i in range(3)], key="cust-2", key_concurrency=3, key_rate=(10, 1.0)
    )
    free = q.enqueue_many([{"n": i} for i in range(20)])
    starts: dict[int, datetime] = {}
    lock = threading.Lock()

    def claimer() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            jobs = q.claim(limit=3, lease=LEASE)
            with lock:
                for job in jobs:
                    assert job.id not in starts  # never handed out twice
                    starts[job.id] = claimed_at(job)
                if len(starts) == 48:
                    return
            if not jobs:
                time.sleep(0.002)

    begun = time.monotonic()
    threads = [threading.Thread(target=claimer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    took = time.monotonic() - begun
    assert len(starts) == 48
    key_times = [starts[i] for i in ids]
    # Never more than the limit. (A full window is not promised: a key's jobs are claimed
    # one a claim, each after the previous claim of the key committed, which on a loaded
    # machine may take longer than a tenth of a second.)
    assert most_in_a_window(key_times, 1.0) <= 10
    span = (max(key_times) - min(key_times)).total_seconds()
    assert 2.0 <= span < 10.0, span  # 25 starts at 10 a second: three windows at least
    assert took < 30.0, took
    # the key's order: its jobs started in the order they were enqueued
    assert sorted(ids, key=lambda i: starts[i]) == ids
    # other keys and keyless jobs were not held back behind cust-1: each started before
    # cust-1's eleventh start, which its limit put a second after its first
    eleventh = sorted(key_times)[10]
    assert all(starts[i] < eleventh for i in [*other, *free])
    # a job held back used no attempt: each ran at its first
    assert {q.get(i).attempt for i in ids} == {1}


def test_a_claim_admits_the_room_left_and_says_when_there_is_more(
    make_queue: MakeQueue,
) -> None:
    q = make_queue()
    with q.transaction() as tx:  # a Transaction's enqueue takes it too
        first_id = tx.enqueue({"n": 0}, key="k", key_concurrency=10, key_rate=(3, 0.8))
    ids = [
        first_id,
        *q.enqueue_many(
            [{"n": i} for i in range(1, 6)], key="k", key_concurrency=10, key_rate=(3, 0.8)
        ),
    ]
    got: list[skiplock.Job] = []
    last = None
    while len(got) < 3:
        last = q.claim(limit=10, lease=LEASE)
        got += last
    assert [j.id for j in got] == ids[:3]
    held = q.claim(limit=10, lease=LEASE)
    assert held == [] and held.retry_in is not None and 0 < held.retry_in <= 0.8
    head = q.get(ids[3])
    assert head is not None and head.status == "pending" and head.attempt == 0
    time.sleep(held.retry_in + 0.05)
    later: list[skiplock.Job] = []
    deadline = time.monotonic() + 5
    while len(later) < 3 and time.monotonic() < deadline:
        later += q.claim(limit=10, lease=LEASE)
    assert [j.id for j in later] == ids[3:]
    assert most_in_a_window([claimed_at(j) for j in [*got, *later]], 0.8) == 3
    assert all(j.attempt == 1 for j in [*got, *later])


def test_a_key_held_back_leaves_its_room_in_the_claim_to_others(make_queue: MakeQueue) -> None:
    q = make_queue()
    held = q.enqueue_many(
        [{"n": i} for i in range(2)], key="k", key_concurrency=2, key_rate=(1, 30.0)
    )
    (first,) = q.claim(limit=1, lease=LEASE)
    assert first.id == held[0]
    other = q.enqueue({"n": "other"}, priority=5)  # after k's head in the claim's order
    (job,) = q.claim(limit=1, lease=LEASE)  # k's next is taken, given back, and the
    assert job.id == other  # claim takes the next job in its place
    waiting = q.get(held[1])
    assert waiting is not None and waiting.status == "pending" and waiting.attempt == 0


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"key_rate": (5, 1.0)}, "pass key="),
        ({"key": "k", "key_rate": (0, 1.0)}, "key_rate"),
        ({"key": "k", "key_rate": (5, 0)}, "key_rate"),
        ({"key": "k", "key_rate": ("5", 1.0)}, "key_rate"),
        ({"key": "k", "key_rate": (5, float("inf"))}, "key_rate"),
        ({"key": "k", "key_rate": 5}, "key_rate"),
        ({"key": "k", "key_rate": (5, 1.0, 2)}, "key_rate"),
        ({"key": "k", "key_rate": (5, 8 * 86400.0)}, "key_rate"),
    ],
)
def test_a_bad_key_rate_is_refused_and_writes_nothing(
    make_queue: MakeQueue, options: dict[str, Any], match: str
) -> None:
    q = make_queue()
    with pytest.raises(skiplock.ConfigurationError, match=match):
        q.enqueue({"n": 1}, **options)
    with pytest.raises(skiplock.ConfigurationError, match=match):
        q.enqueue_many([{"n": 1}, {"n": 2}], **options)
    with pytest.raises(skiplock.ConfigurationError, match=match), q.transaction() as tx:
        tx.enqueue({"n": 1}, **options)
    assert q.list_jobs() == []


@pytest.mark.parametrize("bad", [(0, 1.0), (5, 0), "5/1", (5,)])
def test_a_task_takes_key_rate_and_refuses_a_bad_one(url: str, bad: object) -> None:
    app = skiplock.App(url)
    with pytest.raises(skiplock.ConfigurationError, match="key_rate"):
        app.task(key_rate=bad)(lambda: None)  # type: ignore[arg-type]


def test_a_tasks_key_rate_holds_for_its_keyed_calls(make_queue: MakeQueue, url: str) -> None:
    q = make_queue()
    app = skiplock.App(url, table=str(q.table))
    try:

        @app.task(key_rate=(2, 30.0), key_concurrency=5)
        def call_api(n: int) -> None:
            pass

        keyed = [call_api.enqueue([i], key="customer-42") for i in range(3)]
        plain = call_api.defer(9)  # no key: no key rate
        taken: list[int] = []
        for _ in range(6):
            taken += [j.id for j in q.claim(limit=5, lease=LEASE)]
        assert sorted(taken) == sorted([*keyed[:2], plain])
        held = q.get(keyed[2])
        assert held is not None and held.status == "pending"
    finally:
        app.queue.close()


def test_workers_start_a_keys_jobs_at_its_rate(
    make_queue: MakeQueue, worker_cls: type[Worker], workers: list[Worker]
) -> None:
    q = make_queue()
    starts: dict[int, datetime] = {}
    lock = threading.Lock()

    def handler(job: skiplock.Job) -> None:
        with lock:
            starts[job.id] = claimed_at(job)

    ids = q.enqueue_many(
        [{"n": i} for i in range(25)], key="cust", key_concurrency=8, key_rate=(10, 1.0)
    )
    free = q.enqueue_many([{"n": i} for i in range(10)])
    for _ in range(2):
        # prefetch=0: a job claimed ahead would start later than its admission
        workers.append(worker_cls(q, handler, concurrency=4, lease=LEASE, prefetch=0))
    for w in workers:
        w.start()
    wait_until(lambda: len(starts) == 35, 30, "the jobs to run")
    key_times = [starts[i] for i in ids]
    assert most_in_a_window(key_times, 1.0) <= 10
    span = (max(key_times) - min(key_times)).total_seconds()
    assert 2.0 <= span < 10.0, span
    assert sorted(ids, key=lambda i: starts[i]) == ids
    eleventh = sorted(key_times)[10]
    assert all(starts[i] < eleventh for i in free)  # not held back behind the key
