"""Workflows without waiting for a poll: a job released by its parent's end starts at once,
on the worker that ended the parent and on idle workers elsewhere, on every database.

As in test_wakeup.py the producer's polls are stretched to seconds (``MIN_POLL``,
``poll_interval``), so a child that starts within ``BOUND`` was started by a wake-up: the
worker's own (its write released jobs: it claims again at once), or the idle path
(PostgreSQL's NOTIFY; elsewhere the probe, which reads the table's ``released`` count).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import pytest

import skiplock
from skiplock import Worker
from skiplock._worker import claiming, lifecycle

from .test_wakeup import BOUND, POLL, Starts, no_quick_polls  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("no_quick_polls")


def test_the_worker_that_ended_a_parent_claims_its_released_child_at_once(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No idle wake-up at all (neither NOTIFY nor the probe): each step of a chain is
    released by the completion of the step before, on the one worker, and starts long
    before the next poll, because that worker's own write released it."""
    monkeypatch.setattr(lifecycle, "make_wakeup", lambda *a, **k: claiming.Wakeup())
    q = make_queue()
    ids = [q.enqueue({"step": 0})]
    for i in range(1, 6):
        ids.append(q.enqueue({"step": i}, after=[ids[-1]]))
    starts = Starts()
    workers.append(worker_cls(make_queue(), starts, concurrency=2, poll_interval=POLL).start())
    at = [starts.wait(job_id, POLL * 3) for job_id in ids]
    assert None not in at, f"steps that never started: {at}"
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(at)]  # type: ignore[operator]
    assert max(gaps) < BOUND, f"a step waited for a poll (gaps in seconds): {gaps}"
    assert q.wait(ids[-1], timeout=POLL * 3).status == "done"


def test_the_failure_that_releases_a_child_wakes_its_worker(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same for a parent that fails finally and a child with ``after_failure="run"``
    (its release is written by the failure, on a runner's thread)."""
    monkeypatch.setattr(lifecycle, "make_wakeup", lambda *a, **k: claiming.Wakeup())
    q = make_queue()
    parent = q.enqueue({"fail": True}, max_attempts=1)
    child = q.enqueue({"child": True}, after=[parent], after_failure="run")
    starts = Starts()

    def handler(job: skiplock.Job) -> None:
        starts(job)
        if job.payload.get("fail"):
            raise RuntimeError("the parent fails")

    workers.append(worker_cls(make_queue(), handler, concurrency=2, poll_interval=POLL).start())
    began = starts.wait(parent, POLL * 3)
    at = starts.wait(child, POLL * 3)
    assert began is not None and at is not None
    assert at - began < BOUND, f"the child waited {at - began:.2f} s"


@pytest.mark.parametrize("end", ["complete", "complete_many", "fail"])
def test_a_release_elsewhere_wakes_idle_workers(
    make_queue: Callable[..., skiplock.Queue],
    workers: list[Worker],
    worker_cls: type[Worker],
    end: str,
) -> None:
    """Idle workers that ran nothing of the workflow (they serve only the children's
    queue) start a child as soon as another process's end of its parent commits: the
    release changes no id, so the probe must see it some other way."""
    q = make_queue()  # another process: its own queue object and pool
    starts = Starts()
    for _ in range(2):
        workers.append(
            worker_cls(make_queue(), starts, queues=["kids"], poll_interval=POLL).start()
        )
    time.sleep(1.0)  # both found nothing and wait
    late = []
    for i in range(4):
        parent = q.enqueue({"i": i}, queue="parents", max_attempts=1)
        child = q.enqueue({"i": i}, queue="kids", after=[parent], after_failure="run")
        time.sleep(0.2)  # the enqueue's own wake-up is over: they wait again
        [job] = q.claim(queues=["parents"])
        if end == "complete":
            q.complete(job, result=i)
        elif end == "complete_many":
            assert q.complete_many([(job, i)]) == []
        else:
            q.fail(job, "the parent fails", final=True)
        ended = time.monotonic()
        at = starts.wait(child, POLL * 3)
        assert at is not None, f"child {i} never started"
        if at - ended > BOUND:
            late.append((i, round(at - ended, 2)))
    assert not late, f"children that waited for a poll (index, seconds): {late}"
