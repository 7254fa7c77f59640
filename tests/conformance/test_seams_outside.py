"""The seams between features, probed from outside (as a user's handler would meet them):
what one feature raises or returns where another one reads it."""

from __future__ import annotations

import asyncio

import pytest

import skiplock
from skiplock import Job, Worker

from .conftest import wait_until
from .test_runner_survives import one_runner


@pytest.mark.parametrize("kind", ["thread", "asyncio-sync"])
def test_a_sync_handler_raising_cancelled_error_fails_its_job_at_once(
    queue: skiplock.Queue, workers: list[Worker], kind: str
) -> None:
    """A sync handler is never cancelled by its worker (a thread cannot be): an
    ``asyncio.CancelledError`` out of it (an ``asyncio.run`` inside whose task was
    cancelled, say) is its own failure, recorded, not a task given up that writes nothing
    and leaves the job ``running`` until its lease ends."""

    def handle(job: Job) -> str:
        if job.payload == "bad":
            raise asyncio.CancelledError("inner task cancelled")
        return f"ran {job.payload}"

    bad = queue.enqueue("bad", max_attempts=1)
    # a lease far longer than the wait: only a recorded failure ends the job in time
    w = one_runner(queue, handle, kind, lease=120)
    workers.append(w)
    wait_until(lambda: queue.get(bad).status == "failed", 30, "the bad job recorded failed")  # type: ignore[union-attr]
    record = queue.get(bad)
    assert record is not None and record.last_error is not None
    assert "CancelledError" in record.last_error and "inner task cancelled" in record.last_error
    good = queue.enqueue("good")
    wait_until(lambda: queue.get(good).status == "done", 30, "the next job to run")  # type: ignore[union-attr]
    w.stop(timeout=15)
    assert queue.stats().running == 0


def test_pointing_an_app_of_a_queue_elsewhere_leaves_that_queue_open(
    queue: skiplock.Queue,
) -> None:
    """``App(q).use(table=...)`` (what ``skiplock worker APP --table T`` and ``enqueue``
    do) makes the app's own queue for the new table; the user's ``q``, which handlers
    and the rest of the program still use, stays open and on its own table."""
    app = skiplock.App(queue)
    app.use(table="seams_outside_jobs")
    assert str(app.queue.table) == "seams_outside_jobs"
    job_id = queue.enqueue("still mine")  # it raised "this queue was closed"
    record = queue.get(job_id)
    assert record is not None and record.payload == "still mine"
