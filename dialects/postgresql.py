"""PostgreSQL through psycopg 3."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .base import IDLE_TRANSACTION_TIMEOUT, BaseDialect, Completion
from .contract import (
    COMMIT,
    INT,
    NOTHING,
    ROLLBACK,
    ROWS,
    TEXT,
    TUPLES,
    Adapter,
    AsyncAdapter,
    ClaimParams,
    Copy,
    ErrorInfo,
    Op,
    Option,
    PsycopgAdapter,
    Row,
    ServerInfo,
    Statement,
    StatementError,
    UnsupportedServer,
    Wakeup,
)
from .contract import postgresql_driver as own

__all__ = ["PostgreSQLDialect"]

#: SQLSTATEs after which the same transaction may succeed when run again
_RETRYABLE = {"40001", "40P01", "55P03", "57014"}
#: SQLSTATE classes that mean the connection or the server went away
_CONNECTION_CLASSES = ("08", "57P", "25P03")  # 25P03: ended as idle in a transaction
#: what the server says at connect time (psycopg gives no SQLSTATE there) when the
#: database or role is missing or the password is wrong
_REFUSED = re.compile(
    r'FATAL: +(database ".*" does not exist|role ".*" does not exist|password authentication)'
)
#: batches at least this large are written with COPY (measured: below it, the extra round
#: trip for the ids costs more than COPY saves)
COPY_MIN_ROWS = 200
#: lock_timeout ran out
_LOCK_NOT_AVAILABLE = "55P03"

#: libpq connection keywords that keep every guarantee (libpq takes 0/1, not booleans)
URL_OPTIONS: dict[str, Option] = {
    "sslmode": Option(
        "choice", ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
    ),
    "sslrootcert": TEXT,
    "sslcert": TEXT,
    "sslkey": TEXT,
    "sslcrl": TEXT,
    "sslcrldir": TEXT,
    "connect_timeout": INT,
    "application_name": TEXT,
    # a queue writes: a read-only server or a standby would refuse every claim
    "target_session_attrs": Option("choice", ("any", "read-write", "primary")),
    "keepalives": Option("int", high=1),
    "keepalives_idle": INT,
    "keepalives_interval": INT,
    "keepalives_count": Option("int", high=1000),
    "tcp_user_timeout": Option("int", high=86_400_000),
    "gssencmode": Option("choice", ("disable", "prefer", "require")),
    "channel_binding": Option("choice", ("disable", "prefer", "require")),
    "krbsrvname": TEXT,
    "passfile": TEXT,
    # numeric only: libpq resolves no name here (a name failed at connect, not at connect())
    "hostaddr": Option("addresses"),
}
#: skiplock's own connections read times in UTC (as on MySQL): psycopg then hands back
#: datetimes in ``timezone.utc``, which a claim's jobs keep as they are, where a server's
#: other zone (even ``Etc/UTC``) cost two conversions per timestamp (~0.8 µs per claimed
#: job). Sent as a statement, not as a startup ``options``, which PgBouncer refuses.
_UTC_SESSION = "SET TIME ZONE 'UTC'"

REFUSED_OPTIONS = {
    "options": "its -c settings can change the isolation level, time zone or timeouts "
    "that the claim and the leases rely on",
    "client_encoding": "payloads and names are exchanged as UTF-8",
    "service": "a service file can set options skiplock must refuse; give them in the URL",
    "replication": "a replication connection cannot run the queue's statements",
    "default_transaction_isolation": "claims run at READ COMMITTED",
    "default_transaction_read_only": "a queue writes",
}


class PostgreSQLDialect(BaseDialect):
    name: ClassVar[str] = "postgresql"
    sql_file: ClassVar[str] = "postgresql.sql"
    driver_module: ClassVar[str] = "psycopg"
    adapter_class: ClassVar[type[Adapter]] = PsycopgAdapter
    extra: ClassVar[str] = "postgresql"
    array_params: ClassVar[bool] = True
    WAKEUP: ClassVar[Wakeup] = "notify"
    WAKE_MARKS: ClassVar[bool] = True  # migration 0006
    URL_OPTIONS: ClassVar[Mapping[str, Option]] = URL_OPTIONS
    REFUSED_OPTIONS: ClassVar[Mapping[str, str]] = REFUSED_OPTIONS

    def quote(self, ident: str) -> str:
        return '"' + ident.replace('"', '""') + '"'

    def connect_kwargs(self) -> dict[str, Any]:
        u = self.url
        kwargs: dict[str, Any] = {"dbname": u.database}
        if u.host:  # none: libpq's default, the local socket
            kwargs["host"] = u.host
        if u.port is not None:
            kwargs["port"] = u.port
        elif u.ports is not None:  # one per host of a multi-host URL
            kwargs["port"] = u.ports
        if u.user is not None:
            kwargs["user"] = u.user
        if u.password is not None:
            kwargs["password"] = u.password
        kwargs.update(self.options)
        kwargs.setdefault("connect_timeout", 10)
        kwargs.setdefault("application_name", "skiplock")
        return kwargs

    def connect(self) -> Any:
        return own.connect(self.driver, self.connect_kwargs(), (_UTC_SESSION,))

    async_in_thread: ClassVar[bool] = False
    _VERSION_SQL = "SELECT current_setting('server_version_num')::int AS n, version() AS v"

    async def connect_async(self) -> AsyncAdapter:
        return await own.connect_async(self.driver, self.connect_kwargs(), (_UTC_SESSION,))

    def server_info(self, conn: Any) -> ServerInfo:
        return self._server(self.adapter(conn).run(self.version_op(self._VERSION_SQL)))

    async def server_info_async(self, own: AsyncAdapter) -> ServerInfo:
        return self._server(await own.run(self.version_op(self._VERSION_SQL)))

    def _server(self, rows: list[Row]) -> ServerInfo:
        [row] = rows
        num = int(row["n"])
        version = (num // 10000, num % 10000) if num >= 100000 else (num // 10000, num // 100 % 100)
        info = ServerInfo("PostgreSQL", version, str(row["v"]))
        if num < 90500:
            raise UnsupportedServer(
                f"PostgreSQL {version[0]}.{version[1]} has no SKIP LOCKED: skiplock needs "
                "PostgreSQL 9.5 or newer"
            )
        return info

    @property
    def idle_transaction_timeout(self) -> float | None:
        return IDLE_TRANSACTION_TIMEOUT

    def idle_limit_sql(self) -> tuple[str, ...]:
        ms = round(IDLE_TRANSACTION_TIMEOUT * 1000)
        return (f"SET idle_in_transaction_session_timeout = {ms}",)

    def exempt_begin_sql(self) -> tuple[str, ...]:
        return ("SET LOCAL idle_in_transaction_session_timeout = 0",)  # ends with the block

    def classify(self, info: ErrorInfo) -> tuple[bool, bool]:
        state = info.state()
        if not state and _REFUSED.search(info.message):
            return False, False  # a missing database or role: connecting again won't help
        if state == "0A000" and "cached plan must not change result type" in info.message:
            # A migration added a column under a prepared `SELECT *`: the rollback before
            # the retry clears psycopg's prepared statements, so the retry succeeds.
            return True, False
        lost = info.kind == "operational" and (not state or state.startswith(_CONNECTION_CLASSES))
        return (lost or state in _RETRYABLE), lost

    def is_closed(self, conn: Any) -> bool:
        return own.is_closed(conn)

    def version_op(self, sql: str) -> Op[list[Row]]:
        rows: list[Row] = yield Statement(sql, None, ROWS)
        yield COMMIT
        return rows

    def fileno(self, conn: Any) -> int | None:
        return own.fileno(conn)

    def insert_many(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]:
        yield from self.lock_key(common)
        if _copies(common, rows, copy):
            return (yield from self._copy_many(common, rows))
        params = dict(common)
        params["payloads"] = [p for p, _ in rows]
        params["keys"] = [k for _, k in rows]
        found: list[Row] = yield self.stmt("enqueue_many", params)
        by_key = {str(r["idempotency_key"]): int(r["id"]) for r in found}
        return [by_key[k] for _, k in rows]

    def insert_parents(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]:
        # A large batch: the mark goes in with the COPY (no UPDATE of every row after it).
        if self.caps.copy_parents and _copies(common, rows, copy):
            return (yield from self._copy_many(common, rows, marked=True))
        return (yield from super().insert_parents(common, rows, copy))

    def _copy_many(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], marked: bool = False
    ) -> Op[list[int]]:
        # COPY is about twice as fast as INSERT … SELECT FROM unnest for large batches but
        # returns nothing, so the ids (and run_at, on the database's clock) come first.
        # *marked*: has_children as well (insert_parents).
        [plan] = yield self.stmt("enqueue_ids", {**common, "n": len(rows)})
        ids: list[int] = plan["ids"]
        queue, priority, attempts = common["queue"], common["priority"], common["max_attempts"]
        run_at, headers = plan["run_at"], common.get("headers")
        mark = (True,) if marked else ()
        yield Copy(
            self.sql["enqueue_copy_parents" if marked else "enqueue_copy"],
            [
                (job_id, queue, payload, priority, attempts, run_at, key, headers, *mark)
                for job_id, (payload, key) in zip(ids, rows, strict=True)
            ],
        )
        return ids

    def add_edges(self, edges: Sequence[tuple[int, int]], run: bool, copy: bool) -> Op[None]:
        # Many edges (a chord's callback): COPY, no JSON to build and take apart.
        if copy and len(edges) >= COPY_MIN_ROWS and self.caps.deps_copy:
            yield Copy(self.sql["deps_copy"], [(c, p, run) for c, p in edges])
        else:
            yield from super().add_edges(edges, run, copy)

    def claim_one(self, p: ClaimParams) -> Statement:
        # psycopg reads tuples: no dict per row. One queue has a statement of its own
        # (postgresql.sql, claim_queues: why).
        common = {"limit": p.limit, "lease_ms": p.lease_ms, "claim_id": p.claim_id}
        if len(p.queues) == 1:
            return Statement(self.sql["claim"], {"queue": p.queues[0], **common}, TUPLES)
        return Statement(self.sql["claim_queues"], {"queues": list(p.queues), **common}, TUPLES)

    def wake_released(self, released: int) -> Op[None]:
        yield self.stmt("deps_wake_lock", None, NOTHING)
        yield self.stmt("deps_wake", None, NOTHING)

    def complete_many(self, items: Sequence[Completion]) -> Op[set[int]]:
        params = {
            "ids": [i for i, _, _, _ in items],
            "attempts": [a for _, a, _, _ in items],
            "claim_ids": [c for _, _, c, _ in items],
            "results": [r for _, _, _, r in items],
        }
        rows: list[Row] = yield Statement(self.sql["complete_many"], params, ROWS)
        parents = [int(r["id"]) for r in rows if r.get("has_children", True)]
        if parents:  # (has_children: see end)
            yield from self.settle(parents)
        return {int(r["id"]) for r in rows}

    def lock_acquire_op(self, key: int, name: str, wait: float) -> Op[bool]:
        try:
            yield self.stmt("lock_timeout", {"wait_ms": str(max(1, round(wait * 1000)))}, NOTHING)
            yield self.stmt("lock_acquire", {"key": key}, NOTHING)
        except StatementError as exc:
            if exc.info.state() != _LOCK_NOT_AVAILABLE:
                raise
            yield ROLLBACK
            return False
        yield COMMIT
        return True

    def wake_listen(self) -> Any:
        return own.listen(self.connect(), (self.sql["listen"], self.sql["listen_cancel"]))

    def wake_wait(self, conn: Any, timeout: float, cancels: list[int] | None = None) -> bool:
        woken = False
        for channel, payload in own.notifications(conn, timeout):
            if channel != self.cancel_channel:
                woken = True
            elif cancels is not None and payload.isdigit():
                cancels.append(int(payload))
        return woken

    @property
    def cancel_channel(self) -> str:
        """Cancel requests have a channel of their own, so they wake no idle producer."""
        return f"{self.table.name}_cancel"

    def notify_cancel(self, job_id: int) -> Op[None]:
        # The payload is the job id only: a listener of a same-named table in another
        # schema may hear it, and its worker's heartbeat of that id (if it holds one)
        # reads the request from its own table, so a stray one costs one heartbeat.
        yield self.stmt("cancel_notify", {"payload": str(job_id)}, NOTHING)

    def wake_stop(self) -> Op[None]:
        # An empty payload on the cancel channel: every listener of the table wakes and
        # ignores it (no digits, no job); only the finished worker's listener then ends.
        yield self.stmt("cancel_notify", {"payload": ""}, NOTHING)

    def wake_listener_pid(self, conn: Any) -> int:
        """The backend pid of a :meth:`wake_listen` connection: a waiting worker's mark."""
        return own.backend_pid(conn)

    def wake_mark(self, pid: int, sweep: bool) -> Op[None]:
        """Mark the worker LISTENing on backend *pid* as waiting (see migration 0006)."""
        yield self.stmt("wake_mark", {"pid": pid, "sweep": sweep}, NOTHING)

    def wake_settled(self) -> Op[bool]:
        """After the mark committed: True once every enqueuer that may have missed it ended."""
        row = yield from self.fetch_one_op("wake_settled")
        return bool(row and row["settled"])

    def wake_unmark(self, pid: int) -> Op[None]:
        yield self.stmt("wake_unmark", {"pid": pid}, NOTHING)

    # -- q.wait: the end of a waited job (migration 0012) ------------------------------------

    def listen_finished(self, job_id: int) -> Any:
        conn = own.listen(self.connect(), (self.sql["listen_finished"],))
        try:
            self.run(conn, "wait_mark", {"id": job_id})  # autocommit: committed here
        except BaseException:
            self.close_listener(conn)
            raise
        return conn

    def wait_finished(self, conn: Any, job_id: int, timeout: float) -> bool:
        end, wanted = time.monotonic() + timeout, str(job_id)
        while (left := end - time.monotonic()) > 0:
            for _, payload in own.notifications(conn, left):
                if payload == wanted:
                    return True
        return False


def _copies(common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool) -> bool:
    return copy and len(rows) >= COPY_MIN_ROWS and common.get("order_key") is None
