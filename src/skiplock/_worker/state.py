"""What the worker's parts share: its settings (fixed), its three flags, the jobs it holds
(:class:`HeldJobs`, from claim to settled outcome) and single mode's :class:`SingleLock`. The
held jobs' lock is the innermost, never held across I/O or a callback."""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Container, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from .._core.checks import seconds
from .._core.job import Job
from ..errors import ConfigurationError, Discard, LockNotAcquired
from ..queue import Queue
from .port import LockConnection, LockPort

__all__ = [
    "NO_COMPLETION",
    "Flags",
    "HeldJob",
    "HeldJobs",
    "Settings",
    "SingleLock",
    "lock_identity",
    "task_label",
]

log = logging.getLogger("skiplock.worker")


@dataclass(frozen=True)
class Settings:
    """A worker's options, checked."""

    queue: Queue
    queues: list[str]
    concurrency: int
    lease: float
    heartbeat: float
    timeout: float | Callable[[Job], float | None] | None
    grace: float
    poll_interval: float
    wait_for_lock: bool
    lock: SingleLock | None
    #: jobs a claim may take beyond the free slots (0: none; see HeldJobs)
    prefetch: int = 0

    def deadline_in(self, job: Job) -> float | None:
        """Seconds *job* may run; None: no limit."""
        if not callable(self.timeout):
            return self.timeout
        try:
            limit = self.timeout(job)
            return None if limit is None else seconds(limit, "timeout", strict=True)
        except Exception as exc:
            log.error(
                "job %d attempt %d runs with no timeout: timeout(job) %s",
                job.id,
                job.attempt,
                f"raised {exc!r:.200}"
                if not isinstance(exc, ConfigurationError)
                else f"gave a bad value ({exc})",
            )
            return None


@dataclass
class Flags:
    """``wake``: look again. ``stopping``: no more claims. ``finished``: all over."""

    wake: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


#: what :meth:`HeldJobs.ended` gets for a job that is not to be completed by the completer
NO_COMPLETION: Any = object()

_COUNTED = {
    "pending": "retried",
    "done": "done",
    "failed": "failed",
    "lost": "lost",
    "cancelled": "cancelled",
    "snoozed": "snoozed",
}


def task_label(job: Job, fallback: str | None, tasks: Container[str] | None = None) -> str:
    """A job's ``task`` metrics label: its App task's name if in *tasks*, else *fallback*, else
    its queue."""
    payload = job.payload
    if tasks is not None and isinstance(payload, dict):
        name = payload.get("task")
        if isinstance(name, str) and name in tasks:
            return name
    return job.queue if fallback is None else fallback


@dataclass
class HeldJob:
    """A claimed job until its outcome is written."""

    job: Job
    limit: float | None  # seconds its handler may run (its timeout), counted from begin()
    deadline: float | None = None  # time.monotonic() past which it is abandoned (begun only)
    finished: bool = False  # the handler returned or raised
    started: float = 0.0  # time.monotonic() at the claim, then at begin()
    error: BaseException | None = None  # what the handler raised, for the outcome's log line


class HeldJobs:
    """The jobs a worker holds from claim to settled outcome, the completions waiting, and the
    outcome ``counts``. ``active``: jobs claimed whose handler has not returned. *prefetch*: jobs
    a claim may take beyond the free slots, bounded by what the runners begin within *window*
    seconds."""

    def __init__(self, concurrency: int, prefetch: int = 0, window: float = 0.0) -> None:
        self.concurrency = concurrency
        self.prefetch = prefetch
        self.window = window
        #: jobs claimed ahead that may wait now (0 until a handler has ended)
        self.extra = 0
        #: free slots worth a claim of their own (see :meth:`gather`)
        self.batch = max(1, concurrency // 2)
        self._mean = 0.0  # handler time, exponentially weighted (0: none ended yet)
        self._waiting: set[int] = set()  # ids claimed ahead, not begun
        self.counts = dict.fromkeys(
            ("done", "retried", "failed", "cancelled", "lost", "released", "snoozed"), 0
        )
        self._lock = threading.Lock()
        self._held: dict[int, HeldJob] = {}
        #: an older claim of a job held again before that claim's outcome was settled (a
        #: snooze's or retry's write commits, and this worker claims the job again before
        #: the writing thread counts it): kept apart so its outcome is still counted once
        self._older: dict[int, list[HeldJob]] = {}
        self._to_complete: list[tuple[Job, Any]] = []
        self._unsure: set[int] = set()  # ids whose completion's COMMIT outcome is unknown
        self._first_done = 0.0  # when the oldest completion waiting in _to_complete arrived
        self._active = 0
        #: told each deadline a handler begins with (the heartbeat's ``sooner``)
        self.on_deadline: Callable[[float], None] | None = None
        #: (queue, task, outcome) -> count, kept once :meth:`keep_detail` is called (the
        #: worker's metrics); outcome as in ``counts`` plus ``discarded`` (a Discard, out of
        #: failed) and ``timeout`` (an attempt abandoned at its timeout, counted apart too)
        self.detail: dict[tuple[str, str, str], int] | None = None
        self._task_fallback: str | None = None
        self._tasks: Container[str] | None = None

    def keep_detail(self, fallback: str | None, tasks: Container[str] | None = None) -> None:
        """Count outcomes by queue and task from now on."""
        with self._lock:
            self._task_fallback = fallback
            self._tasks = tasks
            self.detail = {}

    def detail_snapshot(self) -> dict[tuple[str, str, str], int]:
        with self._lock:
            return dict(self.detail or {})

    # -- the producer's side ----------------------------------------------------------------

    @property
    def active(self) -> int:
        return self._active  # one int read: no lock, and only ever a hint between two locks

    def free(self) -> int:
        """How many jobs a claim may take now."""
        with self._lock:
            if self.prefetch and self._mean > 0:
                self.extra = min(self.prefetch, int(self.concurrency * self.window / self._mean))
                self.batch = max(1, (self.concurrency + self.extra) // 2)
            return self.concurrency + self.extra - self._active

    def hold(self, claimed: list[tuple[Job, float | None]]) -> None:
        """Hold a claim's jobs, each with its timeout, until :meth:`begin`."""
        now = time.monotonic()
        with self._lock:
            for job, limit in claimed:
                older = self._held.get(job.id)
                if older is not None:
                    self._older.setdefault(job.id, []).append(older)
                self._held[job.id] = HeldJob(job, limit, started=now)
                self._waiting.add(job.id)
            self._active += len(claimed)

    def gather(self, poll_interval: float, window: float) -> float:
        """Seconds to wait before the next round trip (0: now), so one statement carries many
        jobs."""
        with self._lock:
            if self._active == 0 or self.concurrency + self.extra - self._active >= self.batch:
                return 0.0
            if not self._to_complete:
                return poll_interval  # woken by the runners long before, normally
            return max(0.0, self._first_done + window - time.monotonic())

    def held_attempts(self) -> list[tuple[int, int, int | None]]:
        with self._lock:
            held = [*self._held.values(), *(h for hs in self._older.values() for h in hs)]
            return [(h.job.id, h.job.attempt, h.job.claim_id) for h in held]

    def mark_lock_lost(self) -> None:
        with self._lock:
            for h in self._held.values():
                h.job.lock_lost = True

    def take_waiting(self) -> list[Job]:
        """Take the jobs claimed ahead and not begun."""
        with self._lock:
            jobs = [self._held[i].job for i in self._waiting]
            self._active -= len(self._waiting)
            self._waiting.clear()
            return jobs

    # -- the runners' side ----------------------------------------------------------------

    def begin(self, job: Job) -> bool:
        """True, and *job*'s timeout starts; False: drop it (given back or lost)."""
        with self._lock:
            # only the newest claim of a job is begun: the held record, if it is this job's
            h = self._held.get(job.id)
            if h is None or h.job is not job or job.id not in self._waiting:
                return False
            self._waiting.discard(job.id)
            h.started = now = time.monotonic()
            h.deadline = None if h.limit is None else now + h.limit
        if h.deadline is not None and self.on_deadline is not None:
            self.on_deadline(h.deadline)
        return True

    def ended(self, job: Job, completion: Any = NO_COMPLETION) -> bool:
        """*job*'s handler ended (*completion*: for the completer); True: wake the producer."""
        now = time.monotonic()
        with self._lock:
            if completion is not NO_COMPLETION:
                if not self._to_complete:
                    self._first_done = now
                self._to_complete.append((job, completion))
            self._active -= 1
            h = self._mine(job)
            if h is not None:
                h.finished = True
                took = max(1e-6, now - h.started)
                self._mean = took if self._mean == 0 else 0.8 * self._mean + 0.2 * took
            free = self.concurrency + self.extra - self._active
            return self._active == 0 or free == self.batch or len(self._to_complete) == 1

    # -- settling -------------------------------------------------------------------------

    def settle(self, job: Job, outcome: str | None) -> tuple[HeldJob | None, str | None]:
        """Stop holding *job* and count *outcome* once; its record and the key counted, or Nones."""
        with self._lock:
            return self._settle(job, outcome)

    def settle_many(self, jobs: list[Job], outcome: str) -> list[tuple[Job, HeldJob]]:
        """:meth:`settle` of *jobs* under one lock; those counted."""
        out = []
        with self._lock:
            for job in jobs:
                held, key = self._settle(job, outcome)
                if held is not None and key is not None:
                    out.append((job, held))
        return out

    def lose(self, job: Job) -> bool:
        """Mark *job* lost and settle it, in one step; True the first time."""
        with self._lock:
            first, job.lost = not job.lost, True
            self._settle(job, "lost")
            return first

    def note_error(self, job: Job, exc: BaseException) -> None:
        with self._lock:
            h = self._mine(job)
            if h is not None:
                h.error = exc

    def count(self, key: str, job: Job | None = None) -> None:
        with self._lock:
            if key in self.counts:
                self.counts[key] += 1
            if job is not None and self.detail is not None:
                self._count_detail(job, key)

    def _count_detail(self, job: Job, outcome: str) -> None:
        assert self.detail is not None
        label = (job.queue, task_label(job, self._task_fallback, self._tasks), outcome)
        self.detail[label] = self.detail.get(label, 0) + 1

    # -- the completer's side -------------------------------------------------------------

    def has_completions(self) -> bool:
        with self._lock:
            return bool(self._to_complete)

    def take_completions(self) -> tuple[list[tuple[Job, Any]], list[Job]]:
        """The completions waiting, and those whose COMMIT was unknown."""
        with self._lock:
            batch, self._to_complete = self._to_complete, []
            if not self._unsure:
                return batch, []
            return batch, [job for job, _ in batch if job.id in self._unsure]

    def still_ours(self, batch: list[tuple[Job, Any]]) -> list[tuple[Job, Any]]:
        with self._lock:
            return [(j, r) for j, r in batch if self._mine(j) is not None and not j.lost]

    def put_back(self, batch: list[tuple[Job, Any]]) -> None:
        """Queue a failed completion batch again, to be read back first."""
        with self._lock:
            self._unsure.update(j.id for j, _ in batch)
            self._to_complete[:0] = [(j, r) for j, r in batch if self._mine(j) is not None]

    def _settle(self, job: Job, outcome: str | None) -> tuple[HeldJob | None, str | None]:
        held = self._mine(job)
        if held is None:  # not held (or settled already)
            return None, None
        if held is self._held.get(job.id):
            self._held.pop(job.id)
            self._unsure.discard(job.id)
            if job.id in self._waiting:  # lost while it waited: no runner will begin it
                self._waiting.discard(job.id)
                self._active -= 1
        else:  # an older claim of a job held again
            older = self._older[job.id]
            older.remove(held)
            if not older:
                del self._older[job.id]
        key = _COUNTED.get(outcome) if outcome is not None else None
        if key is not None:
            self.counts[key] += 1
            if self.detail is not None:
                discarded = key == "failed" and isinstance(held.error, Discard)
                self._count_detail(job, "discarded" if discarded else key)
        return held, key

    def _mine(self, job: Job) -> HeldJob | None:
        """*job*'s record if this very claim is held (by object, not id)."""
        h = self._held.get(job.id)
        if h is not None and h.job is job:
            return h
        if not self._older:
            return None
        return next((o for o in self._older.get(job.id, ()) if o.job is job), None)

    # -- the heartbeat's and the shutdown's side -------------------------------------------

    def beatable(self) -> list[HeldJob]:
        """Held jobs still running, whose lease is ours to extend."""
        with self._lock:
            return [h for h in self._held.values() if not h.job.lost and h.job.status == "running"]

    def running(self, job_id: int) -> HeldJob | None:
        with self._lock:
            h = self._held.get(job_id)
            return h if h is not None and not h.finished and not h.job.lost else None

    def still_beatable(self, h: HeldJob) -> bool:
        with self._lock:
            return not h.job.lost and self._held.get(h.job.id) is h and h.job.status == "running"

    def next_deadline(self) -> float:
        """The earliest deadline of a running handler, or infinity."""
        with self._lock:
            return min(
                (
                    h.deadline
                    for h in self._held.values()
                    if h.deadline is not None
                    and not h.finished
                    and not h.job.lost
                    and h.job.status == "running"
                ),
                default=math.inf,
            )

    def holds(self, job: Job) -> bool:
        with self._lock:
            return self._mine(job) is not None

    def in_flight(self) -> int:
        """Handlers begun and not returned."""
        with self._lock:
            return self._active - len(self._waiting)

    def busy(self) -> bool:
        with self._lock:
            return self._active > 0 or bool(self._to_complete)

    def unfinished(self) -> list[Job]:
        with self._lock:
            return [
                h.job
                for h in self._held.values()
                if not h.finished and h.job.id not in self._waiting
            ]


# -- the single-worker lock -------------------------------------------------------------

#: MySQL lock names are at most 64 characters
_MAX_NAME = 64
#: how long one acquire statement waits before the caller may look at its stop flag
_WAIT_STEP = 1.0
#: how long one attempt to take the lock back waits: the worker's loop, which writes its
#: running jobs' outcomes, is blocked meanwhile, and the next holder waits for those jobs
_RETAKE_STEP = 0.2
#: how long a worker that lost the lock leaves it to the workers waiting for it (they ask
#: every _WAIT_STEP) before it asks again itself
_STEP_BACK = 2 * _WAIT_STEP
#: a margin's bound (a day), so the statement's date arithmetic cannot overflow
_MAX_MARGIN = 86_400


def lock_identity(queue: Queue, purpose: str = "") -> tuple[int, str]:
    """``(key, name)`` of the table's lock (for *purpose*, if given)."""
    text = f"skiplock{purpose and '-' + purpose}:{queue.url.database}.{queue.table}"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    key = int.from_bytes(digest[:8], "big") & (2**63 - 1)
    name = text if len(text) <= _MAX_NAME else "skiplock:" + digest.hex()[:40]
    return key, name


class SingleLock:
    """A ``mode="single"`` worker's lock. Thread-safe; ``held`` turns false once a check finds it
    gone."""

    def __init__(self, queue: Queue) -> None:
        self.port: LockPort = queue._port()
        if not self.port.has_locks():
            raise ConfigurationError(
                f"single-worker mode is not available on {queue.url.flavor}: its dialect has "
                "no advisory-lock statements; run with mode='lease'"
            )
        self.queue = queue
        self.key, self.name = lock_identity(queue)
        self.held = False
        self._conn: LockConnection | None = None
        self._mutex = threading.Lock()
        self._lost_at: float | None = None

    def acquire(self, *, wait: bool = True, stop: threading.Event | None = None) -> bool:
        """Take the lock, waiting (False once *stop* is set); ``wait=False`` raises
        :class:`~skiplock.LockNotAcquired` at once."""
        pause = 0.5
        while True:
            try:
                if self._try(0.0 if not wait else _WAIT_STEP):
                    return True
                pause = 0.5
            except ConfigurationError:
                raise
            except Exception as exc:  # the server is away: wait for it
                log.warning("could not take the single-worker lock (%s); retrying", exc)
                self._drop()
                if stop is not None and stop.wait(pause):
                    return False
                pause = min(pause * 2, 10.0)
                continue
            if not wait:
                raise LockNotAcquired(
                    f"another worker holds the single-worker lock {self.name!r} on "
                    f"{self.queue.url.masked()}: stop it, or start this one without "
                    "--no-wait to wait for it"
                )
            if stop is not None and stop.is_set():
                return False

    def retake(self) -> bool:
        """One try to take the lock back, waiting at most 0.2 s; none for 2 s after the lock
        was lost, so a worker already waiting for it takes it first."""
        lost_at = self._lost_at
        if lost_at is not None and time.monotonic() - lost_at < _STEP_BACK:
            return False
        try:
            return self._try(_RETAKE_STEP)
        except Exception as exc:
            log.debug("could not take the single-worker lock back yet (%s)", exc)
            self._drop()
            return False

    def _try(self, wait: float) -> bool:
        # The statement itself waits up to *wait* seconds inside the server, in the queue
        # of waiters: when the holder's connection ends, the first waiter gets the lock.
        with self._mutex:
            if self._conn is None or self._conn.closed():
                self._drop_locked()
                self._conn = self.port.lock(self.key, self.name, "the single-worker lock")
                if self._conn.node_local():
                    self._drop_locked()
                    raise ConfigurationError(
                        f"single-worker mode is refused on {self.queue.url.masked()}: it is "
                        "a node of a Galera cluster (wsrep_on is ON), where the advisory "
                        "lock is the node's own, so a worker on another node would hold it "
                        "too and run jobs at the same time; run with mode='lease' (without "
                        "--single)"
                    )
            self.held = self._conn.acquire(wait)
            return self.held

    def check(self) -> bool:
        """Whether the lock is still held; updates ``held``."""
        with self._mutex:
            if not self.held or self._conn is None:
                return False
            return self._check_locked()

    def _check_locked(self) -> bool:
        try:
            self.held = self._conn is not None and self._conn.check()
        except Exception:
            self.held = False
        if not self.held:
            self._lost_at = time.monotonic()
            self._drop_locked()
        return self.held

    def claim(
        self,
        queues: Sequence[str],
        limit: int,
        lease: float,
        unsure: Callable[[list[Job]], None] | None = None,
    ) -> list[Job] | None:
        """Claim on the lock's connection, so it commits only while the lock is held. None when
        the lock is gone (then *unsure* gets the jobs of a COMMIT in doubt)."""
        returned: list[list[Job]] = []
        with self._mutex:
            conn = self._conn
            if not self.held or conn is None:
                return None
            try:
                returned.append(conn.claim(queues, limit, lease))
                conn.commit("claiming")
                return returned[0]
            except Exception:
                conn.rollback()
                if self._check_locked():
                    raise
        if returned and unsure is not None:
            unsure(returned[0])
        return None

    def others_running(self, ours: Collection[tuple[int, int, int | None]], margin: float) -> bool:
        """True while a job not in *ours* runs, or its lease ended less than *margin* seconds
        ago."""
        wanted = set(ours)
        within = min(_MAX_MARGIN, math.ceil(margin))
        # At most len(ours) + 1 rows: more than ours is enough to know another one runs.
        return any(a not in wanted for a in self.port.running_jobs(within, len(wanted) + 1))

    def session_id(self) -> int | None:
        with self._mutex:
            if self._conn is None:
                return None
            return self._conn.session_id()

    def release(self) -> None:
        """Give the lock up and close its connection. Never raises."""
        with self._mutex:
            if self.held and self._conn is not None:
                with suppress(Exception):
                    self._conn.release()
            self.held = False
            self._drop_locked()

    def _drop(self) -> None:
        with self._mutex:
            self._drop_locked()

    def _drop_locked(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
