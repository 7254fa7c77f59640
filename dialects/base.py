"""What every dialect provides, and the common path that most of them share.

A dialect subclass writes only what differs from this path, and says why.
"""

from __future__ import annotations

import importlib
import re
import select
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from skiplock._options import Option, check_options
from skiplock._sql import TableName, load_statements, render_statements
from skiplock._url import DatabaseURL, mask_password
from skiplock.errors import BackendError, ConfigurationError

__all__ = ["Dialect", "ServerInfo"]

Row = dict[str, Any]
_PARAM = re.compile(r"%\((\w+)\)s")


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself."""

    product: str  #: "PostgreSQL", "MySQL", "MariaDB", "SQL Server"
    version: tuple[int, ...]
    version_string: str


class Dialect:
    """One database: its driver, its statements, and the operations that need more than
    one statement there.

    Every statement name in :attr:`REQUIRED_STATEMENTS` exists in every ``.sql`` file.
    """

    name: ClassVar[str]
    sql_file: ClassVar[str]
    driver_module: ClassVar[str]
    extra: ClassVar[str]
    #: the driver binds a Python list as an array (``= ANY(%(ids)s)``); otherwise lists are
    #: expanded into ``%(ids__0)s, %(ids__1)s, …`` for ``IN (%(ids)s)``
    array_params: ClassVar[bool] = False
    #: PostgreSQL-style LISTEN/NOTIFY can wake idle workers
    supports_notify: ClassVar[bool] = False
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
            "cancel_pending",
            "cancel_running",
            "cancelled",
            "get",
            "stats",
            "retry_failed",
            "prune",
            "list_jobs",
            "clock",
            "tick_claim",
            "tick_last",
            "tick_prune",
        }
    )

    def __init__(self, url: DatabaseURL, table: TableName) -> None:
        self.url = url
        self.table = table
        #: the URL's query options, checked and converted (see URL_OPTIONS)
        self.options: dict[str, Any] = check_options(
            url.flavor, url.options, self.URL_OPTIONS, self.REFUSED_OPTIONS
        )
        raw = load_statements("skiplock.dialects", self.sql_file)
        missing = self.REQUIRED_STATEMENTS - raw.keys()
        if missing:  # a packaging or editing mistake, never a user's
            raise RuntimeError(f"{self.sql_file} lacks statements {sorted(missing)}")
        self.sql: dict[str, str] = render_statements(raw, table, self.quote)
        self._driver: ModuleType | None = None

    # -- driver ---------------------------------------------------------------------------

    @property
    def driver(self) -> ModuleType:
        if self._driver is None:
            try:
                self._driver = importlib.import_module(self.driver_module)
            except ImportError as exc:
                raise ConfigurationError(
                    f"the {self.url.flavor} driver ({self.driver_module}) is not installed: "
                    f"pip install 'skiplock[{self.extra}]'"
                ) from exc
        return self._driver

    def connect(self) -> Any:
        """A new driver connection: autocommit off, READ COMMITTED, UTC."""
        raise NotImplementedError

    def server_info(self, conn: Any) -> ServerInfo:
        """Read the server's product and version (raises ``UnsupportedServer`` if too old)."""
        raise NotImplementedError

    def quote(self, ident: str) -> str:
        raise NotImplementedError

    def driver_errors(self) -> tuple[type[BaseException], ...]:
        """The exception classes of the driver that :meth:`classify` turns into ours."""
        raise NotImplementedError

    def classify(self, exc: BaseException) -> tuple[bool, bool]:
        """``(retryable, connection_lost)`` for a driver error."""
        raise NotImplementedError

    def wrap(self, exc: BaseException, doing: str) -> BackendError:
        """Our error for a driver error, with the password masked."""
        retryable, lost = self.classify(exc)
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

    def is_closed(self, conn: Any) -> bool:
        return False

    def fileno(self, conn: Any) -> int | None:
        """The socket of *conn* (-1 once closed), or None where the driver hides it."""
        return None

    def is_usable(self, conn: Any) -> bool:
        """False if an idle *conn* is known to be broken, found without a round trip: the
        driver says it is closed, or the server sent something unasked or closed the
        socket (what a killed session, a server shutdown or an idle timeout does: the
        socket turns readable). Where the driver hides its socket only the driver's flag
        is looked at, and a server-side kill is found at the connection's next use."""
        try:
            fd = self.fileno(conn)
        except Exception:
            return False
        if fd is None:
            return not self.is_closed(conn)
        return fd >= 0 and not _readable(fd)

    # -- statements -----------------------------------------------------------------------

    def cursor(self, conn: Any) -> Any:
        raise NotImplementedError

    @contextmanager
    def _cursor(self, conn: Any) -> Iterator[Any]:
        cur = self.cursor(conn)
        try:
            yield cur
        finally:
            cur.close()

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

    def execute(self, cur: Any, name: str, params: Mapping[str, Any] | None = None) -> Any:
        sql, bound = self.bind(self.sql[name], params or {})
        cur.execute(sql, bound)
        return cur

    def run(self, conn: Any, name: str, params: Mapping[str, Any] | None = None) -> int:
        """Run one statement; return the number of rows it matched."""
        with self._cursor(conn) as cur:
            self.execute(cur, name, params)
            return int(cur.rowcount)

    def fetch(self, conn: Any, name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        with self._cursor(conn) as cur:
            self.execute(cur, name, params)
            return [dict(r) for r in cur.fetchall()]

    def fetch_one(
        self, conn: Any, name: str, params: Mapping[str, Any] | None = None
    ) -> Row | None:
        rows = self.fetch(conn, name, params)
        return rows[0] if rows else None

    # -- single-worker lock and wake-ups -------------------------------------------------
    # Optional: a dialect whose .sql file lacks the lock_* statements cannot run
    # mode="single", and one without supports_notify is woken by polling only.

    LOCK_STATEMENTS: ClassVar[frozenset[str]] = frozenset(
        {"lock_acquire", "lock_check", "lock_release", "live_leases", "session_id", "kill_session"}
    )

    def supports_lock(self) -> bool:
        return self.sql.keys() >= self.LOCK_STATEMENTS

    def lock_acquire(self, conn: Any, key: int, name: str, wait: float) -> bool:
        """Take the session-level lock *key* / *name* on *conn*, waiting up to *wait*
        seconds; True when it is held. Commits, which leaves a session lock in place."""
        # GET_LOCK takes fractional seconds (MariaDB honours them; MySQL rounds): a retake
        # that waits 0.2 s must not wait a whole second while its worker's loop is blocked.
        params = {"name": name, "wait_s": round(wait, 3), "wait_ms": round(wait * 1000)}
        row = self.fetch_one(conn, "lock_acquire", params)
        conn.commit()
        return bool(row and row["acquired"])

    def lock_check(self, conn: Any, key: int, name: str) -> bool:
        """True if *conn* still holds the lock (False, or a driver error, when it does not)."""
        row = self.fetch_one(conn, "lock_check", {"key": key, "name": name})
        conn.commit()
        return bool(row and row["held"])

    def lock_release(self, conn: Any, key: int, name: str) -> None:
        self.fetch(conn, "lock_release", {"key": key, "name": name})
        conn.commit()

    def listen(self) -> Any:
        """A connection that receives a notification at every enqueue (supports_notify)."""
        raise NotImplementedError

    def wait_notify(self, conn: Any, timeout: float) -> bool:
        """Wait up to *timeout* seconds on a :meth:`listen` connection; True if woken."""
        raise NotImplementedError

    # -- operations: the common path ---------------------------------------------------------

    def migration_done(self, exc: BaseException) -> bool:
        """True when a migration statement failed only because its effect is already there
        (a column that exists, a constraint already dropped): a re-run of a migration that
        stopped half-way, on a database whose DDL cannot say IF [NOT] EXISTS."""
        return False

    def lock_key(self, conn: Any, params: Mapping[str, Any]) -> None:
        """Before an enqueue with ``order_key``: wait for other transactions enqueuing the
        same key to end, and hold that until this transaction ends (``key_lock``), so one
        key's ids grow in commit order. Nothing happens for a job without a key."""
        if params.get("order_key") is not None:
            self.run(conn, "key_lock", params)

    def lock_queue(self, conn: Any, queue: str) -> bool:
        """Try, without waiting, to take *queue*'s claim lock for this transaction; False
        while another transaction holds it."""
        row = self.fetch_one(conn, "queue_lock", {"queue": queue})
        return bool(row and row["held"])

    def claim_capped(self, conn: Any, queue: str, limit: int, lease_ms: int, cap: int) -> list[Row]:
        """Claim from *queue* so that at most *cap* of its jobs hold a live lease: under the
        queue's lock (held until this transaction ends; none taken if another claim holds
        it), count them in a statement of its own, then claim at most the room left. Every
        claim of the queue does the same, so the count cannot be stale."""
        if not self.lock_queue(conn, queue):
            return []
        row = self.fetch_one(conn, "queue_running", {"queue": queue})
        room = cap - int(row["n"] if row else 0)
        return self.claim(conn, [queue], min(limit, room), lease_ms) if room > 0 else []

    def insert(self, conn: Any, params: Mapping[str, Any]) -> int:
        row = self.fetch_one(conn, "enqueue", params)
        assert row is not None
        return int(row["id"])

    def insert_dedupe(self, conn: Any, params: Mapping[str, Any]) -> int | None:
        """Insert unless an active job holds the key; None when one does."""
        row = self.fetch_one(conn, "enqueue_dedupe", params)
        return None if row is None else int(row["id"])

    def insert_many(
        self, conn: Any, common: Mapping[str, Any], rows: Sequence[tuple[str, str]]
    ) -> list[int]:
        """Insert ``(payload_json, idempotency_key)`` rows; ids in the same order."""
        raise NotImplementedError

    def claim(self, conn: Any, queues: Sequence[str], limit: int, lease_ms: int) -> list[Row]:
        """Claim up to *limit* claimable jobs; expired jobs with spent attempts end failed."""
        raise NotImplementedError

    def complete_many(self, conn: Any, items: Sequence[tuple[int, int, str | None]]) -> set[int]:
        """Complete ``(id, attempt, result_json)`` items; return the ids that were still held."""
        done: set[int] = set()
        for job_id, attempt, result in items:
            if self.run(conn, "complete", {"id": job_id, "attempt": attempt, "result": result}):
                done.add(job_id)
        return done


def _readable(fd: int) -> bool:
    try:
        if hasattr(select, "poll"):  # any descriptor number, unlike select()
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a socket we can ask about: treat it as broken


def split_statements(block: str) -> list[str]:
    """Split a block of DDL on semicolons at line ends (our DDL has no semicolons inside)."""
    return [s.strip() for s in re.split(r";\s*\n", block + "\n") if s.strip()]
