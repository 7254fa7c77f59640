"""Keeping what the worker holds alive: the :class:`Heartbeat` extends held jobs' leases, checks
the single-worker lock, abandons jobs at their timeout and passes cancel requests to the runner;
:class:`Presence` keeps the worker's row in the live worker list (its errors logged, never
fatal)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from .._core.job import Job
from ..errors import LeaseLost, SkiplockError
from .outcomes import OutcomeWriter
from .state import Flags, HeldJob, HeldJobs, Settings

__all__ = ["Heartbeat", "Presence"]

log = logging.getLogger("skiplock.worker")


class Heartbeat:
    """The heartbeat thread (:meth:`run`)."""

    def __init__(
        self,
        settings: Settings,
        jobs: HeldJobs,
        outcomes: OutcomeWriter,
        flags: Flags,
        on_lock_lost: Callable[[], None],
        on_timeout: Callable[[Job], None],
        on_cancel: Callable[[Job], None],
    ) -> None:
        self.settings = settings
        self.jobs = jobs
        self.outcomes = outcomes
        self.flags = flags
        self.on_lock_lost = on_lock_lost
        self.on_timeout = on_timeout
        self.on_cancel = on_cancel
        self._failing = False
        #: set to wake :meth:`run` before its time: an earlier deadline, or the end
        self._wake = threading.Event()
        #: when :meth:`run` wakes next (time.monotonic()), read and written under _plan
        self._wake_at = 0.0
        self._plan = threading.Lock()
        #: called with the start (``time.monotonic()``) of each beat whose every write
        #: succeeded: each job it held then has a lease that lasts until that time plus
        #: the lease at least (a fleet's process tells its supervisor: see skiplock._fleet)
        self.on_beat: Callable[[float], None] | None = None
        #: called with each job found past its deadline, before its timeout is written:
        #: this process runs (a fleet's supervisor then leaves it to end itself)
        self.on_expire: Callable[[Job], None] | None = None

    def run(self) -> None:
        next_beat = time.monotonic() + self.settings.heartbeat
        while not self.flags.finished.is_set():
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + self.settings.heartbeat
                self.beat()
            else:
                self.expire(now)
            with self._plan:
                self._wake.clear()
                if self.flags.finished.is_set():  # (finish() may have come before the clear)
                    return
                self._wake_at = min(next_beat, self.jobs.next_deadline())
            self._wake.wait(max(0.001, self._wake_at - time.monotonic()))

    def sooner(self, deadline: float) -> None:
        """A handler began with this deadline: wake by then. Any thread."""
        with self._plan:
            if deadline < self._wake_at:
                self._wake.set()

    def finish(self) -> None:
        """End :meth:`run` now."""
        self._wake.set()

    def beat(self) -> None:
        began = time.monotonic()
        lock = self.settings.lock
        if lock is not None and lock.held and not lock.check():
            self.on_lock_lost()
        held = self.jobs.beatable()
        expired = {id(h) for h in self.expire(time.monotonic(), held)}
        extended = True
        for h in held:
            if id(h) not in expired:
                extended = self._extend(h) and extended
        if extended and self.on_beat is not None:
            self.on_beat(began)

    def expire(self, now: float, held: list[HeldJob] | None = None) -> list[HeldJob]:
        """Fail and stop each of *held* past its deadline; those found."""
        expired = [
            h
            for h in (self.jobs.beatable() if held is None else held)
            if h.deadline is not None and now >= h.deadline and not h.finished
        ]
        for h in expired:
            if self.on_expire is not None:
                self.on_expire(h.job)
            if self.outcomes.timed_out(h):
                self.on_timeout(h.job)
        return expired

    def beat_now(self, job_id: int) -> None:
        """Beat *job_id* now if held (a cancel notification named it)."""
        h = self.jobs.running(job_id)
        if h is not None:
            self._extend(h)

    def _extend(self, h: HeldJob) -> bool:
        """Beat *h*; False when the write failed."""
        with self.outcomes.writes:  # not while its outcome is being written
            if not self.jobs.still_beatable(h):  # settled meanwhile, or by its handler
                return True
            asked = h.job.cancel_requested  # read under the lock: one beat sees it first
            try:
                self.settings.queue.heartbeat(h.job, lease=self.settings.lease)
                self._failing = False
            except LeaseLost:
                # Its handler's own completion may have committed just now: it sets the
                # status before its COMMIT, so a job still "running" here is lost.
                if h.job.status == "running":
                    self.outcomes.lost(h.job, "heartbeat")
            except SkiplockError as exc:
                if not self._failing:  # once per outage; the next beat tries again
                    log.warning("heartbeat failed (%s); retrying", exc)
                self._failing = True
                return False
        if h.job.cancel_requested and not asked and not h.job.lost:
            log.info("job %d attempt %d: cancel requested", h.job.id, h.job.attempt)
            self.on_cancel(h.job)
        return True


class Presence:
    """One worker process's row."""

    def __init__(self, settings: Settings, jobs: HeldJobs) -> None:
        self.settings = settings
        self.jobs = jobs
        self.id = uuid.uuid4().hex
        self._registered = False
        self._failing = False

    def register(self) -> None:
        s = self.settings
        try:
            s.queue.register_worker(
                self.id,
                host=socket.gethostname()[:255] or "unknown",
                pid=os.getpid(),
                queues=s.queues,
                concurrency=s.concurrency,
                interval=s.heartbeat,
            )
            self._registered = True
            self._failing = False
        except Exception as exc:  # never fatal: see the module's docstring
            self._failed(exc)

    def beat(self) -> None:
        if not self._registered:
            self.register()
            return
        try:
            if not self.settings.queue.beat_worker(self.id, in_flight=self.jobs.active):
                self.register()  # the row was forgotten (a long outage): write it again
            self._failing = False
        except Exception as exc:  # never fatal: see the module's docstring
            self._failed(exc)

    def start(self, stop: threading.Event) -> threading.Thread:
        """Beat until *stop* is set, in a daemon thread."""

        def run() -> None:
            while not stop.wait(self.settings.heartbeat):
                self.beat()

        t = threading.Thread(target=run, name="skiplock-presence", daemon=True)
        t.start()
        return t

    def unregister(self) -> None:
        if not self._registered:  # no row was written (the table missing, say): none to remove
            return
        try:
            self.settings.queue.unregister_worker(self.id)
        except Exception as exc:
            log.warning("could not remove this worker from the worker list (%r)", exc)

    def _failed(self, exc: Exception) -> None:
        if not self._failing:  # once per outage
            log.warning("could not update this worker's row in the worker list (%r)", exc)
        self._failing = True
