"""The worker's port: what it asks of the database, by role, and nothing more.

The sync queue provides it (:func:`port_of`); the worker never runs a statement, reads a
dialect or holds a driver connection itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol

from .._core.arguments import EnqueueOptions
from .._core.job import Job
from ..queue import Queue

__all__ = [
    "Attempt",
    "Listening",
    "LockConnection",
    "LockPort",
    "PeriodicPort",
    "Probe",
    "RetentionPort",
    "RunStatePort",
    "WakePort",
    "WorkerPort",
    "port_of",
]

#: a claim of a running job: ``(id, attempt, claim_id)``
Attempt = tuple[int, int, int | None]


class Listening(Protocol):
    """A connection that hears enqueues and cancel requests."""

    @property
    def pid(self) -> int:
        """Its server session: the waiting worker's mark."""

    def wait(self, seconds: float, cancels: list[int]) -> bool:
        """True if an enqueue woke it; cancel requests' job ids go to *cancels*."""

    def close(self) -> None: ...


class Probe(Protocol):
    """A connection that reads the table's highest job id."""

    def read(self) -> object: ...

    def close(self) -> None: ...


class WakePort(Protocol):
    """Wake-ups of an idle worker (see :mod:`.wakeup`)."""

    @property
    def wakeup(self) -> Literal["notify", "probe", "none"]: ...

    @property
    def wake_marks(self) -> bool:
        """The enqueue trigger notifies only while a worker is marked waiting."""

    def listen(self) -> Listening: ...

    def mark_waiting(self, pid: int, sweep: bool) -> None:
        """Mark the worker listening on *pid* waiting (*sweep*: drop stale marks)."""

    def enqueuers_settled(self) -> bool:
        """True once no enqueuer that may have missed the mark is still open."""

    def unmark_waiting(self, pid: int) -> None: ...

    def notify_listeners(self) -> None: ...

    def probe(self) -> Probe: ...


class LockConnection(Protocol):
    """One session-level advisory lock on a connection of its own; it ends with it."""

    def closed(self) -> bool: ...

    def node_local(self) -> bool:
        """True on a Galera node, whose advisory locks are the node's own."""

    def acquire(self, wait: float) -> bool:
        """Take the lock, waiting up to *wait* seconds inside the server."""

    def check(self) -> bool: ...

    def release(self) -> None: ...

    def claim(self, queues: Sequence[str], limit: int, lease: float) -> list[Job]:
        """The queue's claim, in this connection's transaction (:meth:`commit` it)."""

    def commit(self, doing: str) -> None: ...

    def rollback(self) -> None:
        """Never raises."""

    def session_id(self) -> int | None: ...

    def close(self) -> None:
        """Never raises."""


class LockPort(Protocol):
    """The single-worker lock (see :mod:`.services.lock`)."""

    def has_locks(self) -> bool: ...

    def lock(self, key: int, name: str, what: str) -> LockConnection:
        """A new connection for the lock *key* / *name* (*what* names it in errors)."""

    def running_jobs(self, ended_within: int, limit: int) -> list[Attempt]:
        """Up to *limit* jobs running under a lease that ended less than *ended_within*
        seconds ago, or not yet, on the database's clock."""


class RetentionPort(Protocol):
    """Pruning finished jobs (see :mod:`.services.retention`)."""

    def has_locks(self) -> bool: ...

    def lock(self, key: int, name: str, what: str) -> LockConnection: ...

    def prune_finished(self, statuses: Sequence[str], older_ms: int, limit: int) -> int:
        """Delete up to *limit* jobs in *statuses* finished over *older_ms* ago."""


class PeriodicPort(Protocol):
    """The periodic ledger (see :mod:`.services.periodic`)."""

    def now(self) -> datetime:
        """The database's clock."""

    def last_tick(self, schedule: str) -> datetime | None: ...

    def enqueue_tick(
        self,
        schedule: str,
        tick: datetime,
        options: EnqueueOptions,
        payload: str,
        keep_from: datetime,
    ) -> int | None:
        """Record *tick* and enqueue its job, unless another scheduler did (None); drop
        the schedule's ticks before *keep_from*."""


class RunStatePort(Protocol):
    """What a worker's writes changed, and the give-back of a claim in doubt."""

    def released(self) -> int:
        """Jobs released by their parents' ends so far (it grows)."""

    def unclaim(self, job: Job) -> None:
        """Give back *job* if the claim in doubt took it; ``LeaseLost`` if not."""


class WorkerPort(WakePort, LockPort, RetentionPort, PeriodicPort, RunStatePort, Protocol):
    """Every role at once: what :meth:`Queue._port` returns."""


def port_of(queue: Queue) -> WorkerPort:
    """*queue*'s port for the worker."""
    return queue._port()
