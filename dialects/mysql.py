"""MySQL 8.0.1+ and MariaDB 10.6+ through mysql-connector-python."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, ClassVar

from ._mysql_server import classify, migration_done, parse_server_version
from .base import IDLE_TRANSACTION_TIMEOUT, BaseDialect, Completion, RunState
from .contract import (
    BOOL,
    COMMIT,
    INT,
    LASTROWID,
    NOTHING,
    ROWCOUNT,
    ROWS,
    TEXT,
    Adapter,
    AsyncAdapter,
    ClaimParams,
    DatabaseURL,
    ErrorInfo,
    MySQLConnectorAdapter,
    Op,
    Option,
    Row,
    ServerInfo,
    Statement,
    TableName,
    Wakeup,
    render_statements,
)
from .contract import mysql_driver as own

__all__ = ["MySQLDialect", "parse_server_version"]

#: mysql-connector arguments that keep every guarantee (and exist since its 8.0.33)
URL_OPTIONS: dict[str, Option] = {
    "connection_timeout": INT,
    "connect_timeout": INT,
    "ssl_ca": TEXT,
    "ssl_cert": TEXT,
    "ssl_key": TEXT,
    "ssl_disabled": BOOL,
    "ssl_verify_cert": BOOL,
    "ssl_verify_identity": BOOL,
    "unix_socket": TEXT,
}
_ASYNC = own.ASYNC
_SESSION = "skiplock sets it on every connection: "
REFUSED_OPTIONS = {
    "sql_mode": _SESSION + "a mode such as ANSI_QUOTES changes how statements parse",
    "time_zone": _SESSION + "times are UTC",
    "charset": _SESSION + "utf8mb4",
    "collation": _SESSION + "utf8mb4_bin, so names differing in case stay apart",
    "use_pure": _SESSION + "the C extension wherever it loads",
    "client_flags": _SESSION + "FOUND_ROWS makes a fenced write count the row it matched",
    "init_command": "it can change the isolation level or session settings the claim needs",
    "allow_local_infile": "it lets the server read this machine's files",
    "buffered": "skiplock reads every result itself",
    "raw": "skiplock decodes rows itself",
    "consume_results": "skiplock reads every result itself",
    "pool_name": "skiplock keeps its own connections",
    "pool_size": "skiplock keeps its own connections",
    "converter_class": "skiplock decodes rows itself",
    # accepted once, but without effect on one of the drivers (one URL serves Queue and
    # AsyncQueue alike)
    "compress": _ASYNC + "hangs on a compressed connection",
    "force_ipv6": _ASYNC + "ignores it; give an IPv6 address ([::1]) instead",
    "ssl_cipher": _ASYNC + "refuses it, and TLS 1.3 (what MySQL 8+ negotiates) ignores it",
    "auth_plugin": "the C extension takes it as a default the server overrides, "
    + _ASYNC
    + "as a requirement: it means two things",
}


_CLAIMS = ("claim_pick", "claim_pick_queues")

#: Galera: GET_LOCK is one node's, so ``migrate`` on two nodes at once would run the same
#: DDL side by side (one's DROP INDEX meeting the other's RENAME). Across the nodes it
#: takes a row of the version table, version 0 (MAX(version) never reports it while a
#: version is recorded): certification lets only one of two transactions that write it at
#: once commit; the other fails at COMMIT and, tried again, finds the row taken.
_CLUSTER_LOCK = {
    "read": "SELECT name, TIMESTAMPDIFF(MICROSECOND, applied_at, UTC_TIMESTAMP(6)) AS age_us"
    " FROM {version_table} WHERE version = 0 FOR UPDATE",
    "take": "INSERT IGNORE INTO {version_table} (version, name, applied_at)"
    " VALUES (0, %(holder)s, UTC_TIMESTAMP(6))",
    "renew": "UPDATE {version_table} SET name = %(holder)s, applied_at = UTC_TIMESTAMP(6)"
    " WHERE version = 0",
    "drop": "DELETE FROM {version_table} WHERE version = 0 AND name = %(holder)s",
}


def _code(sql: str) -> str:  # a statement without its comment lines
    return "\n".join(line for line in sql.splitlines() if not line.startswith("--"))


#: a migration statement for one of the two servers only (``-- only on MariaDB``)
_ONLY_ON = re.compile(r"^--\s*only on (MariaDB|MySQL)\b", re.MULTILINE | re.IGNORECASE)


class MySQLDialect(BaseDialect):
    name: ClassVar[str] = "mysql"
    sql_file: ClassVar[str] = "mysql.sql"
    driver_module: ClassVar[str] = "mysql.connector"
    adapter_class: ClassVar[type[Adapter]] = MySQLConnectorAdapter
    extra: ClassVar[str] = "mysql"
    URL_OPTIONS: ClassVar[Mapping[str, Option]] = URL_OPTIONS
    REFUSED_OPTIONS: ClassVar[Mapping[str, str]] = REFUSED_OPTIONS
    WAKEUP: ClassVar[Wakeup] = "probe"

    @property
    def insert_returning(self) -> bool:
        """MariaDB has INSERT … RETURNING, MySQL has not."""
        return self.mariadb

    def __init__(
        self,
        url: DatabaseURL,
        table: TableName,
        statements: Mapping[str, str] | None = None,
        state: RunState | None = None,
        mariadb: bool | None = None,
    ) -> None:
        """*mariadb*: the server is MariaDB (default: the URL says ``mariadb://``); a
        connection's server may say otherwise (:meth:`for_server`)."""
        super().__init__(url, table, statements, state)
        self.mariadb = url.flavor == "mariadb" if mariadb is None else mariadb
        # the two timeout names given with two values: refused at connect(), not at first use
        own.connect_timeout(self.options)
        if statements is None:  # (an older release's are given with their key test in place)
            # The claims' key test (a), one block of mysql.sql put in place (MySQL, MariaDB).
            form = _code(self.sql["no_earlier_pending"])
            for name in _CLAIMS:
                self.sql[name] = self.sql[name].replace("{no_earlier_pending}", form)
        self._cluster_lock = render_statements(_CLUSTER_LOCK, self.table, self.quote)

    def quote(self, ident: str) -> str:
        return "`" + ident.replace("`", "``") + "`"

    async_in_thread: ClassVar[bool] = False
    #: each session: READ COMMITTED (REPEATABLE READ makes concurrent claims deadlock on
    #: gap locks), and the database's clock read in UTC
    _SESSION = (
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "SET SESSION time_zone = '+00:00'",
    )

    def connect_kwargs(self) -> dict[str, Any]:
        u = self.url
        kwargs: dict[str, Any] = {
            "host": u.host,
            "port": u.port or 3306,
            "database": u.database,
            "user": u.user or "root",
            "password": u.password or "",
            "autocommit": False,
            "connection_timeout": own.connect_timeout(self.options),
            "charset": "utf8mb4",
            "collation": "utf8mb4_bin",
        }
        # connect_timeout is mysql-connector's alias, read only where connection_timeout is
        # not given: sent as it was, it never applied (the connect waited 10 s)
        kwargs.update({k: v for k, v in self.options.items() if k not in own.TIMEOUTS})
        return kwargs

    def connect(self) -> Any:
        return own.connect(self.driver, self.connect_kwargs(), self._SESSION)

    probe_autocommit: ClassVar[bool] = True  # one round trip per probe, no COMMIT

    def wake_probe_connect(self) -> Any:
        return own.connect(self.driver, self.connect_kwargs(), self._SESSION, autocommit=True)

    async def connect_async(self) -> AsyncAdapter:
        return await own.connect_async(self.driver, self.connect_kwargs(), self._SESSION)

    def server_info(self, conn: Any) -> ServerInfo:
        return self._server(self.adapter(conn).run(self.version_op()))

    async def server_info_async(self, own: AsyncAdapter) -> ServerInfo:
        return self._server(await own.run(self.version_op()))

    def _server(self, rows: list[Row]) -> ServerInfo:
        # mysql-connector reports MariaDB as 5.5.5; VERSION() tells the truth.
        [row] = rows
        info = parse_server_version(str(row["v"]))
        return replace(info, driver=own.driver_name(self.driver))

    def for_server(self, server: ServerInfo) -> MySQLDialect:
        mariadb = server.product == "MariaDB"
        if mariadb == self.mariadb:
            return self
        return type(self)(self.url, self.table, self.sql, self.state, mariadb=mariadb)

    # MariaDB ends a session idle inside a transaction; MySQL has no such setting
    @property
    def idle_transaction_timeout(self) -> float | None:
        return IDLE_TRANSACTION_TIMEOUT if self.mariadb else None

    def idle_limit_sql(self) -> tuple[str, ...]:
        if not self.mariadb:
            return ()
        return (f"SET SESSION idle_transaction_timeout = {round(IDLE_TRANSACTION_TIMEOUT)}",)

    def exempt_begin_sql(self) -> tuple[str, ...]:
        return ("SET SESSION idle_transaction_timeout = 0",) if self.mariadb else ()

    def exempt_end_sql(self) -> tuple[str, ...]:
        return self.idle_limit_sql()

    def classify(self, info: ErrorInfo) -> tuple[bool, bool]:
        return classify(info)

    def driver_errors(self) -> tuple[type[BaseException], ...]:
        # The C extension's own errors escape some of its calls unwrapped (rollback() of
        # a new connection on a Galera node that is not ready): the adapter's classes.
        return self.adapter_class(None, self.driver).errors

    def migration_done(self, info: ErrorInfo) -> bool:
        return migration_done(info)

    def repair_flags(self) -> Op[None]:
        """The heads to give back, read without locks, then taken."""
        batch = self.state.repair_batch
        after_key, after_entry = self.state.repair_after or (None, None)
        keys = yield from self.fetch_op("key_repair_keys", {"after": after_key, "batch": batch})
        found: set[int] = set()
        if keys:
            names = [str(r["name"]) for r in keys]
            full = sum(int(r["n"]) for r in keys) >= batch
            after_key = names[-1] if full else None
            heads = yield from self.fetch_op("key_repair", {"keys": json.dumps(names)})
            found.update(int(r["id"]) for r in heads)
        else:
            after_key = None
        fields = ("queue", "priority", "run_at", "id")
        entry = after_entry or dict.fromkeys(fields)
        running = yield from self.fetch_op("key_repair_running", {**entry, "batch": batch})
        found.update(int(r["id"]) for r in running if r["status"] == "running")
        last = next((r for r in running if r["last"]), None)
        after_entry = None if last is None else {k: last[k] for k in fields}
        self.state.repair_after = (after_key, after_entry)
        if found:
            ids = json.dumps(sorted(found))
            held = yield from self.fetch_op("key_repair_lock", {"ids": ids})
            if held:
                ids = json.dumps(sorted(int(r["id"]) for r in held))
                yield self.stmt("key_repair_take", {"ids": ids}, NOTHING)

    def lock_is_node_local_op(self) -> Op[bool]:
        # wsrep_on: a Galera node (MariaDB, Percona XtraDB Cluster); MySQL has no such
        # variable and returns no row. SHOW runs even on a node that is not ready.
        rows: list[Row] = yield Statement("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'", None, ROWS)
        yield COMMIT
        return any(str(v).upper() == "ON" for r in rows for v in r.values())

    def migrate_lock_acquire(self, holder: str, stale_s: float) -> Op[bool]:
        sql, mine = self._cluster_lock, {"holder": holder}
        rows: list[Row] = yield Statement(sql["read"], None, ROWS)
        if not rows:
            return bool((yield Statement(sql["take"], mine, ROWCOUNT)))
        [row] = rows
        if row["name"] != holder and int(row["age_us"]) < stale_s * 1e6:
            return False
        yield Statement(sql["renew"], mine, NOTHING)
        return True

    def migrate_lock_release(self, holder: str) -> Op[None]:
        yield Statement(self._cluster_lock["drop"], {"holder": holder}, NOTHING)

    def migration_applies(self, statement: str) -> bool:
        only = _ONLY_ON.search(statement)
        return only is None or (only[1].lower() == "mariadb") == self.mariadb

    def is_closed(self, conn: Any) -> bool:
        return own.is_closed(conn)

    def count_sessions(self, conn: Any, sessions: Sequence[int]) -> int:
        # MariaDB's information_schema view works (see mysql.sql)
        name = "count_sessions" if self.mariadb else "count_sessions_mysql"
        row = self.fetch_one(conn, name, {"sessions": list(sessions)})
        return 0 if row is None else int(row["n"])

    def version_op(self) -> Op[list[Row]]:
        rows: list[Row] = yield Statement("SELECT VERSION() AS v", None, ROWS)
        yield COMMIT
        return rows

    def fileno(self, conn: Any) -> int | None:
        # is_closed() above pings the server; a pooled connection is checked at every
        # checkout without that round trip, on the driver's socket.
        return own.fileno(conn)

    def begin_sql(self) -> str:
        return "START TRANSACTION"

    def insert(self, params: Mapping[str, Any]) -> Op[int]:
        yield from self.lock_key(params)
        new_id: int = yield self.stmt("enqueue", params, LASTROWID)
        return new_id

    def insert_dedupe_once(
        self, params: Mapping[str, Any], name: str = "enqueue_dedupe"
    ) -> Op[int | None]:
        new_id: int = yield self.stmt(name, params, LASTROWID)
        return new_id

    def insert_many(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]:
        return (yield from self._insert_rows(common, rows, None))

    def insert_parents(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], copy: bool
    ) -> Op[list[int]]:
        # The mark goes in with the rows (no UPDATE of every row after them).
        return (yield from self._insert_rows(common, rows, True))

    def _insert_rows(
        self, common: Mapping[str, Any], rows: Sequence[tuple[str, str]], mark: bool | None
    ) -> Op[list[int]]:
        yield from self.lock_key(common)
        params = dict(common)
        params["has_children"] = mark
        # Payloads are JSON text already: nesting them as strings keeps them byte-exact.
        params["rows"] = json.dumps(rows, ensure_ascii=True, separators=(",", ":"))
        if self.insert_returning:
            sql = self.sql["enqueue_rows"] + "\nRETURNING id, idempotency_key"
            found: list[Row] = yield Statement(sql, params, ROWS)
            by_key = {str(r["idempotency_key"]): int(r["id"]) for r in found}
        else:
            first: int = yield Statement(self.sql["enqueue_rows"], params, LASTROWID)
            by_key = yield from self._ids_of(first, [k for _, k in rows])
        return [by_key[k] for _, k in rows]

    def _ids_of(self, first: int, keys: Sequence[str]) -> Op[dict[str, int]]:
        by_key: dict[str, int] = {}
        if self.caps.ids_in_range:  # (not on an older release's statements)
            wanted = set(keys)
            [near] = yield self.stmt("ids_in_range", {"first": first, "n": len(keys)})
            pairs = json.loads(near["pairs"]) if near["pairs"] is not None else []
            by_key = {k: int(i) for i, k in pairs if k in wanted}
        if len(by_key) < len(keys):
            rest = json.dumps([k for k in keys if k not in by_key])
            found: list[Row] = yield self.stmt("ids_by_key", {"keys": rest})
            by_key.update((str(r["idempotency_key"]), int(r["id"])) for r in found)
        return by_key

    def lock_queue(self, queue: str) -> Op[bool]:
        # No transaction-owned advisory lock here (GET_LOCK belongs to the session): a row
        # of <table>_keys stands in, named so that no key can have the name (keys are
        # printable text). It is made the first time; a row that exists but did not come
        # back is held by another claim.
        name = {"lock_name": "\x1fqueue " + hashlib.sha256(queue.encode()).hexdigest()}
        for _ in range(2):
            if (yield from self.fetch_one_op("queue_lock", name)):
                return True
            if (yield from self.fetch_one_op("queue_lock_exists", name)):
                return False
            yield from self.count_op("queue_lock_row", name)
        return False

    two_step_claim: ClassVar[bool] = True

    def claim_pick(self, p: ClaimParams) -> Statement:
        if len(p.queues) == 1:
            return self.stmt("claim_pick", {"queue": p.queues[0], "limit": p.limit})
        return self.stmt("claim_pick_queues", {"queues": list(p.queues), "limit": p.limit})

    def claim_take(
        self, picked: Sequence[tuple[int, int]], lease_until: datetime, claim_id: int
    ) -> Statement:
        return self._cas("claim_take", picked, {"lease_until": lease_until, "claim_id": claim_id})

    def claim_expire(self, picked: Sequence[tuple[int, int]]) -> Statement:
        return self._cas("claim_expire", picked, {})

    def claim_which(self, ids: Sequence[int]) -> Statement:
        return self.stmt("claim_which", {"ids": list(ids)})

    def _cas(
        self, name: str, picked: Sequence[tuple[int, int]], params: Mapping[str, Any]
    ) -> Statement:
        return self.stmt(name, {**params, "pairs": json.dumps(list(picked))}, ROWCOUNT)

    def try_keys(self, keys: Sequence[str]) -> Op[set[str]]:
        """Lock the rows of *keys* in ``<table>_keys`` without waiting; the keys locked."""
        if not self.caps.key_try:  # an older release's statements
            return set(keys)
        names = {"keys": json.dumps(list(keys))}
        rows: list[Row] = yield self.stmt("key_try", names)
        held = {str(r["order_key"]) for r in rows}
        if len(held) < len(keys):
            there: list[Row] = yield self.stmt("key_rows", names)
            missing = set(keys) - {str(r["order_key"]) for r in there}
            for key in sorted(missing):
                yield from self.count_op("queue_lock_row", {"lock_name": key})
            if missing:
                more: list[Row] = yield self.stmt("key_try", {"keys": json.dumps(sorted(missing))})
                held |= {str(r["order_key"]) for r in more}
        return held

    def complete_many(self, items: Sequence[Completion]) -> Op[set[int]]:
        # One fenced UPDATE for the batch (the common case: every job still held, two
        # round trips with the commit, as a bare loop would do), its items one bound JSON
        # array. FOUND_ROWS makes rowcount the number of rows matched.
        # Workflows: first only the rows without has_children (marked 0), the jobs that
        # use none; then, when that missed some, the others (marked 1), which have
        # children to settle (see end).
        wanted = {
            job_id: (attempt, claim_id, result) for job_id, attempt, claim_id, result in items
        }
        doc = json.dumps([(i, a, c, r) for i, (a, c, r) in wanted.items()])
        sql, bound = self.bind(self.sql["complete_held"], {"items": doc, "marked": 0})
        matched: int = yield Statement(sql, bound, ROWCOUNT)
        if matched == len(wanted):
            return set(wanted)
        marked = 0
        if self.caps.workflows:  # (not on an older release's statements)
            sql, bound = self.bind(self.sql["complete_held"], {"items": doc, "marked": 1})
            marked = yield Statement(sql, bound, ROWCOUNT)
        if matched + marked == len(wanted):
            held = set(wanted)
        elif matched + marked == 0:
            return set()
        else:
            held = yield from self._completed(wanted, {False: matched, True: marked})
        if marked:
            yield from self.settle(sorted(held))  # (those without children find none)
        return held

    def _completed(
        self, wanted: Mapping[int, tuple[int, int | None, str | None]], counts: Mapping[bool, int]
    ) -> Op[set[int]]:
        which: list[Row] = yield self.stmt("complete_which", {"ids": list(wanted)})
        rows = [
            r for r in which if wanted[int(r["id"])][:2] == (int(r["attempt"]), r.get("claim_id"))
        ]
        held: set[int] = set()
        for marked, n in counts.items():
            mine = [r for r in rows if bool(r.get("has_children")) == marked]
            if n and mine:
                newest = max(r["finished_at"] for r in mine)
                held.update(int(r["id"]) for r in mine if r["finished_at"] == newest)
        return held

    def end(self, name: str, params: Mapping[str, Any]) -> Op[bool]:
        # No UPDATE ... RETURNING: the write matches only a row without has_children
        # first (a job that uses no workflow: one statement, as before), then any row.
        if not self.caps.workflows:  # an older release's statements: no workflows
            yield from self.fenced(name, params)
            return False
        if (yield from self.count_op(name, {**params, "marked": 0})) == 1:
            return False
        yield from self.fenced(name, {**params, "marked": 1})
        return True
