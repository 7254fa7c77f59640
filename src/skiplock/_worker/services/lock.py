"""The single-worker lock: a session-level advisory lock on a connection of its own, so the
server drops it with the connection."""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import suppress

from ..._core.job import Job
from ...errors import ConfigurationError, LockNotAcquired
from ...queue import Queue
from ..port import LockConnection, LockPort, port_of

__all__ = ["SingleLock", "lock_identity"]

log = logging.getLogger("skiplock.worker")

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
        self.port: LockPort = port_of(queue)
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
