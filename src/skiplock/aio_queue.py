"""The queue: enqueue, claim, and the fenced writes that follow a claim.

Each method runs as one short transaction on a pooled connection, committed before it
returns; or, given ``conn=``, in the caller's open transaction on their own driver
connection, which the caller commits (see ``transaction()``). The asyncio queue drives
psycopg 3's ``AsyncConnection`` and ``mysql.connector.aio``; pymssql (SQL Server) runs in
a thread.

``scripts/async_to_sync`` makes ``queue.py`` from this module.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._core import calls
from ._core.arguments import ClaimOptions, EnqueueOptions, ListOptions
from ._core.calls import backoff
from ._core.job import Claimed, Job, Stats
from ._core.observe import QueueOverview, TickInfo, WorkerInfo
from ._shell.session_async import AsyncSession
from ._shell.settings import DEFAULT_TABLE, QueueKeywords, QueueSettings
from ._shell.transaction_async import AsyncTransaction
from .dialects import ServerInfo
from .errors import MAX_SNOOZES

if TYPE_CHECKING:
    from typing_extensions import Unpack

if True:  # ASYNC
    import asyncio

    from .drivers.aio import opened
    from .queue import Queue

__all__ = ["DEFAULT_TABLE", "AsyncQueue", "AsyncTransaction", "backoff", "connect_async"]

log = logging.getLogger("skiplock")


def connect_async(url: str | None = None, **settings: Unpack[QueueKeywords]) -> AsyncQueue:
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
    every worker that claims through a queue object given the same limits; ``rate_limits``
    (queue name → ``(N, per)``) lets at most N of its jobs be claimed in any window of
    *per* seconds, on the database's clock, across the same (docs/control.md). No connection
    is opened yet; a bad URL, unknown scheme, unsafe table name, pool setting or limit
    raises :class:`~skiplock.ConfigurationError` here, a missing driver at the first use.
    """
    return AsyncQueue(url, **settings)


class AsyncQueue(AsyncSession):
    """A job queue in one table of one database (see :func:`skiplock.connect`). A
    :class:`~skiplock.Queue` is thread-safe; an :class:`~skiplock.AsyncQueue` is safe to
    share between the tasks of one event loop (not between loops: its connections belong
    to one)."""

    def __init__(self, url: str | None = None, **settings: Unpack[QueueKeywords]) -> None:
        self._setup(QueueSettings.check(url, **settings))

    @classmethod
    def _of(cls, settings: QueueSettings) -> AsyncQueue:
        """A new queue with the *settings* of another (checked already)."""
        queue = cls.__new__(cls)
        queue._setup(settings)
        return queue

    def __repr__(self) -> str:
        return f"<skiplock.{AsyncQueue.__name__} {self.url.masked()} table={self.table}>"

    if True:  # ASYNC

        def sync_queue(self) -> Queue:
            """A new sync :class:`~skiplock.Queue` on the same URL, table and pool settings
            (what :class:`~skiplock.AsyncWorker` uses for its own I/O). The caller closes
            it."""
            return Queue._of(self.settings)

    else:

        def connection(self) -> Any:
            """A new driver connection configured like the queue's own (autocommit off,
            READ COMMITTED), outside the pool and its bound, with no idle-transaction
            limit. The caller owns and closes it."""
            return self._connect().connection

    # -- connections (the machinery: the session this queue inherits) --------------------

    async def close(self) -> None:
        """Close the pooled connections (those in use as they come back). The queue cannot
        be used afterwards."""
        await self._pool.close()

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @asynccontextmanager
    async def transaction(self, *, conn: Any = None) -> AsyncIterator[AsyncTransaction]:
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
            yield AsyncTransaction(self, await self.adapt(conn))
            return
        async with self._own_transaction() as own:
            yield AsyncTransaction(self, own)

    async def ping(self) -> ServerInfo:
        """Reach the server; return what it is. Raises ``UnsupportedServer`` if it is too old
        for skiplock, ``BackendError`` if it does not answer."""
        return await self._call(calls.ping(self))

    # -- schema ---------------------------------------------------------------------------

    async def install(self) -> None:
        """Create the jobs table, or bring it to the current schema version: the same as
        :meth:`migrate`. Idempotent."""
        await self.migrate()

    async def migrate(self, *, to: int | None = None) -> list[int]:
        """Bring the table from any earlier schema version to *to* (default: the current
        one); return the versions applied (empty when it was current). Online: see
        docs/migrations.md for what each step locks. Concurrent calls are serialised by an
        advisory lock; workers may keep running. Raises ``ConfigurationError`` for a
        schema newer than this skiplock knows."""
        if True:  # ASYNC
            # The migration runs its DDL steps under an advisory lock on a connection of
            # its own: the sync code, in a thread, on the sync driver (one path to keep
            # right).
            with self.sync_queue() as q:
                applied = await asyncio.to_thread(q.migrate, to=to)
        else:
            applied = self.schema.migrate(self.connection, to)
        self._schema_ok = False  # checked again at the next use
        return applied

    async def schema_version(self) -> int:
        """The table's schema version: 0 if the table does not exist."""
        return await self._call(calls.schema_version(self))

    async def uninstall(self) -> None:
        """Drop the jobs table, its version table and what belongs to them (PostgreSQL: the
        trigger and its function). Every job is lost. Idempotent."""
        return await self._call(calls.uninstall(self))

    # -- enqueue --------------------------------------------------------------------------

    async def enqueue(
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
        key_rate: tuple[int, float] | None = None,
        headers: Mapping[str, str] | None = None,
        dedupe_for: float | None = None,
        debounce: float | None = None,
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
        key run. Enqueues of one key wait for each other's transactions. With
        ``key_rate=(N, per)`` as well, at most N jobs of its key start (are returned by a
        claim) in any window of *per* seconds, across every worker, on the database's
        clock (docs/control.md, "Rate limits per key"); without ``key``, or with a bad
        pair, :class:`~skiplock.ConfigurationError` and nothing is written.

        ``headers`` (text to text, at most 8 KiB as JSON) travel with the job and come
        back as ``job.headers``: trace context (docs/observability.md), a request id. A
        bad value raises :class:`~skiplock.ConfigurationError` and nothing is written.

        With ``dedupe_key`` and ``dedupe_for=seconds``: for that long after the job's
        enqueue, an enqueue of the same key with ``dedupe_for`` returns its id whatever its
        state. With ``dedupe_key`` and ``debounce=seconds``: while a job of that key is
        pending, an enqueue gives it this payload and moves it to now + ``debounce`` (the
        database's clock), returning its id; once it runs, a new job is made. Enqueues of
        one such key wait for each other's transactions (docs/unique-jobs.md).

        With ``after=[id, ...]`` (docs/workflows.md), the job is ``waiting`` until every
        one of those jobs is done, and becomes due in the transaction of the last one's
        completion (a parent done already counts). When one of them ends failed or
        cancelled, this job is cancelled with a ``last_error`` naming it, or, with
        ``after_failure="run"``, runs once all of them have ended. Its handler finds their
        results in ``job.parent_results``. An id of no job raises
        :class:`~skiplock.ConfigurationError` and nothing is written.
        """
        return await self._call(
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
                    key_rate=key_rate,
                    headers=headers,
                    dedupe_for=dedupe_for,
                    debounce=debounce,
                    after=after,
                    after_failure=after_failure,
                ),
                conn,
            )
        )

    async def enqueue_many(
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
        key_rate: tuple[int, float] | None = None,
        headers: Mapping[str, str] | None = None,
        dedupe_keys: Sequence[str | None] | None = None,
        dedupe_for: float | None = None,
        debounce: float | None = None,
        after: Sequence[int] | None = None,
        after_failure: str = "cancel",
        conn: Any = None,
    ) -> list[int]:
        """Add many jobs with the same options in one statement; return their ids in order.
        With ``key``, all of them share it and start in the order given, one at a time
        (or up to ``key_concurrency`` at once), and ``key_rate`` holds for them as for
        :meth:`enqueue`. ``headers``, as for :meth:`enqueue`, are given to every job of
        the batch.

        ``dedupe_keys`` (one key, or None, per payload) makes each keyed item an
        :meth:`enqueue` with that ``dedupe_key`` (and ``dedupe_for`` or ``debounce``), one
        statement or a few per item, in one transaction; the keys' locks are taken first,
        in sorted order.

        With ``after``, every one of them waits for those jobs (see :meth:`enqueue`)."""
        return await self._call(
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
                    key_rate=key_rate,
                    headers=headers,
                    dedupe_for=dedupe_for,
                    debounce=debounce,
                    many_keys=dedupe_keys is not None,
                    after=after,
                    after_failure=after_failure,
                ),
                conn,
                dedupe_keys,
            )
        )

    async def _enqueue_checked(
        self, payloads: list[Any], options: EnqueueOptions, conn: Any
    ) -> list[int]:
        """:meth:`enqueue` (one payload) or :meth:`enqueue_many` with *options* checked
        already, in the transaction of *conn*: a workflow's requests (skiplock.workflow),
        whose options carry what the public keywords cannot (``children``,
        ``own_parents``). The OpenTelemetry instrumentor traces it as it does those."""
        if len(payloads) == 1:
            return [await self._call(calls.enqueue(self.dialect, payloads[0], options, conn))]
        return await self._call(calls.enqueue_many(self.dialect, payloads, options, conn))

    # -- claim and the fenced writes ------------------------------------------------------

    async def claim(
        self,
        *,
        queues: Sequence[str] | str = ("default",),
        limit: int = 1,
        lease: float = 30.0,
        conn: Any = None,
    ) -> Claimed:
        """Take up to *limit* claimable jobs for *lease* seconds, lowest priority first.

        Claimable: pending with ``run_at`` reached, or running with an expired lease (its
        worker is presumed dead). Each claim adds one to ``attempt``. Rows locked by other
        claims are skipped, never waited for. A job with an expired lease and no attempts
        left ends ``failed`` instead of being returned, and so does a job whose stored
        payload cannot be decoded (``last_error`` says why; the batch's other jobs are
        returned). A queue of ``queue_limits`` gives at most its limit less its jobs holding
        a live lease, and nothing while another claim of it is under way (never waited for);
        a queue of ``rate_limits`` gives at most N less its jobs claimed in the last *per*
        seconds (the list's ``retry_in`` then says when it has room again). A paused queue
        (:meth:`pause`) gives nothing.
        """
        return await self._call(
            calls.claim(
                self.dialect,
                ClaimOptions.check(queues=queues, limit=limit, lease=lease),
                self.queue_limits,
                self.rate_limits,
                conn,
            )
        )

    async def heartbeat(self, job: Job, *, lease: float | None = None, conn: Any = None) -> None:
        """Move the lease's end to now + *lease* seconds (default: 30 s or the claim's).

        Sets ``job.cancel_requested`` when :meth:`cancel` asked the job to stop. Raises
        :class:`~skiplock.LeaseLost` when the job is no longer ours.
        """
        return await self._call(calls.heartbeat(self.dialect, job, lease, conn))

    async def complete(self, job: Job, *, result: Any = None, conn: Any = None) -> None:
        """Mark the job done, storing *result* (JSON). Fenced: raises
        :class:`~skiplock.LeaseLost` and changes nothing if the job is no longer ours."""
        return await self._call(calls.complete(self.dialect, job, result, conn))

    async def complete_many(
        self, items: Iterable[Job | tuple[Job, Any]], *, conn: Any = None
    ) -> list[Job]:
        """Complete many jobs in one fenced statement; each row is checked against its own
        ``attempt``. Items are jobs or ``(job, result)`` pairs. Returns the jobs that were
        no longer held (lost); the others are done."""
        return await self._call(calls.complete_many(self.dialect, items, conn))

    async def fail(
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
        return await self._call(calls.fail(self.dialect, job, error, retry_in, final, conn))

    async def release(self, job: Job, *, conn: Any = None) -> None:
        """Give the job back now, e.g. at shutdown. Fenced. The attempt it used is kept
        (the fencing token never goes back) and ``max_attempts`` grows by one, so a
        release is not counted as one of the job's attempts: neither a later failure nor
        a lease that ends ends it ``failed`` sooner."""
        return await self._call(calls.release(self.dialect, job, conn))

    async def cancel(self, job_id: int, *, conn: Any = None) -> str | None:
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
        return await self._call(calls.cancel(self.dialect, job_id, conn))

    async def mark_cancelled(
        self, job: Job, *, reason: object = "cancelled", conn: Any = None
    ) -> None:
        """End a claimed job ``cancelled`` (its handler stopped on a cancel request),
        with *reason* as its ``last_error``. Fenced: raises
        :class:`~skiplock.LeaseLost` and changes nothing if the job is no longer ours."""
        return await self._call(calls.mark_cancelled(self.dialect, job, reason, conn))

    # -- pause and resume -----------------------------------------------------------------

    async def pause(self, queue: str, *, conn: Any = None) -> None:
        """Stop every worker claiming jobs of *queue* (kept in the database, for every
        process, until :meth:`resume`). A claim that starts after this commits takes
        nothing from it; jobs already claimed run to their end (heartbeats, completions
        and retries go on), and enqueueing goes on. Idempotent. See docs/control.md for
        a claim already under way."""
        return await self._call(calls.pause(self.dialect, queue, True, conn))

    async def resume(self, queue: str, *, conn: Any = None) -> None:
        """Let workers claim *queue*'s jobs again (on PostgreSQL idle workers are woken at
        once, else at their next poll). Idempotent: resuming a queue never paused changes
        nothing."""
        return await self._call(calls.pause(self.dialect, queue, False, conn))

    async def paused(self, *, conn: Any = None) -> set[str]:
        """The names of the paused queues."""
        return await self._call(calls.paused(self.dialect, conn))

    async def snooze(
        self, job: Job, seconds: float, *, max_snoozes: int = MAX_SNOOZES, conn: Any = None
    ) -> str:
        """Put the claimed job back to pending, due in *seconds*: no error recorded and no
        attempt used up (``max_attempts`` grows by one, as :meth:`release` does, so only
        failures end it). A job snoozed *max_snoozes* times already ends ``failed``
        instead. Returns the new status. Fenced: raises :class:`~skiplock.LeaseLost` and
        changes nothing if the job is no longer ours."""
        return await self._call(calls.snooze(self.dialect, job, seconds, max_snoozes, conn))

    async def set_progress(self, job: Job, value: Any, *, conn: Any = None) -> None:
        """Store *value* (JSON, at most 64 KiB) as the claimed job's ``progress``, read back
        by :meth:`get`. Fenced: raises :class:`~skiplock.LeaseLost` and changes nothing if
        the job is no longer ours."""
        return await self._call(calls.set_progress(self.dialect, job, value, conn))

    async def wait(self, job_id: int, *, timeout: float | None = None) -> Job:
        """The job once it is ``done``, ``failed`` or ``cancelled`` (its ``result``,
        ``last_error``). Raises the built-in ``TimeoutError`` after *timeout* seconds (None:
        no limit), ``ConfigurationError`` if there is no such job.

        On PostgreSQL it marks the job waited and listens on a connection of its own, and
        the job's end notifies it (reading the job again at least every second); elsewhere
        the queue polls: one statement reads the status of every job its waits wait for,
        2 ms after the first wait begins, then less often (at most every 20 ms), however
        many jobs are waited for (docs/job-control.md)."""
        limit = calls.wait_check(job_id, timeout)
        start = time.monotonic()
        listener = await self._listen_finished(job_id)
        waiter = None if listener is not None else self._waits.add(job_id)
        try:
            while True:
                job = await self._call(calls.get(self.dialect, job_id, None))
                left = None if limit is None else limit - (time.monotonic() - start)
                if calls.waited(job_id, job, limit, left):
                    assert job is not None
                    return job
                if listener is not None:
                    most = 1.0 if left is None else min(left, 1.0)
                    listener = await self._wait_finished(listener, job_id, most)
                    if listener is None:  # it broke: poll from now on
                        waiter = self._waits.add(job_id)
                elif waiter is not None:
                    await self._waits.until(waiter, left, self._look)
                    if waiter.job is not None:  # ended, read by the look-up
                        ended: Job = waiter.job
                        return ended
                    waiter.event.clear()  # gone (read just below: the error), or time is up
        finally:
            if listener is not None:
                self.dialect.close_listener(listener)
            if waiter is not None:
                self._waits.remove(job_id, waiter)

    async def _look(self, ids: Sequence[int]) -> dict[int, Job | None]:
        """The waited jobs *ids* that ended, as read (None: gone)."""
        return await self._call(calls.wait_look(self.dialect, ids))

    async def _listen_finished(self, job_id: int) -> Any:
        """A connection that hears *job_id*'s end (None: poll instead, as on a database
        without notifications, or when it cannot be opened)."""
        if not self.dialect.finish_notify:
            return None
        try:
            if True:  # ASYNC
                # a wait cancelled while the thread opens the listener closes it
                listening = asyncio.to_thread(self.dialect.listen_finished, job_id)
                return await opened(listening, self.dialect.close_listener)
            else:
                return self.dialect.listen_finished(job_id)
        except Exception as exc:
            log.warning("wait for job %d: cannot listen (%s); polling instead", job_id, exc)
            return None

    async def _wait_finished(self, listener: Any, job_id: int, seconds: float) -> Any:
        """Wait on *listener* up to *seconds*; the listener, or None if it broke (then
        the wait polls)."""
        try:
            if True:  # ASYNC
                await asyncio.to_thread(self.dialect.wait_finished, listener, job_id, seconds)
            else:
                self.dialect.wait_finished(listener, job_id, seconds)
        except Exception as exc:
            log.warning("wait for job %d: its listener failed (%s); polling instead", job_id, exc)
            self.dialect.close_listener(listener)
            return None
        return listener

    # -- reading --------------------------------------------------------------------------

    async def get(self, job_id: int, *, conn: Any = None) -> Job | None:
        """The job's record, or None if there is no such job."""
        return await self._call(calls.get(self.dialect, job_id, conn))

    async def list_jobs(
        self,
        *,
        status: Sequence[str] | str | None = None,
        queue: str | None = None,
        limit: int = 50,
        before_id: int | None = None,
        task: str | None = None,
        conn: Any = None,
    ) -> list[Job]:
        """Up to *limit* (1 to 1000) jobs, newest (highest id) first, with every field.

        *status* (one state or several), *queue* and *task* (an App task's name: the
        payload's ``task``) narrow the list (None: all). For the next page pass the last
        job's id as *before_id*: pages never repeat or skip a job, whatever is enqueued
        meanwhile. Reads only: nothing is locked beyond the statement.
        """
        return await self._call(
            calls.list_jobs(
                self.dialect,
                ListOptions.check(
                    status=status, queue=queue, limit=limit, before_id=before_id, task=task
                ),
                conn,
            )
        )

    async def stats(self, queues: Sequence[str] | str | None = None, *, conn: Any = None) -> Stats:
        """Counts by state for *queues* (default: all queues)."""
        return await self._call(calls.stats(self.dialect, queues, conn))

    async def overview(
        self, *, window: float = 600.0, cap: int = 100_000, conn: Any = None
    ) -> list[QueueOverview]:
        """Every queue's state, for a dashboard: its active jobs by state and the age of
        its oldest pending job (exact, from the claim index, which holds only pending and
        running jobs), and the jobs that finished in the last *window* seconds (at least
        60), done and failed, done per minute (from the finished-time index, reading at
        most *cap* jobs: see :class:`~skiplock.job.QueueOverview`). Never reads the whole
        table, unlike :meth:`stats`."""
        return await self._call(calls.overview(self.dialect, window, cap, conn))

    async def ticks(self, *, conn: Any = None) -> list[TickInfo]:
        """The periodic ledger: each schedule's latest enqueued tick."""
        return await self._call(calls.ticks(self.dialect, conn))

    # -- the live worker list -------------------------------------------------------------

    async def workers(self, *, conn: Any = None) -> list[WorkerInfo]:
        """The worker processes that registered on this table, oldest first, with their
        jobs in flight and when they were last seen; :attr:`WorkerInfo.gone
        <skiplock.job.WorkerInfo.gone>` marks one that stopped refreshing its row."""
        return await self._call(calls.workers(self.dialect, conn))

    async def register_worker(
        self,
        worker_id: str,
        *,
        host: str,
        pid: int,
        queues: Sequence[str],
        concurrency: int,
        interval: float,
    ) -> None:
        """Write a worker's row in the live worker list (a worker does, as it starts; it
        refreshes it every *interval* seconds with :meth:`beat_worker`). Rows of workers
        unseen for a day are deleted meanwhile. One transaction of its own."""
        return await self._call(
            calls.register_worker(self.dialect, worker_id, host, pid, queues, concurrency, interval)
        )

    async def beat_worker(self, worker_id: str, *, in_flight: int) -> bool:
        """Refresh a worker's row: its jobs in flight, and now as its last sighting.
        False when the row is not there (the worker registers again)."""
        return await self._call(calls.beat_worker(self.dialect, worker_id, in_flight))

    async def unregister_worker(self, worker_id: str) -> None:
        """Delete a worker's row (a worker does, when it stops cleanly). Idempotent."""
        return await self._call(calls.unregister_worker(self.dialect, worker_id))


if True:  # ASYNC

    def twin(queue: Queue) -> AsyncQueue:
        """A new :class:`AsyncQueue` on *queue*'s URL, table and settings (the reverse of
        :meth:`AsyncQueue.sync_queue`); the caller closes it."""
        return AsyncQueue._of(queue.settings)
