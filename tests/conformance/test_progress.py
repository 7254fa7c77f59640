"""Progress: a fenced JSON write of a running job, read back by get and list_jobs."""

from __future__ import annotations

import pytest

import skiplock
from skiplock import Job, Worker

from .conftest import take_away, wait_until


def test_progress_is_read_back(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    assert queue.get(job_id).progress is None  # type: ignore[union-attr]
    [job] = queue.claim()
    queue.set_progress(job, {"done": 3, "of": 10})
    assert job.progress == {"done": 3, "of": 10}
    queue.set_progress(job, 0.5)
    record = queue.get(job_id)
    assert record is not None and record.progress == 0.5
    [listed] = queue.list_jobs()
    assert listed.progress == 0.5
    queue.complete(job)
    record = queue.get(job_id)
    assert record is not None and (record.status, record.progress) == ("done", 0.5)


def test_a_late_attempts_progress_raises_lease_lost(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    [job] = queue.claim()
    queue.set_progress(job, "first")
    take_away(queue, job_id)
    with pytest.raises(skiplock.LeaseLost):
        queue.set_progress(job, "late")
    record = queue.get(job_id)
    assert record is not None and record.progress == "first"


def test_progress_too_large_or_not_json_writes_nothing(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue("x")
    [job] = queue.claim()
    with pytest.raises(skiplock.ConfigurationError, match="65536"):
        queue.set_progress(job, "x" * 70_000)
    with pytest.raises(skiplock.PayloadError):
        queue.set_progress(job, {1, 2})
    record = queue.get(job_id)
    assert record is not None and record.progress is None


def test_a_handler_reports_progress(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    job_id = queue.enqueue({"rows": 3})
    seen: list[object] = []

    def handler(job: Job) -> str:
        for i in range(job.payload["rows"]):
            queue.set_progress(job, {"done": i + 1})
            record = queue.get(job.id)
            seen.append(None if record is None else record.progress)
        return "ok"

    workers.append(worker_cls(queue, handler, lease=5).start())
    wait_until(lambda: queue.stats().done == 1, what="the job to finish")
    assert seen == [{"done": 1}, {"done": 2}, {"done": 3}]
    record = queue.get(job_id)
    assert record is not None and record.progress == {"done": 3}
