"""Workflows, the primitive: ``enqueue(..., after=[ids])``. A job waits until every parent
is done and becomes due in the transaction of the last parent's fenced completion (single
and batched); a parent that fails or is cancelled cancels its waiting descendants (or,
with ``after_failure="run"``, lets them run once the others end); the handler reads
``job.parent_results``; unknown parents are refused with nothing written; a parent
ending while its child is being enqueued never leaves the child waiting; retention keeps
the parents a child still needs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import skiplock
from skiplock import Worker

from .conftest import wait_until


def _status(q: skiplock.Queue, job_id: int) -> str:
    job = q.get(job_id)
    assert job is not None
    return job.status


def _counts(q: skiplock.Queue) -> dict[str, Any]:
    counts = q.stats().as_dict()
    del counts["oldest_pending_age"]
    return counts


def _cancelled_by(q: skiplock.Queue, child: int, parent: int, how: str) -> None:
    """*child* ended cancelled, naming *parent* and how it ended."""
    record = q.get(child)
    assert record is not None and record.status == "cancelled", record
    assert record.last_error == f"parent job {parent} ended {how}"
    assert record.finished_at is not None


def _claim_one(q: skiplock.Queue, job_id: int, lease: float = 30) -> skiplock.Job:
    (job,) = q.claim(lease=lease)
    assert job.id == job_id, f"claimed {job.id}, expected {job_id}"
    return job


def test_a_child_waits_until_its_last_parent_is_done(queue: skiplock.Queue) -> None:
    a = queue.enqueue("a")
    b = queue.enqueue("b")
    c = queue.enqueue("c", after=[a, b, a])  # a repeat counts once
    assert _status(queue, c) == "waiting"
    s = queue.stats()
    assert (s.pending, s.waiting) == (2, 1)
    assert [j.id for j in queue.list_jobs(status="waiting")] == [c]
    ja, jb = queue.claim(limit=10)  # the waiting job is not claimable
    assert {ja.id, jb.id} == {a, b}
    queue.complete(ja, result={"from": "a"})
    assert _status(queue, c) == "waiting"
    assert queue.claim() == []
    queue.complete(jb, result=[2])
    assert _status(queue, c) == "pending"  # visible as soon as complete returned
    job = _claim_one(queue, c)
    assert job.parent_results == {a: {"from": "a"}, b: [2]}
    queue.complete(job)
    assert queue.stats().waiting == 0


def test_a_batched_completion_releases_children(queue: skiplock.Queue) -> None:
    parents = [queue.enqueue(n) for n in range(3)]
    child = queue.enqueue("child", after=parents)
    other = queue.enqueue("other", after=[parents[0]])
    jobs = queue.claim(limit=3)
    assert queue.complete_many([(j, j.payload * 10) for j in jobs]) == []
    assert _status(queue, child) == "pending" and _status(queue, other) == "pending"
    claimed = {j.id: j for j in queue.claim(limit=5)}
    assert set(claimed) == {child, other}
    assert claimed[child].parent_results == {p: n * 10 for n, p in enumerate(parents)}
    assert claimed[other].parent_results == {parents[0]: 0}


def test_a_failed_parent_cancels_its_descendants(queue: skiplock.Queue) -> None:
    p = queue.enqueue("p", max_attempts=1)
    k1 = queue.enqueue("k1", after=[p])
    k2 = queue.enqueue("k2", after=[k1])
    k3 = queue.enqueue("k3", after=[k2, k1])
    free = queue.enqueue("free")
    job = _claim_one(queue, p)
    assert queue.fail(job, "boom") == "failed"  # attempts spent: final
    for child, parent, how in ((k1, p, "failed"), (k2, k1, "cancelled"), (k3, k1, "cancelled")):
        _cancelled_by(queue, child, parent, how)
    assert _status(queue, free) == "pending"
    assert queue.stats().waiting == 0


def test_a_snoozed_parent_keeps_its_children_waiting_until_its_cap_fails_it(
    queue: skiplock.Queue,
) -> None:
    p = queue.enqueue("p")
    k = queue.enqueue("k", after=[p])
    assert queue.snooze(_claim_one(queue, p), 0) == "pending"
    assert _status(queue, k) == "waiting"
    # at its snooze cap the parent ends failed, and its child is cancelled with it
    assert queue.snooze(_claim_one(queue, p), 0, max_snoozes=1) == "failed"
    _cancelled_by(queue, k, p, "failed")


def test_a_retried_parent_keeps_its_children_waiting(queue: skiplock.Queue) -> None:
    p = queue.enqueue("p", max_attempts=3)
    k = queue.enqueue("k", after=[p])
    assert queue.fail(_claim_one(queue, p), "once", retry_in=0) == "pending"
    assert _status(queue, k) == "waiting"
    queue.complete(_claim_one(queue, p))
    assert _status(queue, k) == "pending"


def test_cancelling_cascades_through_waiting_jobs(queue: skiplock.Queue) -> None:
    p = queue.enqueue("p")
    k1 = queue.enqueue("k1", after=[p])
    k2 = queue.enqueue("k2", after=[k1])
    # a waiting job can be cancelled itself, and its own children follow
    assert queue.cancel(k1) == "cancelled"
    assert _status(queue, k2) == "cancelled"
    assert _status(queue, p) == "pending"
    # a running parent: the request is recorded; its cancelled end cascades
    k3 = queue.enqueue("k3", after=[p])
    running = _claim_one(queue, p)
    assert queue.cancel(p) == "running"
    assert _status(queue, k3) == "waiting"
    queue.mark_cancelled(running, reason="stopped")
    _cancelled_by(queue, k3, p, "cancelled")


def test_after_failure_run_runs_once_every_parent_ended(queue: skiplock.Queue) -> None:
    p1 = queue.enqueue("p1")
    p2 = queue.enqueue("p2")
    r = queue.enqueue("r", after=[p1, p2], after_failure="run")
    strict = queue.enqueue("strict", after=[p1, p2])
    j1, j2 = sorted(queue.claim(limit=2), key=lambda j: j.id)
    queue.fail(j1, "boom", final=True)
    assert _status(queue, r) == "waiting"  # p2 has not ended
    assert _status(queue, strict) == "cancelled"
    queue.complete(j2, result="two")
    assert _status(queue, r) == "pending"
    job = _claim_one(queue, r)
    assert job.parent_results == {p1: None, p2: "two"}


def test_parents_ended_before_the_enqueue_count(queue: skiplock.Queue) -> None:
    done = queue.enqueue("done")
    queue.complete(_claim_one(queue, done), result=1)
    failed = queue.enqueue("failed")
    queue.fail(_claim_one(queue, failed), "no", final=True)
    assert _status(queue, queue.enqueue("x", after=[done])) == "pending"
    cancelled = queue.enqueue("y", after=[done, failed])
    _cancelled_by(queue, cancelled, failed, "failed")
    assert _status(queue, queue.enqueue("z", after=[failed], after_failure="run")) == "pending"
    ids = queue.enqueue_many(["m1", "m2"], after=[done])
    assert [_status(queue, i) for i in ids] == ["pending", "pending"]
    waiting_parent = queue.enqueue("w")
    ids = queue.enqueue_many(["w1", "w2"], after=[done, waiting_parent])
    assert [_status(queue, i) for i in ids] == ["waiting", "waiting"]


def test_a_child_enqueued_after_its_parent_ended_reads_its_result(
    queue: skiplock.Queue,
) -> None:
    """A child due at once (its parent was done) is still marked as having parents: its
    claim reads the parent's result; a plain job claimed beside it has none."""
    done = queue.enqueue("done")
    queue.complete(_claim_one(queue, done), result={"r": 1})
    child = queue.enqueue("x", after=[done])
    plain = queue.enqueue("plain")
    claimed = {j.id: j for j in queue.claim(limit=2)}
    assert claimed[child].parent_results == {done: {"r": 1}}
    assert not claimed[plain].parent_results


def test_unknown_parents_are_refused_and_nothing_is_written(queue: skiplock.Queue) -> None:
    p = queue.enqueue("p")
    before = _counts(queue)
    with pytest.raises(skiplock.ConfigurationError, match=r"no job with id 4611686018427387904"):
        queue.enqueue("child", after=[p, 2**62])
    with pytest.raises(skiplock.ConfigurationError, match="no job with id"):
        queue.enqueue_many(["a", "b"], after=[2**62])
    assert _counts(queue) == before
    for bad in ("1", [0], [True], 7, ["x"]):
        with pytest.raises(skiplock.ConfigurationError, match="after"):
            queue.enqueue("child", after=bad)  # type: ignore[arg-type]
    with pytest.raises(skiplock.ConfigurationError, match="after=\\[\\]"):
        queue.enqueue("child", after=[])
    with pytest.raises(skiplock.ConfigurationError, match="after_failure"):
        queue.enqueue("child", after=[p], after_failure="ignore")
    with pytest.raises(skiplock.ConfigurationError, match="dedupe_key or key"):
        queue.enqueue("child", after=[p], dedupe_key="d")
    with pytest.raises(skiplock.ConfigurationError, match="dedupe_key or key"):
        queue.enqueue("child", after=[p], key="k")
    with pytest.raises(skiplock.ConfigurationError, match="dedupe_keys"):
        queue.enqueue_many(["a"], after=[p], dedupe_keys=["d"])
    assert _counts(queue) == before
    # in the caller's transaction: the refusal leaves it as it was, and it commits
    with queue.transaction() as tx:
        mine = tx.enqueue("mine")
        with pytest.raises(skiplock.ConfigurationError):
            tx.enqueue("child", after=[2**62])
        child = tx.enqueue("child", after=[mine])
    assert _status(queue, mine) == "pending" and _status(queue, child) == "waiting"


def _blocked(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run *fn* in a thread; its outcome lands in the list."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


@pytest.mark.parametrize("end", ["complete", "complete_many", "fail"])
@pytest.mark.parametrize("first", ["enqueue", "end"])
def test_an_enqueue_and_its_parents_end_wait_for_each_other(
    make_queue: Callable[..., skiplock.Queue], first: str, end: str
) -> None:
    """The child is enqueued while its parent is claimed. Whichever of the child's enqueue
    (which marks the parent as having children) and the parent's end holds the parent's
    row first, the other waits for its commit; either way the child is settled: released
    by a completion (single, or batched beside a plain job), cancelled by a final
    failure."""
    q = make_queue()
    other = make_queue()
    p = q.enqueue("p")
    plain = q.enqueue("plain")
    jobs = {j.id: j for j in q.claim(limit=2)}

    def finish(target: Any) -> None:
        if end == "complete":
            target.complete(jobs[p], result="r")
        elif end == "complete_many":
            assert target.complete_many([(jobs[p], "r"), jobs[plain]]) == []
        else:
            assert target.fail(jobs[p], "boom", final=True) == "failed"

    with q.transaction() as tx:
        if first == "enqueue":
            child = tx.enqueue("child", after=[p])  # reads p running, holds it
            t, out = _blocked(lambda: finish(other))
        else:
            finish(tx)
            t, out = _blocked(lambda: other.enqueue("child", after=[p]))
        time.sleep(0.5)
        assert t.is_alive(), f"the second did not wait for the {first}'s lock"
    t.join(30)
    assert len(out) == 1 and not isinstance(out[0], BaseException), out
    if first == "end":
        child = out[0]
    # settled by the parent's end after the enqueue committed, or read as ended by it
    if end == "fail":
        _cancelled_by(q, child, p, "failed")
    else:
        assert _status(q, child) == "pending" and _status(q, p) == "done"
    assert q.stats().waiting == 0


def test_a_batch_with_a_lost_job_settles_the_children_of_the_others(
    queue: skiplock.Queue,
) -> None:
    """A batch that mixes a lost job, a plain job and a parent: the lost one is returned,
    the two others are done and the parent's waiting child is due."""
    parent = queue.enqueue("parent")
    plain = queue.enqueue("plain")
    gone = queue.enqueue("gone")
    child = queue.enqueue("child", after=[parent])
    jobs = {j.id: j for j in queue.claim(limit=3)}
    queue.complete(jobs[gone])  # completed once already: the batch no longer holds it
    lost = queue.complete_many([jobs[parent], jobs[plain], jobs[gone]])
    assert [j.id for j in lost] == [gone]
    assert _status(queue, parent) == "done" and _status(queue, plain) == "done"
    assert _status(queue, child) == "pending"


def test_enqueues_racing_completions_never_leave_a_child_waiting(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    q = make_queue()
    other = make_queue()
    rounds = 15
    parents = q.enqueue_many(list(range(rounds)))
    jobs = sorted(q.claim(limit=rounds), key=lambda j: j.id)
    children: list[int] = []
    for job in jobs:
        start = threading.Barrier(2)

        def complete(job: skiplock.Job = job, start: threading.Barrier = start) -> None:
            start.wait()
            other.complete(job)

        def enqueue(job: skiplock.Job = job, start: threading.Barrier = start) -> int:
            start.wait()
            return q.enqueue("child", after=[job.id])

        t1, o1 = _blocked(complete)
        t2, o2 = _blocked(enqueue)
        t1.join(30)
        t2.join(30)
        assert o1 == [None], o1
        children.append(o2[0])
    assert len(parents) == len(children)
    assert [_status(q, c) for c in children] == ["pending"] * rounds


def test_a_parent_ended_by_its_lease_cancels_its_children(queue: skiplock.Queue) -> None:
    p = queue.enqueue("p", max_attempts=1)
    k = queue.enqueue("k", after=[p])
    _claim_one(queue, p, lease=0.2)
    wait_until(lambda: queue.stats().expired == 1, 30, "the lease to end")
    assert queue.claim() == []  # the claim ends p failed (attempts spent)
    assert _status(queue, p) == "failed"
    _cancelled_by(queue, k, p, "failed")


def test_retention_keeps_the_parents_a_child_still_needs(queue: skiplock.Queue) -> None:
    done = queue.enqueue("done")
    slow = queue.enqueue("slow")
    alone = queue.enqueue("alone")
    child = queue.enqueue("child", after=[done, slow])
    by_id = {j.id: j for j in queue.claim(limit=3)}
    queue.complete(by_id[done], result="kept")
    queue.complete(by_id[alone])
    assert skiplock.prune(queue, older_than=0) == 1  # only the job nobody waits for
    assert queue.get(done) is not None and queue.get(alone) is None
    queue.complete(by_id[slow], result="also")
    assert skiplock.prune(queue, older_than=0) == 0  # the child, pending, still needs them
    job = _claim_one(queue, child)
    assert job.parent_results == {done: "kept", slow: "also"}
    queue.complete(job)
    assert skiplock.prune(queue, older_than=0) == 3
    assert queue.stats().done == 0
    with queue.transaction() as tx:  # the pruned child's edges went with it
        edges = tx.fetchone(f"SELECT COUNT(*) FROM {queue.dialect.quote(queue.table.deps_table)}")
    assert edges is not None and edges[0] == 0


def test_workers_run_a_small_dag_in_order(
    make_queue: Callable[..., skiplock.Queue], worker_cls: type[Worker], workers: list[Worker]
) -> None:
    q = make_queue()
    started: dict[int, float] = {}
    ended: dict[int, float] = {}
    seen: dict[int, dict[int, Any]] = {}
    lock = threading.Lock()

    def handler(job: skiplock.Job) -> Any:
        with lock:
            started[job.id] = time.monotonic()
            seen[job.id] = dict(job.parent_results)
        time.sleep(0.01)
        with lock:
            ended[job.id] = time.monotonic()
        return job.payload

    root = q.enqueue(0)
    mid = [q.enqueue(i, after=[root]) for i in (1, 2, 3)]
    last = q.enqueue(4, after=mid)
    w = worker_cls(q, handler, concurrency=4, poll_interval=0.05)
    workers.append(w)
    w.start()
    wait_until(lambda: _status(q, last) == "done", 30, "the DAG to be drained")
    for m in mid:
        assert started[m] >= ended[root]
        assert seen[m] == {root: 0}
    assert started[last] >= max(ended[m] for m in mid)
    assert seen[last] == {m: n for m, n in zip(mid, (1, 2, 3), strict=True)}
