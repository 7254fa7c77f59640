# Generated from src/skiplock/queue_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""The queue: enqueue, claim, and the fenced writes that follow a claim. Each method is one
short transaction of its own or, with ``conn=``, runs in the caller's open transaction.

Generated from ``queue_async.py`` by ``scripts/async_to_sync``; edit that file.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._core import calls
from ._core.calls import backoff
from ._core.checks import ClaimOptions, EnqueueOptions, ListOptions
from ._core.job import MAX_SNOOZES, Claimed, Job, Stats
from ._core.read_models import QueueOverview, TickInfo, WorkerInfo
from ._shell.session import Session
from ._shell.settings import DEFAULT_TABLE, QueueKeywords, QueueSettings
from ._shell.transaction import Transaction
from .dialects import ServerInfo

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ._shell.worker_port import QueuePort

__all__ = ["DEFAULT_TABLE", "Queue", "Transaction", "backoff", "connect"]

log = logging.getLogger("skiplock")


def connect(url: str | None = None, **settings: Unpack[QueueKeywords]) -> Queue:
    """A queue on *url* (default ``$SKIPLOCK_URL``) and *table* (default ``skiplock_jobs``);
    ``with`` closes it. Nothing connects yet.

    Pool (docs/pool.md): at most ``max_size`` connections (10), ``max_idle`` kept idle
    (all); a caller waits ``pool_timeout`` seconds (30), then gets
    :class:`~skiplock.PoolTimeout`; connections close after ``max_lifetime`` (3600 s) or
    ``max_idle_time`` idle (600 s). ``queue_limits`` (queue → N) caps a queue's leased jobs,
    ``rate_limits`` (queue → ``(N, per)``) its claims per *per* seconds (docs/control.md).

    Raises :class:`~skiplock.ConfigurationError` for a bad URL, table, setting or limit.
    """
    return Queue(url, **settings)


class Queue(Session):
    """A job queue in one table of one database (see :func:`skiplock.connect`). A
    :class:`~skiplock.Queue` is thread-safe; an :class:`~skiplock.AsyncQueue` is shared by
    the tasks of one event loop only."""

    def __init__(self, url: str | None = None, **settings: Unpack[QueueKeywords]) -> None:
        self._setup(QueueSettings.check(url, **settings))

    @classmethod
    def _of(cls, settings: QueueSettings) -> Queue:
        """A new queue with the checked *settings* of another."""
        queue = cls.__new__(cls)
        queue._setup(settings)
        return queue

    def __repr__(self) -> str:
        return f"<skiplock.{Queue.__name__} {self.url.masked()} table={self.table}>"

    def connection(self) -> Any:
        """A new driver connection set up like the pool's (autocommit off, READ
        COMMITTED), outside the pool. The caller closes it."""
        return self._connect().connection

    def _port(self) -> QueuePort:
        """What a worker asks of the database (:mod:`skiplock._worker.port`)."""
        return QueuePort(self, lambda **kw: self.claim(**kw))

    # -- connections (the machinery: the session this queue inherits) --------------------

    def close(self) -> None:
        """Close the pooled connections (those in use as they come back); the queue is
        unusable afterwards."""
        self._pool.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self, *, conn: Any = None) -> Iterator[Transaction]:
        """One transaction for your own writes and skiplock's, committed together::

            with q.transaction() as tx:
                tx.execute("INSERT INTO receipts (job_id) VALUES (%(id)s)", {"id": job.id})
                tx.complete(job)     # LeaseLost here rolls back the INSERT too

        Commits when the block ends, rolls back when it raises; an interrupted block (a
        cancelled task, ``KeyboardInterrupt``) drops its connection. With ``conn=``, it runs
        in your open transaction on that connection, and you commit.
        """
        if conn is not None:
            yield Transaction(self, self.adapt(conn))
            return
        with self._own_transaction() as own:
            yield Transaction(self, own)

    def ping(self) -> ServerInfo:
        """Reach the server; return what it is. Raises :class:`~skiplock.UnsupportedServer`
        for a server too old, :class:`~skiplock.BackendError` when it does not answer."""
        return self._call(calls.ping(self))

    # -- schema ---------------------------------------------------------------------------

    def install(self) -> None:
        """Create the table, or migrate it to the current schema (:meth:`migrate`).
        Idempotent."""
        self.migrate()

    def migrate(self, *, to: int | None = None) -> list[int]:
        """Migrate the table to schema version *to* (default: current), online
        (docs/migrations.md); the versions applied. Raises
        :class:`~skiplock.ConfigurationError` for a schema newer than this skiplock."""
        applied = self.schema.migrate(self.connection, to)
        self._schema_ok = False  # checked again at the next use
        return applied

    def schema_version(self) -> int:
        """The table's schema version: 0 if the table does not exist."""
        return self._call(calls.schema_version(self))

    def uninstall(self) -> None:
        """Drop the jobs table and everything of skiplock's with it; every job is lost.
        Idempotent."""
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
        key_rate: tuple[int, float] | None = None,
        headers: Mapping[str, str] | None = None,
        dedupe_for: float | None = None,
        debounce: float | None = None,
        after: Sequence[int] | None = None,
        after_failure: str = "cancel",
        conn: Any = None,
    ) -> int:
        """Add one job; return its id.

        Lower ``priority`` runs first; ``run_at`` (aware datetime) or ``delay`` (seconds)
        defers it. With ``conn``, it is written in your open transaction.

        - ``dedupe_key``: while a job of that key is pending or running, its id is returned
          instead; ``dedupe_for=seconds``: in any state, for that long;
          ``debounce=seconds``: a pending one takes this payload and is due *debounce* from
          now (docs/job-control.md).
        - ``key``: jobs of one key start one at a time in enqueue order
          (``key_concurrency``: N at once; ``key_rate=(N, per)``: N starts per *per*
          seconds; docs/worker.md).
        - ``headers`` (text to text, at most 8 KiB as JSON) come back as ``job.headers``.
        - ``after=[id, ...]``: the job waits until those are done and finds their results in
          ``job.parent_results``; it is cancelled when one fails or is cancelled, unless
          ``after_failure="run"`` (docs/workflows.md).

        Raises :class:`~skiplock.ConfigurationError` for a bad option; nothing is written.
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
        key_rate: tuple[int, float] | None = None,
        headers: Mapping[str, str] | None = None,
        dedupe_keys: Sequence[str | None] | None = None,
        dedupe_for: float | None = None,
        debounce: float | None = None,
        after: Sequence[int] | None = None,
        after_failure: str = "cancel",
        conn: Any = None,
    ) -> list[int]:
        """Add many jobs with :meth:`enqueue`'s options in one statement; their ids, in
        order. ``dedupe_keys`` (a key or None per payload) enqueues each keyed one as
        :meth:`enqueue` does, in one transaction."""
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

    def _enqueue_checked(
        self, payloads: list[Any], options: EnqueueOptions, conn: Any
    ) -> list[int]:
        """:meth:`enqueue` or :meth:`enqueue_many` with *options* checked already (a
        workflow's: ``children``, ``own_parents``), on *conn*. Traced as those are."""
        if len(payloads) == 1:
            return [self._call(calls.enqueue(self.dialect, payloads[0], options, conn))]
        return self._call(calls.enqueue_many(self.dialect, payloads, options, conn))

    # -- claim and the fenced writes ------------------------------------------------------

    def claim(
        self,
        *,
        queues: Sequence[str] | str = ("default",),
        limit: int = 1,
        lease: float = 30.0,
        conn: Any = None,
    ) -> Claimed:
        """Take up to *limit* claimable jobs (pending and due, or with an expired lease) for
        *lease* seconds, lowest priority first, adding one to each ``attempt``. Rows other
        claims hold are skipped. A job out of attempts, or with a payload that cannot be
        decoded, ends ``failed`` instead. Queue limits, rate limits (the list's
        ``retry_in``) and :meth:`pause` hold jobs back."""
        return self._call(
            calls.claim(
                self.dialect,
                ClaimOptions.check(queues=queues, limit=limit, lease=lease),
                self.queue_limits,
                self.rate_limits,
                conn,
            )
        )

    def heartbeat(self, job: Job, *, lease: float | None = None, conn: Any = None) -> None:
        """Move the lease's end to now + *lease* seconds (default: the claim's); set
        ``job.cancel_requested`` if :meth:`cancel` was asked. Raises
        :class:`~skiplock.LeaseLost` if no longer ours."""
        return self._call(calls.heartbeat(self.dialect, job, lease, conn))

    def complete(self, job: Job, *, result: Any = None, conn: Any = None) -> None:
        """Mark the job done with *result* (JSON). Raises :class:`~skiplock.LeaseLost` if no
        longer ours."""
        return self._call(calls.complete(self.dialect, job, result, conn))

    def complete_many(
        self, items: Iterable[Job | tuple[Job, Any]], *, conn: Any = None
    ) -> list[Job]:
        """Complete jobs (or ``(job, result)`` pairs) in one fenced statement; return those
        no longer ours, which stay as they were."""
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
        """Record a failed attempt: pending again after *retry_in* seconds (default
        :func:`backoff`) while attempts are left and not *final*, else ``failed``; the new
        status. Raises :class:`~skiplock.LeaseLost` if no longer ours."""
        return self._call(calls.fail(self.dialect, job, error, retry_in, final, conn))

    def release(self, job: Job, *, conn: Any = None) -> None:
        """Give the job back now (e.g. at shutdown), using up no attempt. Raises
        :class:`~skiplock.LeaseLost` if no longer ours."""
        return self._call(calls.release(self.dialect, job, conn))

    def cancel(self, job_id: int, *, conn: Any = None) -> str | None:
        """Cancel a job; return its status afterwards (None: no such job). A pending job
        ends ``cancelled``; a running one gets ``job.cancel_requested``
        (docs/job-control.md) and ``"running"`` is returned; a finished one is left as it
        is."""
        return self._call(calls.cancel(self.dialect, job_id, conn))

    def mark_cancelled(self, job: Job, *, reason: object = "cancelled", conn: Any = None) -> None:
        """End a claimed job ``cancelled``, with *reason* as its ``last_error``. Raises
        :class:`~skiplock.LeaseLost` if no longer ours."""
        return self._call(calls.mark_cancelled(self.dialect, job, reason, conn))

    # -- pause and resume -----------------------------------------------------------------

    def pause(self, queue: str, *, conn: Any = None) -> None:
        """Stop every worker claiming *queue*'s jobs until :meth:`resume` (kept in the
        database). Claimed jobs run to their end; enqueueing goes on. Idempotent
        (docs/control.md)."""
        return self._call(calls.pause(self.dialect, queue, True, conn))

    def resume(self, queue: str, *, conn: Any = None) -> None:
        """Let workers claim *queue*'s jobs again. Idempotent."""
        return self._call(calls.pause(self.dialect, queue, False, conn))

    def paused(self, *, conn: Any = None) -> set[str]:
        """The names of the paused queues."""
        return self._call(calls.paused(self.dialect, conn))

    def snooze(
        self, job: Job, seconds: float, *, max_snoozes: int = MAX_SNOOZES, conn: Any = None
    ) -> str:
        """Make the claimed job pending again, due in *seconds*, using up no attempt (after
        *max_snoozes* it ends ``failed``); the new status. Raises
        :class:`~skiplock.LeaseLost` if no longer ours."""
        return self._call(calls.snooze(self.dialect, job, seconds, max_snoozes, conn))

    def set_progress(self, job: Job, value: Any, *, conn: Any = None) -> None:
        """Store *value* (JSON, at most 64 KiB) as the job's ``progress``. Raises
        :class:`~skiplock.LeaseLost` if no longer ours."""
        return self._call(calls.set_progress(self.dialect, job, value, conn))

    def wait(self, job_id: int, *, timeout: float | None = None) -> Job:
        """The job once it is ``done``, ``failed`` or ``cancelled``. Raises ``TimeoutError``
        after *timeout* seconds (None: no limit), :class:`~skiplock.ConfigurationError` for
        no such job (docs/job-control.md)."""
        limit = calls.wait_check(job_id, timeout)
        start = time.monotonic()
        listener = self._listen_finished(job_id)
        waiter = None if listener is not None else self._waits.add(job_id)
        try:
            while True:
                job = self._call(calls.get(self.dialect, job_id, None))
                left = None if limit is None else limit - (time.monotonic() - start)
                if calls.waited(job_id, job, limit, left):
                    assert job is not None
                    return job
                if listener is not None:
                    most = 1.0 if left is None else min(left, 1.0)
                    listener = self._wait_finished(listener, job_id, most)
                    if listener is None:  # it broke: poll from now on
                        waiter = self._waits.add(job_id)
                elif waiter is not None:
                    self._waits.until(waiter, left, self._look)
                    if waiter.job is not None:  # ended, read by the look-up
                        ended: Job = waiter.job
                        return ended
                    waiter.event.clear()  # gone (read just below: the error), or time is up
        finally:
            if listener is not None:
                self.dialect.close_listener(listener)
            if waiter is not None:
                self._waits.remove(job_id, waiter)

    def _look(self, ids: Sequence[int]) -> dict[int, Job | None]:
        """The waited jobs of *ids* that ended (None: gone)."""
        return self._call(calls.wait_look(self.dialect, ids))

    def _listen_finished(self, job_id: int) -> Any:
        """A listener for *job_id*'s end, or None to poll instead."""
        if not self.dialect.finish_notify:
            return None
        try:
            return self.dialect.listen_finished(job_id)
        except Exception as exc:
            log.warning("wait for job %d: cannot listen (%s); polling instead", job_id, exc)
            return None

    def _wait_finished(self, listener: Any, job_id: int, seconds: float) -> Any:
        """Wait on *listener* up to *seconds*; the listener, or None when it broke (poll
        then)."""
        try:
            self.dialect.wait_finished(listener, job_id, seconds)
        except Exception as exc:
            log.warning("wait for job %d: its listener failed (%s); polling instead", job_id, exc)
            self.dialect.close_listener(listener)
            return None
        return listener

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
        task: str | None = None,
        conn: Any = None,
    ) -> list[Job]:
        """Up to *limit* (1 to 1000) jobs, newest first, of *status* (one or several),
        *queue* and *task* (an App task's name). The next page: the last job's id as
        *before_id*."""
        return self._call(
            calls.list_jobs(
                self.dialect,
                ListOptions.check(
                    status=status, queue=queue, limit=limit, before_id=before_id, task=task
                ),
                conn,
            )
        )

    def stats(self, queues: Sequence[str] | str | None = None, *, conn: Any = None) -> Stats:
        """Counts by state for *queues* (default: all queues)."""
        return self._call(calls.stats(self.dialect, queues, conn))

    def overview(
        self, *, window: float = 600.0, cap: int = 100_000, conn: Any = None
    ) -> list[QueueOverview]:
        """Every queue's state, for a dashboard, without reading the whole table as
        :meth:`stats` does: see :class:`~skiplock.job.QueueOverview`. *window*: seconds of
        finished jobs counted, at most *cap* of them."""
        return self._call(calls.overview(self.dialect, window, cap, conn))

    def ticks(self, *, conn: Any = None) -> list[TickInfo]:
        """The periodic ledger: each schedule's latest enqueued tick."""
        return self._call(calls.ticks(self.dialect, conn))

    # -- the live worker list -------------------------------------------------------------

    def workers(self, *, conn: Any = None) -> list[WorkerInfo]:
        """The worker processes registered on this table, oldest first; ``gone`` marks one
        that stopped refreshing its row."""
        return self._call(calls.workers(self.dialect, conn))

    def register_worker(
        self,
        worker_id: str,
        *,
        host: str,
        pid: int,
        queues: Sequence[str],
        concurrency: int,
        interval: float,
    ) -> None:
        """Write a worker's row in the live worker list; :meth:`beat_worker` refreshes it
        every *interval* seconds. Rows unseen for a day are deleted."""
        return self._call(
            calls.register_worker(self.dialect, worker_id, host, pid, queues, concurrency, interval)
        )

    def beat_worker(self, worker_id: str, *, in_flight: int) -> bool:
        """Refresh a worker's row; False when it is gone (register again)."""
        return self._call(calls.beat_worker(self.dialect, worker_id, in_flight))

    def unregister_worker(self, worker_id: str) -> None:
        """Delete a worker's row. Idempotent."""
        return self._call(calls.unregister_worker(self.dialect, worker_id))
