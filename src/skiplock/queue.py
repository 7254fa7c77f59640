# Generated from src/skiplock/aio_queue.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""The queue: enqueue, claim, and the fenced writes that follow a claim.

This module (:class:`AsyncQueue`, :func:`connect_async`) is the source; ``queue.py``
(:class:`~skiplock.Queue`, :func:`skiplock.connect`) is generated from it by
``scripts/async_to_sync``, so the two queues have one text: the same methods, signatures
and docstrings. Every method runs as one short transaction of its own on a pooled
connection, committed before it returns; or, given ``conn=``, inside the caller's open
transaction on the caller's own driver connection, which the caller commits (see
``transaction()``). Each method is one line over :mod:`skiplock._core.calls` (the checks
and the dialect operations), its keywords checked into one frozen object of
:mod:`skiplock._core.arguments`, run by the session it inherits
(:mod:`skiplock._shell.session_async`).

The asyncio queue drives an asynchronous driver: psycopg 3's ``AsyncConnection``
(PostgreSQL) and ``mysql.connector.aio`` (MySQL, MariaDB) for skiplock's own connections;
SQL Server has no asyncio driver here, so pymssql's calls run in a thread
(``asyncio.to_thread``) behind the same interface.

May import: :mod:`skiplock._core`, :mod:`skiplock._shell`, :mod:`skiplock.drivers`,
:mod:`skiplock.dialects`, :mod:`skiplock._core.job` (and, asyncio only, the sync queue).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._core import calls
from ._core.arguments import ClaimOptions, EnqueueOptions, ListOptions
from ._core.calls import backoff
from ._core.job import Job, Stats
from ._shell.session import Session
from ._shell.settings import DEFAULT_TABLE, QueueKeywords, QueueSettings
from ._shell.transaction import Transaction
from .dialects import ServerInfo

if TYPE_CHECKING:
    from typing_extensions import Unpack


__all__ = ["DEFAULT_TABLE", "Queue", "Transaction", "backoff", "connect"]


def connect(url: str | None = None, **settings: Unpack[QueueKeywords]) -> Queue:
    """A queue on *url* (default ``$SKIPLOCK_URL``) and *table* (default
    ``skiplock_jobs``): :func:`skiplock.connect` makes a :class:`~skiplock.Queue`,
    :func:`skiplock.connect_async` an :class:`~skiplock.AsyncQueue`. ``with`` (``async
    with``) closes it at the end.

    Its pool holds at most ``max_size`` connections (default 10, or ``max_idle`` if that
    is larger), keeps up to ``max_idle`` of them idle (default: all), makes a caller wait
    up to ``pool_timeout`` seconds (default 30) for a free one (then
    :class:`~skiplock.PoolTimeout`), and closes a connection older than ``max_lifetime``
    (default 3600) or unused for ``max_idle_time`` (default 600) seconds. ``queue_limits``
    (queue name → N) caps how many jobs of that queue hold a live lease at once, across
    every worker that claims through a queue object given the same limits. No connection
    is opened yet; a bad URL, unknown scheme, unsafe table name, pool setting or limit
    raises :class:`~skiplock.ConfigurationError` here, a missing driver at the first use.
    """
    return Queue(url, **settings)


class Queue(Session):
    """A job queue in one table of one database (see :func:`skiplock.connect`). A
    :class:`~skiplock.Queue` is thread-safe; an :class:`~skiplock.AsyncQueue` is safe to
    share between the tasks of one event loop (not between loops: its connections belong
    to one)."""

    def __init__(self, url: str | None = None, **settings: Unpack[QueueKeywords]) -> None:
        self._setup(QueueSettings.check(url, **settings))

    @classmethod
    def _of(cls, settings: QueueSettings) -> Queue:
        """A new queue with the *settings* of another (checked already)."""
        queue = cls.__new__(cls)
        queue._setup(settings)
        return queue

    def __repr__(self) -> str:
        return f"<skiplock.{Queue.__name__} {self.url.masked()} table={self.table}>"

    def connection(self) -> Any:
        """A new driver connection configured like the queue's own (autocommit off,
        READ COMMITTED), outside the pool and its bound, with no idle-transaction
        limit. The caller owns and closes it."""
        return self._connect().connection

    # -- connections (the machinery: the session this queue inherits) --------------------

    def close(self) -> None:
        """Close the pooled connections (those in use as they come back). The queue cannot
        be used afterwards."""
        self._pool.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self, *, conn: Any = None) -> Iterator[Transaction]:
        """One transaction for your own writes and skiplock's, committed together.

        ::

            with q.transaction() as tx:
                tx.execute("INSERT INTO receipts (job_id) VALUES (%(id)s)", {"id": job.id})
                tx.complete(job)     # LeaseLost here rolls back the INSERT too

        Commits when the block ends, rolls back when it raises (and re-raises); a block
        interrupted (a cancelled task, ``KeyboardInterrupt``), in its body or in its
        COMMIT, drops its connection instead (see :meth:`_commit`). With
        ``conn=`` (any connection :meth:`adapt` accepts), the block works in the caller's
        own transaction on that connection and neither commits nor rolls back: the
        caller does.
        """
        if conn is not None:
            yield Transaction(self, self.adapt(conn))
            return
        with self._own_transaction() as own:
            yield Transaction(self, own)

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
        applied = self.schema.migrate(self.connection, to)
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
        key_concurrency: int | None = None,
        after: Sequence[int] | None = None,
        after_failure: str = "cancel",
        conn: Any = None,
    ) -> int:
        """Add one job; return its id.

        Lower ``priority`` runs first. ``run_at`` (aware datetime) or ``delay`` (seconds on
        the database's clock) defer it. With ``dedupe_key``, while a job with that key is
        pending or running its id is returned and nothing is added. With ``conn``, the job
        is written in the caller's open transaction and exists only if that commits.

        With ``key``, jobs of that key start in the order they were enqueued, one at a
        time (docs/worker.md, "Per-key order"): the next is claimable only once the
        previous is done, failed or cancelled. With ``key_concurrency=N`` as well, this job
        starts once every earlier job of its key has started and fewer than N jobs of its
        key run. Enqueues of one key wait for each other's transactions.

        With ``after=[id, ...]`` (docs/workflows.md), the job is ``waiting`` until every
        one of those jobs is done, and becomes due in the transaction of the last one's
        completion (a parent done already counts). When one of them ends failed or
        cancelled, this job is cancelled with a ``last_error`` naming it, or, with
        ``after_failure="run"``, runs once all of them have ended. Its handler finds their
        results in ``job.parent_results``. An id of no job raises
        :class:`~skiplock.ConfigurationError` and nothing is written.
        """
        return self._call(
            calls.enqueue(
                self.dialect,
                payload,
                EnqueueOptions.check(
                    queue=queue,
                    priority=priority,
                    run_at=run_at,
                    delay=delay,
                    max_attempts=max_attempts,
                    dedupe_key=dedupe_key,
                    key=key,
                    key_concurrency=key_concurrency,
                    after=after,
                    after_failure=after_failure,
                ),
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
        key_concurrency: int | None = None,
        after: Sequence[int] | None = None,
        after_failure: str = "cancel",
        conn: Any = None,
    ) -> list[int]:
        """Add many jobs with the same options in one statement; return their ids in order.
        With ``key``, all of them share it and start in the order given, one at a time
        (or up to ``key_concurrency`` at once). With ``after``, every one of them waits
        for those jobs (see :meth:`enqueue`)."""
        return self._call(
            calls.enqueue_many(
                self.dialect,
                payloads,
                EnqueueOptions.check(
                    queue=queue,
                    priority=priority,
                    run_at=run_at,
                    delay=delay,
                    max_attempts=max_attempts,
                    key=key,
                    key_concurrency=key_concurrency,
                    after=after,
                    after_failure=after_failure,
                ),
                conn,
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
        return self._call(
            calls.claim(
                self.dialect,
                ClaimOptions.check(queues=queues, limit=limit, lease=lease),
                self.queue_limits,
                conn,
            )
        )

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
        (the fencing token never goes back) and ``max_attempts`` grows by one, so a
        release is not counted as one of the job's attempts: neither a later failure nor
        a lease that ends ends it ``failed`` sooner."""
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
        return self._call(
            calls.list_jobs(
                self.dialect,
                ListOptions.check(status=status, queue=queue, limit=limit, before_id=before_id),
                conn,
            )
        )

    def stats(self, queues: Sequence[str] | str | None = None, *, conn: Any = None) -> Stats:
        """Counts by state for *queues* (default: all queues)."""
        return self._call(calls.stats(self.dialect, queues, conn))
