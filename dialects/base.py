"""The common path of the dialects: :class:`BaseDialect`; a dialect writes only what
differs, and says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import json
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import ModuleType
from typing import Any, ClassVar

from .capabilities import Capabilities
from .contract import (
    COMMIT,
    NOTHING,
    ROWCOUNT,
    ROWS,
    Adapter,
    AsyncAdapter,
    BackendError,
    ClaimParams,
    ConfigurationError,
    DatabaseURL,
    ErrorInfo,
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
    LeaseLost,
    Op,
    Option,
    Row,
    ServerInfo,
    Statement,
    StatementError,
    TableName,
    ThreadAdapter,
    TickEnqueueParams,
    Wakeup,
    WorkerRegisterParams,
    check_options,
    is_usable,
    is_usable_async,
    load_statements,
    mask_password,
    opened,
    render_statements,
)

__all__ = [
    "IDLE_TRANSACTION_TIMEOUT",
    "KEY_REPAIR_BATCH",
    "KEY_REPAIR_S",
    "BaseDialect",
    "Row",
    "RunState",
    "ServerInfo",
    "split_statements",
]

_PARAM = re.compile(r"%\((\w+)\)s")
#: one job of a batch completion: ``(id, attempt, claim_id, result_json)``
Completion = tuple[int, int, int | None, str | None]
#: the statement that writes each outcome, and the status it leaves
_OUTCOMES = {
    "done": ("complete", "done"),
    "retry": ("retry", "pending"),
    "failed": ("fail", "failed"),
    "cancelled": ("cancelled", "cancelled"),
    "release": ("release", "pending"),
    "unclaim": ("unclaim", "pending"),
}
#: the row-only fields of a :class:`JobInsertParams` (not shared by a batch's rows)
_ROW_FIELDS = frozenset({"payload", "idempotency_key"})
#: the fields of an enqueue under a key's lock only
_CONTROL_FIELDS = frozenset({"dedupe_ms", "debounce_key", "control_lock"})
#: what a batch's rows share: neither a row's fields nor a key's
_SHARED_DROP = _ROW_FIELDS | _CONTROL_FIELDS | {"dedupe_key"}


def values(p: Any, drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The statement parameters of the params object *p* (its fields by name)."""
    return {f: getattr(p, f) for f in _fields(type(p)) if f not in drop}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


_FIELDS: dict[type, tuple[str, ...]] = {}


# -- what a queue's operations change as they run (every other attribute stays as made) --

#: seconds between two runs of ``key_repair`` by one queue's claims
KEY_REPAIR_S = 10.0
#: what one run of ``key_repair`` reads at most: keys (PostgreSQL), index entries
#: (MySQL, MariaDB); the next run goes on from where it stopped
KEY_REPAIR_BATCH = 1000


class RunState:
    """One queue's counters and the key repair's place, shared by its threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._released = 0
        #: when the queue's next claim runs the key repair (time.monotonic())
        self.repair_due = 0.0
        self._repair_after: Any = None
        #: how much one run of the key repair reads
        self.repair_batch = KEY_REPAIR_BATCH

    @property
    def released(self) -> int:
        """Jobs released by parents' ends on this queue (a worker claims again when it
        grew)."""
        with self._lock:
            return self._released

    def count_released(self, n: int) -> None:
        with self._lock:
            self._released += n

    def repair_now(self) -> bool:
        """Whether the key repair runs now: True for one caller every :data:`KEY_REPAIR_S`
        seconds."""
        now = time.monotonic()
        with self._lock:
            if now < self.repair_due:
                return False
            self.repair_due = now + KEY_REPAIR_S
            return True

    @property
    def repair_after(self) -> Any:
        """Where the next key repair goes on (None: from the start)."""
        with self._lock:
            return self._repair_after

    @repair_after.setter
    def repair_after(self, value: Any) -> None:
        with self._lock:
            self._repair_after = value


#: see :attr:`BaseDialect.idle_transaction_timeout` (skiplock's own transactions take
#: milliseconds; a pause this long between two of their statements is a frozen client)
IDLE_TRANSACTION_TIMEOUT = 10.0


class BaseDialect:
    """One database: its statements, its operations, its capabilities."""

    name: ClassVar[str]
    sql_file: ClassVar[str]
    driver_module: ClassVar[str]
    #: the adapter of skiplock's own driver
    adapter_class: ClassVar[type[Adapter]]
    extra: ClassVar[str]
    #: the driver binds a Python list as an array (``= ANY(%(ids)s)``); otherwise lists are
    #: expanded into ``%(ids__0)s, %(ids__1)s, …`` for ``IN (%(ids)s)``
    array_params: ClassVar[bool] = False
    #: what ends a statement in a printed script (``skiplock sql``)
    script_end: ClassVar[str] = ";"
    #: the URL query options this dialect hands its driver, with their types (documented
    #: in docs/getting-started.md); any other is refused at connect()
    URL_OPTIONS: ClassVar[Mapping[str, Option]] = {}
    #: options refused with a reason: they would break a guarantee
    REFUSED_OPTIONS: ClassVar[Mapping[str, str]] = {}

    REQUIRED_STATEMENTS: ClassVar[frozenset[str]] = frozenset(
        {
            "schema_session",
            "schema_state",
            "schema_catalog",
            "schema_version",
            "schema_create",
            "schema_record",
            "uninstall",
            "enqueue",
            "enqueue_dedupe",
            "key_lock",
            "queue_lock",
            "queue_running",
            "find_dedupe",
            "heartbeat",
            "lease_of",
            "complete",
            "retry",
            "fail",
            "release",
            "unclaim",
            "cancel_pending",
            "cancel_running",
            "cancelled",
            "get",
            "stats",
            "retry_failed",
            "prune",
            "count_pruned",
            "list_jobs",
            "clock",
            "tick_claim",
            "tick_last",
            "tick_prune",
        }
    )

    def __init__(
        self,
        url: DatabaseURL,
        table: TableName,
        statements: Mapping[str, str] | None = None,
        state: RunState | None = None,
    ) -> None:
        """*statements*: rendered statements to hold instead of the ``.sql`` file's."""
        self.url = url
        self.table = table
        #: the URL's query options, checked and converted (see URL_OPTIONS)
        self.options: dict[str, Any] = check_options(
            url.flavor, url.options, self.URL_OPTIONS, self.REFUSED_OPTIONS
        )
        if statements is None:
            raw = load_statements("skiplock.dialects", self.sql_file)
            missing = self.REQUIRED_STATEMENTS - raw.keys()
            if missing:  # a packaging or editing mistake, never a user's
                raise RuntimeError(f"{self.sql_file} lacks statements {sorted(missing)}")
            statements = render_statements(raw, table, self.quote)
        self.sql: dict[str, str] = dict(statements)
        #: what the statements held can do, fixed here
        self.caps = Capabilities.of(self.sql)
        #: what the queue's operations change as they run, shared by its threads under its
        #: own lock (each queue makes its dialect): the dialect's attributes stay as made
        self.state = RunState() if state is None else state

    @property
    def released(self) -> int:
        """:attr:`RunState.released`."""
        return self.state.released

    # -- a connection's health (the driver's checks, where it tells more) ------------------

    def is_closed(self, conn: Any) -> bool:
        """The driver says *conn* is closed (the driver module's ``is_closed``)."""
        return False

    def fileno(self, conn: Any) -> int | None:
        """The socket of *conn* (-1 once closed), or None where the driver hides it."""
        return None

    def is_usable(self, conn: Any) -> bool:
        """False if an idle *conn* is known to be broken, found without a round trip."""
        return is_usable(conn, self.fileno, self.is_closed)

    def is_usable_async(self, own: AsyncAdapter) -> bool:
        """:meth:`is_usable` for a connection of :meth:`connect_async`."""
        return is_usable_async(own, self.is_usable)

    # -- how long one of skiplock's own sessions may sit idle inside a transaction ----------
    # A process frozen (SIGSTOP, a paused VM) or cut off without a reset between two
    # statements of one of skiplock's transactions keeps that transaction's row locks: a
    # job it was heartbeating stays locked after its lease ends, and every claim skips it.
    # Where the server can end such a session, each pooled connection asks it to after
    # IDLE_TRANSACTION_TIMEOUT; ``transaction()`` blocks (the caller's code runs between
    # their statements) and ``q.connection()`` are exempt.

    #: seconds (None: this server has no such setting; see docs/guarantees.md)
    @property
    def idle_transaction_timeout(self) -> float | None:
        return None

    def idle_limit_sql(self) -> tuple[str, ...]:
        """Statements that set the limit on a new pooled connection (committed after)."""
        return ()

    def exempt_begin_sql(self) -> tuple[str, ...]:
        """Statements run first in a ``transaction()`` block on a pooled connection."""
        return ()

    def exempt_end_sql(self) -> tuple[str, ...]:
        """Statements run last in that block, before its COMMIT or ROLLBACK."""
        return ()

    # -- driver ---------------------------------------------------------------------------

    @property
    def driver(self) -> ModuleType:
        try:
            return importlib.import_module(self.driver_module)  # (sys.modules after once)
        except ImportError as exc:
            raise ConfigurationError(
                f"the {self.url.flavor} driver ({self.driver_module}) is not installed: "
                f"pip install 'skiplock[{self.extra}]'"
            ) from exc

    def connect(self) -> Any:
        """A new driver connection: autocommit off, READ COMMITTED, UTC."""
        raise NotImplementedError

    def adapter(self, conn: Any) -> Adapter:
        """The adapter for a connection made by :meth:`connect`."""
        return self.adapter_class(conn, self.driver, owned=True)

    #: no asyncio driver is used: the AsyncQueue runs the sync driver in a thread
    async_in_thread: ClassVar[bool] = True

    async def connect_async(self) -> AsyncAdapter:
        """A new connection for the AsyncQueue (by default the sync driver's, in a thread)."""
        # a cancel while the thread connects closes the connection it then returns
        conn = await opened(asyncio.to_thread(self.connect), _close_sync)
        return ThreadAdapter(self.adapter(conn))

    async def server_info_async(self, own: AsyncAdapter) -> ServerInfo:
        """:meth:`server_info` on a connection of :meth:`connect_async`."""
        assert isinstance(own, ThreadAdapter)
        return await asyncio.to_thread(self.server_info, own.connection)

    def server_info(self, conn: Any) -> ServerInfo:
        """Read the server's product and version (raises ``UnsupportedServer`` if too old)."""
        raise NotImplementedError

    def for_server(self, server: ServerInfo) -> BaseDialect:
        """The dialect for *server* (this one, but where the product decides: MySQL's)."""
        return self

    def quote(self, ident: str) -> str:
        raise NotImplementedError

    def driver_errors(self) -> tuple[type[BaseException], ...]:
        """The exception classes of skiplock's own driver (raised while connecting)."""
        return (self.driver.Error,)

    def classify(self, info: ErrorInfo) -> tuple[bool, bool]:
        """``(retryable, connection_lost)`` for what an adapter read from a driver error."""
        raise NotImplementedError

    def wrap(self, exc: BaseException, doing: str, info: ErrorInfo | None = None) -> BackendError:
        """Our error for a driver error, with the password masked."""
        if isinstance(exc, StatementError):
            info, exc = exc.info, exc.cause
        if info is None:
            info = self.adapter_class(None, self.driver).error_info(exc)
        retryable, lost = self.classify(info)
        what = f"lost the connection while {doing}" if lost else f"failed while {doing}"
        text = mask_password(str(exc)).strip()
        if doing == "connecting":  # never connected, so nothing was lost
            what = "could not connect"
            if not retryable:
                text += " (check the user, password and database name in the URL)"
        err = BackendError(
            f"{self.url.flavor} at {self.url.masked()} {what}: {text}", retryable=retryable
        )
        err.connection_lost = lost
        return err

    # -- statements -----------------------------------------------------------------------

    def bind(self, sql: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """Expand list parameters for drivers that cannot bind arrays."""
        if self.array_params:
            return sql, dict(params)
        out: dict[str, Any] = {}
        lists: dict[str, str] = {}
        for key, value in params.items():
            if isinstance(value, (list, tuple)):
                if not value:
                    lists[key] = "NULL"
                    continue
                names = [f"{key}__{i}" for i in range(len(value))]
                out.update(zip(names, value, strict=True))
                lists[key] = ", ".join(f"%({n})s" for n in names)
            else:
                out[key] = value
        if lists:
            sql = _PARAM.sub(lambda m: lists.get(m[1], m[0]), sql)
        return sql, out

    def stmt(
        self, name: str, params: Mapping[str, Any] | None = None, want: int = ROWS
    ) -> Statement:
        """The request for statement *name* with *params* bound."""
        sql, bound = self.bind(self.sql[name], params or {})
        return Statement(sql, bound, want)

    def fetch_op(self, name: str, params: Mapping[str, Any] | None = None) -> Op[list[Row]]:
        rows: list[Row] = yield self.stmt(name, params)
        return rows

    def fetch_one_op(self, name: str, params: Mapping[str, Any] | None = None) -> Op[Row | None]:
        rows: list[Row] = yield self.stmt(name, params)
        return rows[0] if rows else None

    def count_op(self, name: str, params: Mapping[str, Any] | None = None) -> Op[int]:
        """Run one statement; the number of rows it matched."""
        n: int = yield self.stmt(name, params, ROWCOUNT)
        return n

    # Sync helpers on skiplock's own connections (single-worker lock, tests).

    def run(self, conn: Any, name: str, params: Mapping[str, Any] | None = None) -> int:
        """Run one statement on a connection of :meth:`connect`; rows matched."""
        return self.adapter(conn).run(self.count_op(name, params))

    def fetch_one(
        self, conn: Any, name: str, params: Mapping[str, Any] | None = None
    ) -> Row | None:
        return self.adapter(conn).run(self.fetch_one_op(name, params))

    # -- operations: the common path (generators: see skiplock._core.sql) ----------------------

    def begin_sql(self) -> str:
        """Starts a transaction on a connection in autocommit mode."""
        return "BEGIN"

    def migration_done(self, info: ErrorInfo) -> bool:
        """True when a migration statement failed only because its effect is already there."""
        return False

    def migration_applies(self, statement: str) -> bool:
        """Whether a migration statement runs on this server (``-- only on <product>``)."""
        return True

    def lock_key(self, params: Mapping[str, Any]) -> Op[None]:
        """Before an enqueue with ``order_key``: take the key's lock until this transaction
        ends."""
        if params.get("order_key") is not None:
            yield self.stmt("key_lock", params, ROWCOUNT)

    def repair_keys(self) -> Op[None]:
        """Before a claim, at most every ``KEY_REPAIR_S`` seconds: give waiting keys their
        head back."""
        if self.caps.key_repair and self.state.repair_now():
            yield from self.repair_flags()

    def repair_flags(self) -> Op[None]:
        """What :meth:`repair_keys` runs when it is due."""
        state = self.state
        batch = state.repair_batch
        [row] = yield self.stmt("key_repair", {"after": state.repair_after, "batch": batch})
        state.repair_after = row["last_key"] if int(row["n"]) >= batch else None

    def unwait_keys(self, keys: Iterable[str]) -> Op[None]:
        """Each of *keys*' first pending job no longer waits (its locks held)."""
        if self.caps.key_order:
            names = sorted(set(keys))
            if names:
                bound = names if self.array_params else json.dumps(names)
                yield self.stmt("key_next", {"keys": bound}, NOTHING)

    def lock_keys(self, keys: Iterable[str]) -> Op[None]:
        """Take the enqueue lock of each of *keys* (``key_lock``, waiting), in sorted order."""
        for key in sorted(set(keys)):
            yield self.stmt("key_lock", {"order_key": key}, ROWCOUNT)

    def lock_queue(self, queue: str) -> Op[bool]:
        """Try, without waiting, to take *queue*'s claim lock for this transaction; False
        while another transaction holds it."""
        row = yield from self.fetch_one_op("queue_lock", {"queue": queue})
        return bool(row and row["held"])

    # ==== pause and rate limits ====

    def queue_pause(self, queue: str, paused: bool) -> Op[None]:
        """Set *queue*'s paused flag (``queue_pause``)."""
        yield self.stmt("queue_pause", {"queue": queue, "paused": paused}, NOTHING)
        if not paused and self.supports_notify and self.caps.resume_notify:
            yield self.stmt("resume_notify", None, NOTHING)

    def queue_paused_list(self) -> Op[set[str]]:
        """The names of the paused queues."""
        if not self.caps.queue_pause:
            return set()
        rows: list[Row] = yield self.stmt("queues_paused")
        return {str(r["queue"]) for r in rows}

    # -- the claim's statements (skiplock._core.claim decides which run) -------------------

    #: no UPDATE … RETURNING: the claim picks rows, then takes them (MySQL, MariaDB)
    two_step_claim: ClassVar[bool] = False

    def claim_one(self, p: ClaimParams) -> Statement:
        raise NotImplementedError

    def claim_pick(self, p: ClaimParams) -> Statement:
        raise NotImplementedError

    def claim_take(
        self, picked: Sequence[tuple[int, int]], lease_until: datetime, claim_id: int
    ) -> Statement:
        raise NotImplementedError

    def claim_expire(self, picked: Sequence[tuple[int, int]]) -> Statement:
        raise NotImplementedError

    def claim_which(self, ids: Sequence[int]) -> Statement:
        raise NotImplementedError

    def try_keys(self, keys: Sequence[str]) -> Op[set[str]]:
        """Every key: a one-statement claim takes a key's lock in its statement."""
        return set(keys)
        yield

    def queue_running(self, queue: str) -> Statement:
        return self.stmt("queue_running", {"queue": queue})

    def rate_window(self, name: str, per_ms: int) -> Statement:
        return self.stmt("rate_window", {"queue": name, "per_ms": per_ms})

    def rate_prune(self, name: str, per_ms: int) -> Statement:
        return self.stmt("rate_prune", {"queue": name, "per_ms": per_ms}, NOTHING)

    def rate_record(self, name: str, n: int) -> Statement:
        return self.stmt("rate_record", {"queue": name, "n": n}, NOTHING)

    def key_admit(self, ids: Sequence[int], claim_id: int, lease_until: datetime) -> Statement:
        params = {"ids": list(ids), "claim_id": claim_id, "lease_until": lease_until}
        return self.stmt("key_admit", params, NOTHING)

    def key_defer(self, ids: Sequence[int], claim_id: int, delay_ms: int) -> Statement:
        params = {"ids": list(ids), "claim_id": claim_id, "delay_ms": delay_ms}
        return self.stmt("key_defer", params, NOTHING)

    def insert(self, params: Mapping[str, Any]) -> Op[int]:
        yield from self.lock_key(params)
        rows: list[Row] = yield self.stmt("enqueue", params)
        return int(rows[0]["id"])

    def insert_dedupe_once(
        self, params: Mapping[str, Any], name: str = "enqueue_dedupe"
    ) -> Op[int | None]:
        """Insert (statement *name*) unless an active job holds the key; None when one does."""
        rows: list[Row] = yield self.stmt(name, params)
        return int(rows[0]["id"]) if rows else None

    def insert_dedupe(self, params: Mapping[str, Any], name: str = "enqueue_dedupe") -> Op[int]:
        """Insert, or return the id of the active job holding the key."""
        yield from self.lock_key(params)
        # The existing job may finish between our insert and our look-up: try again.
        for _ in range(50):
            new_id = yield from self.insert_dedupe_once(params, name)
            if new_id is not None:
                return new_id
            row = yield from self.fetch_one_op("find_dedupe", params)
            if row is not None:
                return int(row["id"])
        raise BackendError(
            f"could not enqueue with dedupe_key {params['dedupe_key']!r}: it kept changing"
        )

    def insert_many(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]:
        """Insert ``(payload_json, idempotency_key)`` rows; ids in the same order."""
        raise NotImplementedError

    def fenced(self, name: str, params: Mapping[str, Any]) -> Op[None]:
        """A fenced write; raises ``LeaseLost`` unless it matched the row."""
        n: int = yield self.stmt(name, params, ROWCOUNT)
        if n != 1:
            raise LeaseLost(job_id=params["id"], attempt=params["attempt"])

    def end(self, name: str, params: Mapping[str, Any]) -> Op[bool]:
        """The fenced write *name* that ends a job (complete, fail, cancelled), as
        :meth:`fenced`."""
        if not self.caps.workflows:  # an older release's statements: no workflows
            yield from self.fenced(name, params)
            return False
        rows: list[Row] = yield self.stmt(name, params)
        if len(rows) != 1:
            raise LeaseLost(job_id=params["id"], attempt=params["attempt"])
        return bool(rows[0]["has_children"])

    def job_cancel(self, job_id: int) -> Op[str | None]:
        """Cancel a pending job, or ask a running one to stop."""
        params = {"id": job_id}
        key = None
        if self.caps.key_order:  # the key's lock first, then the job's row (key_next)
            row = yield from self.fetch_one_op("key_of", params)
            key = None if row is None else row["order_key"]
            if key is not None:
                yield from self.lock_keys([key])
        if (yield from self.count_op("cancel_pending", params)) == 1:
            if key is not None:
                yield from self.unwait_keys([key])
            yield from self.settle([job_id])  # the jobs waiting for it, transitively
            return "cancelled"
        if (yield from self.count_op("cancel_running", params)) == 1:
            yield from self.notify_cancel(job_id)
            return "running"
        row = yield from self.fetch_one_op("get", params)
        return None if row is None else str(row["status"])

    def statements_op(self, name: str) -> Op[None]:
        """Run each statement of the block *name* (DDL, no parameters)."""
        for statement in split_statements(self.sql[name]):
            yield Statement(statement, None, NOTHING)

    def complete_many(self, items: Sequence[Completion]) -> Op[set[int]]:
        """Complete ``(id, attempt, claim_id, result_json)`` items; return the ids that were
        still held."""
        done: set[int] = set()
        parents: list[int] = []
        for job_id, attempt, claim_id, result in items:
            params = {"id": job_id, "attempt": attempt, "claim_id": claim_id, "result": result}
            try:
                if (yield from self.end("complete", params)):
                    parents.append(job_id)
            except LeaseLost:
                continue
            done.add(job_id)
        if parents:
            yield from self.settle(parents)
        return done

    # -- job control: snooze, dedupe windows, debounce ----------------------------------------

    def insert_controlled(self, params: Mapping[str, Any]) -> Op[int]:
        """An enqueue with ``dedupe_for`` (``dedupe_ms`` > 0) or ``debounce``
        (``debounce_key``)."""
        yield from self.lock_key({"order_key": params["control_lock"]})
        return (yield from self._insert_locked(params))

    def insert_keyed_many(self, items: Sequence[Mapping[str, Any]]) -> Op[list[int]]:
        """``enqueue_many`` with ``dedupe_keys``: the keys' locks taken first, in sorted
        order."""
        for lock in sorted({str(p["control_lock"]) for p in items if "control_lock" in p}):
            yield from self.lock_key({"order_key": lock})
        ids: list[int] = []
        for params in items:
            if "control_lock" not in params:
                ids.append((yield from self.insert(params)))
            else:
                ids.append((yield from self._insert_locked(params)))
        return ids

    def _insert_locked(self, params: Mapping[str, Any]) -> Op[int]:
        if params.get("debounce_key") is not None:
            row = yield from self.fetch_one_op("find_debounce", params)
            if row is not None:
                found = int(row["id"])
                if (yield from self.count_op("debounce", {**params, "id": found})) == 1:
                    return found
        elif params.get("dedupe_ms"):
            row = yield from self.fetch_one_op("find_dedupe_window", params)
            if row is not None:
                return int(row["id"])
        return (yield from self.insert_dedupe(params, "enqueue_control"))

    @property
    def finish_notify(self) -> bool:
        """q.wait can be woken by the job's end (a notification: PostgreSQL's
        ``listen_finished``); otherwise it polls."""
        return self.caps.finish_notify

    def listen_finished(self, job_id: int) -> Any:
        """A connection of its own that hears job *job_id*'s end (close it with
        :meth:`close_listener`)."""
        raise NotImplementedError

    def wait_finished(self, conn: Any, job_id: int, timeout: float) -> bool:
        """Wait up to *timeout* seconds on a :meth:`listen_finished` connection; True once
        job *job_id*'s end was heard."""
        raise NotImplementedError

    def close_listener(self, conn: Any) -> None:
        with contextlib.suppress(Exception):
            conn.close()

    # -- workflows: enqueue(..., after=[...]) ---------------------------------------------

    def job_lock_parents(self, parents: Sequence[int]) -> Op[dict[int, str]]:
        """The status of each of *parents*, locked and marked ``has_children``. Raises
        ``ConfigurationError`` (nothing written) when one does not exist."""
        id_list = {"id_list": json.dumps(parents)}
        rows: list[Row] = yield self.stmt("deps_lock_parents", id_list)
        found = {int(r["id"]): str(r["status"]) for r in rows}
        missing = [p for p in parents if p not in found]
        if missing:
            raise ConfigurationError(
                f"after: no job with id {', '.join(map(str, missing[:10]))} in table "
                f"{self.table}: a job can wait only for jobs that exist (enqueue its "
                "parents first, or in the same transaction before it)"
            )
        if self.caps.workflows:
            yield self.stmt("deps_mark", id_list, ROWCOUNT)
        return found

    def insert_parents(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]:
        """:meth:`insert_many`, the jobs marked ``has_children``."""
        ids = yield from self.insert_many(common, rows, copy)
        yield from self.job_mark_parents(ids)
        return ids

    def job_mark_parents(self, ids: Sequence[int]) -> Op[None]:
        """Mark jobs this transaction wrote ``has_children`` (see :meth:`insert_parents`)."""
        yield self.stmt("deps_mark", {"id_list": json.dumps(list(ids))}, ROWCOUNT)

    def depend(
        self, children: Sequence[int], parents: Mapping[int, str], run: bool, copy: bool = False
    ) -> Op[None]:
        """Make the new jobs *children* wait for *parents* (as locked), or cancel them."""
        edges = [(c, p) for c in children for p in parents]
        yield from self.add_edges(edges, run, copy)
        ids = json.dumps(list(children))
        blocker = None if run else _blocker(parents.items())
        if blocker is not None:
            yield self.stmt("deps_cancel", {"id_list": ids, "error": blocker}, ROWCOUNT)
        else:
            hold = not all(s in _ENDED if run else s == "done" for s in parents.values())
            yield self.stmt("deps_hold", {"id_list": ids, "hold": hold}, ROWCOUNT)

    def add_edges(self, edges: Sequence[tuple[int, int]], run: bool, copy: bool) -> Op[None]:
        """Write the ``(child, parent)`` *edges* (:meth:`depend`)."""
        yield self.stmt("deps_add", {"edges": json.dumps(edges), "run": run}, ROWCOUNT)

    def settle(self, ended: Sequence[int]) -> Op[None]:
        """Release or cancel the waiting children of the jobs *ended* (in their
        transaction), level by level."""
        if not self.caps.workflows:  # an older release's statements: no workflows
            return
        level = list(ended)
        released = 0
        while level:
            rows: list[Row] = yield self.stmt("deps_children", {"id_list": json.dumps(level)})
            children = [int(r["id"]) for r in rows]
            if not children:
                break
            edges: list[Row] = yield self.stmt("deps_parents", {"id_list": json.dumps(children)})
            parents: dict[int, list[tuple[int, str]]] = {}
            run: dict[int, bool] = {}
            for e in edges:
                child = int(e["child"])
                status = "done" if e["status"] is None else str(e["status"])
                parents.setdefault(child, []).append((int(e["parent"]), status))
                run[child] = bool(e["run_on_failure"])
            release: list[int] = []
            cancel: dict[str, list[int]] = {}
            for child in children:
                mine = sorted(parents.get(child, []))
                blocker = None if run.get(child) else _blocker(mine)
                if blocker is not None:
                    cancel.setdefault(blocker, []).append(child)
                elif all(s in _ENDED if run.get(child) else s == "done" for _, s in mine):
                    release.append(child)
            if release:
                params = {"id_list": json.dumps(release)}
                released += yield self.stmt("deps_release", params, ROWCOUNT)
            for error, ids in cancel.items():
                params = {"id_list": json.dumps(ids), "error": error}
                yield self.stmt("deps_cancel", params, ROWCOUNT)
            level = [c for ids in cancel.values() for c in ids]
        if released:
            self.state.count_released(released)
            yield from self.wake_released(released)

    def wake_released(self, released: int) -> Op[None]:
        """After *released* jobs were released, as the transaction's last statement: tell
        idle workers."""
        if self.caps.release_counter:  # an older release's statements: the next poll
            yield self.stmt("count_released", {"n": released}, ROWCOUNT)

    def parent_results(self, children: Sequence[int]) -> Op[dict[int, dict[int, Any]]]:
        """The stored results of the parents of *children*, by child, then parent."""
        if not children or not self.caps.workflows:  # (as in settle)
            return {}
        rows: list[Row] = yield self.stmt("deps_results", {"id_list": json.dumps(list(children))})
        out: dict[int, dict[int, Any]] = {}
        for r in rows:
            out.setdefault(int(r["child"]), {})[int(r["parent"])] = r["result"]
        return out

    # ==== the contract's operations (contract.py), each over its statements ====

    def job_insert(self, p: JobInsertParams) -> Op[int]:
        return (yield from self.insert(values(p, _CONTROL_FIELDS)))

    def job_insert_dedupe(self, p: JobInsertParams) -> Op[int]:
        return (yield from self.insert_dedupe(values(p, _CONTROL_FIELDS)))

    def job_insert_controlled(self, p: JobInsertParams) -> Op[int]:
        return (yield from self.insert_controlled(values(p)))

    def job_insert_keyed_many(self, items: Sequence[JobInsertParams]) -> Op[list[int]]:
        rows = [values(p, frozenset() if p.control_lock else _CONTROL_FIELDS) for p in items]
        return (yield from self.insert_keyed_many(rows))

    def job_insert_many(self, p: JobInsertManyParams) -> Op[list[int]]:
        common = values(p.common, _SHARED_DROP)
        if p.parents:
            return (yield from self.insert_parents(common, p.rows, p.copy))
        return (yield from self.insert_many(common, p.rows, p.copy))

    def job_set_state_if_running(self, states: Sequence[JobSetStateParams]) -> Op[dict[int, str]]:
        out: dict[int, str] = {}
        rest = states
        done = [s for s in states if s.outcome == "done"]
        if len(done) > 1:  # one statement for the batch
            batch = [(s.id, s.attempt, s.claim_id, s.result) for s in done]
            out.update(dict.fromkeys((yield from self.complete_many(batch)), "done"))
            rest = [s for s in states if s.outcome != "done"]
        ended: list[int] = []
        for s in rest:
            try:
                status, children = yield from self._set_state(s)
            except LeaseLost:
                continue
            out[s.id] = status
            if children:
                ended.append(s.id)
        if ended:
            yield from self.settle(ended)
        return out

    def _set_state(self, s: JobSetStateParams) -> Op[tuple[str, bool]]:
        params = values(s)
        if s.outcome == "snooze":  # at its snooze cap the job fails instead
            if (yield from self.count_op("snooze", params)) == 1:
                return "pending", False
            return "failed", (yield from self.end("fail", params))
        name, status = _OUTCOMES[s.outcome]
        if status in _ENDED:
            return status, (yield from self.end(name, params))
        yield from self.fenced(name, params)
        return status, False

    def job_heartbeat(self, p: JobHeartbeatParams) -> Op[Row]:
        params = values(p)
        yield from self.fenced("heartbeat", params)
        row = yield from self.fetch_one_op("lease_of", params)
        return row or {}

    def job_set_progress(self, p: JobSetProgressParams) -> Op[None]:
        yield from self.fenced("set_progress", values(p))

    def job_get(self, job_id: int) -> Op[Row | None]:
        return (yield from self.fetch_one_op("get", {"id": job_id}))

    def job_list(self, p: JobListParams) -> Op[list[Row]]:
        params = {
            "all_statuses": p.statuses is None,
            "statuses": list(p.statuses or [""]),
            "all_queues": p.queue is None,
            "queue": "" if p.queue is None else p.queue,
            "limit": p.limit,
            "before_id": p.before_id,
        }
        if p.task is None:
            return (yield from self.fetch_op("list_jobs", params))
        return (yield from self.fetch_op("list_jobs_task", {**params, "task": p.task}))

    def job_stats(self, p: JobStatsParams) -> Op[Row | None]:
        params = {"all_queues": p.queues is None, "queues": list(p.queues or [""])}
        return (yield from self.fetch_one_op("stats", params))

    def job_status_many(self, ids: Sequence[int]) -> Op[list[Row]]:
        return (yield from self.fetch_op("wait_look", {"ids": list(ids)}))

    def job_get_many(self, ids: Sequence[int]) -> Op[list[Row]]:
        return (yield from self.fetch_op("wait_rows", {"ids": list(ids)}))

    def job_retry_failed(self, p: JobRetryFailedParams) -> Op[int]:
        params = {
            "all_ids": p.ids is None,
            "ids": list(p.ids or ()) or [0],
            "all_queues": p.queues is None,
            "queues": [""] if p.queues is None else list(p.queues),
            "attempts": p.attempts,
        }
        return (yield from self.count_op("retry_failed", params))

    def job_prune(self, p: JobPruneParams) -> Op[int]:
        """Delete and count one batch of finished jobs; the rows deleted."""
        params = {"statuses": list(p.statuses), "older_ms": p.older_ms, "limit": p.limit}
        n = yield from self.count_op("prune", params)
        if n:
            yield self.stmt("count_pruned", {"deleted": n}, ROWCOUNT)
            if self.caps.workflow_prune:  # the edges of pruned children (workflows)
                yield self.stmt("deps_prune", None, ROWCOUNT)
        if n < p.limit and self.caps.rates_forget:  # a prune's last batch
            # Rate records a claim of their queue or key never pruned (a key not seen
            # again): every window is a week at most.
            yield self.stmt("rates_forget", None, ROWCOUNT)
        return n

    def job_live_leases(self, p: JobLiveLeasesParams) -> Op[list[Row]]:
        return (yield from self.fetch_op("live_leases", values(p)))

    def clock_now(self) -> Op[Any]:
        row = yield from self.fetch_one_op("clock")
        return None if row is None else row["now"]

    def queue_overview(self, window_s: int, cap: int) -> Op[tuple[list[Row], list[Row]]]:
        active: list[Row] = yield self.stmt("queue_overview", {}, ROWS)
        recent: list[Row] = yield self.stmt(
            "queue_recent", {"window_s": window_s, "cap": cap}, ROWS
        )
        return active, recent

    def worker_register(self, p: WorkerRegisterParams) -> Op[None]:
        yield self.stmt("worker_forget", {"older_s": p.forget_s}, ROWCOUNT)
        yield self.stmt("worker_register", values(p, frozenset({"forget_s"})), ROWCOUNT)

    def worker_beat(self, worker_id: str, in_flight: int) -> Op[int]:
        params = {"id": worker_id, "in_flight": in_flight}
        return (yield from self.count_op("worker_beat", params))

    def worker_unregister(self, worker_id: str) -> Op[int]:
        return (yield from self.count_op("worker_unregister", {"id": worker_id}))

    def worker_list(self) -> Op[list[Row]]:
        return (yield from self.fetch_op("worker_list"))

    def tick_enqueue(self, p: TickEnqueueParams) -> Op[int | None]:
        if (yield from self.count_op("tick_claim", {"schedule": p.schedule, "tick": p.tick})) != 1:
            return None
        job_id = yield from self.job_insert(p.job)
        yield from self.count_op("tick_prune", {"schedule": p.schedule, "before": p.before})
        return job_id

    def tick_last(self, schedule: str) -> Op[Any]:
        row = yield from self.fetch_one_op("tick_last", {"schedule": schedule})
        return None if row is None else row["tick"]

    def tick_list(self) -> Op[list[Row]]:
        return (yield from self.fetch_op("ticks_overview"))

    def job_depend(self, p: JobDependParams) -> Op[None]:
        yield from self.depend(p.children, p.parents, p.run, p.copy)

    def session_id(self, conn: Any) -> int | None:
        row = self.fetch_one(conn, "session_id")
        return None if row is None else int(row["session"])

    def schema_state(self) -> Op[Row | None]:
        t = self.table
        params = {"schema": t.schema, "name": t.name, "version_name": t.version_table}
        return (yield from self.fetch_one_op("schema_state", params))

    def schema_version_read(self) -> Op[int | None]:
        row = yield from self.fetch_one_op("schema_version")
        return None if row is None or row.get("version") is None else int(row["version"])

    def schema_catalog(self) -> Op[list[Row]]:
        t = self.table
        return (yield from self.fetch_op("schema_catalog", {"schema": t.schema, "name": t.name}))

    def schema_session(self) -> Op[None]:
        yield from self.count_op("schema_session")

    def schema_version_table_create(self) -> Op[None]:
        yield self.stmt("schema_create", None, NOTHING)

    def schema_record(self, version: int, name: str) -> Op[None]:
        yield self.stmt("schema_record", {"version": version, "name": name}, NOTHING)

    def schema_uninstall(self) -> Op[None]:
        yield from self.statements_op("uninstall")

    def schema_script(self, version: int, name: str) -> tuple[str, str]:
        record = self.sql["schema_record"].replace("%(version)s", str(version))
        return self.sql["schema_create"], record.replace("%(name)s", f"'{name}'")

    # -- capabilities: declared by each dialect; the statements it holds can only narrow
    # them (:attr:`caps`, fixed when the dialect is made: a test of an upgrade makes one of
    # an older release's statements, which lack some). A dialect whose .sql file lacks the
    # lock_* statements cannot run mode="single"; one whose WAKEUP is "none" is woken by
    # polling only.

    #: declared: how an idle worker is woken (see :data:`~.contract.Wakeup`)
    WAKEUP: ClassVar[Wakeup] = "none"
    #: declared: the enqueue trigger notifies only while a worker has marked itself waiting
    #: (PostgreSQL's migration 0006)
    WAKE_MARKS: ClassVar[bool] = False

    @property
    def supports_notify(self) -> bool:
        """LISTEN/NOTIFY can wake idle workers (and carries cancel requests): what a
        :attr:`WAKEUP` of ``notify`` declares."""
        return self.WAKEUP == "notify"

    @property
    def wakeup(self) -> Wakeup:
        """:attr:`WAKEUP`, or ``none`` while the statements held lack the idle probe."""
        if self.WAKEUP == "probe" and not self.caps.wake_probe:
            return "none"
        return self.WAKEUP

    @property
    def wake_marks(self) -> bool:
        """:attr:`WAKE_MARKS`, where the statements held have the marks."""
        return self.WAKE_MARKS and self.caps.wake_mark

    def supports_lock(self) -> bool:
        return self.caps.single_lock

    # -- single-worker lock and wake-ups -------------------------------------------------

    def lock_is_node_local_op(self) -> Op[bool]:
        """True on a cluster whose advisory locks are one node's (Galera): ``mode="single"``
        is refused there."""
        return False
        yield  # an operation without statements

    def lock_is_node_local(self, conn: Any) -> bool:
        """:meth:`lock_is_node_local_op` on *conn*, a connection of :meth:`connect`."""
        return self.adapter(conn).run(self.lock_is_node_local_op())

    def migrate_lock_acquire(self, holder: str, stale_s: float) -> Op[bool]:
        """Take or renew the cluster-wide migration lock for *holder*."""
        raise NotImplementedError
        yield

    def migrate_lock_release(self, holder: str) -> Op[None]:
        """Give back :meth:`migrate_lock_acquire`'s lock, if *holder* has it."""
        raise NotImplementedError
        yield

    def lock_acquire_op(self, key: int, name: str, wait: float) -> Op[bool]:
        # GET_LOCK takes fractional seconds (MariaDB honours them; MySQL rounds): a retake
        # that waits 0.2 s must not wait a whole second while its worker's loop is blocked.
        params = {"name": name, "wait_s": round(wait, 3), "wait_ms": round(wait * 1000)}
        row = yield from self.fetch_one_op("lock_acquire", params)
        yield COMMIT
        return bool(row and row["acquired"])

    def lock_acquire(self, conn: Any, key: int, name: str, wait: float) -> bool:
        """Take the session lock *key* / *name*, waiting up to *wait* s; True when held."""
        return self.adapter(conn).run(self.lock_acquire_op(key, name, wait))

    def lock_check(self, conn: Any, key: int, name: str) -> bool:
        """True if *conn* still holds the lock (False, or a driver error, when it does not)."""
        row = self.fetch_one(conn, "lock_check", {"key": key, "name": name})
        conn.commit()
        return bool(row and row["held"])

    def lock_release(self, conn: Any, key: int, name: str) -> None:
        self.fetch_one(conn, "lock_release", {"key": key, "name": name})
        conn.commit()

    def count_sessions(self, conn: Any, sessions: Sequence[int]) -> int:
        """How many of these server session ids (``session_id``) are still connected."""
        row = self.fetch_one(conn, "count_sessions", {"sessions": list(sessions)})
        return 0 if row is None else int(row["n"])

    def kill_session(self, conn: Any, session: int) -> None:
        """End the server session *session* from *conn*, and commit."""
        self.run(conn, "kill_session", {"session": session})
        conn.commit()

    def wake_listen(self) -> Any:
        """A connection notified at every enqueue and cancel request."""
        raise NotImplementedError

    def wake_wait(self, conn: Any, timeout: float, cancels: list[int] | None = None) -> bool:
        """Wait up to *timeout* seconds on a :meth:`wake_listen` connection; True if woken by an
        enqueue."""
        raise NotImplementedError

    def wake_listener_pid(self, conn: Any) -> int:
        """The server session of a :meth:`wake_listen` connection (supports_notify)."""
        raise NotImplementedError

    def wake_mark(self, pid: int, sweep: bool) -> Op[None]:
        """Mark the worker listening on session *pid* as waiting (supports_notify)."""
        raise NotImplementedError

    def wake_settled(self) -> Op[bool]:
        """True once no enqueuer that may have missed a new mark is still running."""
        raise NotImplementedError

    def wake_unmark(self, pid: int) -> Op[None]:
        raise NotImplementedError

    #: :meth:`wake_probe_connect`'s connections are in autocommit mode (no COMMIT per probe)
    probe_autocommit: ClassVar[bool] = False

    def wake_probe_connect(self) -> Any:
        """The connection :meth:`wake_probe` reads on."""
        return self.connect()

    def wake_probe(self, conn: Any) -> object:
        """What an idle worker without LISTEN reads to learn of new or released jobs."""
        row = self.fetch_one(conn, "wake_probe")
        if not self.probe_autocommit:
            conn.commit()
        return None if row is None else (row["top"], row.get("released"))

    def notify_cancel(self, job_id: int) -> Op[None]:
        """Tell the workers' listeners of a cancel request (sent at commit)."""
        return
        yield

    def wake_stop(self) -> Op[None]:
        """Wake a :meth:`wake_wait` at once (a finished worker's listener)."""
        return
        yield


#: the statuses a job ends in
_ENDED = frozenset({"done", "failed", "cancelled"})


def _close_sync(conn: Any) -> None:
    conn.close()


def _blocker(parents: Iterable[tuple[int, str]]) -> str | None:
    # the lowest such id (no sort of them all: a chord's callback has 10,000 parents)
    bad = [(parent, status) for parent, status in parents if status in ("failed", "cancelled")]
    if not bad:
        return None
    parent, status = min(bad)
    return f"parent job {parent} ended {status}"


def split_statements(block: str) -> list[str]:
    """Split a block of DDL on semicolons at line ends (our DDL has no semicolons inside)."""
    return [s.strip() for s in re.split(r";\s*\n", block + "\n") if s.strip()]
