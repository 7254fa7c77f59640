"""``drain`` and ``drain_async``: run the due jobs here, through the worker's own parts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._core.checks import integer, queue_names
from .._core.job import Job
from .._worker.outcomes import Completer, OutcomeWriter
from .._worker.runners import (
    AsyncioRunner,
    Handler,
    ThreadRunner,
    chain,
    check_middleware,
    is_async_handler,
)
from .._worker.state import Flags, HeldJobs
from ..app import App
from ..errors import ConfigurationError
from ..queue import Queue
from ..queue_async import AsyncQueue

__all__ = ["DRAIN_LEASE", "JobFailed", "drain", "drain_async"]

#: seconds of lease a drain claims with (no heartbeat extends it)
DRAIN_LEASE = 300.0
#: the statuses a job ends in; a drain returns a job once it reaches one
FINAL = ("done", "failed", "cancelled")

Target = App | Queue | AsyncQueue


class JobFailed(AssertionError):
    """A job drained with ``raise_on_failure=True`` ended ``failed``. ``job`` is its record;
    ``__cause__`` is what its handler raised last (None if it failed otherwise).
    """

    def __init__(self, job: Job) -> None:
        task = job.payload.get("task") if isinstance(job.payload, dict) else None
        what = f"task {task!r}" if isinstance(task, str) else "its handler"
        super().__init__(
            f"job {job.id} ({what}) failed after {job.attempt} of {job.max_attempts} "
            f"attempts: {job.last_error}"
        )
        self.job = job


@dataclass
class _Plan:
    queue: Queue
    handler: Handler
    queues: list[str]
    max_jobs: int | None
    raise_on_failure: bool
    #: a sync Queue made here for an AsyncQueue, closed when the drain ends
    own: Queue | None = None


def _plan(
    target: object,
    queues: Sequence[str] | str | None,
    max_jobs: int | None,
    handler: Handler | None,
    raise_on_failure: bool,
    *,
    is_async: bool,
) -> _Plan:
    """Check the arguments (before any I/O) and say what to drain."""
    if max_jobs is not None:
        integer(max_jobs, "max_jobs", 1, 2**63 - 1)
    if isinstance(target, App):
        if handler is not None:
            raise ConfigurationError(
                "drain(app) runs the app's tasks: pass handler= only with a Queue"
            )
        handler = target.handle_async if is_async else target.handle
        # the app's middleware runs around its tasks here too, as in its workers
        handler = chain(handler, check_middleware(target.middleware, is_async=is_async))
        names = target._task_queues() if queues is None else queues
        return _Plan(target.queue, handler, queue_names(names), max_jobs, raise_on_failure)
    if not isinstance(target, (Queue, AsyncQueue)):
        raise ConfigurationError(
            f"drain() takes a skiplock.App, Queue or AsyncQueue, not {type(target).__name__}"
        )
    if handler is None:
        raise ConfigurationError(
            "a Queue has no tasks to run its jobs with: drain the App (drain(app)), or pass "
            "handler=, a function taking a skiplock.Job (as skiplock.Worker does)"
        )
    if not callable(handler):
        raise ConfigurationError("handler must be a function taking a skiplock.Job")
    if not is_async and is_async_handler(handler):
        raise ConfigurationError("handler is an async def: use await drain_async(...)")
    names = queue_names(("default",) if queues is None else queues)
    if isinstance(target, Queue):
        return _Plan(target, handler, names, max_jobs, raise_on_failure)
    own = target.sync_queue()  # the worker's way: writes on a sync Queue, in threads
    return _Plan(own, handler, names, max_jobs, raise_on_failure, own)


class _Drain:
    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.jobs = HeldJobs(1)
        self.outcomes = OutcomeWriter(plan.queue, self.jobs, Flags(), retry_in=0)
        self.completer = Completer(plan.queue, self.jobs, self.outcomes)
        self.finished: list[Job] = []
        self.errors: dict[int, Exception] = {}  # job id → what its handler raised last

    def handler(self) -> Handler:
        inner, errors = self.plan.handler, self.errors
        if is_async_handler(inner):

            async def run_async(job: Job) -> Any:
                try:
                    return await inner(job)
                except Exception as exc:
                    errors[job.id] = exc
                    raise

            return run_async

        def run(job: Job) -> Any:
            try:
                return inner(job)
            except Exception as exc:
                errors[job.id] = exc
                raise

        return run

    def claim(self) -> Job | None:
        """The next due job, held by the drain; None when none is due."""
        p = self.plan
        if p.max_jobs is not None and len(self.finished) >= p.max_jobs:
            return None
        jobs = p.queue.claim(queues=p.queues, limit=1, lease=DRAIN_LEASE)
        if not jobs:
            return None
        self.jobs.hold([(jobs[0], None)])
        return jobs[0]

    def settle(self, job: Job) -> None:
        """Write the reported outcome (fenced); keep a job that ended."""
        self.completer.flush()
        if job.status not in FINAL:  # retried (due again now), or no longer ours
            return
        record = self.plan.queue.get(job.id) or job
        self.finished.append(record)
        if self.plan.raise_on_failure and record.status == "failed":
            raise JobFailed(record) from self.errors.get(job.id)


def drain(
    target: Target,
    *,
    queues: Sequence[str] | str | None = None,
    max_jobs: int | None = None,
    handler: Callable[[Job], Any] | None = None,
    raise_on_failure: bool = False,
) -> list[Job]:
    """Run the due jobs of *target* in this thread until none is due.

    *target* is an :class:`~skiplock.App` or a Queue / AsyncQueue with *handler* (a function
    of the :class:`~skiplock.Job`); *queues* defaults to the App's or ``default``. Outcomes
    are the worker's, but a failed attempt is retried at once; jobs not yet due are left.
    *max_jobs* stops after that many ended.

    Returns the jobs that ended, in order, as stored. Raises :class:`JobFailed` at the first
    failed job with *raise_on_failure*; ConfigurationError for bad arguments, or for
    ``async def`` tasks while an event loop runs here (use :func:`drain_async`).
    """
    plan = _plan(target, queues, max_jobs, handler, raise_on_failure, is_async=False)
    if isinstance(target, App) and target.has_async_tasks and _loop_running():
        raise ConfigurationError(
            "this app has async def tasks and an event loop runs in this thread: "
            "use await skiplock.testing.drain_async(app)"
        )
    d = _Drain(plan)
    runner = ThreadRunner(d.handler(), d.outcomes, d.jobs)
    try:
        while (job := d.claim()) is not None:
            if d.jobs.begin(job):
                runner.run_one(job)
            d.settle(job)
        return d.finished
    finally:
        if plan.own is not None:
            plan.own.close()


async def drain_async(
    target: Target,
    *,
    queues: Sequence[str] | str | None = None,
    max_jobs: int | None = None,
    handler: Callable[[Job], Any] | None = None,
    raise_on_failure: bool = False,
) -> list[Job]:
    """:func:`drain` for asyncio code: ``async def`` handlers are awaited on the running
    loop, sync ones run in a thread. Same arguments, result and errors.
    """
    plan = _plan(target, queues, max_jobs, handler, raise_on_failure, is_async=True)
    d = _Drain(plan)
    runner = AsyncioRunner(d.handler(), d.outcomes, d.jobs, 1)
    runner.bind(asyncio.get_running_loop())
    try:
        while (job := await asyncio.to_thread(d.claim)) is not None:
            await runner.run_one(job)
            await asyncio.to_thread(d.settle, job)
        return d.finished
    finally:
        runner.shutdown_threads()
        if plan.own is not None:
            plan.own.close()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
