"""The transaction of :meth:`AsyncQueue.transaction`: :class:`~skiplock.Transaction`'s
methods as coroutines, each one line over the queue's (checked for parity with the sync
class by tests/test_async_parity.py; the docstrings are the sync class's)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ._transaction import Transaction
from .drivers.aio import AsyncAdapter
from .job import Job, Stats

if TYPE_CHECKING:
    from .aio_queue import AsyncQueue

__all__ = ["AsyncTransaction"]


class AsyncTransaction:
    """A transaction opened by :meth:`AsyncQueue.transaction`: skiplock's writes and
    yours, committed together. ``connection`` is the driver connection for your own SQL
    (asyncpg's takes ``$1`` placeholders and a sequence of values)."""

    def __init__(self, queue: AsyncQueue, adapter: AsyncAdapter) -> None:
        self.queue = queue
        self.adapter = adapter
        self.connection = adapter.connection

    async def _user(self, sql: str, params: Any) -> tuple[int, list[tuple[Any, ...]]]:
        try:
            return await self.adapter.user_execute(sql, params)
        except self.adapter.errors as exc:
            info = self.adapter.error_info(exc)
            raise self.queue.dialect.wrap(exc, "running your statement", info) from exc

    async def execute(self, sql: str, params: Any = None) -> int:
        return (await self._user(sql, params))[0]

    async def fetchall(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        return (await self._user(sql, params))[1]

    async def fetchone(self, sql: str, params: Any = None) -> tuple[Any, ...] | None:
        return next(iter((await self._user(sql, params))[1]), None)

    async def enqueue(self, payload: Any, **options: Any) -> int:
        return await self.queue.enqueue(payload, conn=self.adapter, **options)

    async def enqueue_many(self, payloads: Iterable[Any], **options: Any) -> list[int]:
        return await self.queue.enqueue_many(payloads, conn=self.adapter, **options)

    async def claim(self, **options: Any) -> list[Job]:
        return await self.queue.claim(conn=self.adapter, **options)

    async def heartbeat(self, job: Job, *, lease: float | None = None) -> None:
        return await self.queue.heartbeat(job, lease=lease, conn=self.adapter)

    async def complete(self, job: Job, *, result: Any = None) -> None:
        return await self.queue.complete(job, result=result, conn=self.adapter)

    async def complete_many(self, items: Iterable[Job | tuple[Job, Any]]) -> list[Job]:
        return await self.queue.complete_many(items, conn=self.adapter)

    async def fail(
        self, job: Job, error: object, *, retry_in: float | None = None, final: bool = False
    ) -> str:
        return await self.queue.fail(job, error, retry_in=retry_in, final=final, conn=self.adapter)

    async def cancel(self, job_id: int) -> str | None:
        return await self.queue.cancel(job_id, conn=self.adapter)

    async def mark_cancelled(self, job: Job, *, reason: object = "cancelled") -> None:
        return await self.queue.mark_cancelled(job, reason=reason, conn=self.adapter)

    async def release(self, job: Job) -> None:
        return await self.queue.release(job, conn=self.adapter)

    async def get(self, job_id: int) -> Job | None:
        return await self.queue.get(job_id, conn=self.adapter)

    async def stats(self, queues: Sequence[str] | str | None = None) -> Stats:
        return await self.queue.stats(queues, conn=self.adapter)


for _name, _method in list(vars(AsyncTransaction).items()):
    _sync = getattr(Transaction, _name, None)
    if callable(_method) and _sync is not None and _sync.__doc__ and not _method.__doc__:
        _method.__doc__ = _sync.__doc__
