"""Per-key order: jobs that share a ``key`` run one at a time, in enqueue order, across
every worker; a key is freed by done, failed, cancelled, or by its lease running out."""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

import skiplock

from .conftest import as_release, wait_until
from .test_migrations import make_v1_table, v1_statements

KEYS, PER_KEY, THREADS = 50, 40, 8


def run_threads(worker: Callable[[], None], timeout: float) -> None:
    """Run *worker* in THREADS threads at once; raise the first error any of them raised."""
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            worker()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a worker thread did not finish"


def test_eight_threads_drain_keys_in_order_without_overlap(queue: skiplock.Queue) -> None:
    # Enqueued round by round (one job of every key, then the next), with keyless jobs mixed
    # in, the way independent customers' work arrives.
    order: dict[str, list[int]] = defaultdict(list)
    keyless: list[int] = []
    for n in range(PER_KEY):
        for k in range(KEYS):
            order[f"k{k}"].append(queue.enqueue({"k": k, "n": n}, key=f"k{k}"))
        keyless.extend(queue.enqueue_many([{"free": n}] * 2))
    intervals: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    finished: list[str | None] = []  # the key of each completion, in completion order
    free_done: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker() -> None:
        start.wait()
        idle_since = None
        while True:
            jobs = queue.claim(limit=10, lease=120)
            if not jobs:
                # Keyed jobs wait for their key, so an empty claim is not the end.
                if queue.stats().pending + queue.stats().running == 0:
                    return
                idle_since = idle_since or time.monotonic()
                assert time.monotonic() - idle_since < 120, "no claimable job for 120 s"
                time.sleep(0.005)
                continue
            idle_since = None
            # A job is held from its claim to its completion: the interval starts here.
            began = time.monotonic()
            for job in jobs:
                time.sleep(0.001)  # the handler
                ended = time.monotonic()
                with lock:
                    if job.key is None:
                        free_done.append(job.id)
                    else:
                        intervals[job.key].append((began, ended, job.id))
                    finished.append(job.key)
                queue.complete(job)

    run_threads(worker, 600)
    assert sorted(free_done) == sorted(keyless)
    for key, ids in order.items():
        ran = sorted(intervals[key])
        assert [i for _, _, i in ran] == ids, f"{key} ran out of enqueue order"
        for (_, end, a), (begin, _, b) in itertools.pairwise(ran):
            assert begin > end, f"{key}: job {b} started before job {a} ended"
    # No key starves: by the time half of the keyed jobs are done, every key is at least
    # an eighth through its own (a loaded machine stalls a thread holding a key at times).
    half = [k for k in finished if k is not None][: KEYS * PER_KEY // 2]
    per_key = {k: half.count(k) for k in order}
    assert min(per_key.values()) >= PER_KEY // 8, per_key
    s = queue.stats()
    assert (s.done, s.pending, s.running) == (KEYS * PER_KEY + len(keyless), 0, 0)


def claim_ids(q: skiplock.Queue, **options: object) -> list[int]:
    return sorted(j.id for j in q.claim(limit=10, **options))  # type: ignore[arg-type]


def test_the_next_job_waits_for_done_failed_or_cancelled(queue: skiplock.Queue) -> None:
    a, b, c, d = (queue.enqueue({"n": n}, key="cust-1") for n in range(4))
    other = queue.enqueue({"n": 9}, key="cust-2")
    free = queue.enqueue({"n": 10})
    jobs = queue.claim(limit=10)
    assert sorted(j.id for j in jobs) == [a, other, free]
    assert next(j for j in jobs if j.id == a).key == "cust-1"
    assert claim_ids(queue) == []  # b waits for a, which runs
    queue.complete(next(j for j in jobs if j.id == a))
    [jb] = queue.claim(limit=10)
    assert jb.id == b
    queue.fail(jb, "boom", final=True)  # failed frees the key
    assert queue.cancel(d) == "cancelled"  # a cancelled later job is skipped
    [jc] = queue.claim(limit=10)
    assert jc.id == c
    queue.complete(jc)
    assert claim_ids(queue) == []


def test_a_retried_job_keeps_its_place(queue: skiplock.Queue) -> None:
    a, b = queue.enqueue({"n": 0}, key="k", max_attempts=3), queue.enqueue({"n": 1}, key="k")
    [ja] = queue.claim()
    assert queue.fail(ja, "try again", retry_in=0.5) == "pending"
    assert claim_ids(queue) == []  # b waits behind the retry, even before it is due
    wait_until(
        lambda: (got := queue.claim()) and got[0].id == a and queue.complete(got[0]) is None,
        30,
        "the retry to come due",
    )
    assert claim_ids(queue) == [b]


def test_an_abandoned_lease_frees_its_key_and_fences_the_late_worker(
    queue: skiplock.Queue,
) -> None:
    a = queue.enqueue({"n": 0}, key="k", max_attempts=2)
    b = queue.enqueue({"n": 1}, key="k", max_attempts=1)
    [crashed] = queue.claim(lease=0.5)  # claimed and never completed: the worker died
    assert claim_ids(queue) == []
    retaken: list[skiplock.Job] = []
    wait_until(lambda: retaken.extend(queue.claim(lease=60)) or retaken, 30, "the lease to end")
    assert [j.id for j in retaken] == [a] and retaken[0].attempt == 2
    assert claim_ids(queue) == []  # b still waits: a runs again
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(crashed)  # the late worker's write changes nothing
    assert claim_ids(queue) == []
    # Its second worker dies too, with no attempts left: the claim ends it failed and
    # the key moves on.
    queue.heartbeat(retaken[0], lease=0.5)
    got: list[skiplock.Job] = []
    wait_until(lambda: got.extend(queue.claim(lease=60)) or got, 30, "the last lease to end")
    assert [j.id for j in got] == [b]
    assert queue.get(a).status == "failed"  # type: ignore[union-attr]
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(retaken[0])
    queue.complete(got[0])
    assert claim_ids(queue) == []


def test_a_key_is_not_taken_twice_by_racing_claims(queue: skiplock.Queue) -> None:
    # Many claimers at once against few keys: at no moment do two jobs of a key run.
    for n in range(30):
        for k in range(3):
            queue.enqueue({"n": n}, key=f"k{k}")
    running: dict[str, int] = defaultdict(int)
    worst: dict[str, int] = defaultdict(int)
    lock = threading.Lock()

    def worker() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            jobs = queue.claim(limit=3, lease=120)
            if not jobs:
                if queue.stats().pending + queue.stats().running == 0:
                    return
                continue
            with lock:  # held from the claim until just before its completion
                for job in jobs:
                    assert job.key is not None
                    running[job.key] += 1
                    worst[job.key] = max(worst[job.key], running[job.key])
            for job in jobs:
                time.sleep(0.001)
                with lock:
                    running[job.key] -= 1
                queue.complete(job)

    run_threads(worker, 400)
    assert dict(worst) == {"k0": 1, "k1": 1, "k2": 1}
    assert queue.stats().done == 90


@pytest.mark.requires("index_names")  # adopts a table of version 1 by its indexes' names
def test_migration_4_on_a_version_3_table_holding_jobs(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    setup = make_queue()
    make_v1_table(setup)
    assert make_queue().migrate(to=3) == [2, 3]
    old = make_queue()  # the previous release's statements, still running
    as_release(old, v1_statements(old))
    old._schema_ok = True
    pending = old.enqueue_many([{"n": i} for i in range(20)])
    live_id = old.enqueue({"state": "live"}, queue="held")
    (live,) = old.claim(queues="held", lease=300)
    assert make_queue().migrate(to=4) == [4]
    assert make_queue().migrate(to=4) == []  # idempotent
    assert make_queue().migrate() == list(range(5, setup.schema.latest + 1))
    new = make_queue()
    first, second = new.enqueue({"k": 1}, key="k"), new.enqueue({"k": 2}, key="k")
    got = sorted(j.id for j in new.claim(limit=50))
    assert got == sorted([*pending, first])  # old jobs are keyless; the key's head only
    old.complete(live)  # the old release's fenced write on the migrated table
    assert new.get(live_id).status == "done"  # type: ignore[union-attr]
    assert new.get(second).status == "pending"  # type: ignore[union-attr]


@pytest.mark.requires("lock_timeouts")  # claims refused the queue's lock (queue_lock) many times
def test_a_queue_limit_of_3_is_never_exceeded(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    q = make_queue(queue_limits={"email": 3})
    q.enqueue_many([{"n": i} for i in range(60)], queue="email")
    q.enqueue_many([{"n": i} for i in range(60)], queue="other")
    events: list[tuple[float, int, str]] = []  # (time, +1 at claim / -1 before completion)
    lock = threading.Lock()

    def worker() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            jobs = q.claim(queues=["email", "other"], limit=4, lease=120)
            if not jobs:
                if q.stats().pending + q.stats().running == 0:
                    return
                time.sleep(0.005)
                continue
            now = time.monotonic()
            with lock:
                events.extend((now, 1, j.queue) for j in jobs)
            for job in jobs:
                time.sleep(0.005)
                with lock:
                    events.append((time.monotonic(), -1, job.queue))
                q.complete(job)

    run_threads(worker, 400)
    worst: dict[str, int] = defaultdict(int)
    running: dict[str, int] = defaultdict(int)
    for _, step, name in sorted(events, key=lambda e: (e[0], e[1])):
        running[name] += step
        worst[name] = max(worst[name], running[name])
    assert 1 <= worst["email"] <= 3, worst
    assert worst["other"] > 3, worst  # the unlimited queue is not held to it
    assert q.stats().done == 120


@pytest.mark.requires("lock_timeouts")  # claims refused the queue's lock (queue_lock) many times
def test_a_queue_limit_counts_live_leases_only(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    q = make_queue(queue_limits={"email": 2})
    q.enqueue_many([{"n": i} for i in range(5)], queue="email")
    held = q.claim(queues="email", limit=5, lease=0.5)
    assert len(held) == 2
    assert q.claim(queues="email", limit=5) == []
    q.complete(held[0])
    assert len(q.claim(queues="email", limit=5, lease=60)) == 1
    # held[1]'s worker died: once its lease ends it no longer counts, and it is claimable
    got: list[skiplock.Job] = []
    wait_until(
        lambda: got.extend(q.claim(queues="email", limit=5, lease=60)) or got,
        30,
        "the lease to end",
    )
    assert len(got) == 1


@pytest.mark.parametrize("limits", [{"email": 0}, {"email": "3"}, {"": 3}, ["email"]])
def test_bad_queue_limits_are_refused(limits: object) -> None:
    url = "postgresql://u@127.0.0.1:1/db"  # nothing connects: refused before that
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.connect(url, queue_limits=limits)  # type: ignore[arg-type]
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.App(url, queue_limits=limits)  # type: ignore[arg-type]
