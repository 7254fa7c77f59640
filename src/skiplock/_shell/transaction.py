# Generated from src/skiplock/_shell/transaction_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""A queue's ``transaction()``: skiplock's writes and your own SQL on one connection,
committed together.

Generated from ``transaction_async.py`` by ``scripts/async_to_sync``; edit that file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._core.checks import ClaimKeywords, EnqueueKeywords, EnqueueManyKeywords
from .._core.job import MAX_SNOOZES, Claimed, Job, Stats
from ..dialects import Dialect
from ..drivers import Adapter

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Transaction", "TransactionQueue"]


class TransactionQueue(Protocol):
    """What a transaction uses of its queue (an :class:`~skiplock.AsyncQueue`)."""

    @property
    def dialect(self) -> Dialect: ...

    def enqueue(
        self, payload: Any, *, conn: Any = None, **options: Unpack[EnqueueKeywords]
    ) -> int: ...

    def enqueue_many(
        self, payloads: Iterable[Any], *, conn: Any = None, **options: Unpack[EnqueueManyKeywords]
    ) -> list[int]: ...

    def claim(self, *, conn: Any = None, **options: Unpack[ClaimKeywords]) -> Claimed: ...

    def heartbeat(self, job: Job, *, lease: float | None = None, conn: Any = None) -> None: ...

    def complete(self, job: Job, *, result: Any = None, conn: Any = None) -> None: ...

    def complete_many(
        self, items: Iterable[Job | tuple[Job, Any]], *, conn: Any = None
    ) -> list[Job]: ...

    def fail(
        self,
        job: Job,
        error: object,
        *,
        retry_in: float | None = None,
        final: bool = False,
        conn: Any = None,
    ) -> str: ...

    def cancel(self, job_id: int, *, conn: Any = None) -> str | None: ...

    def mark_cancelled(
        self, job: Job, *, reason: object = "cancelled", conn: Any = None
    ) -> None: ...

    def release(self, job: Job, *, conn: Any = None) -> None: ...

    def snooze(
        self, job: Job, seconds: float, *, max_snoozes: int = MAX_SNOOZES, conn: Any = None
    ) -> str: ...

    def set_progress(self, job: Job, value: Any, *, conn: Any = None) -> None: ...

    def get(self, job_id: int, *, conn: Any = None) -> Job | None: ...

    def stats(self, queues: Sequence[str] | str | None = None, *, conn: Any = None) -> Stats: ...


class Transaction:
    """A transaction of :meth:`Queue.transaction`: skiplock's writes and yours, committed
    together. ``connection`` is the driver connection, for your own SQL."""

    def __init__(self, queue: TransactionQueue, adapter: Adapter) -> None:
        self.queue = queue
        self.adapter = adapter
        self.connection = adapter.connection

    def _user(self, sql: str, params: Any) -> tuple[int, list[tuple[Any, ...]]]:
        try:
            return self.adapter.user_execute(sql, params)
        except self.adapter.errors as exc:
            info = self.adapter.error_info(exc)
            raise self.queue.dialect.wrap(exc, "running your statement", info) from exc

    def execute(self, sql: str, params: Any = None) -> int:
        """Run your statement (in the driver's parameter style); its row count."""
        count, _ = self._user(sql, params)
        return count

    def fetchall(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run your query; its rows as tuples."""
        _, rows = self._user(sql, params)
        return rows

    def fetchone(self, sql: str, params: Any = None) -> tuple[Any, ...] | None:
        """The first row of your query, or None."""
        _, rows = self._user(sql, params)
        return rows[0] if rows else None

    def enqueue(self, payload: Any, **options: Unpack[EnqueueKeywords]) -> int:
        """:meth:`Queue.enqueue` in this transaction."""
        return self.queue.enqueue(payload, conn=self.adapter, **options)

    def enqueue_many(
        self, payloads: Iterable[Any], **options: Unpack[EnqueueManyKeywords]
    ) -> list[int]:
        """:meth:`Queue.enqueue_many` in this transaction."""
        return self.queue.enqueue_many(payloads, conn=self.adapter, **options)

    def claim(self, **options: Unpack[ClaimKeywords]) -> list[Job]:
        """:meth:`Queue.claim` in this transaction."""
        return self.queue.claim(conn=self.adapter, **options)

    def heartbeat(self, job: Job, *, lease: float | None = None) -> None:
        self.queue.heartbeat(job, lease=lease, conn=self.adapter)

    def complete(self, job: Job, *, result: Any = None) -> None:
        self.queue.complete(job, result=result, conn=self.adapter)

    def complete_many(self, items: Iterable[Job | tuple[Job, Any]]) -> list[Job]:
        return self.queue.complete_many(items, conn=self.adapter)

    def fail(
        self, job: Job, error: object, *, retry_in: float | None = None, final: bool = False
    ) -> str:
        return self.queue.fail(job, error, retry_in=retry_in, final=final, conn=self.adapter)

    def cancel(self, job_id: int) -> str | None:
        return self.queue.cancel(job_id, conn=self.adapter)

    def mark_cancelled(self, job: Job, *, reason: object = "cancelled") -> None:
        self.queue.mark_cancelled(job, reason=reason, conn=self.adapter)

    def release(self, job: Job) -> None:
        self.queue.release(job, conn=self.adapter)

    def snooze(self, job: Job, seconds: float, *, max_snoozes: int = MAX_SNOOZES) -> str:
        return self.queue.snooze(job, seconds, max_snoozes=max_snoozes, conn=self.adapter)

    def set_progress(self, job: Job, value: Any) -> None:
        self.queue.set_progress(job, value, conn=self.adapter)

    def get(self, job_id: int) -> Job | None:
        return self.queue.get(job_id, conn=self.adapter)

    def stats(self, queues: Sequence[str] | str | None = None) -> Stats:
        return self.queue.stats(queues, conn=self.adapter)
