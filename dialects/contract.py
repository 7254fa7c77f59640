"""The dialect contract: what a dialect provides, split by role (:class:`Jobs`,
:class:`Control`, :class:`Workflows`, :class:`Wakeups`, :class:`SingleLock`,
:class:`SchemaStore`, on :class:`Connections`), :class:`Dialect` being their union.

Callers above ``dialects/`` use these methods only: each is named for what it does and
takes typed parameters (:mod:`skiplock._core.params`); none names a statement. This is
also the only skiplock module a dialect imports from (it re-exports what they need).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, Protocol

from skiplock._core.claim import ClaimParams, ClaimSQL
from skiplock._core.ops import (
    COMMIT,
    LASTROWID,
    NOTHING,
    ROLLBACK,
    ROWCOUNT,
    ROWS,
    TUPLES,
    Copy,
    ErrorInfo,
    Op,
    Statement,
    StatementError,
    Tuples,
)
from skiplock._core.options import BOOL, INT, TEXT, Option, check_options
from skiplock._core.params import (
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
    Outcome,
    TickEnqueueParams,
    WorkerRegisterParams,
)
from skiplock._core.sql import TableName, load_statements, render_statements
from skiplock._core.url import DatabaseURL, mask_password
from skiplock.drivers import Adapter, mssql_connect, mysql_connect, postgresql_connect
from skiplock.drivers.aio import AsyncAdapter, ThreadAdapter, opened
from skiplock.drivers.health import is_usable, is_usable_async
from skiplock.drivers.mssql import PymssqlAdapter
from skiplock.drivers.mysql import MySQLConnectorAdapter
from skiplock.drivers.postgresql import PsycopgAdapter
from skiplock.drivers.run import run_sync
from skiplock.drivers.run_async import run_async
from skiplock.errors import BackendError, ConfigurationError, LeaseLost, UnsupportedServer

from .capabilities import Capabilities
from .state import RunState

__all__ = [
    "BOOL",
    "COMMIT",
    "INT",
    "LASTROWID",
    "NOTHING",
    "ROLLBACK",
    "ROWCOUNT",
    "ROWS",
    "TEXT",
    "TUPLES",
    "Adapter",
    "AsyncAdapter",
    "BackendError",
    "ClaimParams",
    "ConfigurationError",
    "Connections",
    "Control",
    "Copy",
    "DatabaseURL",
    "Dialect",
    "ErrorInfo",
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
    "Jobs",
    "LeaseLost",
    "MySQLConnectorAdapter",
    "Op",
    "Option",
    "Outcome",
    "PsycopgAdapter",
    "PymssqlAdapter",
    "Row",
    "SchemaStore",
    "ServerInfo",
    "SingleLock",
    "Statement",
    "StatementError",
    "TableName",
    "ThreadAdapter",
    "TickEnqueueParams",
    "Tuples",
    "UnsupportedServer",
    "Wakeup",
    "Wakeups",
    "WorkerRegisterParams",
    "Workflows",
    "check_options",
    "is_usable",
    "is_usable_async",
    "load_statements",
    "mask_password",
    "mssql_connect",
    "mysql_connect",
    "opened",
    "postgresql_connect",
    "render_statements",
    "run_async",
    "run_sync",
]

Row = dict[str, Any]
#: how an idle worker is woken: ``notify`` (LISTEN/NOTIFY), ``probe`` (a cheap read of a
#: counter), ``none`` (polling only)
Wakeup = Literal["notify", "probe", "none"]


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself."""

    product: str  #: "PostgreSQL", "MySQL", "MariaDB", "SQL Server"
    version: tuple[int, ...]
    version_string: str
    driver: str = ""  #: our own driver, where there is a choice


class Connections(Protocol):
    """What it is, its driver, its errors and its sessions. ``conn`` is a connection of
    :meth:`connect`."""

    url: DatabaseURL
    table: TableName
    #: the URL's query options, checked and converted
    options: dict[str, Any]
    caps: Capabilities
    #: what the queue's operations change as they run (shared by its threads)
    state: RunState

    @property
    def name(self) -> str:
        """``postgresql``, ``mysql``, ``mssql``."""
        ...

    @property
    def URL_OPTIONS(self) -> Mapping[str, Option]: ...

    @property
    def script_end(self) -> str:
        """What ends a statement in a printed script."""
        ...

    @property
    def driver_module(self) -> str: ...

    @property
    def supports_notify(self) -> bool:
        """LISTEN/NOTIFY wakes idle workers and carries cancel requests."""
        ...

    @property
    def async_in_thread(self) -> bool:
        """No asyncio driver: the AsyncQueue runs the sync one in a thread."""
        ...

    @property
    def driver(self) -> ModuleType: ...

    def connect(self) -> Any: ...

    async def connect_async(self) -> AsyncAdapter: ...

    def adapter(self, conn: Any) -> Adapter: ...

    def driver_errors(self) -> tuple[type[BaseException], ...]: ...

    def server_info(self, conn: Any) -> ServerInfo: ...

    async def server_info_async(self, own: AsyncAdapter) -> ServerInfo: ...

    def for_server(self, server: ServerInfo) -> Dialect:
        """The dialect for what :meth:`server_info` read (a new one where the product
        changes what it does: MySQL or MariaDB behind one scheme); fixed once made."""
        ...

    def is_closed(self, conn: Any) -> bool: ...

    def is_usable(self, conn: Any) -> bool: ...

    def is_usable_async(self, own: AsyncAdapter) -> bool: ...

    def quote(self, ident: str) -> str: ...

    def classify(self, info: ErrorInfo) -> tuple[bool, bool]:
        """``(retryable, connection_lost)``."""
        ...

    def wrap(
        self, exc: BaseException, doing: str, info: ErrorInfo | None = None
    ) -> BackendError: ...

    def begin_sql(self) -> str: ...

    @property
    def idle_transaction_timeout(self) -> float | None: ...

    def idle_limit_sql(self) -> tuple[str, ...]: ...

    def exempt_begin_sql(self) -> tuple[str, ...]: ...

    def exempt_end_sql(self) -> tuple[str, ...]: ...


class Jobs(ClaimSQL, Protocol):
    """Enqueue, claim (the claim's statements: :class:`~skiplock._core.claim.ClaimSQL`),
    the writes after a claim, and reads of jobs. Every write after a claim is fenced by
    ``id``, ``attempt`` and ``claim_id``."""

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
        """Write each outcome, fenced; the status afterwards of each job still held (a job
        left out lost its lease). Jobs that ended settle their waiting children in the
        same transaction. Completions of many jobs are one round trip."""
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


class Wakeups(Protocol):
    """How an idle worker learns at once that a job was enqueued."""

    @property
    def wakeup(self) -> Wakeup: ...

    @property
    def wake_marks(self) -> bool:
        """The enqueue trigger notifies only workers marked waiting."""
        ...

    def listen(self) -> Any: ...

    def wait_notify(self, conn: Any, timeout: float, cancels: list[int] | None = None) -> bool: ...

    def listen_pid(self, conn: Any) -> int: ...

    def wake_mark_op(self, pid: int, sweep: bool) -> Op[None]: ...

    def wake_settled_op(self) -> Op[bool]: ...

    def wake_unmark_op(self, pid: int) -> Op[None]: ...

    def notify_stop(self) -> Op[None]: ...

    def probe_connect(self) -> Any: ...

    def wake_probe(self, conn: Any) -> object: ...


class SingleLock(Protocol):
    """``mode="single"`` and ``migrate``'s lock, on connections of their own."""

    def supports_lock(self) -> bool: ...

    def lock_acquire(self, conn: Any, key: int, name: str, wait: float) -> bool: ...

    def lock_check(self, conn: Any, key: int, name: str) -> bool: ...

    def lock_release(self, conn: Any, key: int, name: str) -> None: ...

    def session_id(self, conn: Any) -> int | None: ...

    def node_local_locks_op(self) -> Op[bool]: ...

    def node_local_locks(self, conn: Any) -> bool: ...

    def cluster_lock_op(self, holder: str, stale_s: float) -> Op[bool]: ...

    def cluster_unlock_op(self, holder: str) -> Op[None]: ...

    def count_sessions(self, conn: Any, sessions: Sequence[int]) -> int: ...


class SchemaStore(Protocol):
    """The table's schema version and its migrations."""

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


class Dialect(Connections, Jobs, Control, Workflows, Wakeups, SingleLock, SchemaStore, Protocol):
    """One database: every role of the contract."""
