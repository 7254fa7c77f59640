"""The dialect contract: what a dialect provides (:class:`Dialect`, a ``Protocol``), and the
only skiplock module a dialect imports from.

Everything above the dialects (the shell's sessions and transactions, the call builders,
the worker and its services, the CLI) calls a dialect through :class:`Dialect` only, and
never names a statement: what a dialect can do beyond the common path it declares
(:attr:`Dialect.supports_notify`, :attr:`Dialect.wakeup`, :attr:`Dialect.wake_marks`,
:meth:`Dialect.supports_lock`).

What a dialect module needs from skiplock is re-exported here, so ``dialects/*.py`` import
``from .contract import …`` (and each other, and the standard library):

- the requests of an operation and their answers (:mod:`skiplock._core.ops`), the URL
  option types (:mod:`skiplock._core.options`), the statement loader
  (:mod:`skiplock._core.sql`), the parsed URL;
- the errors a dialect raises or wraps;
- its own driver: the adapter class of the connections it opens and the module that opens
  them (``skiplock.drivers.<database>_connect``: connect, LISTEN, socket health); a dialect
  gives that module its keywords and statements, and holds no driver call itself;
- the loops (``run_sync``, ``run_async``) that run an operation on one connection, for the
  sync helpers on skiplock's own connections (single-worker lock, server version).

May import: :mod:`skiplock._core`, :mod:`skiplock.drivers.run`, :mod:`skiplock.drivers.run_async`,
:mod:`skiplock.drivers`, :mod:`skiplock.errors`. Nothing here imports a dialect.
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
from skiplock._core.sql import TableName, load_statements, render_statements
from skiplock._core.url import DatabaseURL, mask_password
from skiplock.drivers import Adapter
from skiplock.drivers import mssql as mssql_driver
from skiplock.drivers import mysql as mysql_driver
from skiplock.drivers import postgresql as postgresql_driver
from skiplock.drivers.aio import AsyncAdapter, ThreadAdapter, is_usable_async, opened
from skiplock.drivers.base import is_usable
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
    "Completion",
    "ConfigurationError",
    "Copy",
    "DatabaseURL",
    "Dialect",
    "ErrorInfo",
    "LeaseLost",
    "MySQLConnectorAdapter",
    "Op",
    "Option",
    "PsycopgAdapter",
    "PymssqlAdapter",
    "Row",
    "ServerInfo",
    "Statement",
    "StatementError",
    "TableName",
    "ThreadAdapter",
    "Tuples",
    "UnsupportedServer",
    "Wakeup",
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
    "run_async",
    "run_sync",
]

Row = dict[str, Any]
#: one job of a batch completion: ``(id, attempt, claim_id, result_json)``, fenced by the
#: first three
Completion = tuple[int, int, int | None, str | None]
#: how an idle worker learns at once that a job was enqueued: ``notify`` (LISTEN/NOTIFY on a
#: connection of :meth:`Dialect.listen`), ``probe`` (:meth:`Dialect.wake_probe` read on a
#: connection of :meth:`Dialect.probe_connect`), ``none`` (polling only)
Wakeup = Literal["notify", "probe", "none"]


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself."""

    product: str  #: "PostgreSQL", "MySQL", "MariaDB", "SQL Server"
    version: tuple[int, ...]
    version_string: str
    #: the driver our own connections use, where it matters (``mysql-connector-python
    #: 9.7.0, C extension``); empty where there is only one way
    driver: str = ""


class Dialect(ClaimSQL, Protocol):
    """One database: its statements, the operations that need more than one statement
    there, error classification, and the capabilities it declares. Operations are
    generators of requests (see :mod:`skiplock._core.ops`), run by the shell on a
    connection; the ``conn`` methods run on a connection of :meth:`connect`. The claim's
    statements and steps are :class:`~skiplock._core.claim.ClaimSQL`'s."""

    # -- what it is ---------------------------------------------------------------------
    url: DatabaseURL
    table: TableName
    #: the URL's query options, checked and converted (see URL_OPTIONS)
    options: dict[str, Any]
    #: the statements by name, rendered for :attr:`table`
    sql: dict[str, str]
    #: what those statements can do, fixed when the dialect is made
    caps: Capabilities
    #: what the queue's operations change as they run (``state.released``: jobs released by
    #: parents' ends, counted as the release ran; a worker claims again at once when it
    #: grew during its own write)
    state: RunState

    @property
    def name(self) -> str:
        """``postgresql``, ``mysql``, ``mssql``."""
        ...

    @property
    def URL_OPTIONS(self) -> Mapping[str, Option]:
        """The URL query options it hands its driver (docs/getting-started.md)."""
        ...

    @property
    def script_end(self) -> str:
        """What ends a statement in a printed script (``skiplock sql``)."""
        ...

    @property
    def driver_module(self) -> str:
        """The module name of skiplock's own driver (``psycopg``, ``mysql.connector``)."""
        ...

    # -- capabilities ---------------------------------------------------------------------
    @property
    def supports_notify(self) -> bool:
        """LISTEN/NOTIFY can wake idle workers, and carries cancel requests."""
        ...

    @property
    def async_in_thread(self) -> bool:
        """No asyncio driver: the AsyncQueue runs the sync driver in a thread."""
        ...

    @property
    def wakeup(self) -> Wakeup:
        """How an idle worker is woken (see :data:`Wakeup`)."""
        ...

    @property
    def wake_marks(self) -> bool:
        """The enqueue trigger notifies only while a worker has marked itself waiting
        (:meth:`wake_mark_op`); False where it always notifies."""
        ...

    def supports_lock(self) -> bool:
        """It can run ``mode="single"`` (:meth:`lock_acquire` and the rest)."""
        ...

    # -- the driver -----------------------------------------------------------------------
    @property
    def driver(self) -> ModuleType: ...

    def connect(self) -> Any: ...

    async def connect_async(self) -> AsyncAdapter: ...

    def adapter(self, conn: Any) -> Adapter: ...

    def driver_errors(self) -> tuple[type[BaseException], ...]: ...

    def server_info(self, conn: Any) -> ServerInfo: ...

    async def server_info_async(self, own: AsyncAdapter) -> ServerInfo: ...

    def is_closed(self, conn: Any) -> bool: ...

    def is_usable(self, conn: Any) -> bool: ...

    def is_usable_async(self, own: AsyncAdapter) -> bool: ...

    # -- errors and sessions ---------------------------------------------------------------
    def quote(self, ident: str) -> str: ...

    def classify(self, info: ErrorInfo) -> tuple[bool, bool]: ...

    def wrap(
        self, exc: BaseException, doing: str, info: ErrorInfo | None = None
    ) -> BackendError: ...

    def migration_done(self, info: ErrorInfo) -> bool: ...

    def migration_applies(self, statement: str) -> bool: ...

    def begin_sql(self) -> str: ...

    @property
    def idle_transaction_timeout(self) -> float | None: ...

    def idle_limit_sql(self) -> tuple[str, ...]: ...

    def exempt_begin_sql(self) -> tuple[str, ...]: ...

    def exempt_end_sql(self) -> tuple[str, ...]: ...

    # -- statements and operations ---------------------------------------------------------
    def stmt(
        self, name: str, params: Mapping[str, Any] | None = None, want: int = ROWS
    ) -> Statement: ...

    def fetch_op(self, name: str, params: Mapping[str, Any] | None = None) -> Op[list[Row]]: ...

    def fetch_one_op(
        self, name: str, params: Mapping[str, Any] | None = None
    ) -> Op[Row | None]: ...

    def count_op(self, name: str, params: Mapping[str, Any] | None = None) -> Op[int]: ...

    def statements_op(self, name: str) -> Op[None]: ...

    def insert(self, params: Mapping[str, Any]) -> Op[int]: ...

    def insert_dedupe(self, params: Mapping[str, Any]) -> Op[int]: ...

    def insert_many(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]: ...

    def pause_op(self, queue: str, paused: bool) -> Op[None]: ...

    def paused_op(self) -> Op[set[str]]: ...

    def fenced(self, name: str, params: Mapping[str, Any]) -> Op[None]: ...

    def heartbeat(self, params: Mapping[str, Any]) -> Op[Row]: ...

    def complete_many(self, items: Sequence[Completion]) -> Op[set[int]]: ...

    def cancel(self, job_id: int) -> Op[str | None]: ...

    def prune_op(self, params: Mapping[str, Any]) -> Op[int]: ...

    def enqueue_tick(
        self, key: Mapping[str, Any], params: Mapping[str, Any], prune: Mapping[str, Any]
    ) -> Op[int | None]: ...

    # -- job control: snooze, dedupe windows, debounce ---------------------------------------
    def snooze(self, params: Mapping[str, Any]) -> Op[str]: ...

    def insert_controlled(self, params: Mapping[str, Any]) -> Op[int]: ...

    def insert_keyed_many(self, items: Sequence[Mapping[str, Any]]) -> Op[list[int]]: ...

    @property
    def finish_notify(self) -> bool: ...

    def listen_finished(self, job_id: int) -> Any: ...

    def wait_finished(self, conn: Any, job_id: int, timeout: float) -> bool: ...

    def close_listener(self, conn: Any) -> None: ...

    # -- on one of skiplock's own connections -----------------------------------------------
    def run(self, conn: Any, name: str, params: Mapping[str, Any] | None = None) -> int: ...

    def fetch_one(
        self, conn: Any, name: str, params: Mapping[str, Any] | None = None
    ) -> Row | None: ...

    def lock_acquire(self, conn: Any, key: int, name: str, wait: float) -> bool: ...

    def node_local_locks_op(self) -> Op[bool]: ...

    def node_local_locks(self, conn: Any) -> bool: ...

    def cluster_lock_op(self, holder: str, stale_s: float) -> Op[bool]: ...

    def cluster_unlock_op(self, holder: str) -> Op[None]: ...

    def lock_check(self, conn: Any, key: int, name: str) -> bool: ...

    def lock_release(self, conn: Any, key: int, name: str) -> None: ...

    def count_sessions(self, conn: Any, sessions: Sequence[int]) -> int: ...

    # -- wake-ups (see :attr:`wakeup`) ------------------------------------------------------
    def listen(self) -> Any: ...

    def wait_notify(self, conn: Any, timeout: float, cancels: list[int] | None = None) -> bool: ...

    def listen_pid(self, conn: Any) -> int: ...

    def wake_mark_op(self, pid: int, sweep: bool) -> Op[None]: ...

    def wake_settled_op(self) -> Op[bool]: ...

    def wake_unmark_op(self, pid: int) -> Op[None]: ...

    def notify_stop(self) -> Op[None]: ...

    def probe_connect(self) -> Any: ...

    def wake_probe(self, conn: Any) -> object: ...

    # -- workflows: enqueue(..., after=[...]) ---------------------------------------------

    def insert_parents(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]: ...

    def mark_children(self, ids: Sequence[int]) -> Op[None]: ...

    def lock_parents(self, parents: Sequence[int]) -> Op[dict[int, str]]: ...

    def depend(
        self, children: Sequence[int], parents: Mapping[int, str], run: bool, copy: bool = False
    ) -> Op[None]: ...

    def end(self, name: str, params: Mapping[str, Any]) -> Op[bool]: ...

    def settle(self, ended: Sequence[int]) -> Op[None]: ...

    def parent_results(self, children: Sequence[int]) -> Op[dict[int, dict[int, Any]]]: ...
