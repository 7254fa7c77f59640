"""No handler ends a runner: whatever a handler raises, and whatever goes wrong while its
outcome is written, the job ends in a recorded state and the worker runs the next jobs
(sync Worker and AsyncWorker, sync and ``async def`` handlers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import skiplock
from skiplock import Job, Worker

from .conftest import LoopWorker, wait_until


def _snooze_past_the_cap_checker() -> BaseException:
    snooze = skiplock.Snooze(0)
    snooze.max_snoozes = 2**31  # past the checker, after it was built: the write refuses it
    return snooze


def _snooze_built_with_a_huge_cap() -> BaseException:
    return skiplock.Snooze(0, max_snoozes=2**31)  # refused where built (ConfigurationError)


class _Custom(BaseException):
    pass


#: what the first job's handler raises, and what its record's error then holds
RAISED: dict[str, tuple[Callable[[], BaseException], str]] = {
    "snooze-built-huge": (
        _snooze_built_with_a_huge_cap,
        "ConfigurationError: Snooze(max_snoozes=) must be an integer from 1 to 2147483647",
    ),
    "snooze-cap-changed": (
        _snooze_past_the_cap_checker,
        "Snooze: snoozed for 0 s; recording that failed: skiplock.errors.ConfigurationError",
    ),
    "system-exit": (lambda: SystemExit(3), "SystemExit: 3"),
    "keyboard-interrupt": (KeyboardInterrupt, "KeyboardInterrupt"),
    "base-exception": (lambda: _Custom("odd"), "_Custom: odd"),
}


def _handler(raise_first: Callable[[], BaseException], is_async: bool) -> Any:
    def handle(job: Job) -> str:
        if job.payload == "bad":
            raise raise_first()
        return f"ran {job.payload}"

    if not is_async:
        return handle

    async def handle_async(job: Job) -> str:
        return handle(job)

    return handle_async


def one_runner(queue: skiplock.Queue, handler: Callable[..., Any], kind: str, lease: float) -> Any:
    """A started worker of *kind* ("thread" or an AsyncWorker's) with one runner: a runner
    that died would leave every later job claimed and never run."""
    options: dict[str, Any] = {"concurrency": 1, "lease": lease, "poll_interval": 0.1}
    w: Any = Worker if kind == "thread" else LoopWorker
    return w(queue, handler, **options).start()


@pytest.mark.parametrize("raised", list(RAISED))
@pytest.mark.parametrize("kind", ["thread", "asyncio-sync", "asyncio-async"])
def test_a_handler_that_raises_anything_ends_its_job_and_the_worker_runs_on(
    queue: skiplock.Queue, workers: list[Worker], kind: str, raised: str
) -> None:
    make, error_part = RAISED[raised]
    handler = _handler(make, is_async=kind == "asyncio-async")
    bad = queue.enqueue("bad", max_attempts=1)
    w = one_runner(queue, handler, kind, lease=5)
    workers.append(w)
    wait_until(lambda: queue.get(bad).status == "failed", 20, "the bad job recorded failed")  # type: ignore[union-attr]
    record = queue.get(bad)
    assert record is not None and record.last_error is not None
    assert error_part in record.last_error, record.last_error
    good = [queue.enqueue(f"good {i}") for i in range(3)]
    wait_until(lambda: queue.stats().done == 3, 20, "the later jobs to run")
    for job_id, i in zip(good, range(3), strict=True):
        assert queue.get(job_id).result == f"ran good {i}"  # type: ignore[union-attr]
    wait_until(lambda: w.counts["failed"] == 1, what="the failure counted")
    w.stop(timeout=15)
    assert queue.stats().running == 0


def test_snooze_refuses_what_the_write_would_refuse() -> None:
    for bad in ({"max_snoozes": 2**31}, {"max_snoozes": 1.0}, {"max_snoozes": True}):
        with pytest.raises(skiplock.ConfigurationError, match="max_snoozes"):
            skiplock.Snooze(0, **bad)
    for seconds in (10**400, float("inf"), -0.5, "1", None):
        with pytest.raises(skiplock.ConfigurationError, match="seconds"):
            skiplock.Snooze(seconds)  # type: ignore[arg-type]
    assert skiplock.Snooze(0, max_snoozes=2**31 - 1).max_snoozes == 2**31 - 1
