"""The dialect contract: role protocols, :class:`Dialect` their union; methods named for
what they do, taking typed parameters, never a statement's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Literal, Protocol

from skiplock._core.claim import ClaimParams
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
from skiplock._core.roles import Control, Jobs, Operations, SchemaStore, ServerInfo, Workflows
from skiplock._core.sql import (
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
    TableName,
    Tuples,
    load_statements,
    render_statements,
)
from skiplock.drivers import Adapter
from skiplock.drivers import mssql as mssql_driver
from skiplock.drivers import mysql as mysql_driver
from skiplock.drivers import postgresql as postgresql_driver
from skiplock.drivers.base import is_usable
from skiplock.drivers.base_async import AsyncAdapter, ThreadAdapter, is_usable_async, opened
from skiplock.drivers.mssql import PymssqlAdapter
from skiplock.drivers.mysql import MySQLConnectorAdapter
from skiplock.drivers.postgresql import PsycopgAdapter
from skiplock.drivers.url import DatabaseURL, mask_password
from skiplock.errors import BackendError, ConfigurationError, LeaseLost, UnsupportedServer

from .capabilities import Capabilities

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
    "Operations",
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
    "mssql_driver",
    "mysql_driver",
    "opened",
    "postgresql_driver",
    "render_statements",
]

Row = dict[str, Any]
#: how an idle worker is woken: ``notify`` (LISTEN/NOTIFY), ``probe`` (a cheap read of a
#: counter), ``none`` (polling only)
Wakeup = Literal["notify", "probe", "none"]


class Connections(Protocol):
    """What it is, its driver, its errors and its sessions."""

    url: DatabaseURL
    table: TableName
    #: the URL's query options, checked and converted
    options: dict[str, Any]
    caps: Capabilities

    @property
    def released(self) -> int:
        """Jobs released by parents' ends so far (a worker claims again when it grew)."""
        ...

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
        """The dialect for what :meth:`server_info` read (MySQL or MariaDB behind one
        scheme)."""
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


class Wakeups(Protocol):
    """How an idle worker learns at once that a job was enqueued."""

    @property
    def wakeup(self) -> Wakeup: ...

    @property
    def wake_marks(self) -> bool:
        """The enqueue trigger notifies only workers marked waiting."""
        ...

    def wake_listen(self) -> Any: ...

    def wake_wait(self, conn: Any, timeout: float, cancels: list[int] | None = None) -> bool: ...

    def wake_listener_pid(self, conn: Any) -> int: ...

    def wake_mark(self, pid: int, sweep: bool) -> Op[None]: ...

    def wake_settled(self) -> Op[bool]: ...

    def wake_unmark(self, pid: int) -> Op[None]: ...

    def wake_stop(self) -> Op[None]: ...

    def wake_probe_connect(self) -> Any: ...

    def wake_probe(self, conn: Any) -> object: ...


class SingleLock(Protocol):
    """``mode="single"`` and ``migrate``'s lock, on connections of their own."""

    def supports_lock(self) -> bool: ...

    def lock_acquire(self, conn: Any, key: int, name: str, wait: float) -> bool: ...

    def lock_check(self, conn: Any, key: int, name: str) -> bool: ...

    def lock_release(self, conn: Any, key: int, name: str) -> None: ...

    def session_id(self, conn: Any) -> int | None: ...

    def lock_is_node_local_op(self) -> Op[bool]: ...

    def lock_is_node_local(self, conn: Any) -> bool: ...

    def migrate_lock_acquire(self, holder: str, stale_s: float) -> Op[bool]: ...

    def migrate_lock_release(self, holder: str) -> Op[None]: ...

    def count_sessions(self, conn: Any, sessions: Sequence[int]) -> int: ...


class Dialect(Connections, Jobs, Control, Workflows, Wakeups, SingleLock, SchemaStore, Protocol):
    """One database: every role of the contract."""
