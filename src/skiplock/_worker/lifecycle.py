"""A worker's life: :class:`WorkerRuntime` builds the parts, takes the lock, starts the helpers,
runs the producer and shuts down; the :class:`Heartbeat` (leases, the single lock's checks,
timeouts, cancel requests) and :class:`Presence` (the worker's row in the live worker list) keep
what it holds alive; :class:`Retention` prunes finished jobs and :class:`Scheduler` enqueues
periodic ticks, each on a thread of its own under an advisory lock. SIGTERM / SIGINT are relayed
without taking a lock (the handler writes the signal to a pipe, a thread reacts): the first
stops with a grace, a SIGINT after it exits at once."""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from types import FrameType
from typing import Any, Protocol

from .._core.checks import EnqueueOptions
from .._core.checks import dumps as _dumps
from .._core.checks import seconds as _seconds
from .._core.job import STATUSES, Job
from ..errors import BackendError, ConfigurationError, LeaseLost, SkiplockError
from ..periodic import Schedule
from ..queue import Queue
from .claiming import Producer, make_wakeup
from .outcomes import Completer, OutcomeWriter
from .port import PeriodicPort, RetentionPort
from .runners import Runner
from .state import Flags, HeldJob, HeldJobs, Settings, lock_identity

__all__ = [
    "DEFAULT_RETENTION",
    "EXIT_NOW",
    "REPEATED",
    "STOP",
    "Exporter",
    "Heartbeat",
    "Presence",
    "Retention",
    "RunnerFactory",
    "Scheduler",
    "Service",
    "SignalRelay",
    "WorkerRuntime",
    "on_stop_signal",
    "retention_seconds",
    "stop_request",
]

log = logging.getLogger("skiplock.worker")


RunnerFactory = Callable[[OutcomeWriter, HeldJobs], Runner]

#: jobs are claimed ahead only as many as the runners can begin within this share of the
#: lease (see :class:`~.state.HeldJobs`): a prefetched job's lease runs from its claim
PREFETCH_WINDOW = 0.1
#: seconds the worker waits, once finished, for its helper threads to return from the
#: database call they are in (a connect, a probe, a beat, a prune batch) before it returns
HELPERS_JOIN = 10.0


class Service(Protocol):
    """A background part with a thread of its own."""

    def start(self, stop: threading.Event) -> threading.Thread:
        """Start the (daemon) thread and return it."""


class Exporter(Protocol):
    """What serves the worker's metrics while it runs."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class WorkerRuntime:
    """The parts of one worker; :meth:`serve` runs once."""

    def __init__(self, settings: Settings, make_runner: RunnerFactory) -> None:
        self.settings = settings
        self.flags = Flags()
        self.jobs = HeldJobs(
            settings.concurrency, settings.prefetch, settings.lease * PREFETCH_WINDOW
        )
        self.outcomes = OutcomeWriter(settings.queue, self.jobs, self.flags)
        self.completer = Completer(settings.queue, self.jobs, self.outcomes)
        self.runner = make_runner(self.outcomes, self.jobs)
        # cancel requests heard by the listener are beaten at once (the heartbeat is
        # made below: the call looks it up when a request arrives)
        self.wakeup = make_wakeup(
            settings.queue, self.flags, on_cancel=lambda job_id: self.heartbeat.beat_now(job_id)
        )
        self.producer = Producer(
            settings, self.jobs, self.completer, self.runner, self.flags, self.wakeup
        )
        #: retention and the periodic scheduler, when the worker has them
        self.services: list[Service] = []
        #: the metrics server, from the start of :meth:`serve` to its end (lock wait included)
        self.exporter: Exporter | None = None
        #: the grace of a stop asked with one (see :meth:`stop`); None: the settings'
        self.grace: float | None = None
        #: this process's row in the live worker list
        self.presence = Presence(settings, self.jobs)
        self.heartbeat = Heartbeat(
            settings,
            self.jobs,
            self.outcomes,
            self.flags,
            self.producer.lock_lost,
            self.runner.timed_out,
            self.runner.cancel,
        )
        self.jobs.on_deadline = self.heartbeat.sooner

    def stop(self, *, grace: float | None = None) -> None:
        """Stop claiming; any thread. *grace* replaces the settings'."""
        if grace is not None:
            self.grace = grace
        self.flags.stopping.set()
        self.flags.wake.set()

    def serve(self) -> None:
        exporter = self.exporter
        if exporter is None:
            self._serve()
            return
        exporter.start()
        try:
            self._serve()
        finally:
            exporter.stop()

    def _serve(self) -> None:
        s, flags = self.settings, self.flags
        # A table that is missing (or of another schema version) is reported before the
        # worker says it started: its first claim would raise the same error a moment
        # later. A database that does not answer is the producer's to wait out.
        with suppress(BackendError):
            s.queue.check_schema()
        lock = s.lock
        if lock is not None:
            if s.wait_for_lock:  # with no wait, a held lock is reported once, as an error
                log.info("waiting for the single-worker lock %r", lock.name)
            if not lock.acquire(wait=s.wait_for_lock, stop=flags.stopping):
                return
            log.info("holding the single-worker lock %r", lock.name)
            self.producer.begin_handover()
        self.presence.register()
        helpers = [
            threading.Thread(target=self.heartbeat.run, name="skiplock-heartbeat", daemon=True)
        ]
        helpers.extend(self.wakeup.threads())
        for t in helpers:
            t.start()
        helpers.append(self.presence.start(flags.finished))
        helpers.extend(service.start(flags.finished) for service in self.services)
        log.info(
            "worker started: queues %s, concurrency %d, lease %.1fs, %s",
            ",".join(s.queues),
            s.concurrency,
            s.lease,
            s.queue.url,  # formatted (password masked) only if the record is emitted
        )
        self.completer.open()
        try:
            self.producer.loop()
            self.wakeup.close()
            self.shutdown()
        finally:
            self.completer.close()
            flags.finished.set()
            self.heartbeat.finish()
            self.wakeup.finish()
            join_helpers(helpers, HELPERS_JOIN)
            self.presence.unregister()
            if lock is not None:
                lock.release()
        # after the join: a prune or a periodic enqueue that was under way is counted
        counts = self.jobs.counts
        log.info("worker stopped: %s", ", ".join(f"{k} {v}" for k, v in counts.items()))

    def shutdown(self) -> None:
        """Give back waiting jobs, wait up to ``grace``, give back the rest."""
        jobs = self.jobs
        self.outcomes.release_waiting()
        grace = self.settings.grace if self.grace is None else self.grace
        began = time.monotonic()
        if jobs.active and grace > 0:
            log.info("stopping: waiting up to %.0fs for %d running jobs", grace, jobs.active)
        while True:
            with suppress(BackendError):
                self.completer.flush()
            # read again each time: a stop asked meanwhile with a shorter grace (a fleet's
            # process whose handler passed its timeout during the wait) ends the wait now
            grace = self.settings.grace if self.grace is None else min(grace, self.grace)
            if not jobs.busy() or time.monotonic() >= began + grace:
                break
            self.flags.wake.wait(0.1)
            self.flags.wake.clear()
        for job in jobs.unfinished():
            self.outcomes.release(job)
            self.runner.abandon(job)
        # a handler that returned after the last flush above is not unfinished (nor
        # released): its completion is written now, not left for its lease to end
        with suppress(BackendError):
            self.completer.flush()
        self.runner.close()


def join_helpers(threads: list[threading.Thread], timeout: float) -> None:
    """Wait up to *timeout* seconds for *threads* to leave their driver calls."""
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        log.warning("helper threads still in a database call after %.0fs: %s", timeout, stuck)


STOP, REPEATED, EXIT_NOW = "stop", "repeated", "exit now"


def stop_request(signum: int, earlier: int) -> str:
    """What *signum* asks after *earlier* ones."""
    if earlier == 0:
        return STOP
    return EXIT_NOW if signum == signal.SIGINT else REPEATED


class SignalRelay:
    """While open, *signals* call ``on_signal(signum)`` on its thread."""

    def __init__(self, signals: Iterable[int], on_signal: Callable[[int], None]) -> None:
        self._on_signal = on_signal
        self._read, self._write = os.pipe()
        self._thread = threading.Thread(target=self._run, name="skiplock-signals", daemon=True)
        self._thread.start()
        self._previous: dict[int, Any] = {}
        for signum in signals:
            self._previous[signum] = signal.signal(signum, self._handler)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        os.write(self._write, bytes([signum]))

    def _run(self) -> None:
        while data := os.read(self._read, 16):  # empty: the relay was closed
            for signum in data:
                self._on_signal(signum)

    def close(self) -> None:
        """Restore the handlers; end the thread."""
        for signum, old in self._previous.items():
            signal.signal(signum, old)
        os.close(self._write)  # the reader sees the end of the pipe
        self._thread.join(5)
        os.close(self._read)


def on_stop_signal(signum: int, earlier: int, grace: float, stop: Callable[[], None]) -> None:
    """Stop, ignore, or exit with 128 + *signum*."""
    request = stop_request(signum, earlier)
    if request == EXIT_NOW:
        log.warning("second signal %d: exiting now; leases will bring jobs back", signum)
        os._exit(128 + signum)
    if request == REPEATED:
        log.info("signal %d again: still stopping (SIGINT exits now)", signum)
        return
    log.info("signal %d: stopping (grace %.0fs; SIGINT again exits now)", signum, grace)
    stop()


# -- keeping what the worker holds alive ------------------------------------------------


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


# -- retention ---------------------------------------------------------------------------

#: the final states whose jobs are pruned (``cancelled`` too, where the schema has it)
FINISHED = [s for s in ("done", "failed", "cancelled") if s in STATUSES]
#: a week, in seconds
DEFAULT_RETENTION = 7 * 86400.0
#: rows per DELETE: each batch is one short transaction that locks only its own rows
BATCH = 500
#: the longest time between two rounds
_EVERY = 60.0


def retention_seconds(value: object) -> float | None:
    """*value* (seconds, ``timedelta`` or None) as seconds."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return _seconds(value, "retention", high=100 * 365 * 86400.0)


class Retention:
    """Prunes *queue*'s jobs finished over *keep* seconds ago. Never raises into the worker."""

    def __init__(
        self, queue: Queue, keep: float, *, batch: int = BATCH, counts: dict[str, int] | None = None
    ) -> None:
        self.port: RetentionPort = queue._port()
        if not self.port.has_locks():
            raise ConfigurationError(
                f"retention needs advisory locks, which {queue.url.flavor}'s dialect lacks: "
                "pass retention=None and prune with `skiplock prune`"
            )
        self.queue = queue
        self.keep = keep
        self.batch = batch
        self.every = min(_EVERY, max(keep / 10, 0.05))
        self.key, self.name = lock_identity(queue, purpose="retention")
        #: where the rows deleted are counted, under "pruned" (a worker's ``counts``)
        self.counts = {} if counts is None else counts
        self.counts.setdefault("pruned", 0)
        self.rounds = 0  # rounds this instance ran while holding the lock

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run rounds until *stop* is set, in a daemon thread."""
        thread = threading.Thread(
            target=self._serve, args=(stop,), name="skiplock-retention", daemon=True
        )
        thread.start()
        return thread

    def _serve(self, stop: threading.Event) -> None:
        # A random first wait spreads the rounds of workers started together.
        while not stop.wait(self.every * random.uniform(0.5, 1.0)):
            try:
                self.run_once(stop)
            except SkiplockError as exc:
                log.warning("pruning finished jobs failed (%s); trying again later", exc)

    def run_once(self, stop: threading.Event | None = None) -> int | None:
        """One round: rows deleted, or None when another worker prunes."""
        conn = self.port.lock(self.key, self.name, "the retention lock")
        try:
            if not conn.acquire(0.0):
                return None
            self.rounds += 1
            deleted = self._delete(stop)
            if deleted:
                log.info("pruned %d jobs finished more than %.0fs ago", deleted, self.keep)
            return deleted
        finally:
            conn.close()  # the server drops a session lock with its connection

    def _delete(self, stop: threading.Event | None) -> int:
        total = 0
        while stop is None or not stop.is_set():
            n = self.port.prune_finished(FINISHED, round(self.keep * 1000), self.batch)
            total += n
            self.counts["pruned"] += n  # only this thread writes this key
            if n < self.batch:
                break
        return total


# -- periodic jobs -----------------------------------------------------------------------

#: the longest a scheduler sleeps before it reads the database's clock again
_MAX_SLEEP = 30.0
#: ledger rows kept per schedule before its newest tick (its newest row is always kept)
_HISTORY = timedelta(days=1)


class Scheduler:
    """Enqueues the due ticks of *schedules* in a thread; errors are retried."""

    def __init__(
        self,
        queue: Queue,
        schedules: Sequence[Schedule],
        *,
        counts: dict[str, int] | None = None,
    ) -> None:
        if not all(isinstance(s, Schedule) for s in schedules):
            raise ConfigurationError("periodic must be a list of skiplock Schedule objects")
        names = [s.name for s in schedules]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"two schedules share a name: {sorted(names)!r:.200}")
        self.port: PeriodicPort = queue._port()
        self.queue = queue
        self.schedules = list(schedules)
        self.counts = {} if counts is None else counts
        self.counts.setdefault("scheduled", 0)
        self._started: datetime | None = None

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run until *stop* is set, in a daemon thread; returns it."""
        thread = threading.Thread(
            target=self._serve, args=(stop,), name="skiplock-periodic", daemon=True
        )
        thread.start()
        return thread

    def _serve(self, stop: threading.Event) -> None:
        pause = 1.0
        while not stop.is_set():
            try:
                wait = self.run_once()
                pause = 1.0
            except SkiplockError as exc:
                log.warning("periodic jobs: %s; trying again in %.0fs", exc, pause)
                wait, pause = pause, min(pause * 2, _MAX_SLEEP)
            stop.wait(wait)

    def now(self) -> datetime:
        """The database's clock."""
        return self.port.now()

    def run_once(self) -> float:
        """Enqueue the ticks due; seconds until the next (at most 30)."""
        now = self.now()
        if self._started is None:
            self._started = now
        soonest = now + timedelta(seconds=_MAX_SLEEP)
        for s in self.schedules:
            last = self.last_tick(s) or self._started
            ticks, left_out = s.due(last, now)
            if left_out:
                log.warning(
                    "schedule %r missed more than %d ticks: enqueueing the newest %d",
                    s.name,
                    s.limit,
                    len(ticks),
                )
            for tick in ticks:
                self.enqueue_tick(s, tick)
            soonest = min(soonest, s.next_tick(max(now, *ticks) if ticks else now))
        return max(0.01, (soonest - now).total_seconds() + 0.01)

    def last_tick(self, s: Schedule) -> datetime | None:
        """The newest tick of *s* in the ledger, or None."""
        return self.port.last_tick(s.name)

    def enqueue_tick(self, s: Schedule, tick: datetime) -> int | None:
        """Enqueue *tick*'s job unless done already; its id, or None."""
        options = EnqueueOptions.check(
            queue=s.queue, priority=s.priority, max_attempts=s.max_attempts
        )
        payload = _dumps(s.payload(tick), "payload")
        job_id = self.port.enqueue_tick(s.name, tick, options, payload, tick - _HISTORY)
        if job_id is not None:
            self.counts["scheduled"] += 1  # only this thread writes this key
            log.info("enqueued job %d for tick %s of %r", job_id, tick.isoformat(), s.name)
        return job_id
