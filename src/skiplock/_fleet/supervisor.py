"""The supervisor: starts the fleet's processes, restarts one that dies, and passes a
stop on to all of them. It runs on the caller's thread and makes no database call there.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from .._core.checks import seconds
from .._core.job import Job
from .._worker.lifecycle import EXIT_NOW, REPEATED, stop_request
from ..app import App
from ..errors import ConfigurationError, LeaseLost, SkiplockError
from ..queue import Queue
from .child import (
    EXIT_CONFIG,
    EXIT_LOCKED,
    EXIT_TIMED_OUT,
    ChildSpec,
    child_main,
    function_queue,
)
from .metrics import FleetMetrics
from .target import load_target, target_name

__all__ = ["CRASH_LIMIT", "KILL_SLACK", "Fleet", "process_count"]

log = logging.getLogger("skiplock.fleet")

#: seconds before the first restart of a process that died; doubled at each death in a
#: row, up to RESTART_MAX
RESTART_DELAY = 0.5
RESTART_MAX = 30.0
#: a process that ran this long before it died starts a new count of deaths in a row
STABLE_AFTER = 30.0
#: deaths in a row (each within STABLE_AFTER of its start) at which the fleet gives up: a
#: process that always crashes is started this many times
CRASH_LIMIT = 5
#: seconds past a handler's deadline (and a heartbeat) after which a process that has not
#: ended itself is killed: it is frozen, or a handler holds the GIL
KILL_SLACK = 10.0
#: seconds (at most a quarter of the lease) before the lease of a job past its deadline
#: could end, its process frozen since its last heartbeat, at which the process is killed
#: (sooner than KILL_SLACK): another process must not run the job's next attempt while
#: this one still lives
LEASE_MARGIN = 1.0
#: seconds a stop waits beyond the workers' grace (their helpers' join is up to 10 s)
STOP_SLACK = 20.0
#: seconds :meth:`Fleet.run` waits, at its end, for the backstop's writes under way
WRITER_JOIN = 10.0
MAX_PROCESSES = 1000
#: the signals that stop a fleet
_STOPS = {signal.SIGINT, signal.SIGTERM}


def process_count(processes: int | str) -> int:
    """*processes* checked: 1 to 1000, or ``"auto"``: the CPUs this process may use."""
    if processes == "auto":
        affinity = getattr(os, "sched_getaffinity", None)
        return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    if isinstance(processes, bool) or not isinstance(processes, int):
        raise ConfigurationError(
            f"processes must be a number of processes or 'auto', not {processes!r:.80}"
        )
    if not 1 <= processes <= MAX_PROCESSES:
        raise ConfigurationError(f"processes must be from 1 to {MAX_PROCESSES}, not {processes}")
    return processes


def processes_from_text(text: str) -> int | str:
    """A command line's ``--processes``: ``auto`` or 1 to 1000 in ASCII digits; anything
    else raises :class:`ConfigurationError`."""
    if text.strip().lower() == "auto":
        return "auto"
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_PROCESSES):
        raise ConfigurationError(
            f"{text!r:.80} is not a number of processes (1 to {MAX_PROCESSES}) or 'auto'"
        )
    return int(text)


@dataclass
class _Timed:
    deadline: float  # time.monotonic()
    job: Job  # its fencing fields, for the backstop's write
    #: the start of its process's last heartbeat before its deadline (a heartbeat does not
    #: extend a job past its deadline): its lease lasts until this time + the lease
    beaten: float
    #: its process saw it past its deadline (and writes its timeout, then ends itself or
    #: cancels its task): that process is not frozen, and has the slack to do so
    written: bool = False

    def kill_at(self, heartbeat: float, lease: float) -> float:
        """When its process is killed if it has not ended: a heartbeat and KILL_SLACK past the
        deadline, or a margin before its lease can end.
        """
        kill_at = self.deadline + heartbeat + KILL_SLACK
        if self.written or not lease:
            return kill_at
        margin = min(LEASE_MARGIN, lease / 4)
        return min(kill_at, max(self.deadline + margin / 4, self.beaten + lease - margin))


@dataclass
class _Child:
    """One place of the fleet, and the process that holds it now."""

    index: int
    process: BaseProcess | None = None
    conn: Connection | None = None
    started: float = 0.0
    ready: bool = False
    heartbeat: float = 0.0
    lease: float = 0.0
    #: when its last heartbeat reported began (time.monotonic()), or when its worker was
    #: about to run: a job it held then, or claimed since, has a lease until this time +
    #: ``lease``
    beaten: float = 0.0
    #: deaths in a row, each soon after its start
    deaths: int = 0
    restart_at: float | None = None
    #: (id, attempt) → the timed handlers it runs
    jobs: dict[tuple[int, int], _Timed] = field(default_factory=dict)
    #: the job whose overrun made the supervisor kill it
    killed_for: tuple[int, int] | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None


class Fleet:
    """Run *target* (an :class:`~skiplock.App`, a function taking a Job, or ``"module:attr"``)
    in *processes* worker processes (``"auto"``: one per CPU), each with *worker_options*.

    The processes import the target by name: define it at a module's top level, and start
    the fleet under ``if __name__ == "__main__":``. *url* and *table* replace the App's.
    *metrics_port* serves one ``/metrics`` for the fleet.

    Raises ConfigurationError for a bad option or a target that cannot be imported by name.
    """

    def __init__(
        self,
        target: Any,
        processes: int | str = 1,
        *,
        url: str | None = None,
        table: str | None = None,
        queues: list[str] | tuple[str, ...] | None = None,
        **worker_options: Any,
    ) -> None:
        self.processes = process_count(processes)
        if worker_options.get("mode") == "single" and self.processes > 1:
            raise ConfigurationError(
                "single mode runs one worker per table: give a fleet processes=1, or use "
                "mode='lease'"
            )
        port = worker_options.pop("metrics_port", None)
        host = worker_options.pop("metrics_host", "127.0.0.1")
        #: the fleet's one /metrics, served by the supervisor (None: no metrics_port)
        self.metrics = None if port is None else FleetMetrics(port, host)
        self.grace = seconds(worker_options.get("grace", 30.0), "grace")
        try:
            pickle.dumps(worker_options)
        except Exception as exc:
            raise ConfigurationError(
                f"the worker options of a fleet are sent to its processes, and these cannot "
                f"be ({exc}): give functions defined at the top level of a module"
            ) from exc
        self.spec = ChildSpec(
            target=target_name(target),
            url=url,
            table=table,
            queues=None if queues is None else list(queues),
            options=dict(worker_options),
            report_metrics=self.metrics is not None,
        )
        self._children = [_Child(i) for i in range(1, self.processes + 1)]
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._stopping = False
        self._stop_by = 0.0
        self._signals = 0
        self._status = 0
        self._job_queue: Queue | None = None  # the backstop's (an App's own, or ours)
        self._own_queue: Queue | None = None
        self._queue_lock = threading.Lock()
        #: the backstop's writes under way (threads: see _write_timeout)
        self._writers: list[threading.Thread] = []

    # -- public control -------------------------------------------------------------------

    def run(self) -> int:
        """Supervise the processes until a stop. Returns 0 when all stopped cleanly, 1 when
        one failed to stop or died too often, 3 when one could not run its worker, 5 when the
        single-worker lock was held, 130 after a second SIGINT.
        """
        if self.metrics is not None:  # a port that cannot be bound: before any process
            with _stops_blocked():  # its thread never takes SIGTERM / SIGINT: see there
                self.metrics.server.start("metrics of the fleet")
        previous: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, self._on_signal)
        spec = self._with_logging(self.spec)
        ctx = multiprocessing.get_context("spawn")
        log.info(
            "fleet of %d process%s: %s (pid %d supervises)",
            self.processes,
            "" if self.processes == 1 else "es",
            spec.target,
            os.getpid(),
        )
        try:
            for child in self._children:
                self._start(ctx, spec, child)
            while not (self._stopping and not any(c.alive for c in self._children)):
                self._step(ctx, spec)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            for child in self._children:
                if child.process is not None:  # only after an error of the supervisor's own
                    child.process.kill()
            deadline = time.monotonic() + WRITER_JOIN
            for writer in self._writers:  # a write under way ends first, unless it hangs
                writer.join(max(0.0, deadline - time.monotonic()))
            if self._own_queue is not None:
                self._own_queue.close()
            if self.metrics is not None:
                self.metrics.server.stop()
        log.info("fleet stopped (exit status %d)", self._status)
        return self._status

    def stop(self) -> None:
        """Ask :meth:`run` to stop (from another thread), as SIGTERM does."""
        self._wake(0)

    # -- the loop ---------------------------------------------------------------------------

    def _step(self, ctx: Any, spec: ChildSpec) -> None:
        now = time.monotonic()
        waits = [1.0]
        for child in self._children:
            if child.restart_at is not None and not self._stopping:
                if child.restart_at <= now:
                    self._start(ctx, spec, child)
                else:
                    waits.append(child.restart_at - now)
            if child.process is not None and child.killed_for is None:
                waits.extend(self._backstop(child, now))
        if self._stopping:
            if now >= self._stop_by:
                self._kill_all(f"still running {self.grace + STOP_SLACK:.0f}s after the stop")
                self._status = self._status or 1
                self._stop_by = float("inf")  # killed once; their sentinels follow
            else:
                waits.append(self._stop_by - now)
        objects: list[Any] = [self._wake_read]
        for child in self._children:
            if child.process is not None:
                objects.append(child.process.sentinel)
            if child.conn is not None:
                objects.append(child.conn)
        for ready in wait(objects, max(0.0, min(waits))):
            if ready == self._wake_read:
                for signum in os.read(self._wake_read, 64):
                    self._on_stop(signum)
                continue
            for child in self._children:
                if child.conn is not None and ready is child.conn:
                    self._read(child)
                elif child.process is not None and ready == child.process.sentinel:
                    self._read(child)  # what it said before it ended
                    self._reap(child)

    def _backstop(self, child: _Child, now: float) -> list[float]:
        """Kill *child* if a handler it reported is past its deadline and it has not ended
        itself in time; the seconds until the next check.
        """
        assert child.process is not None
        waits = []
        for (job_id, attempt), timed in child.jobs.items():
            deadline, job = timed.deadline, timed.job
            kill_at = timed.kill_at(child.heartbeat, child.lease)
            if now < kill_at:
                waits.append(kill_at - now)
                continue
            log.warning(
                "process %d (pid %s): job %d attempt %d passed its timeout %.1fs ago and the "
                "process did not end itself (frozen, or a handler holds the GIL): killing it; "
                "its other jobs come back when their leases end",
                child.index,
                child.process.pid,
                job_id,
                attempt,
                now - deadline,
            )
            child.killed_for = (job_id, attempt)
            child.process.kill()
            writer = threading.Thread(
                target=self._write_timeout, args=(job,), name="skiplock-fleet-backstop", daemon=True
            )
            with _stops_blocked():  # a stop sent to the process goes to the main thread
                writer.start()
            self._writers = [w for w in self._writers if w.is_alive()] + [writer]
            return []
        return waits

    def _write_timeout(self, job: Job) -> None:
        """Write the timeout of *job*, whose process was killed (a fenced fail), on a thread of
        its own.
        """
        error = f"TimeoutError: job {job.id} attempt {job.attempt} exceeded its timeout"
        why = f"{error} (its process did not end itself and was killed)"
        try:
            status = self._queue().fail(job, why)
        except LeaseLost:
            log.info("job %d attempt %d was taken back already", job.id, job.attempt)
        except SkiplockError as exc:
            log.warning(
                "could not write the timeout of job %d attempt %d (%s): its lease brings it back",
                job.id,
                job.attempt,
                exc,
            )
        else:
            log.info("job %d attempt %d: timeout written (%s)", job.id, job.attempt, status)

    def _queue(self) -> Queue:
        with self._queue_lock:  # two backstops' threads make one
            return self._make_queue()

    def _make_queue(self) -> Queue:
        if self._job_queue is None:
            spec, target = self.spec, load_target(self.spec.target)
            if isinstance(target, App):
                if spec.url is not None or spec.table is not None:
                    target.use(spec.url, table=spec.table)
                self._job_queue = target.queue
            else:
                self._job_queue = self._own_queue = function_queue(spec)
        return self._job_queue

    def _read(self, child: _Child) -> None:
        conn = child.conn
        if conn is None:
            return
        try:
            while conn.poll():
                message = conn.recv()
                kind = message[0]
                if kind == "begin":
                    timed = _Timed(message[3], message[4], child.beaten)
                    child.jobs[(message[1], message[2])] = timed
                elif kind == "end":
                    child.jobs.pop((message[1], message[2]), None)
                elif kind == "beat":
                    child.beaten = message[1]
                    for timed in child.jobs.values():
                        if message[1] < timed.deadline:
                            timed.beaten = message[1]
                elif kind == "timed out":
                    timed_out = child.jobs.get((message[1], message[2]))
                    if timed_out is not None:
                        timed_out.written = True
                elif kind == "metrics" and self.metrics is not None:
                    self.metrics.report(child.index, message[1])
                elif kind == "ready":
                    child.ready, child.heartbeat = True, float(message[1])
                    child.lease, child.beaten = float(message[2]), float(message[3])
        except (EOFError, OSError):
            conn.close()
            child.conn = None

    def _start(self, ctx: Any, spec: ChildSpec, child: _Child) -> None:
        ours, theirs = ctx.Pipe()
        process = ctx.Process(
            target=child_main, args=(spec, theirs), name=f"skiplock-fleet-{child.index}"
        )
        # multiprocessing's resource tracker, launched by the first start (and again if it
        # died), unblocks SIGINT and SIGTERM on its way out: launched here, before they are
        # blocked, a stop that comes meanwhile reaches the handler and is not lost
        resource_tracker.ensure_running()
        began = time.monotonic()  # before any claim of the process
        with _stops_held():
            process.start()
        theirs.close()
        child.process, child.conn, child.started = process, ours, time.monotonic()
        child.beaten = began
        child.ready, child.restart_at, child.killed_for = False, None, None
        child.jobs.clear()
        if self.metrics is not None:
            self.metrics.started(child.index)
        log.info("process %d started (pid %s)", child.index, process.pid)

    def _reap(self, child: _Child) -> None:
        process = child.process
        assert process is not None
        process.join()
        code = process.exitcode
        ran = time.monotonic() - child.started
        if child.conn is not None:
            child.conn.close()
        child.process, child.conn = None, None
        if self.metrics is not None:  # after its last report was read (see _step)
            self.metrics.ended(child.index)
        what = _exit_text(code)
        if self._stopping:
            if code == 0:
                log.info("process %d (pid %s) stopped", child.index, process.pid)
            elif code == EXIT_TIMED_OUT and child.killed_for is None:
                # a handler passed its timeout during the stop: its process wrote that and
                # released its other jobs, then ended itself, as it was asked to
                log.info(
                    "process %d (pid %s) stopped (ended under a handler past its timeout)",
                    child.index,
                    process.pid,
                )
            else:
                log.warning(
                    "process %d (pid %s) %s during the stop", child.index, process.pid, what
                )
                self._status = self._status or 1
            return
        if code == EXIT_TIMED_OUT or child.killed_for is not None:
            log.info(
                "process %d (pid %s) ended after a handler passed its timeout; starting another",
                child.index,
                process.pid,
            )
            child.restart_at = time.monotonic()
            return
        if code in (EXIT_CONFIG, EXIT_LOCKED):  # starting it again would change nothing
            log.error(
                "process %d (pid %s) could not run its worker (%s: %s, see its error above): "
                "stopping the fleet",
                child.index,
                process.pid,
                what,
                "configuration" if code == EXIT_CONFIG else "the single-worker lock is held",
            )
            self._status = code
            self._begin_stop()
            return
        child.deaths = 1 if ran >= STABLE_AFTER else child.deaths + 1
        if child.deaths >= CRASH_LIMIT:
            log.error(
                "process %d (pid %s) %s: it died %d times in a row, each within %.0fs of its "
                "start; not restarting it: stopping the fleet",
                child.index,
                process.pid,
                what,
                child.deaths,
                STABLE_AFTER,
            )
            self._status = 1
            self._begin_stop()
            return
        delay = min(RESTART_MAX, RESTART_DELAY * 2 ** (child.deaths - 1))
        log.warning(
            "process %d (pid %s) %s after %.1fs; restarting it in %.1fs",
            child.index,
            process.pid,
            what,
            ran,
            delay,
        )
        child.restart_at = time.monotonic() + delay

    # -- stopping ---------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._wake(signum)

    def _wake(self, signum: int) -> None:
        with contextlib.suppress(BlockingIOError):  # the loop has 64 bytes to read already
            os.write(self._wake_write, bytes([signum]))

    def _on_stop(self, signum: int) -> None:
        if signum:
            request = stop_request(signum, self._signals)
            self._signals += 1
            if request == EXIT_NOW:
                self._kill_all(f"second signal {signum}")
                self._status = 128 + signum
                self._begin_stop()
                return
            if request == REPEATED:
                log.info("signal %d again: still stopping (SIGINT kills the processes now)", signum)
                return
        if not self._stopping:
            why = f"signal {signum}" if signum else "stop()"
            alive = sum(c.alive for c in self._children)
            log.info(
                "%s: stopping %d process%s (grace %.0fs; SIGINT kills %s now)",
                why,
                alive,
                "" if alive == 1 else "es",
                self.grace,
                "it" if alive == 1 else "them",
            )
        self._begin_stop()

    def _begin_stop(self) -> None:
        """Pass the stop to every process over its pipe, never as a signal."""
        if self._stopping:
            return
        self._stopping = True
        self._stop_by = time.monotonic() + self.grace + STOP_SLACK
        for child in self._children:
            child.restart_at = None
            if child.conn is not None:
                with contextlib.suppress(OSError):
                    child.conn.send(("stop",))

    def _kill_all(self, why: str) -> None:
        for child in self._children:
            if child.process is not None:
                log.warning(
                    "%s: killing process %d (pid %s); leases bring its jobs back",
                    why,
                    child.index,
                    child.process.pid,
                )
                child.process.kill()

    @staticmethod
    def _with_logging(spec: ChildSpec) -> ChildSpec:
        root = logging.getLogger()
        levels = {"": root.level}
        for name in ("skiplock", "mysql.connector"):
            level = logging.getLogger(name).level
            if level:
                levels[name] = level
        handler = root.handlers[0] if root.handlers else None
        fmt = getattr(handler.formatter, "_fmt", None) if handler and handler.formatter else None
        form = fmt if isinstance(fmt, str) else None
        return replace(spec, log_levels=levels, log_format=form)


@contextlib.contextmanager
def _stops_held() -> Iterator[None]:
    """Processes started in this block start with SIGINT and SIGTERM blocked, so a signal to
    the whole group reaches them only through the supervisor.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _stops_blocked():
        yield


@contextlib.contextmanager
def _stops_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM blocked on the main thread here, and in threads started here."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"
