"""The worker's services beside the claim loop, each under an advisory lock of its own: the
single-worker lock (on a connection of its own, so the server drops it with the connection),
retention (deletes finished jobs older than the retention, in short batches) and periodic jobs
(each tick of a :class:`~skiplock.Schedule` enqueued once: its ledger row and its job commit
together)."""

from __future__ import annotations

import hashlib
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import suppress
from datetime import datetime, timedelta

from .._core.checks import EnqueueOptions
from .._core.checks import dumps as _dumps
from .._core.checks import seconds as _seconds
from .._core.job import STATUSES, Job
from ..errors import ConfigurationError, LockNotAcquired, SkiplockError
from ..periodic import MAX_CATCH_UP, Schedule, tick_kwargs
from ..queue import Queue
from .port import LockConnection, LockPort, PeriodicPort, RetentionPort

__all__ = [
    "DEFAULT_RETENTION",
    "MAX_CATCH_UP",
    "Retention",
    "Schedule",
    "Scheduler",
    "SingleLock",
    "lock_identity",
    "tick_kwargs",
]

log = logging.getLogger("skiplock.worker")

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
