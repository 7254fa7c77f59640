"""The worker: claims jobs in batches, runs them on threads, writes their outcome fenced.

Threads: the loop (claims, shutdown), a flusher that writes batched completions while the
loop claims, a pool of runner threads (at most ``concurrency``, started as needed, reused
from job to job), a heartbeat thread (extends leases, enforces timeouts, checks the
single-worker lock), and on databases with LISTEN/NOTIFY a listener that wakes the loop
when a job is enqueued.

What is fenced: every write after a claim (heartbeat, complete, fail, release) names the
job's ``attempt``; a write that finds the job taken away marks it lost (``job.lost``),
is logged once at WARNING and changes nothing. A write whose COMMIT lost its connection has
an unknown outcome: the job's record is read back before anything is written again, so a
job is never completed twice and never dropped.
"""

from __future__ import annotations

import logging
import os
import queue as queue_module
import random
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType
from typing import Any

from ._checks import dumps as _dumps
from ._checks import queue_names as _queues
from ._checks import seconds as _seconds
from ._lock import SingleLock
from ._outcome import last_line, log_outcome
from ._periodic import Schedule, Scheduler
from ._retention import DEFAULT_RETENTION, Retention, retention_seconds
from .errors import BackendError, Cancelled, ConfigurationError, Discard, LeaseLost, SkiplockError
from .job import Job
from .queue import Queue

__all__ = ["Worker"]

log = logging.getLogger("skiplock.worker")

Handler = Callable[[Job], Any]

_MIN_POLL = 0.05
#: how long a finished job's completion may wait for others to share its statement (a real
#: job hardly notices 5 ms; measured with the runner pool: a no-op drain at concurrency
#: 100 went from 3,000 to 19,000 jobs/s once claims and completions were gathered)
_GATHER = 0.005


@dataclass
class _Held:
    """A claimed job until its outcome is written."""

    job: Job
    deadline: float | None
    finished: bool = False  # the handler returned or raised
    started: float = 0.0  # time.monotonic() at the claim
    error: BaseException | None = None  # what the handler raised, for the outcome's log line


class Worker:
    """Run *handler(job)* for jobs claimed from *queues*.

    The handler's return value (JSON) completes the job; an exception records a failed
    attempt, retried after :func:`~skiplock.backoff` until ``max_attempts``, then
    ``failed`` with the traceback's last line. A handler may complete the job itself, e.g.
    ``with q.transaction() as tx: ...; tx.complete(job)`` to commit its own rows with the
    completion (or fail it with its own ``retry_in``); the worker then writes nothing more.

    ``lease`` seconds per claim, extended every ``heartbeat`` seconds (default lease/3).
    ``timeout`` (seconds, or a function of the job) abandons a job after that long: the
    attempt fails and ``job.lost`` is set; the handler's thread cannot be killed, so it
    keeps its slot until it returns. ``mode="single"`` holds an advisory lock for the
    worker's lifetime (see :class:`~skiplock._lock.SingleLock`); with ``wait_for_lock``
    false a held lock raises :class:`~skiplock.LockNotAcquired`. A worker that loses the
    lock sets ``job.lock_lost`` on its running jobs: another worker may start once they
    finish, or once they have gone without a heartbeat for about two leases.
    """

    def __init__(
        self,
        queue: Queue,
        handler: Handler,
        *,
        queues: tuple[str, ...] | list[str] | str = ("default",),
        concurrency: int = 4,
        lease: float = 30.0,
        heartbeat: float | None = None,
        mode: str = "lease",
        timeout: float | Callable[[Job], float | None] | None = None,
        grace: float = 30.0,
        poll_interval: float = 1.0,
        wait_for_lock: bool = True,
        retention: float | timedelta | None = DEFAULT_RETENTION,
        periodic: Sequence[Schedule] = (),
    ) -> None:
        if not isinstance(queue, Queue):
            raise ConfigurationError(f"queue must be a skiplock.Queue, not {type(queue).__name__}")
        if not callable(handler):
            raise ConfigurationError("handler must be a function taking a skiplock.Job")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int):
            raise ConfigurationError(f"concurrency must be an integer, not {concurrency!r:.80}")
        if not 1 <= concurrency <= 1000:
            raise ConfigurationError(f"concurrency must be from 1 to 1000, not {concurrency}")
        if mode not in ("lease", "single"):
            raise ConfigurationError(f"mode must be 'lease' or 'single', not {mode!r:.80}")
        self.queue = queue
        self.handler = handler
        self.queues = _queues(queues)
        self.concurrency = concurrency
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
        self.mode = mode
        self.wait_for_lock = wait_for_lock
        self.lock: SingleLock | None = SingleLock(queue) if mode == "single" else None
        #: outcomes so far: done, retried, failed, cancelled, lost, released (and pruned,
        #: scheduled: see retention and periodic)
        self.counts = dict.fromkeys(
            ("done", "retried", "failed", "cancelled", "lost", "released"), 0
        )
        keep = retention_seconds(retention)  # finished jobs older than this are deleted
        self.retention = None if keep is None else Retention(queue, keep, counts=self.counts)
        #: enqueues the ticks of *periodic* schedules while the worker runs (see _periodic)
        self.scheduler = Scheduler(queue, periodic, counts=self.counts) if periodic else None
        self._held: dict[int, _Held] = {}
        self._to_complete: list[tuple[Job, Any]] = []
        self._unsure: set[int] = set()  # ids whose completion's COMMIT outcome is unknown
        self._mutex = threading.Lock()  # guards the dicts, lists and counts
        self._writes = threading.Lock()  # one fenced write at a time: see _beat
        self._active = 0  # jobs claimed whose handler has not returned
        self._runners = 0  # runner threads started
        self._jobs: queue_module.SimpleQueue[Job | None] = queue_module.SimpleQueue()
        self._batch = max(1, concurrency // 2)  # free slots worth a claim of their own
        self._first_done = 0.0  # when the oldest completion waiting in _to_complete arrived
        self._flusher: ThreadPoolExecutor | None = None  # writes completions during a claim
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._signals = 0
        self._handover = False  # single mode: lock just taken, the last holder may still run

    # -- public control -------------------------------------------------------------------

    def run(self, *, install_signals: bool = True) -> None:
        """Work until :meth:`stop` (or SIGTERM / SIGINT when called on the main thread):
        stop claiming, wait up to ``grace`` seconds for running jobs, release the rest
        (fenced), then return. A second signal ends the process at once (exit 128+signal);
        leases bring its jobs back."""
        previous: dict[signal.Signals, Any] = {}
        if install_signals and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, self._on_signal)
        try:
            self._serve()
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)
            self._finished.set()

    def start(self) -> Worker:
        """Run in a background thread (no signal handlers); see :meth:`stop`."""
        self._thread = threading.Thread(
            target=self.run, kwargs={"install_signals": False}, name="skiplock-worker"
        )
        self._thread.start()
        return self

    def stop(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Ask the worker to stop (see :meth:`run`); with *wait*, until it has."""
        self._stopping.set()
        self._wake.set()
        if wait and self._thread is not None:
            self._thread.join(timeout)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        if self._signals > 1:
            log.warning("second signal %d: exiting now; leases will bring jobs back", signum)
            os._exit(128 + signum)
        log.info("signal %d: stopping (grace %.0fs; send it again to exit now)", signum, self.grace)
        self.stop(wait=False)

    # -- the loop -------------------------------------------------------------------------

    def _serve(self) -> None:
        lock = self.lock
        if lock is not None:
            if self.wait_for_lock:  # with no wait, a held lock is reported once, as an error
                log.info("waiting for the single-worker lock %r", lock.name)
            if not lock.acquire(wait=self.wait_for_lock, stop=self._stopping):
                return
            log.info("holding the single-worker lock %r", lock.name)
            self._handover = True
        helpers = [threading.Thread(target=self._beat, name="skiplock-heartbeat", daemon=True)]
        if self.queue.dialect.supports_notify:
            helpers.append(
                threading.Thread(target=self._listen, name="skiplock-listen", daemon=True)
            )
        for t in helpers:
            t.start()
        for helper in (self.retention, self.scheduler):
            if helper is not None:
                helper.start(self._finished)
        log.info(
            "worker started: queues %s, concurrency %d, lease %.1fs, %s",
            ",".join(self.queues),
            self.concurrency,
            self.lease,
            self.queue.url.masked(),
        )
        self._flusher = ThreadPoolExecutor(1, thread_name_prefix="skiplock-flush")
        try:
            self._loop()
            self._shutdown()
        finally:
            self._flusher.shutdown()
            self._finished.set()
            if lock is not None:
                lock.release()

    def _loop(self) -> None:
        idle, outage = _MIN_POLL, 0
        while not self._stopping.is_set():
            self._wake.clear()  # a wake-up after this line ends the wait below at once
            gather = self._gather()
            if gather > 0:
                self._wake.wait(gather)
                continue
            try:
                claimed = self._flush_and_claim()
            except BackendError as exc:
                if not (exc.retryable or exc.connection_lost):
                    raise
                outage += 1
                pause = min(30.0, 0.5 * 2 ** min(outage, 6)) * random.uniform(0.75, 1.25)
                log.warning("database unavailable (%s); retrying in %.1fs", exc, pause)
                self._stopping.wait(pause)
                continue
            if outage:
                log.info("database reachable again")
                outage = 0
            if claimed:
                idle = _MIN_POLL
                continue
            if not self._wake.wait(idle):  # a wake-up (a job finished) is not idleness
                idle = min(idle * 2, self.poll_interval)

    def _flush_and_claim(self) -> int:
        """Write the finished jobs' completions and claim more, at the same time on two
        connections: the statements touch different rows, and the database works on both
        while this process waits (measured: no-op drains ~1.15x faster than one after the
        other, on PostgreSQL and on MySQL). A BackendError of either is raised (the
        flush's when both fail)."""
        with self._mutex:
            flushing = self._to_complete and self._flusher is not None
        if not flushing:
            return self._claim()
        assert self._flusher is not None
        done = self._flusher.submit(self._flush)
        try:
            return self._claim()
        finally:
            done.result()

    def _gather(self) -> float:
        """Seconds to wait before a round trip is worth it; 0: go now.

        While handlers run, the next round trip (the completions, and a claim for every
        free slot) waits until half the slots are free, or until the oldest finished job
        has waited ``_GATHER``: one statement then carries many jobs instead of one each,
        and a single free slot is still refilled within ``_GATHER`` of its job finishing.
        Runners wake the loop when that time comes."""
        with self._mutex:
            if self._active == 0 or self.concurrency - self._active >= self._batch:
                return 0.0
            if not self._to_complete:
                return self.poll_interval  # woken by the runners long before, normally
            return max(0.0, self._first_done + _GATHER - time.monotonic())

    def _claim(self) -> int:
        """Claim up to the free slots and start the jobs; the number started."""
        lock = self.lock
        if lock is not None and not lock.held:
            # Running jobs go on under fencing; no new claim until the lock is ours again.
            if not lock.retake():
                return 0
            log.warning("holding the single-worker lock %r again", lock.name)
            self._handover = True
        if self._handover:
            if not self._previous_holder_done():
                return 0
            self._handover = False
            log.info("no other worker's job is running: claiming")
        free = self.concurrency - self._active
        if free <= 0:
            return 0

        def claim(conn: Any = None) -> list[Job]:
            return self.queue.claim(queues=self.queues, limit=free, lease=self.lease, conn=conn)

        if lock is None:
            jobs = claim()
        else:
            # On the lock's own connection: the claim commits only while the lock is held,
            # so a worker whose lock connection was just cut cannot claim next to the new
            # holder, even before its heartbeat notices.
            found = lock.run(claim, "claiming")
            if found is None:
                self._lock_lost()
                return 0
            jobs = found
        for job in jobs:
            self._start(job)
        return len(jobs)

    def _previous_holder_done(self) -> bool:
        """Single mode, after taking the lock: True once no other job of the table runs,
        and none has gone without a heartbeat for less than a lease past its lease's end
        (see :meth:`SingleLock.others_running`), so jobs never run in two workers at once
        even when the previous holder was cut off from the database for a while."""
        assert self.lock is not None
        with self._mutex:
            ours = [(h.job.id, h.job.attempt) for h in self._held.values()]
        return not self.lock.others_running(ours, margin=self.lease)

    def _lock_lost(self) -> None:
        assert self.lock is not None
        with self._mutex:
            for h in self._held.values():
                h.job.lock_lost = True  # the handler may look, and stop early
        log.warning(
            "lost the single-worker lock %r (its connection ended): claiming stops until it "
            "is held again and the new holder's jobs are finished; running jobs go on under "
            "fencing (job.lock_lost is set)",
            self.lock.name,
        )
        self._wake.set()

    def _start(self, job: Job) -> None:
        limit = self.timeout(job) if callable(self.timeout) else self.timeout
        deadline = None if limit is None else time.monotonic() + limit
        with self._mutex:
            self._held[job.id] = _Held(job, deadline, started=time.monotonic())
            self._active += 1
            # A thread per job cost more than a no-op job itself: runners are kept and
            # reused, and only started while jobs outnumber them.
            spawn = self._runners < min(self._active, self.concurrency)
            if spawn:
                self._runners += 1
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._run_jobs, name="skiplock-runner", daemon=True).start()

    def _run_jobs(self) -> None:
        """A runner thread: run the jobs handed to it until given None."""
        while (job := self._jobs.get()) is not None:
            self._execute(job)

    # -- one job --------------------------------------------------------------------------

    def _execute(self, job: Job) -> None:
        try:
            try:
                result = self.handler(job)
                if job.status == "running":
                    _dumps(result, "result of the handler")
            except LeaseLost:  # the handler's own fenced write found the job gone
                self._lost(job, "the handler's own write")
            except (Cancelled, Discard) as exc:
                self._stopped(job, exc)
            except Exception as exc:
                self._failed(job, exc)
            else:
                if job.status != "running":  # the handler completed (or failed) it itself
                    self._settled(job, job.status)
                elif job.lost:
                    self._settled(job, None)
                else:
                    with self._mutex:
                        if not self._to_complete:
                            self._first_done = time.monotonic()
                        self._to_complete.append((job, result))
        finally:
            with self._mutex:
                self._active -= 1
                if job.id in self._held:
                    self._held[job.id].finished = True
                # Wake the loop when _gather's answer changes, not once per job.
                free = self.concurrency - self._active
                wake = self._active == 0 or free == self._batch or len(self._to_complete) == 1
            if wake:
                self._wake.set()

    def _failed(self, job: Job, exc: Exception) -> None:
        if job.lost:
            self._settled(job, None)
            return
        self._note_error(job, exc)
        self._write(
            job, lambda: self.queue.fail(job, last_line(exc)), applied=("pending", "failed")
        )

    def _stopped(self, job: Job, exc: Cancelled | Discard) -> None:
        """The handler raised Cancelled (end the job ``cancelled``) or Discard (``failed``
        now, no retries): one fenced write, like any other outcome."""
        if job.lost:
            self._settled(job, None)
            return
        why = last_line(exc)
        self._note_error(job, exc)
        if isinstance(exc, Cancelled):
            self._write(
                job, lambda: self.queue.mark_cancelled(job, reason=why), applied=("cancelled",)
            )
        else:
            self._write(job, lambda: self.queue.fail(job, why, final=True), applied=("failed",))

    def _note_error(self, job: Job, exc: BaseException) -> None:
        with self._mutex:
            if job.id in self._held:
                self._held[job.id].error = exc

    def _write(self, job: Job, write: Callable[[], object], *, applied: tuple[str, ...]) -> None:
        """Run a fenced write for *job*, retrying through outages. After a failure that may
        have committed, the job's record decides (see :meth:`_read_back`)."""
        pause, unsure = 0.2, False
        while True:
            with self._writes:  # no heartbeat of this job meanwhile: it would find it gone
                try:
                    if unsure and self._read_back(job, applied, "a write"):
                        return
                    write()
                except LeaseLost:
                    self._lost(job, "its fenced write")
                    return
                except BackendError as exc:
                    if not (exc.retryable or exc.connection_lost):
                        log.error("job %d: %s", job.id, exc)
                        self._settled(job, None)  # its lease brings it back
                        return
                    unsure = True
                    log.warning("job %d: %s; retrying in %.1fs", job.id, exc, pause)
                else:
                    self._settled(job, job.status)
                    return
            time.sleep(pause)
            pause = min(pause * 2, 10.0)

    def _read_back(self, job: Job, applied: tuple[str, ...], what: str) -> bool:
        """After a write whose COMMIT outcome is unknown: True (and the job settled) if the
        record shows it committed (same attempt, status in *applied*) or shows the job
        taken away (another attempt); False if it is still ours to write again."""
        record = self.queue.get(job.id)
        if record is not None and record.attempt == job.attempt:
            if record.status in applied:
                self._settled(job, record.status)
                return True
            if record.status == "running":
                return False
        self._lost(job, f"{what} whose outcome was unknown")
        return True

    def _lost(self, job: Job, where: str) -> None:
        """The job is no longer ours: say so once, write nothing more for it."""
        already, job.lost = job.lost, True
        if not already:
            log.warning(
                "job %d attempt %d lost its lease (%s): another worker may run it; "
                "its result is not written",
                job.id,
                job.attempt,
                where,
            )
        self._settled(job, "lost")

    def _settled(self, job: Job, outcome: str | None) -> None:
        """The job's outcome is written (or no longer ours to write): stop holding it and
        count the outcome, once."""
        key = {
            "pending": "retried",
            "done": "done",
            "failed": "failed",
            "lost": "lost",
            "cancelled": "cancelled",
        }
        with self._mutex:
            held = self._held.pop(job.id, None)
            self._unsure.discard(job.id)
            if held is not None and outcome in key:
                self.counts[key[outcome]] += 1
        if held is not None and outcome in key and outcome != "lost":  # _lost said it
            log_outcome(job, key[outcome], time.monotonic() - held.started, held.error)

    # -- batched completion ---------------------------------------------------------------

    def _flush(self) -> None:
        """Complete the jobs whose handlers returned, in one fenced statement.

        Raises BackendError (batch kept) when the database is away."""
        with self._mutex:
            batch, self._to_complete = self._to_complete, []
            unsure = [job for job, _ in batch if job.id in self._unsure]
        if not batch:
            return
        with self._writes:
            try:
                for job in unsure:  # a COMMIT whose outcome was unknown: read what happened
                    self._read_back(job, ("done",), "a completion")
                with self._mutex:
                    batch = [(j, r) for j, r in batch if j.id in self._held and not j.lost]
                lost = self.queue.complete_many(batch) if batch else []
            except BackendError:
                with self._mutex:
                    self._unsure.update(j.id for j, _ in batch)
                    self._to_complete[:0] = [(j, r) for j, r in batch if j.id in self._held]
                raise
            self._settle_batch(batch, lost)

    def _settle_batch(self, batch: list[tuple[Job, Any]], lost: list[Job]) -> None:
        lost_ids = {j.id for j in lost}
        for job, _ in batch:
            if job.id in lost_ids:
                self._lost(job, "its completion")
            else:
                self._settled(job, "done")

    # -- heartbeat, timeouts, lock checks ---------------------------------------------------

    def _beat(self) -> None:
        failing = False
        while not self._finished.wait(self.heartbeat):
            if self.lock is not None and self.lock.held and not self.lock.check():
                self._lock_lost()
            with self._mutex:
                # A job whose handler completed (or failed) it in its own transaction is no
                # longer running: beating it would find it gone and call it lost.
                held = [
                    h for h in self._held.values() if not h.job.lost and h.job.status == "running"
                ]
            now = time.monotonic()
            for h in held:
                if h.deadline is not None and now >= h.deadline and not h.finished:
                    self._timed_out(h)
                    continue
                with self._writes:  # not while its outcome is being written
                    with self._mutex:
                        if h.job.lost or self._held.get(h.job.id) is not h:
                            continue
                        if h.job.status != "running":  # settled by its handler meanwhile
                            continue
                    try:
                        self.queue.heartbeat(h.job, lease=self.lease)
                        failing = False
                    except LeaseLost:
                        # Its handler's own completion may have committed just now: it sets
                        # the status before its COMMIT, so a job still "running" here is lost.
                        if h.job.status == "running":
                            self._lost(h.job, "heartbeat")
                    except SkiplockError as exc:
                        if not failing:  # once per outage; the next beat tries again
                            log.warning("heartbeat failed (%s); retrying", exc)
                        failing = True

    def _timed_out(self, h: _Held) -> None:
        job = h.job
        job.lost = True  # the handler may look; its result will not be written
        log.warning("job %d attempt %d exceeded its timeout; abandoning it", job.id, job.attempt)
        error = TimeoutError(f"job {job.id} attempt {job.attempt} exceeded its timeout")
        self._note_error(job, error)
        self._write(
            job, lambda: self.queue.fail(job, last_line(error)), applied=("pending", "failed")
        )

    # -- wake-ups -------------------------------------------------------------------------

    def _listen(self) -> None:
        d, conn, pause = self.queue.dialect, None, 0.5
        while not self._finished.is_set():
            try:
                if conn is None:
                    conn = d.listen()
                    pause = 0.5
                if d.wait_notify(conn, 1.0):
                    self._wake.set()
            except Exception as exc:  # polling goes on meanwhile; try again later
                log.debug("LISTEN connection failed (%s); polling only for now", exc)
                if conn is not None:
                    with suppress(Exception):
                        conn.close()
                conn = None
                self._finished.wait(pause)
                pause = min(pause * 2, 30.0)
        if conn is not None:
            with suppress(Exception):
                conn.close()

    # -- shutdown -------------------------------------------------------------------------

    def _shutdown(self) -> None:
        deadline = time.monotonic() + self.grace
        if self._active:
            log.info("stopping: waiting up to %.0fs for %d running jobs", self.grace, self._active)
        while True:
            with suppress(BackendError):
                self._flush()
            with self._mutex:
                busy = self._active > 0 or bool(self._to_complete)
            if not busy or time.monotonic() >= deadline:
                break
            self._wake.wait(0.1)
            self._wake.clear()
        with self._mutex:
            unfinished = [h.job for h in self._held.values() if not h.finished]
        for job in unfinished:
            job.lost = True  # whatever its handler does now is not written
            try:
                with self._writes:
                    self.queue.release(job)
                with self._mutex:
                    self.counts["released"] += 1
                log.info(
                    "released job %d attempt %d (it did not finish in time)", job.id, job.attempt
                )
            except SkiplockError as exc:
                log.warning("could not release job %d (%s); its lease brings it back", job.id, exc)
            self._settled(job, None)
        for _ in range(self._runners):  # idle runners end now, busy ones after their job
            self._jobs.put(None)
        log.info("worker stopped: %s", ", ".join(f"{k} {v}" for k, v in self.counts.items()))
