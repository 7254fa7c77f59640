"""The worker's port: what it asks of the database, by role. The sync queue provides it
(``_shell/worker_port.py``); the worker holds no dialect, statement or driver connection."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol

from .._core.checks import EnqueueOptions
from .._core.job import Job

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
]

#: a claim of a running job: ``(id, attempt, claim_id)``
Attempt = tuple[int, int, int | None]


class Listening(Protocol):
    """A LISTEN connection; ``pid`` is its server session."""

    @property
    def pid(self) -> int: ...

    def wait(self, seconds: float, cancels: list[int]) -> bool:
        """True if an enqueue woke it; cancel requests' job ids go to *cancels*."""

    def close(self) -> None: ...


class Probe(Protocol):
    """Reads the table's highest job id."""

    def read(self) -> object: ...

    def close(self) -> None: ...


class WakePort(Protocol):
    """Wake-ups of an idle worker (:mod:`.claiming`)."""

    @property
    def wakeup(self) -> Literal["notify", "probe", "none"]: ...

    @property
    def wake_marks(self) -> bool: ...

    def listen(self) -> Listening: ...

    def mark_waiting(self, pid: int, sweep: bool) -> None: ...

    def enqueuers_settled(self) -> bool: ...

    def unmark_waiting(self, pid: int) -> None: ...

    def notify_listeners(self) -> None: ...

    def probe(self) -> Probe: ...


class LockConnection(Protocol):
    """A session-level advisory lock on a connection of its own."""

    def closed(self) -> bool: ...

    def node_local(self) -> bool:
        """True where advisory locks are a cluster node's own (Galera)."""

    def acquire(self, wait: float) -> bool: ...

    def check(self) -> bool: ...

    def release(self) -> None: ...

    def claim(self, queues: Sequence[str], limit: int, lease: float) -> list[Job]:
        """The queue's claim in this connection's transaction, to :meth:`commit`."""

    def commit(self, doing: str) -> None: ...

    def rollback(self) -> None: ...

    def session_id(self) -> int | None: ...

    def close(self) -> None: ...


class LockPort(Protocol):
    """The single-worker lock (:mod:`.state`)."""

    def has_locks(self) -> bool: ...

    def lock(self, key: int, name: str, what: str) -> LockConnection:
        """A new connection for lock *key* / *name*; *what* names it in errors."""

    def running_jobs(self, ended_within: int, limit: int) -> list[Attempt]:
        """Up to *limit* running jobs whose lease ended less than *ended_within* s ago."""


class RetentionPort(Protocol):
    """Pruning finished jobs (:mod:`.lifecycle`)."""

    def has_locks(self) -> bool: ...

    def lock(self, key: int, name: str, what: str) -> LockConnection: ...

    def prune_finished(self, statuses: Sequence[str], older_ms: int, limit: int) -> int: ...


class PeriodicPort(Protocol):
    """The periodic ledger (:mod:`.lifecycle`)."""

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
        """Record *tick* and enqueue its job unless done already (None); keep the
        schedule's ticks from *keep_from*."""


class RunStatePort(Protocol):
    """The queue's run state, and the give-back of a claim in doubt."""

    def released(self) -> int:
        """Jobs released by their parents' ends so far."""

    def unclaim(self, job: Job) -> None:
        """Give back *job* if a claim in doubt took it; ``LeaseLost`` if not."""


class WorkerPort(WakePort, LockPort, RetentionPort, PeriodicPort, RunStatePort, Protocol):
    """Every role: what ``Queue._port()`` returns."""
