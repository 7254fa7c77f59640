"""Runners: the seam where a job's handler runs. One interface, two implementations.

A :class:`Runner` is given each claimed job by the producer (:meth:`Runner.submit`, which
must not block), runs the handler somewhere, and reports its end exactly once with
:meth:`~.outcome.Outcomes.handler_ended` on a thread that may block (a failed attempt is
written there). Everything else (claiming, batching, heartbeats, completions, shutdown)
does not know where handlers run, so the asyncio worker plugs in an event-loop runner
and reuses every other part unchanged.

:class:`ThreadRunner`, the sync worker's: a pool of threads, at most ``concurrency``,
started only while jobs outnumber them (a thread per job cost more than a no-op job
itself) and reused from job to job. Its counters are touched by the producer's thread
only, so it has no lock.
"""

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
        """Run *job*'s handler (held in the ledger already) once a slot is free, after
        :meth:`~.ledger.Ledger.begin` said yes (a job claimed ahead may be given back
        before); return at once."""

    def abandon(self, job: Job) -> None:
        """*job* was given up (still running after the grace): stop its handler if this
        runner can (a task can be cancelled; a thread cannot)."""

    def timed_out(self, job: Job) -> None:
        """*job*'s handler passed its timeout (its fail is written): stop it if this runner
        can. Called from the heartbeat, also while the worker stops."""

    def cancel(self, job: Job) -> None:
        """A cancel of *job* was requested (``job.cancel_requested`` is set already): stop
        its handler if this runner can. Called from the heartbeat or the listener."""

    def close(self) -> None:
        """No more jobs: idle runners end now, busy ones after their job."""


class ThreadRunner:
    """Runs handlers on a pool of reused threads (see the module's docstring)."""

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
    """Run a sync handler on this thread and report its end. Never raises: whatever the
    handler raises (SystemExit and KeyboardInterrupt too) is its job's outcome, and the
    thread goes on to the next job. A job claimed with a cancel request already recorded
    (an earlier attempt was asked) is not run: it ends ``cancelled``."""
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
    """Report the end of *job*'s handler; what goes wrong meanwhile is logged, never raised
    into the runner (a runner that ended would leave every later job claimed, not run)."""
    try:
        if error is not None or not outcomes.returned(job, result):  # returned: the common end
            outcomes.handler_ended(job, result, error)
    except BaseException:
        log.exception("job %d: reporting its end failed; its lease brings it back", job.id)
        try:
            outcomes.settled(job, None)  # no longer held: its heartbeat stops
        except BaseException:
            log.exception("job %d: could not stop holding it", job.id)
