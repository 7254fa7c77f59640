"""A job's outcome: what its handler's end means, and the fenced write that records it.

What is fenced: every write after a claim (heartbeat, complete, fail, release) names the
job's ``attempt``; a write that finds the job taken away marks it lost (``job.lost``), is
logged once at WARNING and changes nothing. A write whose COMMIT lost its connection has
an unknown outcome: the job's record is read back before anything is written again, so a
job is never completed twice and never dropped.

:attr:`Outcomes.writes` is held across each fenced write (this module's, the completer's,
the heartbeat's, the shutdown's release): one at a time, so that no heartbeat of a job
runs while its outcome is being written (the heartbeat would find it gone and call it
lost). It is the outer lock of the worker; the ledger's lock may be taken inside it.

Three things mark a job lost, and each settles it (counts its outcome and stops holding
it): a write that found it gone (:meth:`Outcomes.lost`, marked and counted in one step of
the ledger), its timeout (:meth:`Outcomes.timed_out`, by its fenced write) and a release
(:meth:`Outcomes.release`). A handler that ends on a job marked lost settles nothing: had
it settled first, with no outcome, the count of what marked it would be lost.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .._core.checks import dumps as _dumps
from .._core.job import Job
from ..errors import BackendError, Cancelled, Discard, LeaseLost, SkiplockError, Snooze
from ..queue import Queue
from .joblog import last_line, log_outcome
from .ledger import Held, Ledger
from .port import RunStatePort, port_of
from .settings import Flags

__all__ = ["Outcomes", "last_line"]

log = logging.getLogger("skiplock.worker")


class Outcomes:
    """Turns a handler's end into the job's outcome, written fenced and counted once."""

    def __init__(
        self, queue: Queue, ledger: Ledger, flags: Flags, *, retry_in: float | None = None
    ) -> None:
        self.queue = queue
        self.port: RunStatePort = port_of(queue)
        self.ledger = ledger
        self.flags = flags
        #: seconds before a failed attempt is claimable again (None: :func:`~skiplock.backoff`;
        #: ``skiplock.testing.drain`` passes 0)
        self.retry_in = retry_in
        self.writes = threading.Lock()

    def handler_ended(
        self, job: Job, result: Any = None, error: BaseException | None = None
    ) -> None:
        """Called once per job by a runner, on a thread that may block (a failed attempt is
        written here, before the job's slot is free): the handler returned *result* or
        raised *error*. A returned job still running is queued for the completer; a job
        the handler completed or failed itself is settled with nothing more written. Any
        other BaseException than a task's CancelledError (SystemExit, KeyboardInterrupt,
        …) fails the attempt like an Exception; a CancelledError (a task given up: its
        timeout, the shutdown) writes nothing and stops the job's heartbeat: its lease
        brings it back.

        After a cancel request (``job.cancel_requested``): Cancelled, or any other
        exception but Discard and LeaseLost, ends the job ``cancelled`` (it is not
        retried); a returned result still completes it ``done``, since its work was done.

        Never raises: an outcome that cannot be written (a Snooze whose values the write
        refuses, …) fails the attempt instead (see :meth:`unwritable`), so that no runner
        ends with a job left running."""
        if error is None and self.returned(job, result):
            return
        try:
            self._record(job, result, error)
        except Exception as exc:
            self.unwritable(job, error, exc)
        finally:
            if self.ledger.ended(job):
                self.flags.wake.set()

    def _record(self, job: Job, result: Any, error: BaseException | None) -> None:
        """:meth:`handler_ended`'s write: the outcome *result* or *error* means."""
        if error is None and job.status == "running":
            try:
                _dumps(result, "result of the handler")
            except Exception as exc:
                error = exc
        if isinstance(error, LeaseLost):  # the handler's own fenced write found it gone
            self.lost(job, "the handler's own write")
        elif isinstance(error, (Cancelled, Discard)):
            self.stopped(job, error)
        elif isinstance(error, Exception) and job.cancel_requested:
            self.stopped(job, Cancelled(f"cancelled; then {last_line(error)}"), error)
        elif isinstance(error, Snooze):
            self.snoozed(job, error)
        elif isinstance(error, asyncio.CancelledError):  # given up: nothing is written
            self.settled(job, None)
        elif error is not None:
            self.failed(job, error)
        elif job.status != "running":  # the handler completed (or failed) it itself
            self.settled(job, job.status)
        # else: lost meanwhile; what marked it lost settles it (see the module docstring)

    def unwritable(self, job: Job, error: BaseException | None, exc: Exception) -> None:
        """Writing the outcome of *job*'s handler (*error*, or its result) raised *exc*,
        which no write should: fail the attempt with both named (retried as any failure),
        or, if even that raises, stop holding the job (its lease brings it back)."""
        ended = "returned" if error is None else f"raised {last_line(error)}"
        log.error("job %d: its handler %s; recording that failed", job.id, ended, exc_info=exc)
        try:
            why = f"the handler {ended}; recording that failed: {last_line(exc)}"
            self.failed(job, RuntimeError(why))
        except Exception:
            log.exception("job %d: its failure could not be written either", job.id)
            self.settled(job, None)

    def returned(self, job: Job, result: Any) -> bool:
        """The common end, without blocking: a handler returned *result* (JSON) for a job
        still running and ours, so it is queued for the completer; True. False (nothing
        done): any other end, for :meth:`handler_ended` on a thread that may block."""
        if job.status != "running" or job.lost:
            return False
        if result is not None:  # None is stored as NULL: nothing to check
            try:
                _dumps(result, "result of the handler")
            except Exception:
                return False
        if self.ledger.ended(job, result):
            self.flags.wake.set()
        return True

    @contextmanager
    def waking(self) -> Iterator[None]:
        """Around a write of this worker that may end jobs (a completion, a final failure,
        a cancel, a claim that fails expired jobs): when it released jobs waiting for them
        (the queue's ``released`` count grew meanwhile), wake the producer once the write
        has returned, committed, so that it claims them at once rather than at its next
        poll or probe."""
        before = self.port.released()
        yield
        if self.port.released() != before:
            self.flags.wake.set()

    def failed(self, job: Job, exc: BaseException) -> None:
        if job.lost:  # settled by what marked it lost
            return
        self.ledger.note_error(job, exc)
        self.write(
            job,
            lambda: self.queue.fail(job, last_line(exc), retry_in=self.retry_in),
            applied=("pending", "failed"),
        )

    def snoozed(self, job: Job, snooze: Snooze) -> None:
        """The handler raised Snooze: the job back to pending, due later, no attempt used
        (fenced); counted ``snoozed`` (``failed`` when it reached its snooze cap)."""
        if job.lost:  # settled by what marked it lost
            return
        self.write(
            job,
            lambda: self.queue.snooze(job, snooze.seconds, max_snoozes=snooze.max_snoozes),
            applied=("pending", "failed"),
            pending="snoozed",
        )

    def stopped(self, job: Job, exc: Cancelled | Discard, raised: Exception | None = None) -> None:
        """The handler raised Cancelled (end the job ``cancelled``) or Discard (``failed``
        now, no retries): one fenced write, like any other outcome. *raised*: what the
        handler raised instead, after a cancel request."""
        if job.lost:  # settled by what marked it lost
            return
        why = last_line(exc)
        self.ledger.note_error(job, exc if raised is None else raised)
        if isinstance(exc, Cancelled):
            self.write(
                job, lambda: self.queue.mark_cancelled(job, reason=why), applied=("cancelled",)
            )
        else:
            self.write(job, lambda: self.queue.fail(job, why, final=True), applied=("failed",))

    def timed_out(self, h: Held) -> bool:
        """*h*'s handler passed its timeout: write its attempt's fail (fenced). False if
        the job was no longer held (released by a stop, or settled, meanwhile)."""
        job = h.job
        if not self.ledger.holds(job):
            return False
        job.lost = True  # the handler may look; its result will not be written
        log.warning("job %d attempt %d exceeded its timeout; abandoning it", job.id, job.attempt)
        error = TimeoutError(f"job {job.id} attempt {job.attempt} exceeded its timeout")
        self.ledger.note_error(job, error)
        self.ledger.count("timeout", job)
        self.write(
            job,
            lambda: self.queue.fail(job, last_line(error), retry_in=self.retry_in),
            applied=("pending", "failed"),
        )
        return True

    def write(
        self,
        job: Job,
        write: Callable[[], object],
        *,
        applied: tuple[str, ...],
        pending: str = "pending",
    ) -> None:
        """Run a fenced write for *job*, retrying through outages. After a failure that may
        have committed, the job's record decides (see :meth:`read_back`). *pending*: the
        outcome counted when the write left the job pending (a snooze: ``snoozed``)."""
        pause, unsure = 0.2, False
        while True:
            with self.writes:
                try:
                    if unsure and self.read_back(job, applied, "a write", pending):
                        return
                    with self.waking():
                        write()
                except LeaseLost:
                    self.lost(job, "its fenced write")
                    return
                except BackendError as exc:
                    if not (exc.retryable or exc.connection_lost):
                        log.error("job %d: %s", job.id, exc)
                        self.settled(job, None)  # its lease brings it back
                        return
                    unsure = True
                    log.warning("job %d: %s; retrying in %.1fs", job.id, exc, pause)
                else:
                    self.settled(job, pending if job.status == "pending" else job.status)
                    return
            time.sleep(pause)
            pause = min(pause * 2, 10.0)

    def read_back(
        self, job: Job, applied: tuple[str, ...], what: str, pending: str = "pending"
    ) -> bool:
        """After a write whose COMMIT outcome is unknown: True (and the job settled) if the
        record shows it committed (same claim: attempt and token; status in *applied*) or
        shows the job taken away (another claim); False if it is still ours to write again.
        Call with :attr:`writes` held."""
        record = self.queue.get(job.id)
        if record is not None and record.attempt == job.attempt and record.claim_id == job.claim_id:
            if record.status in applied:
                self.settled(job, pending if record.status == "pending" else record.status)
                return True
            if record.status == "running":
                return False
        self.lost(job, f"{what} whose outcome was unknown")
        return True

    def release(self, job: Job, why: str = "it did not finish in time") -> None:
        """Shutdown: give back a job whose handler did not finish in time (fenced)."""
        job.lost = True  # whatever its handler does now is not written
        try:
            with self.writes:
                if not self.ledger.holds(job):  # its timeout was written meanwhile
                    return
                self.queue.release(job)
            self.ledger.count("released", job)
            log.info("released job %d attempt %d (%s)", job.id, job.attempt, why)
        except SkiplockError as exc:
            log.warning("could not release job %d (%s); its lease brings it back", job.id, exc)
        self.settled(job, None)

    def release_waiting(self) -> None:
        """Give back (fenced) every job claimed ahead that no runner has begun, so that no
        job waits for a lease to end: at shutdown, and when single mode loses its lock."""
        for job in self.ledger.take_waiting():
            self.release(job, "claimed ahead, not started")

    def unclaim(self, jobs: list[Job]) -> None:
        """Single mode: a claim on the lock's connection returned *jobs*, then its COMMIT
        lost that connection, so whether it took them is unknown, and no runner will run
        them. Each one it did take is given back at once (fenced by its attempt and the
        lease's end the claim wrote): the claim uses up none of its attempts, and the next
        holder need not wait for its lease."""
        for job in jobs:
            try:
                with self.writes:
                    self.port.unclaim(job)
            except LeaseLost:  # the claim did not commit: nothing to give back
                log.debug("job %d attempt %d: the lost claim did not commit", job.id, job.attempt)
                continue
            except SkiplockError as exc:
                log.warning(
                    "could not give back job %d attempt %d, claimed as the single-worker "
                    "lock's connection ended (%s); its lease brings it back",
                    job.id,
                    job.attempt,
                    exc,
                )
                continue
            self.ledger.count("released", job)
            log.info(
                "released job %d attempt %d (claimed as the lock's connection ended, not run)",
                job.id,
                job.attempt,
            )

    def lost(self, job: Job, where: str) -> None:
        """The job is no longer ours: say so once, write nothing more for it. Marked and
        counted in one step of the ledger, before the line is logged (see Ledger.lose)."""
        if self.ledger.lose(job):
            log.warning(
                "job %d attempt %d lost its lease (%s): another worker may run it; "
                "its result is not written",
                job.id,
                job.attempt,
                where,
            )

    def settled(self, job: Job, outcome: str | None) -> None:
        """The job's outcome is written (or no longer ours to write): stop holding it and
        count the outcome, once; log it (a loss was logged by :meth:`lost`)."""
        held, key = self.ledger.settle(job, outcome)
        if held is not None and key is not None and key != "lost":
            log_outcome(job, key, time.monotonic() - held.started, held.error)

    def settled_many(self, jobs: list[Job], outcome: str) -> None:
        """:meth:`settled` of each of *jobs* with one *outcome* counted under its own name
        (``done``: a completion batch): one step of the ledger for them all, and the log
        lines, if the logger would write them."""
        counted = self.ledger.settle_many(jobs, outcome)
        if counted and log.isEnabledFor(logging.INFO):
            now = time.monotonic()
            for job, held in counted:
                log_outcome(job, outcome, now - held.started, held.error)
