"""The job record and queue statistics (public as :mod:`skiplock.job`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from operator import itemgetter
from typing import Any

from ..errors import Cancelled, SkiplockError
from .checks import STATUSES, integer, loads
from .checks import seconds as _seconds

__all__ = ["MAX_SNOOZES", "STATUSES", "Claimed", "Job", "Snooze", "Stats", "utc"]


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

    ``attempt`` and ``claim_id`` are its fencing token, new at every claim;
    ``idempotency_key`` stays the same across attempts (pass it to outside services).
    ``lost``: a heartbeat found the job taken away; ``lock_lost``: a single-mode worker lost
    its lock while it ran (return soon); ``cancel_requested``: ``Queue.cancel`` asked it to
    stop. ``waited``: seconds from due to claim."""

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
    #: the ``headers`` it was enqueued with (empty: none)
    headers: dict[str, str] = field(default_factory=dict)
    #: seconds from due to claim on the database's clock (claimed jobs only)
    waited: float | None = field(default=None, compare=False)
    #: the token of the claim that returned it (random, unique for ever): every write after
    #: the claim names it with ``attempt``, so a claim that a database failover rolled back
    #: cannot be mistaken for a later claim of the same attempt (None: claimed before the
    #: migration that added it, 0010_claim_token)
    claim_id: int | None = None
    #: what :meth:`Queue.set_progress` last stored (JSON); read by :meth:`Queue.get` and
    #: :meth:`Queue.list_jobs` (a claim does not read it)
    progress: Any = None
    #: how many times the job was snoozed (:class:`~skiplock.Snooze`, :meth:`Queue.snooze`)
    snoozes: int = 0
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
        get = row.get
        return _build(
            cls,
            row["id"],
            row["queue"],
            row["payload"],
            row["priority"],
            row["status"],
            row["attempt"],
            row["max_attempts"],
            get("run_at"),
            get("lease_until"),
            row["idempotency_key"],
            get("dedupe_key"),
            get("last_error"),
            get("result"),
            get("created_at"),
            get("finished_at"),
            get("cancel_requested"),
            get("order_key"),
            get("headers"),
            get("waited_us"),
            get("claim_id"),
            get("progress"),
            get("snoozes"),
        )

    @classmethod
    def reader(cls, names: Sequence[str]) -> Callable[[Sequence[Any]], Job]:
        """:meth:`from_row` for tuple rows of the columns *names*."""
        at = {name: i for i, name in enumerate(names)}
        for name in _REQUIRED:
            if name not in at:
                raise KeyError(name)
        pad = len(names)  # the NULL appended to each row stands for a missing column
        pick = itemgetter(*(at.get(name, pad) for name in _COLUMNS))
        if all(name in at for name in _COLUMNS):

            def read(values: Sequence[Any]) -> Job:
                return _build(cls, *pick(values))

        else:

            def read(values: Sequence[Any]) -> Job:
                return _build(cls, *pick((*values, None)))

        return read


#: the columns a job is built from, in :func:`_build`'s order; the first seven and the
#: idempotency key are never NULL
_COLUMNS = (
    "id",
    "queue",
    "payload",
    "priority",
    "status",
    "attempt",
    "max_attempts",
    "run_at",
    "lease_until",
    "idempotency_key",
    "dedupe_key",
    "last_error",
    "result",
    "created_at",
    "finished_at",
    "cancel_requested",
    "order_key",
    "headers",
    "waited_us",
    "claim_id",
    "progress",
    "snoozes",
)
_REQUIRED = (*_COLUMNS[:7], "idempotency_key")


def _build(
    cls: type[Job],
    job_id: Any,
    queue: Any,
    payload: Any,
    priority: Any,
    status: Any,
    attempt: Any,
    max_attempts: Any,
    run_at: Any,
    lease_until: Any,
    idempotency_key: Any,
    dedupe_key: Any,
    last_error: Any,
    result: Any,
    created_at: Any,
    finished_at: Any,
    cancel_requested: Any,
    order_key: Any,
    headers: Any,
    waited_us: Any,
    claim_id: Any,
    progress: Any,
    snoozes: Any,
) -> Job:
    return cls(
        int(job_id),
        str(queue),
        loads(payload, "payload"),
        int(priority),
        str(status),
        int(attempt),
        int(max_attempts),
        utc(run_at),
        utc(lease_until),
        str(idempotency_key),
        dedupe_key,
        last_error,
        None if result is None else loads(result, "result"),
        utc(created_at),
        None if finished_at is None else utc(finished_at),
        None,  # lease
        False,  # lost
        bool(cancel_requested),
        False,  # lock_lost
        order_key,
        {} if headers is None else _headers(headers),
        None if waited_us is None else max(0.0, int(waited_us) / 1_000_000),
        claim_id,
        None if progress is None else loads(progress, "progress"),
        int(snoozes) if snoozes else 0,
    )


def _headers(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


#: the fields of a job's record as ``skiplock show`` and the dashboard give it (the
#: worker's own marks left out)
RECORD_FIELDS = [
    f.name for f in fields(Job) if f.name not in ("lease", "lost", "lock_lost", "waited")
]


def record(job: Job) -> dict[str, Any]:
    """The job's stored fields as JSON-ready values (times in ISO 8601, UTC)."""
    out: dict[str, Any] = {}
    for name in RECORD_FIELDS:
        value = getattr(job, name)
        out[name] = value.isoformat() if isinstance(value, datetime) else value
    return out


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts of jobs by state, on the database's clock: ``pending`` (claimable now),
    ``scheduled``, ``waiting`` (for parents), ``running``, ``expired`` (lease ended);
    ``pruned``: the table's total deleted; ``paused``: the paused queues asked for."""

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
    #: the paused queues among those asked for (all of them when none were named), sorted
    paused: tuple[str, ...] = ()
    #: enqueued with ``after=[...]``, waiting for their parents to end
    waiting: int = 0

    @classmethod
    def from_row(cls, row: Mapping[str, Any], paused: tuple[str, ...] = ()) -> Stats:
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
            paused=paused,
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
            "paused": list(self.paused),
            "waiting": self.waiting,
        }


class Claimed(list[Job]):
    """The jobs of a claim, a list."""

    retry_in: float | None = None


#: how many times a job may be snoozed unless told (then it ends failed)
MAX_SNOOZES = 1000


class Snooze(SkiplockError):
    """Raised by a handler: run the job again in ``seconds``, no attempt used. After
    ``max_snoozes`` snoozes the job ends ``failed``.
    """

    def __init__(self, seconds: float, *, max_snoozes: int = MAX_SNOOZES) -> None:
        # the checks q.snooze makes, made here: a value it would refuse is refused where
        # the handler raises it, not later by the worker writing the outcome
        delay = _seconds(seconds, "Snooze(seconds)")
        self.max_snoozes = integer(max_snoozes, "Snooze(max_snoozes=)", 1)
        super().__init__(f"snoozed for {seconds} s")
        self.seconds = delay
