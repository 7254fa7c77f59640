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
