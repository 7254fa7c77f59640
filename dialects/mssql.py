"""SQL Server 2016+ and Azure SQL through pymssql (FreeTDS)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, ClassVar

from .base import BaseDialect, Completion
from .contract import (
    INT,
    ROWS,
    TEXT,
    TUPLES,
    Adapter,
    ClaimParams,
    ErrorInfo,
    Op,
    Option,
    PymssqlAdapter,
    Row,
    ServerInfo,
    Statement,
    StatementError,
    UnsupportedServer,
    Wakeup,
)
from .contract import mssql_driver as own

__all__ = ["MSSQLDialect", "classify_error", "lock_digest", "parse_server_version"]

#: deadlock victim, lock request timeout, snapshot update conflict, a NOLOCK read that lost
#: its place to data movement (enqueue_many's read-back), and Azure SQL's "busy /
#: reconfiguring, try again" errors
_RETRYABLE = {601, 1205, 1222, 3960, 40501, 40613, 40197, 49918, 49919, 49920}
#: FreeTDS (DB-Library) errors for a connection that failed or went away: connection
#: failed, timed out, read/write failed, refused, EOF, DBPROCESS dead; and the server's own
#: "no process on the other end of the pipe", session killed, shutdown in progress
_CONNECTION = {20002, 20003, 20004, 20006, 20009, 20017, 20047, 233, 596, 6005, 10053, 10054}
#: duplicate key in a unique index / constraint
_DUPLICATE = {2601, 2627}
#: SQL Server 2016 is 13.x; Azure SQL Database (5) and Managed Instance (8) report 12.x
#: while running the current engine
_MIN_VERSION = (13,)
_AZURE_EDITIONS = {5, 8}
#: pymssql.connect arguments that keep every guarantee
URL_OPTIONS: dict[str, Option] = {
    "timeout": INT,
    "login_timeout": INT,
    "arraysize": Option("int", low=1, high=100_000),
    "appname": TEXT,
    "tds_version": Option("choice", ("7.0", "7.1", "7.2", "7.3", "7.4")),
    "charset": Option("choice", ("UTF-8",)),  # names and payloads are Unicode
    "encryption": Option("choice", ("default", "off", "request", "require")),
}
#: what the dialect relies on: transactions it commits itself, rows as dicts
REFUSED_OPTIONS = {
    "as_dict": "skiplock reads rows as dicts",
    "server": "it is part of the URL itself",
    "conn_properties": "it runs SQL at connect that can change the session settings the "
    "claim needs (skiplock runs its own)",
    "read_only": "a queue writes",
    "use_datetime2": "skiplock binds times itself",
}
#: rows per VALUES list: INSERT … VALUES allows 1000; smaller statements compile faster
BATCH_ROWS = 500


def classify_error(codes: frozenset[int | str], kind: str) -> tuple[bool, bool]:
    """``(retryable, connection_lost)`` from the error numbers an adapter read (see
    :func:`skiplock.drivers.mssql.pymssql_error_numbers`) and the DB-API class."""
    numbers = {c for c in codes if isinstance(c, int)}
    states = {c for c in codes if isinstance(c, str)}
    lost = (
        bool(numbers & _CONNECTION)
        or any(s.startswith("08") for s in states)  # ODBC: communication link failure
        or (kind == "interface" and not numbers)
    )
    return (lost or bool(numbers & _RETRYABLE)), lost


def parse_server_version(version: str, engine_edition: int | None, banner: str) -> ServerInfo:
    """Check ``SERVERPROPERTY('ProductVersion')`` (e.g. ``16.0.4135.4``); raises
    :class:`~skiplock.UnsupportedServer` before SQL Server 2016."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:4])
    info = ServerInfo("SQL Server", numbers, banner.strip() or version)
    if not numbers or (numbers[:1] < _MIN_VERSION and engine_edition not in _AZURE_EDITIONS):
        raise UnsupportedServer(
            f"SQL Server {version or '(unknown version)'} is too old: skiplock needs SQL Server "
            "2016 (13.x) or newer, or Azure SQL"
        )
    return info


def lock_digest(text: str) -> str:
    """The hex SHA-256 that ends an application lock's name (``key_lock``, ``queue_lock``)."""
    # = CONVERT(NVARCHAR(64), HASHBYTES('SHA2_256', CAST(text AS NVARCHAR(255))), 2) on SQL
    # Server (an NVARCHAR's bytes are UTF-16LE), which Babelfish does not run
    return hashlib.sha256(text.encode("utf-16-le")[:510]).hexdigest().upper()


def sql_datetime(value: datetime) -> str:
    """An aware datetime as UTC ISO 8601 text (read the same under every DATEFORMAT)."""
    return value.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds")


class MSSQLDialect(BaseDialect):
    name: ClassVar[str] = "mssql"
    sql_file: ClassVar[str] = "mssql.sql"
    driver_module: ClassVar[str] = "pymssql"
    adapter_class: ClassVar[type[Adapter]] = PymssqlAdapter
    extra: ClassVar[str] = "mssql"
    URL_OPTIONS: ClassVar[Mapping[str, Option]] = URL_OPTIONS
    REFUSED_OPTIONS: ClassVar[Mapping[str, str]] = REFUSED_OPTIONS
    WAKEUP: ClassVar[Wakeup] = "probe"

    #: sqlcmd and SSMS run a script batch by batch
    script_end: ClassVar[str] = ";\nGO"

    def quote(self, ident: str) -> str:
        return "[" + ident.replace("]", "]]") + "]"

    def connect_kwargs(self) -> dict[str, Any]:
        u = self.url
        kwargs: dict[str, Any] = {
            "server": u.host,
            "port": str(u.port or 1433),
            "database": u.database,
            "autocommit": False,
            "login_timeout": 10,
            "appname": "skiplock",
            "tds_version": "7.4",
        }
        if u.user is not None:
            kwargs["user"] = u.user
        if u.password is not None:
            kwargs["password"] = u.password
        kwargs.update(self.options)
        return kwargs

    def connect(self) -> Any:
        return own.connect(self.driver, self.connect_kwargs(), self.sql["session"])

    def server_info(self, conn: Any) -> ServerInfo:
        row = self.fetch_one(conn, "server_version")
        conn.commit()
        assert row is not None
        edition = row.get("engine_edition")
        return parse_server_version(
            str(row.get("version") or ""),
            None if edition is None else int(edition),
            str(row.get("banner") or ""),
        )

    def classify(self, info: ErrorInfo) -> tuple[bool, bool]:
        return classify_error(info.codes, info.kind)

    def begin_sql(self) -> str:
        return "BEGIN TRANSACTION"

    def is_closed(self, conn: Any) -> bool:
        return own.is_closed(conn)

    def kill_session(self, conn: Any, session: int) -> None:
        """KILL refuses to run in a transaction (error 6615): run it in autocommit."""
        conn.commit()
        with own.autocommit(conn):
            self.run(conn, "kill_session", {"session": session})

    def bind(self, sql: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        prepared: dict[str, Any] = {}
        for key, value in params.items():
            if isinstance(value, datetime):
                value = sql_datetime(value)
            prepared[key] = value
            if key.endswith("_ms") and isinstance(value, int) and not isinstance(value, bool):
                base = key[: -len("_ms")]
                prepared[f"{base}_s"], prepared[f"{base}_rem_ms"] = divmod(value, 1000)
            if f"%({key}_digest)s" in sql:  # key_lock, queue_lock
                prepared[f"{key}_digest"] = None if value is None else lock_digest(str(value))
        return super().bind(sql, prepared)

    def values_sql(
        self, name: str, rows: Sequence[Mapping[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        """Statement *name* with one ``<name>_row`` per item in its ``{rows}``."""
        template = self.sql[f"{name}_row"]
        params: dict[str, Any] = {}
        values: list[str] = []
        for i, row in enumerate(rows):
            values.append(re.sub(r"%\((\w+)\)s", rf"%(\1_{i})s", template))
            params.update({f"{k}_{i}": v for k, v in row.items()})
        return self.sql[name].replace("{rows}", ",\n".join(values)), params

    def fetch_values(
        self, name: str, rows: Sequence[Mapping[str, Any]], common: Mapping[str, Any]
    ) -> Op[list[Row]]:
        """Run statement *name* over *rows* in chunks of :data:`BATCH_ROWS`."""
        found: list[Row] = []
        for start in range(0, len(rows), BATCH_ROWS):
            sql, params = self.values_sql(name, rows[start : start + BATCH_ROWS])
            sql, bound = self.bind(sql, {**common, **params})
            chunk: list[Row] = yield Statement(sql, bound, ROWS)
            found.extend(chunk)
        return found

    def insert_dedupe_once(
        self, params: Mapping[str, Any], name: str = "enqueue_dedupe"
    ) -> Op[int | None]:
        try:
            return (yield from super().insert_dedupe_once(params, name))
        except StatementError as exc:
            if exc.info.kind == "integrity" and exc.info.codes & _DUPLICATE:
                return None  # a concurrent insert took the key first: the caller looks it up
            raise

    def insert_many(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]:
        yield from self.lock_key(common)
        items = [{"n": i, "payload": p, "idempotency_key": k} for i, (p, k) in enumerate(rows)]
        # (the read-back may hold other transactions' rows of the same id range: by key)
        found = yield from self.fetch_values("enqueue_many", items, common)
        by_key = {str(r["idempotency_key"]).lower(): int(r["id"]) for r in found}
        return [by_key[k.lower()] for _, k in rows]

    def claim_one(self, p: ClaimParams) -> Statement:
        params = {
            "queues": list(p.queues),
            "limit": p.limit,
            "lease_ms": p.lease_ms,
            "claim_id": p.claim_id,
        }
        return self.stmt("claim", params, TUPLES)

    def complete_many(self, items: Sequence[Completion]) -> Op[set[int]]:
        rows = [{"id": i, "attempt": a, "claim_id": c, "result": r} for i, a, c, r in items]
        found = yield from self.fetch_values("complete_many", rows, {})
        parents = [int(r["id"]) for r in found if r.get("has_children", True)]
        if parents:  # (has_children: see end)
            yield from self.settle(parents)
        return {int(r["id"]) for r in found}
