"""A worker's life: build the parts (:class:`Crew`), take the lock, start the helpers, run the
producer, shut down."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Protocol

from ..errors import BackendError
from .completer import Completer
from .heartbeat import Heartbeat
from .ledger import Ledger
from .outcome import Outcomes
from .presence import Presence
from .producer import Producer
from .runners import Runner
from .settings import Flags, Settings
from .wakeup import make_wakeup

__all__ = ["Crew", "Exporter", "RunnerFactory", "Service"]

log = logging.getLogger("skiplock.worker")

RunnerFactory = Callable[[Outcomes, Ledger], Runner]

#: jobs are claimed ahead only as many as the runners can begin within this share of the
#: lease (see :class:`~.ledger.Ledger`): a prefetched job's lease runs from its claim
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


class Crew:
    """The parts of one worker; :meth:`serve` runs once."""

    def __init__(self, settings: Settings, make_runner: RunnerFactory) -> None:
        self.settings = settings
        self.flags = Flags()
        self.ledger = Ledger(
            settings.concurrency, settings.prefetch, settings.lease * PREFETCH_WINDOW
        )
        self.outcomes = Outcomes(settings.queue, self.ledger, self.flags)
        self.completer = Completer(settings.queue, self.ledger, self.outcomes)
        self.runner = make_runner(self.outcomes, self.ledger)
        # cancel requests heard by the listener are beaten at once (the heartbeat is
        # made below: the call looks it up when a request arrives)
        self.wakeup = make_wakeup(
            settings.queue, self.flags, on_cancel=lambda job_id: self.heartbeat.beat_now(job_id)
        )
        self.producer = Producer(
            settings, self.ledger, self.completer, self.runner, self.flags, self.wakeup
        )
        #: retention and the periodic scheduler, when the worker has them
        self.services: list[Service] = []
        #: the metrics server, from the start of :meth:`serve` to its end (lock wait included)
        self.exporter: Exporter | None = None
        #: the grace of a stop asked with one (see :meth:`stop`); None: the settings'
        self.grace: float | None = None
        #: this process's row in the live worker list
        self.presence = Presence(settings, self.ledger)
        self.heartbeat = Heartbeat(
            settings,
            self.ledger,
            self.outcomes,
            self.flags,
            self.producer.lock_lost,
            self.runner.timed_out,
            self.runner.cancel,
        )
        self.ledger.on_deadline = self.heartbeat.sooner

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
            s.queue.url.masked(),
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
        counts = self.ledger.counts
        log.info("worker stopped: %s", ", ".join(f"{k} {v}" for k, v in counts.items()))

    def shutdown(self) -> None:
        """Give back waiting jobs, wait up to ``grace``, give back the rest."""
        ledger = self.ledger
        self.outcomes.release_waiting()
        grace = self.settings.grace if self.grace is None else self.grace
        began = time.monotonic()
        if ledger.active and grace > 0:
            log.info("stopping: waiting up to %.0fs for %d running jobs", grace, ledger.active)
        while True:
            with suppress(BackendError):
                self.completer.flush()
            # read again each time: a stop asked meanwhile with a shorter grace (a fleet's
            # process whose handler passed its timeout during the wait) ends the wait now
            grace = self.settings.grace if self.grace is None else min(grace, self.grace)
            if not ledger.busy() or time.monotonic() >= began + grace:
                break
            self.flags.wake.wait(0.1)
            self.flags.wake.clear()
        for job in ledger.unfinished():
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
