"""The worker's log: one line per job outcome with structured fields, one traceback per
job that fails."""

from __future__ import annotations

import logging

import pytest

import skiplock
from skiplock import Worker

from .conftest import wait_until


def test_one_line_per_outcome_and_one_traceback_per_job(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    def handler(job: skiplock.Job) -> str:
        if job.payload["fail"]:
            raise ValueError("bad input")
        return "ok"

    caplog.set_level(logging.INFO, logger="skiplock.worker")
    good = queue.enqueue({"task": "report", "fail": False}, queue="logs")
    bad = queue.enqueue({"fail": True}, queue="logs", max_attempts=2)
    w = worker_cls(queue, handler, queues="logs", lease=5, poll_interval=0.1)
    workers.append(w.start())
    # the retry waits for its backoff (about a second)
    wait_until(lambda: queue.get(bad).status == "failed", 60, "the bad job to fail")  # type: ignore[union-attr]
    wait_until(lambda: queue.get(good).status == "done", 30, "the good job")  # type: ignore[union-attr]
    wait_until(lambda: w.counts["failed"] == 1, 10, "the worker to count it")
    # the outcome's line is logged just after the count and the row's status change
    wait_until(
        lambda: any(getattr(r, "outcome", None) == "failed" for r in caplog.records),
        10,
        "the failure's line",
    )

    outcomes = [r for r in caplog.records if hasattr(r, "outcome")]
    good_lines = [r for r in outcomes if r.job_id == good]  # type: ignore[attr-defined]
    assert [(r.levelno, r.outcome) for r in good_lines] == [(logging.INFO, "done")]  # type: ignore[attr-defined]
    line = good_lines[0]
    assert (line.task, line.queue, line.attempt) == ("report", "logs", 1)  # type: ignore[attr-defined]
    assert isinstance(line.duration, float) and line.duration >= 0  # type: ignore[attr-defined]

    bad_lines = [r for r in outcomes if r.job_id == bad]  # type: ignore[attr-defined]
    assert [(r.levelno, r.outcome, r.attempt) for r in bad_lines] == [  # type: ignore[attr-defined]
        (logging.INFO, "retried", 1),
        (logging.WARNING, "failed", 2),
    ]
    assert "ValueError: bad input" in bad_lines[0].getMessage()
    assert bad_lines[0].exc_info is None and bad_lines[1].exc_info is not None
    tracebacks = [r for r in caplog.records if r.exc_info and f"job {bad} " in r.getMessage()]
    assert len(tracebacks) == 1


def test_a_failure_the_handler_wrote_itself_is_logged_with_its_error(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As the Django runner does: ``q.fail`` in the handler, with a whole traceback."""

    def handler(job: skiplock.Job) -> None:
        queue.fail(job, "Traceback (most recent call last):\n  ...\nKeyError: 'sku-42'\n")

    caplog.set_level(logging.INFO, logger="skiplock.worker")
    job_id = queue.enqueue({"task": "ship"}, queue="self", max_attempts=2)
    w = worker_cls(queue, handler, queues="self", lease=5, poll_interval=0.1)
    workers.append(w.start())
    wait_until(lambda: queue.get(job_id).status == "failed", 60, "the job to fail")  # type: ignore[union-attr]
    wait_until(lambda: w.counts["failed"] == 1, 10, "the worker to count it")
    wait_until(
        lambda: any(getattr(r, "outcome", None) == "failed" for r in caplog.records),
        10,
        "the failure's line",
    )
    lines = [r for r in caplog.records if getattr(r, "job_id", None) == job_id]
    assert [r.outcome for r in lines] == ["retried", "failed"]  # type: ignore[attr-defined]
    for line in lines:
        assert line.getMessage().endswith(": KeyError: 'sku-42'"), line.getMessage()
