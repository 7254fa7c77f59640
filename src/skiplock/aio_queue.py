"""The asyncio queue: :class:`~skiplock.Queue`'s methods as coroutines, from the same core.

Each method is one line over :mod:`skiplock._core.calls` (the argument checks and the dialect
operations the sync queue uses too), driven by :func:`skiplock._shell.run_async.run_async` over
an asynchronous driver: psycopg 3's ``AsyncConnection`` (PostgreSQL) and
``mysql.connector.aio`` (MySQL, MariaDB) for skiplock's own connections; SQL Server has
no asyncio driver here, so pymssql's calls run in a thread (``asyncio.to_thread``)
behind the same interface. The docstrings are the sync methods' (copied at import).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ._core import calls
from ._shell.session_async import AsyncSession
from ._shell.transaction_async import AsyncTransaction
from .dialects import ServerInfo
from .drivers.aio import AsyncAdapter
from .drivers.aio_adapt import adapt_async
from .job import Job, Stats
from .queue import DEFAULT_TABLE, Queue

__all__ = ["AsyncQueue", "AsyncTransaction", "connect_async"]


def connect_async(
    url: str | None = None,
    *,
    table: str = DEFAULT_TABLE,
    max_size: int | None = None,
    max_idle: int | None = None,
    pool_timeout: float = 30.0,
    max_lifetime: float = 3600.0,
    max_idle_time: float = 600.0,
    queue_limits: Mapping[str, int] | None = None,
) -> AsyncQueue:
    """An :class:`AsyncQueue` on *url* (default ``$SKIPLOCK_URL``) and *table*, with the
    pool settings of :func:`skiplock.connect` (the same bound, wait, recycling and errors);
    as there, no connection is opened yet. ``async with skiplock.connect_async(url) as q:``
    closes it at the end."""
    return AsyncQueue(
        url,
        table=table,
        max_size=max_size,
        max_idle=max_idle,
        pool_timeout=pool_timeout,
        max_lifetime=max_lifetime,
        max_idle_time=max_idle_time,
        queue_limits=queue_limits,
    )


class AsyncQueue(AsyncSession):
    """A job queue in one table of one database, for asyncio code. Safe to share between
    the tasks of one event loop (not between loops: its connections belong to one)."""

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
        self._url_text = url
        self._setup(
            url, table, queue_limits, max_size, max_idle, pool_timeout, max_lifetime, max_idle_time
        )

    def __repr__(self) -> str:
        return f"<skiplock.AsyncQueue {self.url.masked()} table={self.table}>"

    def sync_queue(self) -> Queue:
        """A new sync :class:`~skiplock.Queue` on the same URL, table and pool settings
        (what :class:`~skiplock.AsyncWorker` uses for its own I/O). The caller closes it."""
        return Queue(self._url_text, **_settings_of(self))

    # -- connections (the machinery: skiplock._shell.session_async) -------------------------------

    async def close(self) -> None:
        """Close the pooled connections (those in use as they come back). The queue cannot
        be used afterwards."""
        await self._pool.close()

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def adapt(self, conn: Any) -> AsyncAdapter:
        """The async driver adapter for a caller's *conn* (see
        :mod:`skiplock.drivers.aio_adapt`); ``ConfigurationError`` before anything is sent
        for an object skiplock cannot use here or a connection to another database."""
        d = self.dialect
        return await adapt_async(conn, d.name, self.url.flavor, d.async_in_thread)

    async def ping(self) -> ServerInfo:
        return await self._call(calls.ping(self))

    # -- the queue's methods: one line each over skiplock._core.calls -------------------------

    async def install(self) -> None:
        await self.migrate()

    async def migrate(self, *, to: int | None = None) -> list[int]:
        # The migration runs its DDL steps under an advisory lock on a connection of its
        # own: the sync code, in a thread, on the sync driver (one path to keep right).
        with self.sync_queue() as q:
            applied = await asyncio.to_thread(q.migrate, to=to)
        self._schema_ok = False  # checked again at the next use
        return applied

    async def schema_version(self) -> int:
        return await self._call(calls.schema_version(self))

    async def uninstall(self) -> None:
        return await self._call(calls.uninstall(self))

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
        conn: Any = None,
    ) -> int:
        return await self._call(
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
                key_concurrency,
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
        conn: Any = None,
    ) -> list[int]:
        return await self._call(
            calls.enqueue_many(
                self.dialect,
                payloads,
                queue,
                priority,
                run_at,
                delay,
                max_attempts,
                key,
                key_concurrency,
                conn,
            )
        )

    async def claim(
        self,
        *,
        queues: Sequence[str] | str = ("default",),
        limit: int = 1,
        lease: float = 30.0,
        conn: Any = None,
    ) -> list[Job]:
        return await self._call(
            calls.claim(self.dialect, queues, limit, lease, self.queue_limits, conn)
        )

    async def heartbeat(self, job: Job, *, lease: float | None = None, conn: Any = None) -> None:
        return await self._call(calls.heartbeat(self.dialect, job, lease, conn))

    async def complete(self, job: Job, *, result: Any = None, conn: Any = None) -> None:
        return await self._call(calls.complete(self.dialect, job, result, conn))

    async def complete_many(
        self, items: Iterable[Job | tuple[Job, Any]], *, conn: Any = None
    ) -> list[Job]:
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
        return await self._call(calls.fail(self.dialect, job, error, retry_in, final, conn))

    async def release(self, job: Job, *, conn: Any = None) -> None:
        return await self._call(calls.release(self.dialect, job, conn))

    async def cancel(self, job_id: int, *, conn: Any = None) -> str | None:
        return await self._call(calls.cancel(self.dialect, job_id, conn))

    async def mark_cancelled(
        self, job: Job, *, reason: object = "cancelled", conn: Any = None
    ) -> None:
        return await self._call(calls.mark_cancelled(self.dialect, job, reason, conn))

    async def get(self, job_id: int, *, conn: Any = None) -> Job | None:
        return await self._call(calls.get(self.dialect, job_id, conn))

    async def list_jobs(
        self,
        *,
        status: Sequence[str] | str | None = None,
        queue: str | None = None,
        limit: int = 50,
        before_id: int | None = None,
        conn: Any = None,
    ) -> list[Job]:
        return await self._call(
            calls.list_jobs(self.dialect, status, queue, limit, before_id, conn)
        )

    async def stats(self, queues: Sequence[str] | str | None = None, *, conn: Any = None) -> Stats:
        return await self._call(calls.stats(self.dialect, queues, conn))


for _name, _method in list(vars(AsyncQueue).items()):
    _sync = getattr(Queue, _name, None)
    if callable(_method) and _sync is not None and _sync.__doc__ and not _method.__doc__:
        _method.__doc__ = _sync.__doc__


def _settings_of(q: Queue | AsyncQueue) -> dict[str, Any]:
    """The table, pool settings and queue limits of *q*, as both constructors take them."""
    s = q.pool_settings
    return {
        "table": str(q.table),
        "max_size": s.max_size,
        "max_idle": s.max_idle,
        "pool_timeout": s.timeout,
        "max_lifetime": s.max_lifetime,
        "max_idle_time": s.max_idle_time,
        "queue_limits": q.queue_limits,
    }


def twin(queue: Queue) -> AsyncQueue:
    """A new :class:`AsyncQueue` on *queue*'s URL, table and settings (the reverse of
    :meth:`AsyncQueue.sync_queue`); the caller closes it."""
    return AsyncQueue(queue._url_text, **_settings_of(queue))
