"""The typed parameters of the dialect contract's operations (frozen, checked already)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

__all__ = [
    "JobDependParams",
    "JobHeartbeatParams",
    "JobInsertManyParams",
    "JobInsertParams",
    "JobListParams",
    "JobLiveLeasesParams",
    "JobPruneParams",
    "JobRetryFailedParams",
    "JobSetProgressParams",
    "JobSetStateParams",
    "JobStatsParams",
    "Outcome",
    "TickEnqueueParams",
    "WorkerRegisterParams",
]

#: what a job's outcome writes: ``done``, ``retry`` (pending, due after ``delay_ms``),
#: ``failed``, ``snooze`` (pending; failed at ``max_snoozes``), ``cancelled``,
#: ``release`` (pending, attempt not counted), ``unclaim`` (a claim of unknown outcome
#: given back)
Outcome = Literal["done", "retry", "failed", "snooze", "cancelled", "release", "unclaim"]


@dataclass(frozen=True, slots=True)
class JobInsertParams:
    """One job to enqueue (or, for :class:`JobInsertManyParams`, what its rows share)."""

    queue: str
    priority: int
    max_attempts: int
    run_at: datetime | None
    delay_ms: int
    order_key: str | None
    key_limit: int | None
    headers: str | None
    key_rate: int | None
    key_rate_ms: int | None
    payload: str = "null"
    idempotency_key: str = ""
    dedupe_key: str | None = None
    #: ``dedupe_for`` in milliseconds (0: none)
    dedupe_ms: int = 0
    #: the key of a debounce (then ``dedupe_key`` is None)
    debounce_key: str | None = None
    #: the lock of a dedupe key's enqueues (``dedupe_for``, ``debounce``, ``dedupe_keys``)
    control_lock: str | None = None


@dataclass(frozen=True, slots=True)
class JobInsertManyParams:
    """Many jobs sharing *common*: ``(payload_json, idempotency_key)`` *rows*."""

    common: JobInsertParams
    rows: Sequence[tuple[str, str]]
    copy: bool = False
    parents: bool = False


@dataclass(frozen=True, slots=True)
class JobSetStateParams:
    """One outcome of a claimed job, fenced by ``id``, ``attempt`` and ``claim_id``."""

    id: int
    attempt: int
    claim_id: int | None
    outcome: Outcome
    result: str | None = None
    error: str | None = None
    delay_ms: int | None = None
    max_snoozes: int | None = None
    #: ``unclaim``: the lease's end the claim wrote
    lease_until: datetime | None = None


@dataclass(frozen=True, slots=True)
class JobHeartbeatParams:
    id: int
    attempt: int
    claim_id: int | None
    lease_ms: int


@dataclass(frozen=True, slots=True)
class JobSetProgressParams:
    id: int
    attempt: int
    claim_id: int | None
    progress: str


@dataclass(frozen=True, slots=True)
class JobDependParams:
    """New jobs *children* waiting for *parents* (status by id, as locked); *run*: they
    run after a parent failed too."""

    children: Sequence[int]
    parents: dict[int, str]
    run: bool
    copy: bool = False


@dataclass(frozen=True, slots=True)
class JobListParams:
    statuses: tuple[str, ...] | None
    queue: str | None
    limit: int
    before_id: int
    task: str | None = None


@dataclass(frozen=True, slots=True)
class JobStatsParams:
    #: None: every queue
    queues: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class JobRetryFailedParams:
    #: None: every failed job
    ids: tuple[int, ...] | None
    queues: tuple[str, ...] | None
    attempts: int | None


@dataclass(frozen=True, slots=True)
class JobPruneParams:
    statuses: tuple[str, ...]
    older_ms: int
    limit: int


@dataclass(frozen=True, slots=True)
class JobLiveLeasesParams:
    margin_s: int
    limit: int


@dataclass(frozen=True, slots=True)
class WorkerRegisterParams:
    id: str
    host: str
    pid: int
    #: the queue names, as JSON text
    queues: str
    concurrency: int
    beat_ms: int
    #: rows of workers not seen for this long are deleted first
    forget_s: int


@dataclass(frozen=True, slots=True)
class TickEnqueueParams:
    """A periodic *schedule*'s *tick* and its *job*; the schedule's ticks before *before*
    are dropped."""

    schedule: str
    tick: datetime
    before: datetime
    job: JobInsertParams
