"""Runners: where handlers run. A :class:`Runner` gets each claimed job and reports its end once
(:meth:`~.outcome.Outcomes.handler_ended`). :class:`ThreadRunner` is the sync worker's;
:mod:`.aio` has the asyncio one."""

from __future__ import annotations

import asyncio
import logging
import queue as queue_module
import threading
from collections.abc import Callable
from typing import Any, Protocol

from .._core.job import Job
from .joblog import last_line
from .ledger import Ledger
from .outcome import Outcomes

__all__ = ["Handler", "Runner", "ThreadRunner", "report", "run_handler"]

log = logging.getLogger("skiplock.worker")

Handler = Callable[[Job], Any]


class Runner(Protocol):
    """Where handlers run. Called from the producer's thread only."""

    def submit(self, job: Job) -> None:
        """Run *job*'s handler once a slot is free; return at once."""

    def abandon(self, job: Job) -> None:
        """*job* was given up: stop its handler if possible."""

    def timed_out(self, job: Job) -> None:
        """*job* passed its timeout: stop it if possible."""

    def cancel(self, job: Job) -> None:
        """A cancel was requested: stop *job*'s handler if possible."""

    def close(self) -> None:
        """No more jobs: threads end once idle."""


class ThreadRunner:
    """Handlers on up to ``concurrency`` reused threads."""

    def __init__(self, handler: Handler, outcomes: Outcomes, ledger: Ledger) -> None:
        self.handler = handler
        self.outcomes = outcomes
        self.ledger = ledger
        self._jobs: queue_module.SimpleQueue[Job | None] = queue_module.SimpleQueue()
        self._threads = 0

    def submit(self, job: Job) -> None:
        # Only the producer adds to ``active`` and only it calls this: a runner that ends
        # a job meanwhile is idle and takes the next one, so this count is enough.
        spawn = self._threads < min(self.ledger.active, self.ledger.concurrency)
        if spawn:
            self._threads += 1
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._serve, name="skiplock-runner", daemon=True).start()

    def abandon(self, job: Job) -> None:
        pass  # a thread cannot be stopped: it keeps its slot until the handler returns

    def timed_out(self, job: Job) -> None:
        pass  # the same

    def cancel(self, job: Job) -> None:
        pass  # the handler sees job.cancel_requested (or job.raise_if_cancelled())

    def close(self) -> None:
        for _ in range(self._threads):
            self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            if self.ledger.begin(job):  # False: given back while it waited
                self.run_one(job)

    def run_one(self, job: Job) -> None:
        run_handler(self.handler, self.outcomes, job)


def run_handler(handler: Handler, outcomes: Outcomes, job: Job) -> None:
    """Run a sync handler here and report its end. Never raises."""
    try:
        if job.cancel_requested:
            job.raise_if_cancelled()
        result = handler(job)
    except asyncio.CancelledError as exc:
        # no worker cancels a thread: this is the handler's own failure (an asyncio.run
        # inside it was cancelled, say), not a task given up, which writes nothing
        failure = RuntimeError(f"the handler raised {last_line(exc)}")
        failure.__cause__ = exc
        report(outcomes, job, error=failure)
    except BaseException as exc:
        report(outcomes, job, error=exc)
    else:
        report(outcomes, job, result)


def report(
    outcomes: Outcomes, job: Job, result: Any = None, error: BaseException | None = None
) -> None:
    """Report *job*'s end; errors are logged, never raised."""
    try:
        if error is not None or not outcomes.returned(job, result):  # returned: the common end
            outcomes.handler_ended(job, result, error)
    except BaseException:
        log.exception("job %d: reporting its end failed; its lease brings it back", job.id)
        try:
            outcomes.settled(job, None)  # no longer held: its heartbeat stops
        except BaseException:
            log.exception("job %d: could not stop holding it", job.id)
