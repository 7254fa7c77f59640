"""Workflows, the sugar: a chain, a group and a chord are written in one transaction (the
caller's with ``conn=``, rolled back with it), steps get their parents' results, bad
canvases are refused. The asyncio path runs in tests/conformance/test_docs_workflows.py."""

from __future__ import annotations

from typing import Any

import pytest

import skiplock


def _app(queue: skiplock.Queue) -> tuple[skiplock.App, Any, Any]:
    app = skiplock.App(queue)

    @app.task
    def add(x: int, y: int = 0) -> int:
        return x + y

    @app.task
    def total(numbers: list[int]) -> int:
        return sum(numbers)

    return app, add, total


def _drain(app: skiplock.App, queue: skiplock.Queue) -> None:
    """Run the claimable jobs here, one at a time, until none is left."""
    while jobs := queue.claim():
        (job,) = jobs
        queue.complete(job, result=app.handle(job))


def test_a_chord_in_the_callers_transaction(queue: skiplock.Queue) -> None:
    app, add, total = _app(queue)
    flow = skiplock.chain(add.s(1, 1), skiplock.group(add.s(10), add.s(20)), total.s())
    with queue.transaction() as tx:
        handle = flow.enqueue(conn=tx.connection)
        assert len(handle.ids) == 4
    s = queue.stats()
    assert (s.pending, s.waiting) == (1, 3)
    _drain(app, queue)
    assert handle.wait(timeout=5) == 2 + 10 + 2 + 20
    assert queue.stats().done == 4


#: more members than PostgreSQL's dialect writes by INSERT (COPY_MIN_ROWS): the group goes
#: by COPY, its members marked as they are copied
MANY = 250


def test_a_large_chord_settles_its_callback_in_the_last_members_completion(
    queue: skiplock.Queue,
) -> None:
    """The group's members, and a chain's last step inside it, are written marked (the
    callback's parents are never locked, read or marked after the fact): the callback
    waits until the last of them completes and is due in that completion's transaction;
    retention keeps the members it still needs."""
    app, add, total = _app(queue)
    members = [add.s(i) for i in range(MANY)] + [skiplock.chain(add.s(1000), add.s(1))]
    handle = skiplock.chain(add.s(0), skiplock.group(*members), total.s()).enqueue()
    assert len(handle.ids) == 1 + MANY + 2 + 1
    callback = handle.id
    _drain_one(app, queue)  # add(0): the group's members are due
    claimed = queue.claim(limit=MANY + 10)
    assert len(claimed) == MANY + 1  # the members and the inner chain's first step
    held = claimed.pop(len(claimed) // 2)
    queue.complete_many([(j, app.handle(j)) for j in claimed])
    _drain_one(app, queue)  # the inner chain's last step
    assert queue.claim() == []
    assert _status(queue, callback) == "waiting"
    # only the inner chain's first step goes (its child is done); add(0) has a running
    # child (held), the callback's parents have the callback, waiting
    assert skiplock.prune(queue, older_than=0) == 1
    # (ids: add(0), the inner chain (written first), the members, the callback)
    assert all(queue.get(i) is not None for i in (handle.ids[0], *handle.ids[2:]))
    queue.complete(held, result=app.handle(held))
    assert _status(queue, callback) == "pending"
    _drain(app, queue)
    assert handle.wait(timeout=5) == sum(range(MANY)) + 1000 + 1


def test_a_large_chords_member_failing_cancels_the_callback(queue: skiplock.Queue) -> None:
    _, add, total = _app(queue)
    handle = skiplock.group(*(add.s(i) for i in range(MANY))).then(total.s()).enqueue()
    jobs = queue.claim(limit=2)
    queue.fail(jobs[1], "boom", final=True)
    job = queue.get(handle.id)
    assert job is not None and job.status == "cancelled"
    assert job.last_error is not None and str(jobs[1].id) in job.last_error
    queue.complete(jobs[0])  # a member's end after the callback's cancel changes nothing
    assert _status(queue, handle.id) == "cancelled"


def _drain_one(app: skiplock.App, queue: skiplock.Queue) -> None:
    (job,) = queue.claim()
    queue.complete(job, result=app.handle(job))


def _status(queue: skiplock.Queue, job_id: int) -> str:
    job = queue.get(job_id)
    assert job is not None
    return job.status


def test_a_rolled_back_transaction_leaves_no_job(queue: skiplock.Queue) -> None:
    _, add, total = _app(queue)
    with pytest.raises(RuntimeError), queue.transaction() as tx:
        skiplock.group(add.s(1), add.s(2)).then(total.s()).enqueue(conn=tx.connection)
        raise RuntimeError("the caller changes their mind")
    assert queue.list_jobs() == []


def test_a_group_alone_and_immutable_steps(queue: skiplock.Queue) -> None:
    app, add, _ = _app(queue)
    group = skiplock.group(add.s(1), skiplock.chain(add.s(2), add.si(5, 5)), add.s(3))
    handle = group.enqueue()
    _drain(app, queue)
    assert handle.wait(timeout=5) == [1, 10, 3]
    assert handle.wait(timeout=0) == [1, 10, 3]


def test_wait_reports_a_failed_step_and_a_timeout(queue: skiplock.Queue) -> None:
    _, add, _ = _app(queue)
    handle = skiplock.chain(add.s(1), add.s(1)).enqueue()
    with pytest.raises(TimeoutError):
        handle.wait(timeout=0.05)
    (job,) = queue.claim()
    queue.fail(job, "boom", final=True)
    with pytest.raises(skiplock.WorkflowFailed, match=f"parent job {job.id} ended failed"):
        handle.wait(timeout=5)


def test_bad_canvases_are_refused(queue: skiplock.Queue) -> None:
    _, add, _ = _app(queue)
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.chain()
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.group(add.s(1), "not a step")  # type: ignore[arg-type]
