"""One process of a fleet: it imports its target, runs one worker, and talks to the
supervisor over a pipe of pickled tuples: ``ready``, ``begin`` / ``end`` around a
handler with a timeout, ``timed out``, ``beat``; back, ``stop``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from .._core.job import Job
from .._worker.lifecycle import WorkerRuntime
from .._worker.outcomes import OutcomeWriter
from .._worker.runners import AsyncioRunner, Handler, Runner, ThreadRunner, is_async_handler
from .._worker.state import HeldJobs
from ..app import App
from ..errors import BackendError, ConfigurationError, LockNotAcquired, SkiplockError
from ..queue import Queue
from ..worker import Worker
from ..worker_async import AsyncWorker
from .metrics import Reporter
from .target import load_target

__all__ = [
    "EXIT_CONFIG",
    "EXIT_DATABASE",
    "EXIT_LOCKED",
    "EXIT_TIMED_OUT",
    "ChildSpec",
    "child_main",
]

log = logging.getLogger("skiplock.fleet")

#: exit codes of a child (the same as the ``skiplock`` command's where they overlap)
EXIT_CONFIG = 3
EXIT_DATABASE = 4
EXIT_LOCKED = 5
#: a handler passed its timeout: the process released its other jobs and ended itself
#: (EX_TEMPFAIL): the supervisor starts another at once
EXIT_TIMED_OUT = 75


@dataclass(frozen=True)
class ChildSpec:
    """What a child needs to build its worker (pickled: plain values only)."""

    target: str  # module:attr, an App or a function taking a Job
    url: str | None = None  # None: the App's own, or $SKIPLOCK_URL
    table: str | None = None  # None: the App's own, or the default
    queues: list[str] | None = None  # None: the App's task queues, or ["default"]
    options: dict[str, Any] = field(default_factory=dict)  # the Worker's keywords
    #: logger name → level, and the root's format, copied from the supervisor's process
    log_levels: dict[str, int] = field(default_factory=dict)
    log_format: str | None = None
    #: report the worker's metrics to the supervisor, which serves the fleet's sums
    report_metrics: bool = False


class _Pipe:
    """The child's end of its pipe; sends from any thread, one at a time."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, *message: object) -> None:
        # the supervisor gone (OSError, or ValueError once closed): the watcher stops us
        with self._lock, suppress(OSError, ValueError):
            self.conn.send(message)


def _report_begin(worker: _EndsProcess, job: Job) -> _Pipe | None:
    """Send *job*'s deadline if its handler has a timeout: the pipe for its end, or None."""
    timeout = worker.timeout
    limit = timeout(job) if callable(timeout) else timeout
    pipe = worker.pipe
    if limit is None or pipe is None:
        return None
    # the job itself (its fencing fields; not its payload): the supervisor's backstop
    # writes its timeout with it, fenced as this process would have
    slim = replace(job, payload=None, result=None)
    pipe.send("begin", job.id, job.attempt, time.monotonic() + limit, slim)
    return pipe


class HardTimeoutRunner(ThreadRunner):
    """The thread runner that ends the process when a handler passes its timeout."""

    def __init__(
        self, handler: Handler, outcomes: OutcomeWriter, jobs: HeldJobs, worker: FleetWorker
    ) -> None:
        super().__init__(handler, outcomes, jobs)
        self.worker = worker

    def run_one(self, job: Job) -> None:
        pipe = _report_begin(self.worker, job)
        if pipe is None:
            super().run_one(job)
            return
        try:
            super().run_one(job)
        finally:
            pipe.send("end", job.id, job.attempt)

    def timed_out(self, job: Job) -> None:
        # Called by the heartbeat after it wrote the timeout, also during a stop: the
        # handler's thread would hold the stop until the grace ends (and the supervisor's
        # backstop would kill the process) for a result that is not written. (A job still
        # running when the grace ends is abandoned, not timed out: the process is ending
        # then anyway.)
        self.worker.end_process(job)


class HardTimeoutAsyncioRunner(AsyncioRunner):
    """The asyncio runner of a :class:`FleetAsyncWorker`: past its timeout, an ``async def``
    handler's task is cancelled, a sync task's (*in_thread*) ends the process.
    """

    def __init__(
        self,
        handler: Handler,
        outcomes: OutcomeWriter,
        jobs: HeldJobs,
        worker: FleetAsyncWorker,
        in_thread: Callable[[Job], bool],
    ) -> None:
        super().__init__(handler, outcomes, jobs, worker.concurrency)
        self.worker = worker
        self.in_thread = in_thread
        self._inner = handler
        self.handler = self._reported
        #: (id, attempt) of the sync tasks past their timeout, whose threads run on
        self._stuck: set[tuple[int, int]] = set()

    async def _reported(self, job: Job) -> Any:
        pipe = _report_begin(self.worker, job)  # here: after jobs.begin, as it runs
        try:
            return await self._inner(job)
        finally:
            if pipe is not None and (job.id, job.attempt) not in self._stuck:
                pipe.send("end", job.id, job.attempt)

    def timed_out(self, job: Job) -> None:
        if self.in_thread(job):
            self._stuck.add((job.id, job.attempt))  # before the cancel reaches its task
            self.worker.end_process(job)
        super().timed_out(job)


class _EndsProcess:
    """A fleet worker's pipe, and its end when a handler passes its timeout."""

    #: set by the child before :meth:`run`
    pipe: _Pipe | None = None
    #: (id, attempt) of the job whose timeout ended this process
    timed_out: tuple[int, int] | None = None
    timeout: float | Callable[[Job], float | None] | None
    _runtime: WorkerRuntime

    def end_process(self, job: Job) -> None:
        """*job* passed its timeout: stop with no grace, releasing the other jobs."""
        if self.timed_out is None:
            self.timed_out = (job.id, job.attempt)
            log.warning(
                "job %d attempt %d passed its timeout: releasing this process's other jobs "
                "and ending it (pid %d) to stop its handler%s",
                job.id,
                job.attempt,
                os.getpid(),
                "" if self._runtime.flags.stopping.is_set() else "; the fleet starts another",
            )
        self._runtime.stop(grace=0.0)


class FleetWorker(_EndsProcess, Worker):
    """A :class:`~skiplock.Worker` whose handler past its timeout ends its process."""

    def _make_runner(self, outcomes: OutcomeWriter, jobs: HeldJobs) -> HardTimeoutRunner:
        return HardTimeoutRunner(self._chain, outcomes, jobs, self)


class FleetAsyncWorker(_EndsProcess, AsyncWorker):
    """An :class:`~skiplock.AsyncWorker` whose sync handler past its timeout ends its
    process; *in_thread* tells those jobs.
    """

    def __init__(self, *args: Any, in_thread: Callable[[Job], bool], **options: Any) -> None:
        self._in_thread = in_thread
        super().__init__(*args, **options)

    def _make_runner(self, outcomes: OutcomeWriter, jobs: HeldJobs) -> Runner:
        self._runner = HardTimeoutAsyncioRunner(self._chain, outcomes, jobs, self, self._in_thread)
        return self._runner


def build_worker(spec: ChildSpec) -> Worker | AsyncWorker:
    """The spec's worker: a :class:`FleetWorker`, or a :class:`FleetAsyncWorker` for
    ``async def`` handlers.
    """
    target = load_target(spec.target)
    options = dict(spec.options)
    if spec.report_metrics:  # its metrics, not served: the Reporter sends them
        options["metrics_port"] = 0
    if isinstance(target, App):
        if spec.url is not None or spec.table is not None:
            target.use(spec.url, table=spec.table)
        kw = target._worker_options(spec.queues, options)
        if target.has_async_tasks:
            return FleetAsyncWorker(
                target.queue, target.handle_async, in_thread=partial(_sync_task, target), **kw
            )
        return FleetWorker(target.queue, target.handle, **kw)
    if not callable(target):
        raise ConfigurationError(f"{spec.target} is neither a skiplock.App nor a function")
    queue = function_queue(spec)
    queues = spec.queues or ["default"]
    if is_async_handler(target):
        return FleetAsyncWorker(queue, target, in_thread=_never, queues=queues, **options)
    return FleetWorker(queue, target, queues=queues, **options)


def _sync_task(app: App, job: Job) -> bool:
    name = job.payload.get("task") if isinstance(job.payload, dict) else None
    task = app.tasks.get(name) if isinstance(name, str) else None
    return task is not None and not is_async_handler(task.fn)


def _never(job: Job) -> bool:
    return False


def function_queue(spec: ChildSpec) -> Queue:
    """The queue of a function target: the spec's URL (else ``$SKIPLOCK_URL``) and table."""
    url = spec.url if spec.url is not None else os.environ.get("SKIPLOCK_URL")
    if not url:
        raise ConfigurationError(
            "no database URL: pass url= to the Fleet (--url) or set SKIPLOCK_URL"
        )
    return Queue(url) if spec.table is None else Queue(url, table=spec.table)


def _configure_logging(spec: ChildSpec) -> None:
    if spec.log_format is not None:
        logging.basicConfig(format=spec.log_format, stream=sys.stderr)
    for name, level in spec.log_levels.items():
        logging.getLogger(name or None).setLevel(level)


def _watch(conn: Connection, stop: Callable[[], None]) -> None:
    try:
        while conn.recv() != ("stop",):
            pass
    except (EOFError, OSError):
        log.warning("the fleet's supervisor is gone: stopping (pid %d)", os.getpid())
    stop()


def child_main(spec: ChildSpec, conn: Connection) -> None:
    """The body of a fleet's process. Exits 0 when told to stop, 3 on a configuration
    error, 4 on an unretried database error, 5 when the single-worker lock is held
    elsewhere, :data:`EXIT_TIMED_OUT` after a handler's timeout.
    """
    # Until its worker runs (and handles them), a signal sent to the whole process group
    # (Ctrl-C in a terminal, systemd's stop) must not kill a process still starting: the
    # supervisor passes the stop on over the pipe, which is read once the worker is built.
    # (Started from the main thread, the process has them blocked from its first
    # instruction: see supervisor._stops_held. Ignored, those pending are dropped.)
    stops = (signal.SIGINT, signal.SIGTERM)
    for signum in stops:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
    _configure_logging(spec)
    pipe = _Pipe(conn)
    try:
        worker = build_worker(spec)
    except SkiplockError as exc:
        log.error("pid %d could not start its worker: %s", os.getpid(), exc)
        sys.exit(EXIT_CONFIG)
    if isinstance(worker, _EndsProcess):
        worker.pipe = pipe
    if spec.report_metrics and worker.metrics is not None:
        # in place of its /metrics server: from the worker's start to its end
        worker._runtime.exporter = Reporter(worker.metrics.registry, partial(pipe.send, "metrics"))
    # now: before its worker runs, so before any claim (the leases' earliest start)
    pipe.send("ready", worker.heartbeat, worker.lease, time.monotonic())
    worker._runtime.heartbeat.on_beat = partial(pipe.send, "beat")
    worker._runtime.heartbeat.on_expire = partial(_report_expired, pipe)
    stop: Callable[[], None] = (
        worker.request_stop if isinstance(worker, AsyncWorker) else partial(worker.stop, wait=False)
    )
    threading.Thread(target=_watch, args=(conn, stop), name="skiplock-fleet", daemon=True).start()
    try:
        if isinstance(worker, AsyncWorker):
            asyncio.run(_run_async(worker))
        else:
            worker.run()
    except LockNotAcquired as exc:
        log.error("pid %d: %s", os.getpid(), exc)
        sys.exit(EXIT_LOCKED)
    except ConfigurationError as exc:
        log.error("pid %d: %s", os.getpid(), exc)
        sys.exit(EXIT_CONFIG)
    except BackendError as exc:
        log.error("pid %d: %s", os.getpid(), exc)
        sys.exit(EXIT_DATABASE)
    _end_if_timed_out(worker)


def _report_expired(pipe: _Pipe, job: Job) -> None:
    """Tell the supervisor this process saw *job* pass its deadline."""
    pipe.send("timed out", job.id, job.attempt)


async def _run_async(worker: AsyncWorker) -> None:
    await worker.run()
    # here, not after asyncio.run: that waits for the default executor's threads, where
    # the sync task past its timeout runs on
    _end_if_timed_out(worker)


def _end_if_timed_out(worker: Worker | AsyncWorker) -> None:
    if isinstance(worker, _EndsProcess) and worker.timed_out is not None:
        # Its handler's thread cannot be stopped: the process ends under it. Nothing of
        # the worker runs any more (its jobs are written or released, its helpers joined).
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(EXIT_TIMED_OUT)
