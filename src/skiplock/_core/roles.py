"""The roles of the dialect contract that the core calls (:class:`Operations`, their union);
``skiplock.dialects.contract`` re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .claim import ClaimSQL
from .params import (
    JobDependParams,
    JobHeartbeatParams,
    JobInsertManyParams,
    JobInsertParams,
    JobListParams,
    JobLiveLeasesParams,
    JobPruneParams,
    JobRetryFailedParams,
    JobSetProgressParams,
    JobSetStateParams,
    JobStatsParams,
    TickEnqueueParams,
    WorkerRegisterParams,
)
from .sql import ErrorInfo, Op, Row, TableName

__all__ = ["Control", "Jobs", "Operations", "SchemaStore", "ServerInfo", "Workflows"]


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself."""

    product: str  #: "PostgreSQL", "MySQL", "MariaDB", "SQL Server"
    version: tuple[int, ...]
    version_string: str
    driver: str = ""  #: our own driver, where there is a choice


class Jobs(ClaimSQL, Protocol):
    """Enqueue, claim (the claim's statements: :class:`~skiplock._core.claim.ClaimSQL`), the
    writes after a claim, and reads of jobs."""

    def job_insert(self, p: JobInsertParams) -> Op[int]: ...

    def job_insert_dedupe(self, p: JobInsertParams) -> Op[int]:
        """Insert, or the id of the active job holding ``p.dedupe_key``."""
        ...

    def job_insert_controlled(self, p: JobInsertParams) -> Op[int]:
        """An enqueue under its key's lock (``dedupe_for``, ``debounce``)."""
        ...

    def job_insert_keyed_many(self, items: Sequence[JobInsertParams]) -> Op[list[int]]: ...

    def job_insert_many(self, p: JobInsertManyParams) -> Op[list[int]]:
        """Ids in the order of ``p.rows``."""
        ...

    def job_set_state_if_running(self, states: Sequence[JobSetStateParams]) -> Op[dict[int, str]]:
        """Write each outcome, fenced; the status of each job still held (one left out lost
        its lease)."""
        ...

    def job_heartbeat(self, p: JobHeartbeatParams) -> Op[Row]:
        """Fenced (``LeaseLost``); the job's ``lease_until`` and ``cancel_requested``."""
        ...

    def job_set_progress(self, p: JobSetProgressParams) -> Op[None]:
        """Fenced (``LeaseLost``)."""
        ...

    def job_cancel(self, job_id: int) -> Op[str | None]:
        """Cancel a pending job or ask a running one to stop; its status afterwards."""
        ...

    def job_get(self, job_id: int) -> Op[Row | None]: ...

    def job_list(self, p: JobListParams) -> Op[list[Row]]: ...

    def job_stats(self, p: JobStatsParams) -> Op[Row | None]: ...

    def job_status_many(self, ids: Sequence[int]) -> Op[list[Row]]:
        """``id`` and ``status`` of each of *ids* that exists."""
        ...

    def job_get_many(self, ids: Sequence[int]) -> Op[list[Row]]: ...

    def job_retry_failed(self, p: JobRetryFailedParams) -> Op[int]: ...

    def job_prune(self, p: JobPruneParams) -> Op[int]:
        """One batch of finished jobs deleted (and counted); the rows deleted."""
        ...

    def job_live_leases(self, p: JobLiveLeasesParams) -> Op[list[Row]]:
        """Running jobs whose lease was renewed less than ``p.margin_s`` s ago."""
        ...

    def clock_now(self) -> Op[Any]:
        """The database's clock."""
        ...

    @property
    def finish_notify(self) -> bool:
        """``q.wait`` is woken by the job's end; otherwise it polls."""
        ...

    def listen_finished(self, job_id: int) -> Any: ...

    def wait_finished(self, conn: Any, job_id: int, timeout: float) -> bool: ...

    def close_listener(self, conn: Any) -> None: ...


class Control(Protocol):
    """Queues, the live worker list, periodic ticks, the dashboard's reads."""

    def queue_pause(self, queue: str, paused: bool) -> Op[None]: ...

    def queue_paused_list(self) -> Op[set[str]]: ...

    def queue_overview(self, window_s: int, cap: int) -> Op[tuple[list[Row], list[Row]]]:
        """Active counts by queue, and what finished in the last *window_s* seconds."""
        ...

    def worker_register(self, p: WorkerRegisterParams) -> Op[None]: ...

    def worker_beat(self, worker_id: str, in_flight: int) -> Op[int]: ...

    def worker_unregister(self, worker_id: str) -> Op[int]: ...

    def worker_list(self) -> Op[list[Row]]: ...

    def tick_enqueue(self, p: TickEnqueueParams) -> Op[int | None]:
        """Record the tick and enqueue its job; None, nothing written, when another
        scheduler recorded it first."""
        ...

    def tick_last(self, schedule: str) -> Op[Any]:
        """The newest tick of *schedule* (None: never ran)."""
        ...

    def tick_list(self) -> Op[list[Row]]: ...


class Workflows(Protocol):
    """``enqueue(..., after=[...])``: edges, settling, the parents' results."""

    def job_lock_parents(self, parents: Sequence[int]) -> Op[dict[int, str]]:
        """Their statuses, locked and marked ``has_children``; ``ConfigurationError``
        when one does not exist."""
        ...

    def job_mark_parents(self, ids: Sequence[int]) -> Op[None]: ...

    def job_depend(self, p: JobDependParams) -> Op[None]: ...

    # (settle and parent_results: ClaimSQL's)


class SchemaStore(Protocol):
    """The table's schema version and its migrations."""

    table: TableName

    def schema_state(self) -> Op[Row | None]:
        """``has_jobs``, ``has_version`` (and, where names fold case, ``jobs_name``)."""
        ...

    def schema_version_read(self) -> Op[int | None]: ...

    def schema_catalog(self) -> Op[list[Row]]:
        """The table's columns and indexes: ``kind``, ``name``."""
        ...

    def schema_session(self) -> Op[None]: ...

    def schema_version_table_create(self) -> Op[None]: ...

    def schema_record(self, version: int, name: str) -> Op[None]: ...

    def schema_uninstall(self) -> Op[None]: ...

    def schema_script(self, version: int, name: str) -> tuple[str, str]:
        """What :meth:`schema_version_table_create` and :meth:`schema_record` run, as
        printable SQL."""
        ...

    def migration_done(self, info: ErrorInfo) -> bool:
        """The migration statement failed only because its effect is already there."""
        ...

    def migration_applies(self, statement: str) -> bool: ...


class Operations(Jobs, Control, Workflows, SchemaStore, Protocol):
    """What the call builders ask of a dialect."""
