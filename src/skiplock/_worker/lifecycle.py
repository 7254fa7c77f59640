"""A worker's life: :class:`WorkerRuntime` builds the parts, takes the lock, starts the helpers,
runs the producer and shuts down. SIGTERM / SIGINT are relayed without taking a lock (the
handler writes the signal to a pipe, a thread reacts): the first stops with a grace, a SIGINT
after it exits at once."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from types import FrameType
from typing import Any, Protocol

from ..errors import BackendError
from .claiming import Producer, make_wakeup
from .leases import Heartbeat, Presence
from .outcomes import Completer, OutcomeWriter
from .runners import Runner
from .state import Flags, HeldJobs, Settings

__all__ = [
    "EXIT_NOW",
    "REPEATED",
    "STOP",
    "Exporter",
    "RunnerFactory",
    "Service",
    "SignalRelay",
    "WorkerRuntime",
    "on_stop_signal",
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
