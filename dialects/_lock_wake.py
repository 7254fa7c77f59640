"""The single-worker lock and the wake-ups of idle workers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .capabilities import Capabilities
from .contract import COMMIT, Adapter, Op, Row, Wakeup, run_sync

__all__ = ["LockAndWakeup"]


class LockAndWakeup:
    """Mixed into :class:`~skiplock.dialects.base.BaseDialect`, which defines what is declared
    here."""

    if TYPE_CHECKING:
        sql: dict[str, str]
        caps: Capabilities

        def connect(self) -> Any: ...

        def adapter(self, conn: Any) -> Adapter: ...

        def fetch_one_op(
            self, name: str, params: Mapping[str, Any] | None = None
        ) -> Op[Row | None]: ...

        def fetch_one(
            self, conn: Any, name: str, params: Mapping[str, Any] | None = None
        ) -> Row | None: ...

        def run(self, conn: Any, name: str, params: Mapping[str, Any] | None = None) -> int: ...

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
        return run_sync(self.lock_is_node_local_op(), self.adapter(conn))

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
        return run_sync(self.lock_acquire_op(key, name, wait), self.adapter(conn))

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
