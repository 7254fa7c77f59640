"""The job record and queue statistics (public as :mod:`skiplock.job`), and how a stored
row becomes a :class:`Job`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import Cancelled
from .checks import loads

__all__ = ["Job", "Stats", "utc"]

STATUSES = ("pending", "running", "done", "failed", "cancelled", "waiting")


_UTC = timezone.utc


def utc(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime from the database, got {type(value).__name__}")
    tz = value.tzinfo
    if tz is _UTC:
        return value
    return value.replace(tzinfo=_UTC) if tz is None else value.astimezone(_UTC)


@dataclass(slots=True)
class Job:
    """One job as the database holds it.

    ``attempt`` is the fencing token: it grows by one at every claim, and every write after
    the claim names it. ``idempotency_key`` stays the same across attempts and differs
    between jobs; pass it to services outside the database so they can drop a repeat.
    ``lost`` is set by a worker when a heartbeat finds the job taken away. ``lock_lost`` is
    set by a single-mode worker that lost its lock while the job ran: another worker may
    take the lock and start jobs once this one has gone without a heartbeat for about two
    leases, so a handler that must never run next to another holder's should return (or
    raise) soon after it sees the flag. Both stay set.
    ``cancel_requested`` is set when :meth:`Queue.cancel` asked a running job to stop; a
    handler sees it after the next heartbeat (claim time for a job claimed again).
    """

    id: int
    queue: str
    payload: Any
    priority: int
    status: str
    attempt: int
    max_attempts: int
    run_at: datetime | None
    lease_until: datetime | None
    idempotency_key: str
    dedupe_key: str | None = None
    last_error: str | None = None
    result: Any = None
    created_at: datetime | None = None
    finished_at: datetime | None = None
    #: seconds of lease asked for at the claim; the default for :meth:`Queue.heartbeat`
    lease: float | None = field(default=None, compare=False)
    lost: bool = field(default=False, compare=False)
    cancel_requested: bool = field(default=False, compare=False)
    lock_lost: bool = field(default=False, compare=False)
    #: the ``key`` it was enqueued with: jobs of one key run one at a time, in id order
    key: str | None = None
    #: a job enqueued with ``after=[...]``: its parents' results (parent id → result), read
    #: when it is claimed; empty for a job without parents, and on a job read by ``get``
    parent_results: dict[int, Any] = field(default_factory=dict, compare=False)

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~skiplock.Cancelled` if a cancel of this job was requested: a
        worker then ends the job ``cancelled``."""
        if self.cancel_requested:
            raise Cancelled(f"job {self.id} was cancelled")

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Job:
        """Build a job from a database row (column name → value). Raises
        :class:`~skiplock.PayloadError` when its stored payload or result cannot be decoded."""
        # Positional, in field order: a claim builds one per job (keywords cost ~1 us more).
        get = row.get
        return cls(
            int(row["id"]),
            str(row["queue"]),
            loads(row["payload"], "payload"),
            int(row["priority"]),
            str(row["status"]),
            int(row["attempt"]),
            int(row["max_attempts"]),
            utc(get("run_at")),
            utc(get("lease_until")),
            str(row["idempotency_key"]),
            get("dedupe_key"),
            get("last_error"),
            loads(get("result"), "result"),
            utc(get("created_at")),
            utc(get("finished_at")),
            None,  # lease
            False,  # lost
            bool(get("cancel_requested")),
            False,  # lock_lost
            get("order_key"),
        )


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts of jobs by state, on the database's clock.

    ``pending`` are claimable now, ``scheduled`` wait for their ``run_at``, ``waiting`` for
    their parents (``after=[...]``), ``running`` hold
    a live lease, ``expired`` are running with a lease that has ended (their worker is
    presumed dead; the next claim takes them back). ``oldest_pending_age`` is in seconds,
    or None when nothing is pending.

    ``pruned`` is the table's running total of finished jobs deleted by retention (any
    worker's) and :func:`skiplock.prune`, over all its queues whatever *queues* asked;
    ``last_pruned_at`` when a batch last deleted some (None: never).
    """

    pending: int = 0
    scheduled: int = 0
    running: int = 0
    expired: int = 0
    done: int = 0
    failed: int = 0
    oldest_pending_age: float | None = None
    cancelled: int = 0
    pruned: int = 0
    last_pruned_at: datetime | None = None
    #: enqueued with ``after=[...]``, waiting for their parents to end
    waiting: int = 0

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Stats:
        age = row.get("oldest_pending_age")
        return cls(
            pending=int(row.get("pending") or 0),
            scheduled=int(row.get("scheduled") or 0),
            running=int(row.get("running") or 0),
            expired=int(row.get("expired") or 0),
            done=int(row.get("done") or 0),
            failed=int(row.get("failed") or 0),
            oldest_pending_age=None if age is None else max(0.0, float(age)),
            cancelled=int(row.get("cancelled") or 0),
            pruned=int(row.get("pruned") or 0),
            last_pruned_at=utc(row.get("last_pruned_at")),
            waiting=int(row.get("waiting") or 0),
        )

    def as_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (``last_pruned_at`` in ISO 8601)."""
        return {
            "pending": self.pending,
            "scheduled": self.scheduled,
            "running": self.running,
            "expired": self.expired,
            "done": self.done,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "oldest_pending_age": self.oldest_pending_age,
            "pruned": self.pruned,
            "last_pruned_at": None
            if self.last_pruned_at is None
            else self.last_pruned_at.isoformat(),
            "waiting": self.waiting,
        }
