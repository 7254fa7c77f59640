"""A queue's ``transaction()``: skiplock's writes and your own SQL on one connection,
committed together.

``scripts/async_to_sync`` makes ``transaction.py`` from this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._core.checks import ClaimKeywords, EnqueueKeywords, EnqueueManyKeywords
from .._core.job import MAX_SNOOZES, Claimed, Job, Stats
from ..dialects import Dialect
from ..drivers.base_async import AsyncAdapter

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AsyncTransaction", "AsyncTransactionQueue"]


class AsyncTransactionQueue(Protocol):
    """What a transaction uses of its queue (an :class:`~skiplock.AsyncQueue`)."""

    @property
    def dialect(self) -> Dialect: ...

    async def enqueue(
        self, payload: Any, *, conn: Any = None, **options: Unpack[EnqueueKeywords]
    ) -> int: ...

    async def enqueue_many(
        self, payloads: Iterable[Any], *, conn: Any = None, **options: Unpack[EnqueueManyKeywords]
    ) -> list[int]: ...

    async def claim(self, *, conn: Any = None, **options: Unpack[ClaimKeywords]) -> Claimed: ...

    async def heartbeat(
        self, job: Job, *, lease: float | None = None, conn: Any = None
    ) -> None: ...

    async def complete(self, job: Job, *, result: Any = None, conn: Any = None) -> None: ...

    async def complete_many(
        self, items: Iterable[Job | tuple[Job, Any]], *, conn: Any = None
    ) -> list[Job]: ...

    async def fail(
        self,
        job: Job,
        error: object,
        *,
        retry_in: float | None = None,
        final: bool = False,
        conn: Any = None,
    ) -> str: ...

    async def cancel(self, job_id: int, *, conn: Any = None) -> str | None: ...

    async def mark_cancelled(
        self, job: Job, *, reason: object = "cancelled", conn: Any = None
    ) -> None: ...

    async def release(self, job: Job, *, conn: Any = None) -> None: ...

    async def snooze(
        self, job: Job, seconds: float, *, max_snoozes: int = MAX_SNOOZES, conn: Any = None
    ) -> str: ...

    async def set_progress(self, job: Job, value: Any, *, conn: Any = None) -> None: ...

    async def get(self, job_id: int, *, conn: Any = None) -> Job | None: ...

    async def stats(
        self, queues: Sequence[str] | str | None = None, *, conn: Any = None
    ) -> Stats: ...


class AsyncTransaction:
    """A transaction of :meth:`Queue.transaction`: skiplock's writes and yours, committed
    together. ``connection`` is the driver connection, for your own SQL."""

    def __init__(self, queue: AsyncTransactionQueue, adapter: AsyncAdapter) -> None:
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
        """Run your statement (in the driver's parameter style); its row count."""
        count, _ = await self._user(sql, params)
        return count

    async def fetchall(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run your query; its rows as tuples."""
        _, rows = await self._user(sql, params)
        return rows

    async def fetchone(self, sql: str, params: Any = None) -> tuple[Any, ...] | None:
        """The first row of your query, or None."""
        _, rows = await self._user(sql, params)
        return rows[0] if rows else None

    async def enqueue(self, payload: Any, **options: Unpack[EnqueueKeywords]) -> int:
        """:meth:`Queue.enqueue` in this transaction."""
        return await self.queue.enqueue(payload, conn=self.adapter, **options)

    async def enqueue_many(
        self, payloads: Iterable[Any], **options: Unpack[EnqueueManyKeywords]
    ) -> list[int]:
        """:meth:`Queue.enqueue_many` in this transaction."""
        return await self.queue.enqueue_many(payloads, conn=self.adapter, **options)

    async def claim(self, **options: Unpack[ClaimKeywords]) -> list[Job]:
        """:meth:`Queue.claim` in this transaction."""
        return await self.queue.claim(conn=self.adapter, **options)

    async def heartbeat(self, job: Job, *, lease: float | None = None) -> None:
        await self.queue.heartbeat(job, lease=lease, conn=self.adapter)

    async def complete(self, job: Job, *, result: Any = None) -> None:
        await self.queue.complete(job, result=result, conn=self.adapter)

    async def complete_many(self, items: Iterable[Job | tuple[Job, Any]]) -> list[Job]:
        return await self.queue.complete_many(items, conn=self.adapter)

    async def fail(
        self, job: Job, error: object, *, retry_in: float | None = None, final: bool = False
    ) -> str:
        return await self.queue.fail(job, error, retry_in=retry_in, final=final, conn=self.adapter)

    async def cancel(self, job_id: int) -> str | None:
        return await self.queue.cancel(job_id, conn=self.adapter)

    async def mark_cancelled(self, job: Job, *, reason: object = "cancelled") -> None:
        await self.queue.mark_cancelled(job, reason=reason, conn=self.adapter)

    async def release(self, job: Job) -> None:
        await self.queue.release(job, conn=self.adapter)

    async def snooze(self, job: Job, seconds: float, *, max_snoozes: int = MAX_SNOOZES) -> str:
        return await self.queue.snooze(job, seconds, max_snoozes=max_snoozes, conn=self.adapter)

    async def set_progress(self, job: Job, value: Any) -> None:
        await self.queue.set_progress(job, value, conn=self.adapter)

    async def get(self, job_id: int) -> Job | None:
        return await self.queue.get(job_id, conn=self.adapter)

    async def stats(self, queues: Sequence[str] | str | None = None) -> Stats:
        return await self.queue.stats(queues, conn=self.adapter)
