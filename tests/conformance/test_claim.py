"""Claim: many workers, no job taken twice, none lost; order and schedule honoured."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import skiplock

from .conftest import within


def test_eight_threads_claim_every_job_exactly_once(queue: skiplock.Queue) -> None:
    ids = set(queue.enqueue_many(range(2000)))
    assert len(ids) == 2000
    claimed: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker() -> None:
        try:
            start.wait()
            while True:
                jobs = queue.claim(limit=10, lease=60)
                if not jobs:
                    return
                assert not queue.complete_many(jobs)
                with lock:
                    claimed.extend(j.id for j in jobs)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    counts = Counter(claimed)
    assert [i for i, n in counts.items() if n > 1] == []
    assert set(counts) == ids
    stats = queue.stats()
    assert (stats.done, stats.pending, stats.running) == (2000, 0, 0)


def test_claim_returns_jobs_with_their_fencing_token(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue({"n": 1}, queue="q1", max_attempts=3)
    [job] = queue.claim(queues=["q1"], lease=5)
    assert (job.id, job.status, job.attempt, job.max_attempts) == (job_id, "running", 1, 3)
    assert job.payload == {"n": 1}
    assert job.lease_until is not None
    assert queue.claim(queues=["q1"]) == []


def test_priorities_are_honoured_lowest_first(queue: skiplock.Queue) -> None:
    for p in (5, 1, 3, 1):
        queue.enqueue({"p": p}, priority=p)
    jobs = queue.claim(limit=10)
    assert [j.payload["p"] for j in jobs] == [1, 1, 3, 5]
    assert jobs[0].id < jobs[1].id


def test_claim_takes_the_best_job_first(queue: skiplock.Queue) -> None:
    queue.enqueue("low", priority=10)
    queue.enqueue("high", priority=-1)
    [job] = queue.claim()
    assert job.payload == "high"


def test_delayed_job_is_not_claimed_before_run_at(queue: skiplock.Queue) -> None:
    queue.enqueue("later", delay=1.5)
    queue.enqueue("now")
    assert [j.payload for j in queue.claim(limit=5)] == ["now"]
    assert queue.stats().scheduled == 1
    time.sleep(0.5)
    assert queue.claim() == []
    claimed: list[skiplock.Job] = []
    within(1.3, lambda: claimed.extend(queue.claim()) or claimed, "the delay to pass")
    [job] = claimed
    assert job.payload == "later"


def test_run_at_in_the_future_waits(queue: skiplock.Queue) -> None:
    from datetime import datetime, timedelta, timezone

    queue.enqueue("future", run_at=datetime.now(timezone.utc) + timedelta(hours=1))
    queue.enqueue("past", run_at=datetime.now(timezone.utc) - timedelta(hours=1))
    assert [j.payload for j in queue.claim(limit=5)] == ["past"]


def test_queues_are_separate(queue: skiplock.Queue) -> None:
    queue.enqueue("a", queue="alpha")
    queue.enqueue("b", queue="beta", priority=-5)
    assert [j.payload for j in queue.claim(queues=["alpha"], limit=5)] == ["a"]
    queue.enqueue("a2", queue="alpha")
    jobs = queue.claim(queues=["alpha", "beta"], limit=5)
    assert [j.payload for j in jobs] == ["b", "a2"]


def test_enqueue_many_returns_ids_in_order(queue: skiplock.Queue) -> None:
    payloads = [{"i": i} for i in range(50)]
    ids = queue.enqueue_many(payloads, queue="bulk", priority=2, max_attempts=7)
    assert len(set(ids)) == 50
    for i, job_id in enumerate(ids):
        job = queue.get(job_id)
        assert job is not None
        assert (job.payload, job.queue, job.priority, job.max_attempts) == ({"i": i}, "bulk", 2, 7)
    assert queue.enqueue_many([]) == []


def test_idempotency_key_is_stable_across_attempts_and_unique(queue: skiplock.Queue) -> None:
    a, b = queue.enqueue_many(["a", "b"])
    [job] = queue.claim(lease=0.2)
    key = job.idempotency_key
    within(0.4, lambda: queue.stats().expired == 1, "the 0.2 s lease to end")
    [again] = [j for j in queue.claim(limit=2, lease=5) if j.id == job.id]
    assert again.attempt == 2
    assert again.idempotency_key == key
    other = queue.get(b if job.id == a else a)
    assert other is not None and other.idempotency_key != key


def unlocked(q: skiplock.Queue, after_pick: Callable[[], None]) -> skiplock.Queue:
    """*q* with a pick that takes no row locks (as on a server whose SKIP LOCKED does not
    lock), calling *after_pick* between the pick and the take. Dialects that pick and take
    in one statement have no such gap: the caller skips them."""
    base = type(q.dialect)

    class Unlocked(base):  # type: ignore[valid-type,misc]
        def claim_take(self, *args: Any) -> Any:
            after_pick()  # (the take is built once the pick's rows are read)
            return super().claim_take(*args)

    d = Unlocked(q.url, q.table)
    for name in ("claim_pick", "claim_pick_queues"):
        d.sql[name] = d.sql[name].replace("FOR UPDATE SKIP LOCKED", "")
    q.dialect = d
    return q


@pytest.mark.parametrize("order", ["small first", "large first", "together"])
def test_claims_that_read_the_same_rows_without_locks_never_share_a_job(
    make_queue: Callable[..., skiplock.Queue], order: str, api: str
) -> None:
    if api == "async":
        # The hook holds each claim between its pick and its take on a barrier: on one
        # event loop that blocks both. The statements are the same dialect operations.
        pytest.skip("the pick/take hook blocks a thread; both async claims share one loop")
    if "claim_pick" not in make_queue().dialect.sql:
        pytest.skip("this dialect picks and takes in one statement")
    ids = make_queue().enqueue_many(range(6))
    both_picked = threading.Barrier(2, timeout=30)
    first_done = threading.Event()
    first = "small" if order == "small first" else "large"

    def after_pick(name: str) -> Callable[[], None]:
        def wait() -> None:
            both_picked.wait()  # both read the same rows before either takes one
            if order != "together" and name != first:
                assert first_done.wait(30)

        return wait

    limits = {"small": 4, "large": 6}
    queues = {n: unlocked(make_queue(), after_pick(n)) for n in limits}
    got: dict[str, list[skiplock.Job]] = {}
    errors: list[BaseException] = []

    def claim(name: str) -> None:
        try:
            got[name] = queues[name].claim(limit=limits[name], lease=60)
            if name == first:
                first_done.set()
        except BaseException as exc:
            errors.append(exc)
            first_done.set()

    threads = [threading.Thread(target=claim, args=(n,)) for n in limits]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    small, large = ({j.id for j in got[n]} for n in ("small", "large"))
    assert not small & large, "a job went to two claims"
    assert all(j.attempt == 1 for n in got for j in got[n])
    if order == "small first":
        assert small == set(ids[:4]) and large == set(ids[4:])
    elif order == "large first":
        assert large == set(ids) and small == set()
    # Every job returned is the one in the database, and nothing else was taken.
    records = [make_queue().get(i) for i in ids]
    assert {r.id for r in records if r is not None and r.status == "running"} == small | large
    assert all(r is not None and r.attempt == (1 if r.id in small | large else 0) for r in records)
