"""The queue: enqueue, claim, and the fenced writes that follow a claim.

Every method runs as one short transaction of its own on a pooled connection, committed
before it returns; or, given ``conn=``, inside the caller's open transaction on the
caller's own driver connection, which the caller commits (see :meth:`Queue.transaction`).
Each method is one line over :mod:`skiplock._calls`, the core that
:class:`~skiplock.AsyncQueue` shares.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any, TypeVar

from . import _calls as calls
from ._calls import backoff
from ._checks import dumps as _dumps
from ._checks import error_text as _error_text
from ._checks import integer as _int
from ._checks import milliseconds as _ms
from ._checks import queue_limits as _queue_limits
from ._checks import queue_names as _queues
from ._checks import seconds as _seconds
from ._checks import text as _text
from ._ops import Op, StatementError, run_sync, run_theirs
from ._pool import Pool, PoolSettings
from ._schema import Schema
from ._sql import TableName
from ._transaction import Transaction
from ._url import DatabaseURL, parse_url
from .dialects import Dialect, ServerInfo, get_dialect
from .drivers import Adapter, adapt
from .errors import BackendError
from .job import Job, Stats

__all__ = ["Queue", "Transaction", "backoff", "connect"]
# the checks other modules (worker, admin) import from here
_CHECKS = (_dumps, _error_text, _int, _ms, _queues, _seconds, _text)

log = logging.getLogger("skiplock")
T = TypeVar("T")
R = TypeVar("R")

DEFAULT_TABLE = "skiplock_jobs"
_RETRIES = 5


def connect(
    url: str | None = None,
    *,
    table: str = DEFAULT_TABLE,
    max_size: int | None = None,
    max_idle: int | None = None,
    pool_timeout: float = 30.0,
    max_lifetime: float = 3600.0,
    max_idle_time: float = 600.0,
    queue_limits: Mapping[str, int] | None = None,
) -> Queue:
    """A :class:`Queue` on *url* (default ``$SKIPLOCK_URL``) and *table*.

    Its pool holds at most ``max_size`` connections (default 10, or ``max_idle`` if that
    is larger), keeps up to ``max_idle`` of them idle (default: all), makes a caller wait
    up to ``pool_timeout`` seconds for a free one (then :class:`~skiplock.PoolTimeout`),
    and closes a connection older than ``max_lifetime`` or unused for ``max_idle_time``
    seconds. ``queue_limits`` (queue name → N) caps how many jobs of that queue hold a
    live lease at once, across every worker that claims through a queue object given the
    same limits. No connection is opened yet; a bad URL, unknown scheme, unsafe table
    name, pool setting or limit raises :class:`~skiplock.ConfigurationError` here, a
    missing driver at the first use.
    """
    return Queue(
        url,
        table=table,
        max_size=max_size,
        max_idle=max_idle,
        pool_timeout=pool_timeout,
        max_lifetime=max_lifetime,
        max_idle_time=max_idle_time,
        queue_limits=queue_limits,
    )


class Queue:
    """A job queue in one table of one database. Thread-safe; see :func:`connect`."""

    def __init__(
        self,
        url: str | None = None,
        *,
        table: str = DEFAULT_TABLE,
        max_size: int | None = None,
        max_idle: int | None = None,
        pool_timeout: float = 30.0,
        max_lifetime: float = 3600.0,
        max_idle_time: float = 600.0,
        queue_limits: Mapping[str, int] | None = None,
    ):
        self.url: DatabaseURL = parse_url(url)
        #: queue name → the most of its jobs that may hold a live lease at once
        self.queue_limits: dict[str, int] = _queue_limits(queue_limits)
        self.table: TableName = TableName.parse(table)
        self.dialect: Dialect = get_dialect(self.url, self.table)
        self.server: ServerInfo | None = None
        self.schema = Schema(self.dialect)
        #: set once the table's schema version was found to be the one this code knows
        self._schema_ok = False
        self._pool = self._make_pool(max_size, max_idle, pool_timeout, max_lifetime, max_idle_time)

    def __repr__(self) -> str:
        return f"<skiplock.Queue {self.url.masked()} table={self.table}>"

    # -- connections ----------------------------------------------------------------------

    def _make_pool(
        self,
        max_size: object,
        max_idle: object,
        timeout: object,
        max_lifetime: object,
        max_idle_time: object,
    ) -> Pool:
        """The queue's pool (see :class:`~skiplock._pool.Pool`), its settings checked."""
        self.pool_settings = PoolSettings.check(
            max_size, max_idle, timeout, max_lifetime, max_idle_time
        )
        return Pool(
            self._new_connection,
            usable=self.dialect.is_usable,
            settings=self.pool_settings,
            name=f"{self.url.flavor} at {self.url.masked()}",
        )

    def _new_connection(self) -> Any:
        errors = self.dialect.driver_errors()
        try:
            conn = self.dialect.connect()
        except errors as exc:
            raise self.dialect.wrap(exc, "connecting") from exc
        if self.server is None:
            try:
                self.server = self.dialect.server_info(conn)
            except StatementError as exc:
                self._close_quietly(conn)
                raise self.dialect.wrap(exc, "connecting") from exc.cause
            except BaseException:
                self._close_quietly(conn)
                raise
        return conn

    def connection(self) -> Any:
        """A new driver connection configured like the queue's own (autocommit off, READ
        COMMITTED), outside the pool and its bound. The caller owns and closes it."""
        return self._new_connection()

    def _checkout(self) -> Adapter:
        return self.dialect.adapter(self._pool.get())

    def _close_quietly(self, conn: Any) -> None:
        with suppress(Exception):
            conn.close()

    def close(self) -> None:
        """Close the pooled connections (those in use as they come back). The queue cannot
        be used afterwards."""
        self._pool.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running one operation ------------------------------------------------------------

    def adapt(self, conn: Any) -> Adapter:
        """The driver adapter for a caller's *conn* (see :mod:`skiplock.drivers`).

        Raises :class:`~skiplock.ConfigurationError`, before anything is sent, for an
        object skiplock cannot use or a connection to another kind of database.
        """
        return adapt(conn, self.dialect.name, self.url.flavor)

    def _call(self, call: calls.Call[T, R]) -> R:
        """Run a :class:`~skiplock._calls.Call` (see :mod:`skiplock._calls`)."""
        if call.make is None:
            return call.finish(None)  # type: ignore[arg-type]
        return call.finish(self._run_op(call.doing, call.conn, call.make, call.check))

    def _run(
        self, doing: str, conn: Any, make: Callable[..., Op[T]], *args: Any, check: bool = True
    ) -> T:
        """Run the operation ``make(*args)`` (see :meth:`_run_op`)."""
        return self._run_op(doing, conn, lambda _: make(*args), check)

    def _run_op(
        self, doing: str, conn: Any, make: Callable[[bool], Op[T]], check: bool = True
    ) -> T:
        """Run the operation ``make(can_copy)`` in a transaction of its own, or in the
        caller's when *conn* is given.

        The first call that *check*s reads the table's schema version (see
        :meth:`_check_schema`) and raises ``ConfigurationError`` unless it is current.
        A failure before COMMIT rolls back; if it was a deadlock, a lock timeout or a lost
        connection the whole transaction runs again (bounded, with jitter), with a new
        operation. A connection lost during COMMIT leaves the outcome unknown: that is
        raised, never retried.
        """
        theirs = None if conn is None else self.adapt(conn)
        if check and not self._schema_ok:
            self._check_schema(theirs)
        if theirs is not None:
            return self._run_theirs(doing, theirs, make(theirs.can_copy))
        for attempt in range(1, _RETRIES + 1):
            own = self._checkout()
            try:
                result = run_sync(make(own.can_copy), own)
            except StatementError as exc:
                err = self.dialect.wrap(exc, doing)
                self._rollback_or_drop(own, lost=err.connection_lost)
                if err.retryable and attempt < _RETRIES:
                    log.debug("retrying %s after %s", doing, err)
                    time.sleep(random.uniform(0.005, 0.02 * 2**attempt))
                    continue
                raise err from exc.cause
            except BaseException:
                self._rollback_or_drop(own)
                raise
            self._commit(own, f"committing ({doing})")
            return result
        raise AssertionError("unreachable")

    def _check_schema(self, theirs: Adapter | None) -> None:
        """Read the table's schema version, once per queue until it is found current;
        raise ``ConfigurationError`` unless it is. On the caller's connection when the
        operation runs there (a read of the catalog and the version table inside their
        transaction, which it leaves as it was, and no second connection taken from the
        pool while theirs is busy); otherwise in a transaction of its own."""
        doing = "reading the schema version"
        if theirs is None:
            version = self._run(doing, None, self.schema.version, check=False)
        else:
            version = self._run_theirs(doing, theirs, self.schema.version())
        self.schema.check(version)
        self._schema_ok = True

    def _run_theirs(self, doing: str, theirs: Adapter, op: Op[T]) -> T:
        """Run *op* on the caller's connection (see :func:`~skiplock._ops.run_theirs`)."""
        try:
            return run_theirs(op, theirs, self.dialect.begin_sql())
        except StatementError as exc:
            raise self.dialect.wrap(exc, doing) from exc.cause

    def _commit(self, own: Adapter, doing: str) -> None:
        """COMMIT a pooled connection and return it to the pool. A connection lost during
        COMMIT leaves the outcome unknown: the error says so and nothing is retried."""
        try:
            own.connection.commit()
        except own.errors as exc:
            err = self.dialect.wrap(exc, doing, own.error_info(exc))
            self._rollback_or_drop(own, lost=err.connection_lost)
            if err.connection_lost:
                err.args = (str(err) + "; whether it committed is unknown",)
            raise err from exc
        self._pool.put(own.connection)

    def _rollback_or_drop(self, own: Adapter, *, lost: bool = False) -> None:
        """Return the connection to the pool rolled back; drop it if its last use lost the
        connection or the rollback fails."""
        if not lost:
            try:
                own.connection.rollback()
            except Exception:
                lost = True
        self._pool.put(own.connection, broken=lost)

    @contextmanager
    def transaction(self, *, conn: Any = None) -> Iterator[Transaction]:
        """One transaction for your own writes and skiplock's, committed together.

        ::

            with q.transaction() as tx:
                tx.execute("INSERT INTO receipts (job_id) VALUES (%(id)s)", {"id": job.id})
                tx.complete(job)     # LeaseLost here rolls back the INSERT too

        Commits when the block ends, rolls back when it raises (and re-raises). With
        ``conn=`` (any connection :meth:`adapt` accepts), the block works in the caller's
        own transaction on that connection and neither commits nor rolls back: the
        caller does.
        """
        if conn is not None:
            yield Transaction(self, self.adapt(conn))
            return
        own = self._checkout()
        tx = Transaction(self, own)
        try:
            yield tx
        except BaseException as exc:
            self._rollback_or_drop(own, lost=isinstance(exc, BackendError) and exc.connection_lost)
            raise
        self._commit(own, "committing your transaction")

    def ping(self) -> ServerInfo:
        """Reach the server; return what it is. Raises ``UnsupportedServer`` if it is too old
        for skiplock, ``BackendError`` if it does not answer."""
        return self._call(calls.ping(self))

    # -- schema ---------------------------------------------------------------------------

    def install(self) -> None:
        """Create the jobs table, or bring it to the current schema version: the same as
        :meth:`migrate`. Idempotent."""
        self.migrate()

    def migrate(self, *, to: int | None = None) -> list[int]:
        """Bring the table from any earlier schema version to *to* (default: the current
        one); return the versions applied (empty when it was current). Online: see
        docs/migrations.md for what each step locks. Concurrent calls are serialised by an
        advisory lock; workers may keep running. Raises ``ConfigurationError`` for a
        schema newer than this skiplock knows."""
        applied = self.schema.migrate(self._new_connection, to)
        self._schema_ok = False  # checked again at the next use
        return applied

    def schema_version(self) -> int:
        """The table's schema version: 0 if the table does not exist."""
        return self._call(calls.schema_version(self))

    def uninstall(self) -> None:
        """Drop the jobs table, its version table and what belongs to them (PostgreSQL: the
        trigger and its function). Every job is lost. Idempotent."""
        return self._call(calls.uninstall(self))

    # -- enqueue --------------------------------------------------------------------------

    def enqueue(
        self,
        payload: Any,
        *,
        queue: str = "default",
        priority: int = 0,
        run_at: datetime | None = None,
        delay: float | None = None,
        max_attempts: int = 5,
        dedupe_key: str | None = None,
        key: str | None = None,
        conn: Any = None,
    ) -> int:
        """Add one job; return its id.

        Lower ``priority`` runs first. ``run_at`` (aware datetime) or ``delay`` (seconds on
        the database's clock) defer it. With ``dedupe_key``, while a job with that key is
        pending or running its id is returned and nothing is added. With ``conn``, the job
        is written in the caller's open transaction and exists only if that commits.

        With ``key``, jobs of that key run one at a time in the order they were enqueued
        (docs/worker.md, "Per-key order"): the next is claimable only once the previous is
        done, failed or cancelled. Enqueues of one key wait for each other's transactions.
        """
        return self._call(
            calls.enqueue(
                self.dialect,
                payload,
                queue,
                priority,
                run_at,
                delay,
                max_attempts,
                dedupe_key,
                key,
                conn,
            )
        )

    def enqueue_many(
        self,
        payloads: Iterable[Any],
        *,
        queue: str = "default",
        priority: int = 0,
        run_at: datetime | None = None,
        delay: float | None = None,
        max_attempts: int = 5,
        key: str | None = None,
        conn: Any = None,
    ) -> list[int]:
        """Add many jobs with the same options in one statement; return their ids in order.
        With ``key``, all of them share it and run one at a time in the order given."""
        return self._call(
            calls.enqueue_many(
                self.dialect, payloads, queue, priority, run_at, delay, max_attempts, key, conn
            )
        )

    # -- claim and the fenced writes ------------------------------------------------------

    def claim(
        self,
        *,
        queues: Sequence[str] | str = ("default",),
        limit: int = 1,
        lease: float = 30.0,
        conn: Any = None,
    ) -> list[Job]:
        """Take up to *limit* claimable jobs for *lease* seconds, lowest priority first.

        Claimable: pending with ``run_at`` reached, or running with an expired lease (its
        worker is presumed dead). Each claim adds one to ``attempt``. Rows locked by other
        claims are skipped, never waited for. A job with an expired lease and no attempts
        left ends ``failed`` instead of being returned, and so does a job whose stored
        payload cannot be decoded (``last_error`` says why; the batch's other jobs are
        returned). A queue of ``queue_limits`` gives at most its limit less its jobs holding
        a live lease, and nothing while another claim of it is under way (never waited for).
        """
        return self._call(calls.claim(self.dialect, queues, limit, lease, self.queue_limits, conn))

    def heartbeat(self, job: Job, *, lease: float | None = None, conn: Any = None) -> None:
        """Move the lease's end to now + *lease* seconds (default: 30 s or the claim's).

        Sets ``job.cancel_requested`` when :meth:`cancel` asked the job to stop. Raises
        :class:`~skiplock.LeaseLost` when the job is no longer ours.
        """
        return self._call(calls.heartbeat(self.dialect, job, lease, conn))

    def complete(self, job: Job, *, result: Any = None, conn: Any = None) -> None:
        """Mark the job done, storing *result* (JSON). Fenced: raises
        :class:`~skiplock.LeaseLost` and changes nothing if the job is no longer ours."""
        return self._call(calls.complete(self.dialect, job, result, conn))

    def complete_many(
        self, items: Iterable[Job | tuple[Job, Any]], *, conn: Any = None
    ) -> list[Job]:
        """Complete many jobs in one fenced statement; each row is checked against its own
        ``attempt``. Items are jobs or ``(job, result)`` pairs. Returns the jobs that were
        no longer held (lost); the others are done."""
        return self._call(calls.complete_many(self.dialect, items, conn))

    def fail(
        self,
        job: Job,
        error: object,
        *,
        retry_in: float | None = None,
        final: bool = False,
        conn: Any = None,
    ) -> str:
        """Record a failed attempt. With attempts left (and not *final*) the job is pending
        again after *retry_in* seconds (default :func:`backoff`); otherwise it ends
        ``failed``. Returns the new status. Fenced: raises :class:`~skiplock.LeaseLost` if
        no longer ours."""
        return self._call(calls.fail(self.dialect, job, error, retry_in, final, conn))

    def release(self, job: Job, *, conn: Any = None) -> None:
        """Give the job back now, e.g. at shutdown. Fenced. The attempt it used is kept
        (the fencing token never goes back), so a released job may run once more than
        ``max_attempts`` claims would otherwise allow."""
        return self._call(calls.release(self.dialect, job, conn))

    def cancel(self, job_id: int, *, conn: Any = None) -> str | None:
        """Cancel a job; return its status afterwards, or None if there is no such job.

        Pending or scheduled: it becomes ``cancelled`` at once and is never claimed.
        Running: a cancel request is recorded and ``"running"`` returned; its worker sees
        ``job.cancel_requested`` at its next heartbeat (on PostgreSQL at once: this
        transaction notifies the workers' listeners when it commits), an
        :class:`~skiplock.AsyncWorker` cancels an ``async def`` handler's task, and the
        job ends ``cancelled`` if the handler raises (:class:`~skiplock.Cancelled` from
        ``job.raise_if_cancelled()``, or any error but Discard); a handler that returns
        anyway completes it. Finished: nothing changes, and its status (``done``,
        ``failed``, ``cancelled``) is returned. One transaction."""
        return self._call(calls.cancel(self.dialect, job_id, conn))

    def mark_cancelled(self, job: Job, *, reason: object = "cancelled", conn: Any = None) -> None:
        """End a claimed job ``cancelled`` (its handler stopped on a cancel request),
        with *reason* as its ``last_error``. Fenced: raises
        :class:`~skiplock.LeaseLost` and changes nothing if the job is no longer ours."""
        return self._call(calls.mark_cancelled(self.dialect, job, reason, conn))

    # -- reading --------------------------------------------------------------------------

    def get(self, job_id: int, *, conn: Any = None) -> Job | None:
        """The job's record, or None if there is no such job."""
        return self._call(calls.get(self.dialect, job_id, conn))

    def list_jobs(
        self,
        *,
        status: Sequence[str] | str | None = None,
        queue: str | None = None,
        limit: int = 50,
        before_id: int | None = None,
        conn: Any = None,
    ) -> list[Job]:
        """Up to *limit* (1 to 1000) jobs, newest (highest id) first, with every field.

        *status* (one state or several) and *queue* narrow the list (None: all). For the
        next page pass the last job's id as *before_id*: pages never repeat or skip a job,
        whatever is enqueued meanwhile. Reads only: nothing is locked beyond the statement.
        """
        return self._call(calls.list_jobs(self.dialect, status, queue, limit, before_id, conn))

    def stats(self, queues: Sequence[str] | str | None = None, *, conn: Any = None) -> Stats:
        """Counts by state for *queues* (default: all queues)."""
        return self._call(calls.stats(self.dialect, queues, conn))
