"""A job's outcome: what its handler's end means (:class:`OutcomeWriter`), written fenced (by
``attempt``); returned jobs completed in batches (:class:`Completer`); one log line per outcome.
A write that finds the job gone marks it lost; after an unknown COMMIT the record is read back
first. ``OutcomeWriter.writes`` serialises the fenced writes (the outer lock)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from .._core.checks import dumps as _dumps
from .._core.job import Job, Snooze
from ..errors import BackendError, Cancelled, Discard, LeaseLost, SkiplockError
from ..queue import Queue
from .port import RunStatePort
from .state import Flags, HeldJob, HeldJobs

__all__ = ["Completer", "OutcomeWriter", "last_line", "log_outcome"]

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


class OutcomeWriter:
    """Turns a handler's end into the job's outcome, written and counted once."""

    def __init__(
        self, queue: Queue, jobs: HeldJobs, flags: Flags, *, retry_in: float | None = None
    ) -> None:
        self.queue = queue
        self.port: RunStatePort = queue._port()
        self.jobs = jobs
        self.flags = flags
        #: seconds before a failed attempt is claimable again (None: :func:`~skiplock.backoff`;
        #: ``skiplock.testing.drain`` passes 0)
        self.retry_in = retry_in
        self.writes = threading.Lock()

    def handler_ended(
        self, job: Job, result: Any = None, error: BaseException | None = None
    ) -> None:
        """A runner's report, once per job: the handler returned *result* or raised *error*.
        Never raises. After a cancel request an error (but Discard or LeaseLost) ends the job
        ``cancelled``; a task's CancelledError writes nothing."""
        if error is None and self.returned(job, result):
            return
        try:
            self._record(job, result, error)
        except Exception as exc:
            self.unwritable(job, error, exc)
        finally:
            if self.jobs.ended(job):
                self.flags.wake.set()

    def _record(self, job: Job, result: Any, error: BaseException | None) -> None:
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
        """Writing the outcome raised *exc*: fail the attempt, else drop it."""
        ended = "returned" if error is None else f"raised {last_line(error)}"
        log.error("job %d: its handler %s; recording that failed", job.id, ended, exc_info=exc)
        try:
            why = f"the handler {ended}; recording that failed: {last_line(exc)}"
            self.failed(job, RuntimeError(why))
        except Exception:
            log.exception("job %d: its failure could not be written either", job.id)
            self.settled(job, None)

    def returned(self, job: Job, result: Any) -> bool:
        """Queue *result* for the completer without blocking; False if it cannot."""
        if job.status != "running" or job.lost:
            return False
        if result is not None:  # None is stored as NULL: nothing to check
            try:
                _dumps(result, "result of the handler")
            except Exception:
                return False
        if self.jobs.ended(job, result):
            self.flags.wake.set()
        return True

    @contextmanager
    def waking(self) -> Iterator[None]:
        """Wake the producer after a write that released waiting jobs."""
        before = self.port.released()
        yield
        if self.port.released() != before:
            self.flags.wake.set()

    def failed(self, job: Job, exc: BaseException) -> None:
        if job.lost:  # settled by what marked it lost
            return
        self.jobs.note_error(job, exc)
        self.write(
            job,
            lambda: self.queue.fail(job, last_line(exc), retry_in=self.retry_in),
            applied=("pending", "failed"),
        )

    def snoozed(self, job: Job, snooze: Snooze) -> None:
        """Back to pending, due later, no attempt used."""
        if job.lost:  # settled by what marked it lost
            return
        self.write(
            job,
            lambda: self.queue.snooze(job, snooze.seconds, max_snoozes=snooze.max_snoozes),
            applied=("pending", "failed"),
            pending="snoozed",
        )

    def stopped(self, job: Job, exc: Cancelled | Discard, raised: Exception | None = None) -> None:
        """Cancelled ends the job ``cancelled``, Discard ``failed`` (no retry)."""
        if job.lost:  # settled by what marked it lost
            return
        why = last_line(exc)
        self.jobs.note_error(job, exc if raised is None else raised)
        if isinstance(exc, Cancelled):
            self.write(
                job, lambda: self.queue.mark_cancelled(job, reason=why), applied=("cancelled",)
            )
        else:
            self.write(job, lambda: self.queue.fail(job, why, final=True), applied=("failed",))

    def timed_out(self, h: HeldJob) -> bool:
        """Write the fail of *h*, past its timeout; False if no longer held."""
        job = h.job
        if not self.jobs.holds(job):
            return False
        job.lost = True  # the handler may look; its result will not be written
        log.warning("job %d attempt %d exceeded its timeout; abandoning it", job.id, job.attempt)
        error = TimeoutError(f"job {job.id} attempt {job.attempt} exceeded its timeout")
        self.jobs.note_error(job, error)
        self.jobs.count("timeout", job)
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
        """Run a fenced *write*, retrying through outages (see :meth:`read_back`)."""
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
        """After an unknown COMMIT: True (settled) if the record shows the write or another
        claim; False if still ours. Hold :attr:`writes`."""
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
        """Give back (fenced) a job whose handler did not finish in time."""
        job.lost = True  # whatever its handler does now is not written
        try:
            with self.writes:
                if not self.jobs.holds(job):  # its timeout was written meanwhile
                    return
                self.queue.release(job)
            self.jobs.count("released", job)
            log.info("released job %d attempt %d (%s)", job.id, job.attempt, why)
        except SkiplockError as exc:
            log.warning("could not release job %d (%s); its lease brings it back", job.id, exc)
        self.settled(job, None)

    def release_waiting(self) -> None:
        """Give back every job claimed ahead and not begun."""
        for job in self.jobs.take_waiting():
            self.release(job, "claimed ahead, not started")

    def unclaim(self, jobs: list[Job]) -> None:
        """Give back each of *jobs* a claim in doubt took, using no attempt."""
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
            self.jobs.count("released", job)
            log.info(
                "released job %d attempt %d (claimed as the lock's connection ended, not run)",
                job.id,
                job.attempt,
            )

    def lost(self, job: Job, where: str) -> None:
        """The job is no longer ours: log it once."""
        if self.jobs.lose(job):
            log.warning(
                "job %d attempt %d lost its lease (%s): another worker may run it; "
                "its result is not written",
                job.id,
                job.attempt,
                where,
            )

    def settled(self, job: Job, outcome: str | None) -> None:
        """Stop holding the job; count and log *outcome* once."""
        held, key = self.jobs.settle(job, outcome)
        if held is not None and key is not None and key != "lost":
            log_outcome(job, key, time.monotonic() - held.started, held.error)

    def settled_many(self, jobs: list[Job], outcome: str) -> None:
        counted = self.jobs.settle_many(jobs, outcome)
        if counted and log.isEnabledFor(logging.INFO):
            now = time.monotonic()
            for job, held in counted:
                log_outcome(job, outcome, now - held.started, held.error)


class Completer:
    """Writes the waiting completions under ``outcomes.writes``."""

    def __init__(self, queue: Queue, jobs: HeldJobs, outcomes: OutcomeWriter) -> None:
        self.queue = queue
        self.jobs = jobs
        self.outcomes = outcomes
        self._thread: ThreadPoolExecutor | None = None

    def open(self) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="skiplock-flush")

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown()

    def begin(self) -> Future[None] | None:
        """Start a flush on its thread if completions wait; else None."""
        if self._thread is None or not self.jobs.has_completions():
            return None
        return self._thread.submit(self.flush)

    def flush(self) -> None:
        """Complete the waiting jobs; BackendError keeps the batch."""
        batch, unsure = self.jobs.take_completions()
        if not batch:
            return
        with self.outcomes.writes:
            try:
                for job in unsure:  # a COMMIT whose outcome was unknown: read what happened
                    self.outcomes.read_back(job, ("done",), "a completion")
                batch = self.jobs.still_ours(batch)
                with self.outcomes.waking():
                    lost = self.queue.complete_many(batch) if batch else []
            except BackendError:
                self.jobs.put_back(batch)
                raise
            self._settle(batch, lost)

    def _settle(self, batch: list[tuple[Job, Any]], lost: list[Job]) -> None:
        if lost:
            lost_ids = {j.id for j in lost}
            for job, _ in batch:
                if job.id in lost_ids:
                    self.outcomes.lost(job, "its completion")
            done = [job for job, _ in batch if job.id not in lost_ids]
        else:
            done = [job for job, _ in batch]
        self.outcomes.settled_many(done, "done")  # one lock for the batch
