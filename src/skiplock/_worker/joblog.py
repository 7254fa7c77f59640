"""The one log line per job outcome, with ``extra`` fields (``job_id``, ``task``, ``queue``,
``attempt``, ``outcome``, ``duration``...)."""

from __future__ import annotations

import logging
import traceback

from .._core.job import Job
from ..errors import Cancelled, Discard

__all__ = ["last_line", "log_outcome"]

log = logging.getLogger("skiplock.worker")


def last_line(exc: BaseException) -> str:
    """The traceback's last line: ``ValueError: bad input``."""
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def _why(job: Job, outcome: str, error: BaseException | None) -> str:
    """The error's last line, or the job's ``last_error``."""
    if error is not None:
        return f": {last_line(error)}"
    written = job.last_error.strip() if outcome in ("retried", "failed") and job.last_error else ""
    return f": {written.splitlines()[-1].strip()}" if written else ""


def log_outcome(job: Job, outcome: str, duration: float, error: BaseException | None) -> None:
    """Log *job*'s *outcome* after *duration* seconds."""
    level = logging.WARNING if outcome == "failed" else logging.INFO
    if not log.isEnabledFor(level):
        return
    payload = job.payload
    task = payload.get("task") if isinstance(payload, dict) else None
    fields = {
        "job_id": job.id,
        "task": task if isinstance(task, str) else None,
        "queue": job.queue,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "outcome": outcome,
        "duration": round(duration, 6),
    }
    trace = error if outcome == "failed" and not isinstance(error, (Discard, Cancelled)) else None
    log.log(
        level,
        "job %d %s: %s, queue %s, attempt %d/%d, %.3fs%s",
        job.id,
        outcome,
        fields["task"] or "no task",
        job.queue,
        job.attempt,
        job.max_attempts,
        duration,
        _why(job, outcome, error),
        exc_info=trace,
        extra=fields,
    )
