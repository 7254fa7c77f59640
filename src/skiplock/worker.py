"""The worker: claims jobs in batches, runs them on threads, writes their outcome fenced.

This module holds its options and controls; the parts live in :mod:`skiplock._worker`.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from ._core.checks import integer
from ._core.checks import queue_names as _queues
from ._core.checks import seconds as _seconds
from ._core.job import Job
from ._worker.lifecycle import (
    DEFAULT_RETENTION,
    Retention,
    Scheduler,
    SignalRelay,
    WorkerRuntime,
    on_stop_signal,
    retention_seconds,
)
from ._worker.metrics import WorkerMetrics
from ._worker.outcomes import OutcomeWriter, last_line
from ._worker.runners import (
    Handler,
    Layer,
    Middleware,
    Runner,
    ThreadRunner,
    chain,
    check_middleware,
    is_async_handler,
)
from ._worker.state import HeldJobs, Settings, SingleLock
from .errors import ConfigurationError
from .periodic import Schedule
from .queue import Queue

__all__ = ["Worker", "last_line"]

log = logging.getLogger("skiplock.worker")

#: jobs a claim may take beyond the free slots, at most, by default: this or
#: ``concurrency``, the larger (bounded further by the pace of the handlers: see
#: skiplock._worker.state.HeldJobs)
DEFAULT_PREFETCH = 32


def _slots(concurrency: int, prefetch: int | None) -> tuple[int, int]:
    """*concurrency* and *prefetch* checked (prefetch's default: DEFAULT_PREFETCH or more)."""
    concurrency = integer(concurrency, "concurrency", 1, 1000)
    if prefetch is None:
        prefetch = max(DEFAULT_PREFETCH, concurrency)
    return concurrency, integer(prefetch, "prefetch", 0, 1000)


class WorkerOptions:
    """The options and their checks, shared by :class:`Worker` and
    :class:`~skiplock.AsyncWorker` (each gives its runner).

    Raises ConfigurationError for a bad option, before anything is opened.
    """

    #: an AsyncQueue is accepted (AsyncWorker), and replaced by its ``sync_queue()``
    _takes_async_queue = False
    _also = ""
    #: that sync Queue: the worker's own, closed when it stops
    _own_queue: Queue | None = None

    def __init__(
        self,
        queue: Any,
        handler: Handler,
        *,
        queues: tuple[str, ...] | list[str] | str = ("default",),
        concurrency: int = 4,
        prefetch: int | None = None,
        lease: float = 30.0,
        heartbeat: float | None = None,
        mode: str = "lease",
        timeout: float | Callable[[Job], float | None] | None = None,
        grace: float = 30.0,
        poll_interval: float = 1.0,
        wait_for_lock: bool = True,
        retention: float | timedelta | None = DEFAULT_RETENTION,
        periodic: Sequence[Schedule] = (),
        middleware: Sequence[Middleware] = (),
        metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1",
    ) -> None:
        self.queue = self._check_queue(queue)
        if not callable(handler):
            raise ConfigurationError("handler must be a function taking a skiplock.Job")
        self.handler = handler
        #: the middleware run around each handler call, the first outermost
        self.middleware = check_middleware(middleware, is_async=is_async_handler(handler))
        #: the Prometheus metrics and their /metrics server (None: no metrics_port)
        self.metrics = (
            None if metrics_port is None else WorkerMetrics(metrics_port, metrics_host, handler)
        )
        layers: list[Layer] = [] if self.metrics is None else [self.metrics]
        #: what the runners call: the handler inside the middleware and the worker's layers
        self._chain = chain(handler, self.middleware, layers)
        self.concurrency, prefetch = _slots(concurrency, prefetch)
        if mode not in ("lease", "single"):
            raise ConfigurationError(f"mode must be 'lease' or 'single', not {mode!r:.80}")
        self.queues = _queues(queues)
        # A job claimed ahead holds a live lease, so it counts against queue_limits while
        # it waits: on a limited queue it would take a slot of the limit without running.
        # Under rate_limits, jobs claimed ahead would start later in a bunch: a window of
        # starts could then hold more than N.
        limits = (self.queue.queue_limits, self.queue.rate_limits)
        limited = any(name in lim for lim in limits for name in self.queues)
        self.prefetch = 0 if limited else prefetch
        self._set_times(lease, heartbeat, timeout, grace, poll_interval)
        self.mode = mode
        self.wait_for_lock = wait_for_lock
        self.lock: SingleLock | None = SingleLock(self.queue) if mode == "single" else None
        keep = retention_seconds(retention)  # finished jobs older than this are deleted

        self._runtime = self._build()
        self.retention = None if keep is None else Retention(self.queue, keep, counts=self.counts)
        #: enqueues the ticks of *periodic* schedules while the worker runs (see Scheduler)
        self.scheduler = Scheduler(self.queue, periodic, counts=self.counts) if periodic else None
        self._runtime.services = [h for h in (self.retention, self.scheduler) if h is not None]

    def _check_queue(self, queue: Any) -> Queue:
        sync_queue = getattr(queue, "sync_queue", None)  # an AsyncQueue
        if not isinstance(queue, Queue) and callable(sync_queue) and self._takes_async_queue:
            # the worker's own I/O runs on a sync Queue in threads: one on the same URL,
            # table and pool settings, opened (lazily) and closed by this worker
            queue = self._own_queue = sync_queue()
        if not isinstance(queue, Queue):
            raise ConfigurationError(
                f"queue must be a skiplock.Queue{self._also}, not {type(queue).__name__}"
            )
        return queue

    def _set_times(
        self,
        lease: float,
        heartbeat: float | None,
        timeout: float | Callable[[Job], float | None] | None,
        grace: float,
        poll_interval: float,
    ) -> None:
        """Check and keep the times in seconds; the heartbeat must beat within the lease."""
        self.lease = _seconds(lease, "lease", strict=True)
        self.heartbeat = _seconds(
            self.lease / 3 if heartbeat is None else heartbeat, "heartbeat", strict=True
        )
        if self.heartbeat >= self.lease:
            raise ConfigurationError(
                f"heartbeat ({self.heartbeat}s) must be shorter than the lease ({self.lease}s)"
            )
        if timeout is not None and not callable(timeout):
            _seconds(timeout, "timeout", strict=True)
        self.timeout = timeout
        self.grace = _seconds(grace, "grace")
        self.poll_interval = _seconds(poll_interval, "poll_interval", strict=True)

    def _make_runner(self, outcomes: OutcomeWriter, jobs: HeldJobs) -> Runner:
        """Where handlers run: the one part in which the workers differ."""
        raise NotImplementedError

    def _build(self) -> WorkerRuntime:
        settings = Settings(
            queue=self.queue,
            queues=self.queues,
            concurrency=self.concurrency,
            lease=self.lease,
            heartbeat=self.heartbeat,
            timeout=self.timeout,
            grace=self.grace,
            poll_interval=self.poll_interval,
            wait_for_lock=self.wait_for_lock,
            lock=self.lock,
            prefetch=self.prefetch,
        )
        runtime = WorkerRuntime(settings, self._make_runner)
        if self.metrics is not None:
            self.metrics.attach(runtime.jobs)
            runtime.exporter = self.metrics
        #: outcomes so far: done, retried, failed, cancelled, lost, released, snoozed (and pruned,
        #: scheduled: see retention and periodic)
        self.counts = runtime.jobs.counts
        return runtime


class Worker(WorkerOptions):
    """Run *handler(job)* for jobs claimed from *queues* of *queue*.

    The handler's return value (JSON) completes the job; an exception fails the attempt,
    retried after :func:`~skiplock.backoff` until ``max_attempts``. A handler that completes
    or fails the job itself (``tx.complete(job)``) leaves the worker nothing to write.

    *concurrency* handlers run at once. *lease*: seconds per claim, extended every
    *heartbeat* (default a third of it). *timeout* (seconds, or a function of the job) fails
    an attempt that runs longer and sets ``job.lost``; its thread keeps the slot until the
    handler returns. *mode* ``"single"``: one worker at a time, by a database lock
    (*wait_for_lock* false: :class:`~skiplock.LockNotAcquired` when it is held). *grace*:
    seconds for running jobs at a stop. *middleware*: ``mw(job, call_next)`` around each
    call, the first outermost. *metrics_port*: serve Prometheus metrics. docs/worker.md
    describes every option.

    Raises ConfigurationError for a bad option, before anything is opened.
    """

    _thread: threading.Thread | None = None
    _signals = 0

    def _make_runner(self, outcomes: OutcomeWriter, jobs: HeldJobs) -> Runner:
        return ThreadRunner(self._chain, outcomes, jobs)  # a pool of threads

    # -- public control -------------------------------------------------------------------

    def run(self, *, install_signals: bool = True) -> None:
        """Work until :meth:`stop` (or SIGTERM / SIGINT on the main thread): stop claiming, wait
        up to ``grace`` seconds for running jobs, release the rest, return. A second SIGINT
        exits the process at once (130).
        """
        relay = None
        if install_signals and threading.current_thread() is threading.main_thread():
            relay = SignalRelay((signal.SIGTERM, signal.SIGINT), self._on_signal)
        try:
            self._runtime.serve()
        finally:
            if relay is not None:
                relay.close()
            self._runtime.flags.finished.set()

    def start(self) -> Worker:
        """Run in a background thread (no signal handlers); see :meth:`stop`."""
        if self.metrics is not None:  # its address is known (or refused) on return
            self.metrics.start()
        self._thread = threading.Thread(
            target=self.run, kwargs={"install_signals": False}, name="skiplock-worker"
        )
        self._thread.start()
        return self

    def stop(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Ask the worker to stop (see :meth:`run`); with *wait*, until it has."""
        self._runtime.stop()
        if wait and self._thread is not None:
            self._thread.join(timeout)

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        on_stop_signal(signum, self._signals - 1, self.grace, partial(self.stop, wait=False))
