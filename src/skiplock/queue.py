"""The queue: enqueue, claim, and the fenced writes that follow a claim.

Every method runs as one short transaction of its own on a pooled connection, committed
before it returns; or, given ``conn=``, inside the caller's open transaction on the
caller's own driver connection, which the caller commits (see :meth:`Queue.transaction`).
"""

from __future__ import annotations

import logging
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any, TypeVar

from ._checks import dumps as _dumps
from ._checks import error_text as _error_text
from ._checks import integer as _int
from ._checks import milliseconds as _ms
from ._checks import queue_limits as _queue_limits
from ._checks import queue_names as _queues
from ._checks import run_at_or_delay as _run_at
from ._checks import seconds as _seconds
from ._checks import text as _text
from ._ops import ROWCOUNT, Op, StatementError, run_sync, run_theirs
from ._pool import Pool
from ._schema import Schema
from ._sql import TableName
from ._transaction import Transaction
from ._url import DatabaseURL, parse_url
from .dialects import Dialect, ServerInfo, get_dialect
from .drivers import Adapter, adapt
from .errors import BackendError, ConfigurationError, PayloadError
from .job import STATUSES, Job, Stats, utc

__all__ = ["Queue", "Transaction", "backoff", "connect"]

log = logging.getLogger("skiplock")
T = TypeVar("T")

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


def backoff(attempt: int, *, base: float = 1.0, cap: float = 3600.0, jitter: float = 0.25) -> float:
    """Seconds to wait before retrying after *attempt* failed: ``base * 2**(attempt-1)``,
    capped, spread by ±*jitter* so that jobs failing together do not return together."""
    delay = min(cap, base * 2.0 ** max(0, min(attempt - 1, 62)))
    return max(0.0, delay * (1.0 + random.uniform(-jitter, jitter)))


def _uuid4_batch(n: int) -> list[str]:
    """*n* random (version 4) UUIDs as text, from one read of the OS's random source:
    ``str(uuid.uuid4())`` costs a system call per key, a third of a bulk enqueue."""
    raw = bytearray(os.urandom(16 * n))
    raw[6::16] = bytes((b & 0x0F) | 0x40 for b in raw[6::16])  # version 4
    raw[8::16] = bytes((b & 0x3F) | 0x80 for b in raw[8::16])  # RFC 4122 variant
    h = raw.hex()
    return [
        f"{h[o : o + 8]}-{h[o + 8 : o + 12]}-{h[o + 12 : o + 16]}-{h[o + 16 : o + 20]}-"
        f"{h[o + 20 : o + 32]}"
        for o in range(0, 32 * n, 32)
    ]


#: connections a queue's pool may open when neither max_size nor a larger max_idle is given
DEFAULT_MAX_SIZE = 10


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
        idle = None if max_idle is None else _int(max_idle, "max_idle", 0, 10_000)
        if max_size is None:
            size = max(DEFAULT_MAX_SIZE, idle or 0)
        else:
            size = _int(max_size, "max_size", 1, 10_000)
        if idle is not None and idle > size:
            raise ConfigurationError(
                f"max_idle ({idle}) cannot be larger than max_size ({size}): the pool never "
                "holds more than max_size connections"
            )
        return Pool(
            self._new_connection,
            usable=self.dialect.is_usable,
            max_size=size,
            max_idle=size if idle is None else idle,
            timeout=_seconds(timeout, "pool_timeout", strict=True),
            max_lifetime=_seconds(max_lifetime, "max_lifetime", strict=True),
            max_idle_time=_seconds(max_idle_time, "max_idle_time", strict=True),
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

    def _run(
        self, doing: str, conn: Any, make: Callable[..., Op[T]], *args: Any, check: bool = True
    ) -> T:
        """Run the operation ``make(*args)`` in a transaction of its own, or in the
        caller's when *conn* is given.

        The first call that *check*s reads the table's schema version (see
        :meth:`_check_schema`) and raises ``ConfigurationError`` unless it is current.
        A failure before COMMIT rolls back; if it was a deadlock, a lock timeout or a lost
        connection the whole transaction runs again (bounded, with jitter). A connection
        lost during COMMIT leaves the outcome unknown: that is raised, never retried.
        """
        theirs = None if conn is None else self.adapt(conn)
        if check and not self._schema_ok:
            self._check_schema(theirs)
        if theirs is not None:
            return self._run_theirs(doing, theirs, make(*args))
        for attempt in range(1, _RETRIES + 1):
            own = self._checkout()
            try:
                result = run_sync(make(*args), own)
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
        self._run("connecting", None, _nothing, check=False)
        assert self.server is not None
        return self.server

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
        return self._run("reading the schema version", None, self.schema.version, check=False)

    def uninstall(self) -> None:
        """Drop the jobs table, its version table and what belongs to them (PostgreSQL: the
        trigger and its function). Every job is lost. Idempotent."""

        doing = f"dropping table {self.table}"
        self._run(doing, None, self.dialect.statements_op, "uninstall", check=False)
        self._schema_ok = False

    # -- enqueue --------------------------------------------------------------------------

    def _enqueue_params(
        self,
        queue: str,
        priority: int,
        run_at: object,
        delay: object,
        max_attempts: int,
        key: object = None,
    ) -> dict[str, Any]:
        when, delay_ms = _run_at(run_at, delay)
        return {
            "queue": _text(queue, "queue"),
            "priority": _int(priority, "priority", -(2**31)),
            "max_attempts": _int(max_attempts, "max_attempts", 1),
            "run_at": when,
            "delay_ms": delay_ms,
            "order_key": None if key is None else _text(key, "key"),
        }

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
        params = self._enqueue_params(queue, priority, run_at, delay, max_attempts, key)
        params["payload"] = _dumps(payload, "payload")
        params["idempotency_key"] = str(uuid.uuid4())
        if dedupe_key is None:
            return self._run("enqueueing", conn, self.dialect.insert, params)
        params["dedupe_key"] = _text(dedupe_key, "dedupe_key")
        return self._run("enqueueing", conn, self.dialect.insert_dedupe, params)

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
        common = self._enqueue_params(queue, priority, run_at, delay, max_attempts, key)
        texts = [_dumps(p, "payload") for p in payloads]
        if not texts:
            return []
        rows = list(zip(texts, _uuid4_batch(len(texts)), strict=True))
        if conn is None:
            return self._run("enqueueing", None, self.dialect.insert_many, common, rows, True)
        theirs = self.adapt(conn)
        op = self.dialect.insert_many(common, rows, theirs.can_copy)
        return self._run_theirs("enqueueing", theirs, op)

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
        names = _queues(queues)
        n = _int(limit, "limit", 1, 10_000)
        lease_ms = _ms(lease, "lease", low=0.001)
        return self._run("claiming", conn, self._claim, names, n, lease_ms)

    def _claim(self, names: list[str], n: int, lease_ms: int) -> Op[list[Job]]:
        """The dialect's claim, then the jobs built from its rows (an operation)."""
        # A limited queue is claimed on its own, under its lock (see claim_capped); the
        # others together, in one statement, as ever.
        rows: list[dict[str, Any]] = []
        for name in (m for m in names if m in self.queue_limits):
            cap = self.queue_limits[name]
            rows += yield from self.dialect.claim_capped(name, n - len(rows), lease_ms, cap)
        free = [m for m in names if m not in self.queue_limits]
        if free and len(rows) < n:
            rows += yield from self.dialect.claim(free, n - len(rows), lease_ms)
        jobs = []
        for row in rows:
            try:
                job = Job.from_row(row)
            except PayloadError as exc:
                # A row written behind our back that no worker could ever decode: it
                # fails alone (fenced, in this transaction) and the batch goes on.
                log.error("job %s: %s; it ends failed", row["id"], exc)
                params = {"id": row["id"], "attempt": row["attempt"], "error": _error_text(exc)}
                yield self.dialect.stmt("fail", params, ROWCOUNT)
                continue
            job.lease = lease_ms / 1000
            jobs.append(job)
        return jobs

    def _fenced(self, job: Job, name: str, params: dict[str, Any], doing: str, conn: Any) -> None:
        if not isinstance(job, Job):
            raise ConfigurationError(f"expected a skiplock.Job, not {type(job).__name__}")
        params = {"id": job.id, "attempt": job.attempt, **params}
        self._run(f"{doing} job {job.id}", conn, self.dialect.fenced, name, params)

    def heartbeat(self, job: Job, *, lease: float | None = None, conn: Any = None) -> None:
        """Move the lease's end to now + *lease* seconds (default: 30 s or the claim's).

        Sets ``job.cancel_requested`` when :meth:`cancel` asked the job to stop. Raises
        :class:`~skiplock.LeaseLost` when the job is no longer ours.
        """
        if lease is None:
            lease = job.lease if job.lease is not None else 30.0
        lease_ms = _ms(lease, "lease", low=0.001)
        params = {"id": job.id, "attempt": job.attempt, "lease_ms": lease_ms}
        row = self._run(f"heartbeat of job {job.id}", conn, self.dialect.heartbeat, params)
        job.lease_until = utc(row.get("lease_until"))
        job.cancel_requested = job.cancel_requested or bool(row.get("cancel_requested"))

    def complete(self, job: Job, *, result: Any = None, conn: Any = None) -> None:
        """Mark the job done, storing *result* (JSON). Fenced: raises
        :class:`~skiplock.LeaseLost` and changes nothing if the job is no longer ours."""
        text = None if result is None else _dumps(result, "result")
        self._fenced(job, "complete", {"result": text}, "completing", conn)
        job.status, job.result = "done", result

    def complete_many(
        self, items: Iterable[Job | tuple[Job, Any]], *, conn: Any = None
    ) -> list[Job]:
        """Complete many jobs in one fenced statement; each row is checked against its own
        ``attempt``. Items are jobs or ``(job, result)`` pairs. Returns the jobs that were
        no longer held (lost); the others are done."""
        jobs: list[tuple[Job, Any]] = [
            (item, None) if isinstance(item, Job) else (item[0], item[1]) for item in items
        ]
        if not jobs:
            return []
        batch = [(j.id, j.attempt, None if r is None else _dumps(r, "result")) for j, r in jobs]
        held = self._run("completing jobs", conn, self.dialect.complete_many, batch)
        lost = []
        for job, result in jobs:
            if job.id in held:
                job.status, job.result = "done", result
            else:
                lost.append(job)
        return lost

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
        text = _error_text(error)
        if final or job.attempt >= job.max_attempts:
            self._fenced(job, "fail", {"error": text}, "failing", conn)
            job.status = "failed"
        else:
            delay = backoff(job.attempt) if retry_in is None else retry_in
            params = {"error": text, "delay_ms": _ms(delay, "retry_in")}
            self._fenced(job, "retry", params, "retrying", conn)
            job.status = "pending"
        job.last_error = text
        return job.status

    def release(self, job: Job, *, conn: Any = None) -> None:
        """Give the job back now, e.g. at shutdown. Fenced. The attempt it used is kept
        (the fencing token never goes back), so a released job may run once more than
        ``max_attempts`` claims would otherwise allow."""
        self._fenced(job, "release", {}, "releasing", conn)
        job.status = "pending"

    def cancel(self, job_id: int, *, conn: Any = None) -> str | None:
        """Cancel a job; return its status afterwards, or None if there is no such job.

        Pending or scheduled: it becomes ``cancelled`` at once and is never claimed.
        Running: a cancel request is recorded and ``"running"`` returned; its worker sees
        ``job.cancel_requested`` at its next heartbeat, and the job ends ``cancelled`` if
        the handler raises :class:`~skiplock.Cancelled` (``job.raise_if_cancelled()``);
        a handler that returns anyway completes it. Finished: nothing changes, and its
        status (``done``, ``failed``, ``cancelled``) is returned. One transaction."""
        _int(job_id, "job_id", 1, 2**63 - 1)
        return self._run(f"cancelling job {job_id}", conn, self.dialect.cancel, job_id)

    def mark_cancelled(self, job: Job, *, reason: object = "cancelled", conn: Any = None) -> None:
        """End a claimed job ``cancelled`` (its handler stopped on a cancel request),
        with *reason* as its ``last_error``. Fenced: raises
        :class:`~skiplock.LeaseLost` and changes nothing if the job is no longer ours."""
        self._fenced(job, "cancelled", {"error": _error_text(reason)}, "cancelling", conn)
        job.status = "cancelled"

    # -- reading --------------------------------------------------------------------------

    def get(self, job_id: int, *, conn: Any = None) -> Job | None:
        """The job's record, or None if there is no such job."""
        _int(job_id, "job_id", 1, 2**63 - 1)
        row = self._run("reading a job", conn, self.dialect.fetch_one_op, "get", {"id": job_id})
        return None if row is None else Job.from_row(row)

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
        statuses = [status] if isinstance(status, str) else status
        if statuses is not None and (
            not isinstance(statuses, Sequence)
            or not statuses
            or any(s not in STATUSES for s in statuses)
        ):
            raise ConfigurationError(
                f"status must be one or more of {', '.join(STATUSES)}, not {status!r:.80}"
            )
        params = {
            "all_statuses": status is None,
            "statuses": list(dict.fromkeys(statuses or [""])),
            "all_queues": queue is None,
            "queue": "" if queue is None else _text(queue, "queue"),
            "limit": _int(limit, "limit", 1, 1000),
            "before_id": 2**63 - 1
            if before_id is None
            else _int(before_id, "before_id", 1, 2**63 - 1),
        }
        rows = self._run("listing jobs", conn, self.dialect.fetch_op, "list_jobs", params)
        return [Job.from_row(r) for r in rows]

    def stats(self, queues: Sequence[str] | str | None = None, *, conn: Any = None) -> Stats:
        """Counts by state for *queues* (default: all queues)."""
        names = [""] if queues is None else _queues(queues)
        params = {"all_queues": queues is None, "queues": names}
        row = self._run("reading stats", conn, self.dialect.fetch_one_op, "stats", params)
        return Stats.from_row(row or {})


def _nothing() -> Op[None]:
    """An operation of no statement (reaching the server is the point)."""
    return
    yield
