# Generated from src/skiplock/_shell/session_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""The I/O under a queue: its pool, the retry loop, COMMIT, rollback or drop.

Generated from ``session_async.py`` by ``scripts/async_to_sync``; edit that file.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from .._core import calls
from .._core.sql import NOTHING, Op, Statement, StatementError, TableName
from ..dialects import Dialect, ServerInfo, get_dialect
from ..drivers import Adapter, adapt
from ..drivers.url import DatabaseURL
from ..errors import BackendError
from .acompat import sleep
from .pool import Pool
from .schema import Schema
from .settings import PoolSettings, PoolStats, QueueSettings
from .waits import Waits

__all__ = ["Session"]

log = logging.getLogger("skiplock")
T = TypeVar("T")
R = TypeVar("R")

_RETRIES = 5
#: tries of a transaction that lost a conflict (a deadlock or lock timeout, before or at
#: COMMIT): on Galera, workers on several nodes pick the same first jobs (SKIP LOCKED skips
#: only the node's own locks) and certification aborts all but one writer of a row, so a
#: claim may lose several races in a row; each loss is another claim's success
_CONFLICTS = 20


class Session:
    """A queue's connections and the transactions run on them."""

    def _setup(self, settings: QueueSettings) -> None:
        """The queue's attributes and pool from its checked *settings*; opens nothing."""
        #: what the queue was made with, checked (a queue on the same database takes it whole)
        self.settings: QueueSettings = settings
        self.url: DatabaseURL = settings.url
        #: queue name → the most of its jobs that may hold a live lease at once
        self.queue_limits: dict[str, int] = dict(settings.queue_limits)  # this queue's own
        #: queue name → (N, per): at most N of its jobs claimed in any window of per seconds
        self.rate_limits: dict[str, tuple[int, float]] = dict(settings.rate_limits)
        self.table: TableName = settings.table
        self.dialect: Dialect = get_dialect(self.url, self.table)
        #: the server's product and version, read on the first connection
        self.server: ServerInfo | None = None
        self.schema = Schema(self.dialect)
        #: set once the table's schema version was found to be the one this code knows
        self._schema_ok = False
        self.pool_settings: PoolSettings = settings.pool
        self._pool = self._make_pool()
        #: the jobs this queue's ``wait`` calls poll for, looked up together
        self._waits = Waits()

    def adapt(self, conn: Any) -> Adapter:
        """The driver adapter for your *conn*. Raises :class:`~skiplock.ConfigurationError`,
        before anything is sent, for an object skiplock cannot use or a connection to
        another database."""
        d = self.dialect
        return adapt(conn, d.name, self.url.flavor)

    # -- connections ----------------------------------------------------------------------

    def _make_pool(self) -> Pool:
        return Pool(
            self._open,
            usable=self._usable,
            settings=self.pool_settings,
            name=f"{self.url.flavor} at {self.url.masked()}",
        )

    def _open(self) -> Adapter:
        """A new pooled connection; the server ends it when it idles in a transaction past
        the dialect's limit."""
        own = self._connect()
        limit = self.dialect.idle_limit_sql()
        if limit:
            try:
                self._statements(own, limit)
                own.commit()
            except own.errors as exc:
                _close_quietly(own)
                raise self.dialect.wrap(exc, "connecting", own.error_info(exc)) from exc
            except BaseException:
                _close_quietly(own)
                raise
        return own

    def _statements(self, own: Adapter, sqls: Sequence[str]) -> None:
        for sql in sqls:
            own.execute(Statement(sql, None, NOTHING))

    def _connect(self) -> Adapter:
        """A new connection in its adapter; the first one reads the server's version
        (``UnsupportedServer`` if too old)."""
        errors = self.dialect.driver_errors()
        try:
            own = self.dialect.adapter(self.dialect.connect())
        except errors as exc:
            raise self.dialect.wrap(exc, "connecting") from exc
        if self.server is None:
            try:
                self.server = self.dialect.server_info(own.connection)
                # the dialect for this server (MySQL or MariaDB behind one scheme)
                self.dialect = self.schema.dialect = self.dialect.for_server(self.server)
            except StatementError as exc:
                _close_quietly(own)
                raise self.dialect.wrap(exc, "connecting") from exc.cause
            except BaseException:
                _close_quietly(own)
                raise
        return own

    def _usable(self, own: Adapter) -> bool:
        """An idle pooled connection not known to be broken (no round trip)."""
        return self.dialect.is_usable(own.connection)

    def _checkout(self) -> Adapter:
        own: Adapter = self._pool.get()
        return own

    def pool_stats(self) -> PoolStats:
        """The pool's connections open, idle and in use, and the callers waiting, now (no
        I/O; docs/pool.md)."""
        return self._pool.state.stats()

    # -- running one operation ------------------------------------------------------------

    def _call(self, call: calls.Call[T, R]) -> R:
        if call.make is None:
            return call.finish(None)  # type: ignore[arg-type]
        return call.finish(
            self._run_op(call.doing, call.conn, call.make, call.check, call.one_statement)
        )

    def _run(
        self, doing: str, conn: Any, make: Callable[..., Op[T]], *args: Any, check: bool = True
    ) -> T:
        return self._run_op(doing, conn, lambda _: make(*args), check)

    def _run_op(
        self,
        doing: str,
        conn: Any,
        make: Callable[[bool], Op[T]],
        check: bool = True,
        one_statement: bool = False,
    ) -> T:
        """Run ``make(can_copy)`` in a transaction of its own (or the caller's, on *conn*).
        A deadlock, lock timeout or lost connection before COMMIT, or a deadlock at COMMIT
        (Galera), runs it again with jitter, a bounded number of times; a connection lost
        during COMMIT is raised. An interruption drops the connection. *one_statement*
        (see :class:`~skiplock._core.calls.Call`): in autocommit where that is free, and a
        connection lost during the statement is raised like one lost during COMMIT."""
        theirs = None if conn is None else self.adapt(conn)
        if check and not self._schema_ok:
            self._check_schema(theirs)
        if theirs is not None:
            return self._run_with_caller_conn(doing, theirs, make(theirs.can_copy))
        failures = conflicts = 0  # lost connections; deadlocks and lock timeouts
        while True:
            own = self._checkout()
            alone = one_statement and own.free_autocommit
            if alone:
                try:
                    own.set_autocommit(True)
                except own.errors as exc:  # a broken connection: nothing was sent
                    self._pool.put(own, broken=True)
                    failures += 1
                    if failures < _RETRIES:
                        continue
                    raise self.dialect.wrap(exc, doing, own.error_info(exc)) from exc
            stuck = False  # still in autocommit: never back in the pool
            try:
                try:
                    result = own.run(make(own.can_copy))
                finally:
                    if alone:
                        with suppress(Exception):
                            own.set_autocommit(False)
                        stuck = own.autocommit()
            except StatementError as exc:
                err = self.dialect.wrap(exc, doing)
                self._rollback_or_drop(own, lost=err.connection_lost or stuck)
                if alone and err.connection_lost:
                    err.args = (str(err) + "; whether it committed is unknown",)
                    raise err from exc.cause
                if err.retryable and not err.connection_lost:  # a conflict, as at COMMIT
                    conflicts += 1
                    if conflicts < _CONFLICTS:
                        log.debug("retrying %s after %s", doing, err)
                        sleep(random.uniform(0.005, 0.01 * 2 ** min(conflicts, 5)))
                        continue
                    raise err from exc.cause
                failures += 1
                if err.retryable and failures < _RETRIES:
                    log.debug("retrying %s after %s", doing, err)
                    sleep(random.uniform(0.005, 0.02 * 2**failures))
                    continue
                raise err from exc.cause
            except BaseException as exc:
                self._rollback_or_drop(own, lost=_interrupted(exc) or stuck)
                raise
            if alone:  # committed by the statement itself
                self._pool.put(own, broken=stuck)
                return result
            try:
                self._commit(own, f"committing ({doing})")
            except BackendError as err:
                conflicts += 1
                if not err.retryable or err.connection_lost or conflicts >= _CONFLICTS:
                    raise
                log.debug("retrying %s after %s", doing, err)
                sleep(random.uniform(0.005, 0.01 * 2 ** min(conflicts, 5)))
                continue
            return result

    def check_schema(self) -> None:
        """Raise :class:`~skiplock.ConfigurationError` unless the table's schema is current
        (read once per queue)."""
        if not self._schema_ok:
            self._check_schema(None)

    def _check_schema(self, theirs: Adapter | None) -> None:
        """:meth:`check_schema`, on *theirs* when given."""
        doing = "reading the schema version"
        if theirs is None:
            version = self._run(doing, None, self.schema.version, check=False)
        else:
            version = self._run_with_caller_conn(doing, theirs, self.schema.version())
        self.schema.check(version)
        self._schema_ok = True

    def _run_with_caller_conn(self, doing: str, theirs: Adapter, op: Op[T]) -> T:
        try:
            return theirs.run_with_caller_conn(op, self.dialect.begin_sql())
        except StatementError as exc:
            raise self.dialect.wrap(exc, doing) from exc.cause

    def _commit(self, own: Adapter, doing: str) -> None:
        """COMMIT and return the connection to the pool. Lost or interrupted during COMMIT:
        dropped, raised, never retried."""
        try:
            own.commit()
        except own.errors as exc:
            err = self.dialect.wrap(exc, doing, own.error_info(exc))
            self._rollback_or_drop(own, lost=err.connection_lost)
            if err.connection_lost:
                err.args = (str(err) + "; whether it committed is unknown",)
            raise err from exc
        except BaseException:
            self._pool.put(own, broken=True)
            raise
        self._pool.put(own)

    def _rollback_or_drop(self, own: Adapter, *, lost: bool = False) -> None:
        """Return the connection rolled back; drop it when *lost* (no rollback is sent) or
        when the rollback fails."""
        if not lost:
            try:
                own.rollback()
            except Exception:
                lost = True
            except BaseException:
                self._pool.put(own, broken=True)
                raise
        self._pool.put(own, broken=lost)

    @contextmanager
    def _own_transaction(self) -> Iterator[Adapter]:
        """A pooled connection for a ``transaction()`` block, exempt from the idle limit."""
        own = self._checkout()
        try:
            # the block's own code runs between its statements: exempt from the idle limit
            self._exempt(own, self.dialect.exempt_begin_sql(), "beginning your transaction")
            yield own
            self._exempt(own, self.dialect.exempt_end_sql(), "ending your transaction")
        except BaseException as exc:
            lost = _interrupted(exc) or (isinstance(exc, BackendError) and exc.connection_lost)
            if not lost:
                lost = not self._unexempt(own)
            self._rollback_or_drop(own, lost=lost)
            raise
        self._commit(own, "committing your transaction")

    def _exempt(self, own: Adapter, sqls: Sequence[str], doing: str) -> None:
        try:
            self._statements(own, sqls)
        except own.errors as exc:
            raise self.dialect.wrap(exc, doing, own.error_info(exc)) from exc

    def _unexempt(self, own: Adapter) -> bool:
        """Give back the idle limit after a block that raised; False when that failed."""
        try:
            self._statements(own, self.dialect.exempt_end_sql())
        except Exception:
            return False
        except BaseException:
            self._pool.put(own, broken=True)
            raise
        return True


def _interrupted(exc: BaseException) -> bool:
    """*exc* is an interruption (``CancelledError``, ``KeyboardInterrupt``, …), not an
    error."""
    return not isinstance(exc, Exception)


def _close_quietly(own: Adapter) -> None:
    """Close *own*, ignoring errors (abort if that fails); an interruption is raised."""
    try:
        own.close()
    except BaseException as exc:
        with suppress(Exception):
            own.abort()
        if _interrupted(exc):
            raise
