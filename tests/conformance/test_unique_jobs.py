"""Unique jobs with a window (dedupe_for) and debounce, race-free on every database."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import skiplock

from .conftest import within


def _race(n: int, enqueue: Callable[[int], int]) -> list[int]:
    """*n* threads call *enqueue(i)* at once; the ids they got."""
    start = threading.Barrier(n)
    ids: list[int] = []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait()
            ids.append(enqueue(i))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return ids


def _jobs(queue: skiplock.Queue) -> list[skiplock.Job]:
    return queue.list_jobs(limit=1000)


def test_dedupe_for_returns_the_first_job_whatever_its_state(queue: skiplock.Queue) -> None:
    first = queue.enqueue({"v": 1}, dedupe_key="report", dedupe_for=60)
    assert queue.enqueue({"v": 2}, dedupe_key="report", dedupe_for=60) == first
    [job] = queue.claim()
    queue.complete(job, result="sent")
    assert queue.enqueue({"v": 3}, dedupe_key="report", dedupe_for=60) == first
    record = queue.get(first)
    assert record is not None and (record.status, record.payload) == ("done", {"v": 1})
    # without dedupe_for: dedupe while active only, as ever
    assert queue.enqueue({"v": 4}, dedupe_key="report") != first
    assert len(_jobs(queue)) == 2


def test_a_new_job_once_the_window_ends(queue: skiplock.Queue) -> None:
    first = queue.enqueue("a", dedupe_key="k", dedupe_for=0.3)
    [job] = queue.claim()
    queue.complete(job)
    assert queue.enqueue("b", dedupe_key="k", dedupe_for=0.3) == first
    ids: list[int] = []

    def new_id() -> bool:
        ids.append(queue.enqueue("c", dedupe_key="k", dedupe_for=0.3))
        return ids[-1] != first

    within(3.0, new_id, "a new job after the window")
    assert queue.enqueue("d", dedupe_key="k", dedupe_for=30) == ids[-1]


def test_a_window_returns_the_active_job_of_its_key(queue: skiplock.Queue) -> None:
    plain = queue.enqueue("a", dedupe_key="k")
    assert queue.enqueue("b", dedupe_key="k", dedupe_for=60) == plain
    assert len(_jobs(queue)) == 1


def test_sixteen_enqueuers_of_one_window_leave_one_row(queue: skiplock.Queue) -> None:
    ids = _race(16, lambda i: queue.enqueue({"i": i}, dedupe_key="same", dedupe_for=60))
    [only] = _jobs(queue)
    assert len(ids) == 16 and set(ids) == {only.id}


def test_debounce_replaces_the_pending_payload_and_moves_it_later(
    queue: skiplock.Queue,
) -> None:
    first = queue.enqueue({"q": "a"}, dedupe_key="search", debounce=30)
    before = queue.get(first)
    assert before is not None and before.run_at is not None
    assert queue.enqueue({"q": "ab"}, dedupe_key="search", debounce=30) == first
    after = queue.get(first)
    assert after is not None and after.run_at is not None
    assert after.payload == {"q": "ab"} and after.run_at > before.run_at
    assert queue.claim() == []  # due in 30 s
    assert after.dedupe_key is None  # a debounce key is not an active-job dedupe key


def test_debounce_makes_a_new_job_once_the_pending_one_runs(queue: skiplock.Queue) -> None:
    first = queue.enqueue("v1", dedupe_key="d", debounce=0)
    [job] = queue.claim()
    assert job.id == first
    second = queue.enqueue("v2", dedupe_key="d", debounce=0)
    assert second != first
    assert queue.enqueue("v3", dedupe_key="d", debounce=0) == second
    record = queue.get(second)
    assert record is not None and (record.status, record.payload) == ("pending", "v3")


def test_sixteen_debouncers_leave_one_pending_job(queue: skiplock.Queue) -> None:
    ids = _race(16, lambda i: queue.enqueue({"i": i}, dedupe_key="same", debounce=30))
    [only] = _jobs(queue)
    assert len(ids) == 16 and set(ids) == {only.id}
    assert only.payload in [{"i": i} for i in range(16)]


def test_debounce_racing_the_claim(queue: skiplock.Queue) -> None:
    """Debouncers and a claimer at once: whenever a claim took the pending job first, the
    next debounce made a new one; never two pending jobs of the key, and every job made
    was returned to some enqueuer."""
    stop = threading.Event()
    claimed: list[int] = []

    def claimer() -> None:
        while not stop.is_set():
            for job in queue.claim(limit=5):
                claimed.append(job.id)
                queue.complete(job)

    t = threading.Thread(target=claimer)
    t.start()
    try:
        ids = _race(
            8, lambda i: [queue.enqueue(i, dedupe_key="r", debounce=0) for _ in range(5)][-1]
        )
    finally:
        stop.set()
        t.join(30)
    jobs = _jobs(queue)
    assert sum(1 for j in jobs if j.status == "pending") <= 1
    assert set(ids) <= {j.id for j in jobs}
    assert {j.id for j in jobs if j.status == "done"} == set(claimed)


@pytest.mark.one_table
@pytest.mark.parametrize(
    "options",
    [
        {"dedupe_for": 10},
        {"debounce": 10},
        {"dedupe_key": "k", "dedupe_for": 10, "debounce": 10},
        {"dedupe_key": "k", "debounce": 10, "delay": 5},
        {"dedupe_key": "k", "dedupe_for": 0},
        {"dedupe_key": "k", "dedupe_for": -1},
        {"dedupe_key": "k", "debounce": float("inf")},
    ],
)
def test_bad_window_options_write_nothing(queue: skiplock.Queue, options: dict[str, Any]) -> None:
    with pytest.raises(skiplock.ConfigurationError):
        queue.enqueue("x", **options)
    assert _jobs(queue) == []


def test_a_window_enqueued_in_a_rolled_back_transaction_leaves_nothing(
    queue: skiplock.Queue,
) -> None:
    with pytest.raises(RuntimeError), queue.transaction() as tx:
        tx.enqueue("a", dedupe_key="k", dedupe_for=60)
        raise RuntimeError("roll back")
    assert _jobs(queue) == []
    first = queue.enqueue("b", dedupe_key="k", dedupe_for=60)
    with queue.transaction() as tx:
        assert tx.enqueue("c", dedupe_key="k", dedupe_for=60) == first


def test_enqueue_many_with_per_item_keys(queue: skiplock.Queue) -> None:
    held = queue.enqueue("held", dedupe_key="b")
    ids = queue.enqueue_many(["a1", "b1", None, "a2", "c1"], dedupe_keys=["a", "b", None, "a", "c"])
    assert ids[1] == held and ids[3] == ids[0]
    assert len(set(ids)) == 4 and ids[2] not in (ids[0], held, ids[4])
    assert ids[0] < ids[2] < ids[4]  # the batch's new jobs in the order given
    jobs = {j.id: j for j in _jobs(queue)}
    assert len(jobs) == 4 and jobs[ids[0]].payload == "a1" and jobs[held].payload == "held"
    # with a window: whatever the state
    done = queue.enqueue_many(["w"], dedupe_keys=["w"], dedupe_for=60)
    for job in queue.claim(limit=10):
        queue.complete(job)
    assert queue.enqueue_many(["w2", "x"], dedupe_keys=["w", None], dedupe_for=60)[0] == done[0]
    # debounce: the pending job of each key takes the batch's last payload for it
    d = queue.enqueue_many(["d1", "d2"], dedupe_keys=["d", "d"], debounce=30)
    assert d[0] == d[1] and queue.get(d[0]).payload == "d2"  # type: ignore[union-attr]


@pytest.mark.parametrize("control", [{"dedupe_for": 60}, {"debounce": 30}, {}])
def test_sixteen_batches_naming_the_same_keys_leave_one_row_per_key(
    queue: skiplock.Queue, control: dict[str, Any]
) -> None:
    keys = ["k1", "k2", "k3"]

    def enqueue(i: int) -> int:
        order = keys[i % 3 :] + keys[: i % 3]  # every batch names them in another order
        got = queue.enqueue_many([f"{k}-{i}" for k in order], dedupe_keys=order, **control)
        by_key[i] = dict(zip(order, got, strict=True))
        return 0

    by_key: dict[int, dict[str, int]] = {}
    _race(16, enqueue)
    jobs = _jobs(queue)
    assert len(jobs) == 3
    for k in keys:
        assert len({by_key[i][k] for i in range(16)}) == 1, k
    assert len({by_key[0][k] for k in keys}) == 3


@pytest.mark.one_table
@pytest.mark.parametrize(
    ("payloads", "options"),
    [
        (["a", "b"], {"dedupe_keys": ["a"]}),
        (["a"], {"dedupe_keys": "a"}),
        (["a"], {"dedupe_keys": [3]}),
        (["a"], {"dedupe_for": 10}),
        (["a"], {"dedupe_keys": ["a"], "debounce": 5, "delay": 1}),
    ],
)
def test_bad_per_item_keys_write_nothing(
    queue: skiplock.Queue, payloads: list[str], options: dict[str, Any]
) -> None:
    with pytest.raises(skiplock.ConfigurationError):
        queue.enqueue_many(payloads, **options)
    assert _jobs(queue) == []
