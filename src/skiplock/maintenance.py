"""Operations on many jobs at once: retry the failed ones, prune the finished ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._core import calls
from .queue import Queue

__all__ = ["prune", "retry_failed"]


def retry_failed(
    queue: Queue,
    *,
    ids: Sequence[int] | None = None,
    queues: Sequence[str] | str | None = None,
    attempts: int | None = None,
) -> int:
    """Make failed jobs pending again, claimable now; return how many. *ids* and *queues*
    narrow the choice (None: all); each gets *attempts* more attempts (default: its
    ``max_attempts``). A job whose ``dedupe_key`` an active job holds stays failed."""
    return queue._call(calls.retry_failed(queue.dialect, ids, queues, attempts))


def prune(
    queue: Queue,
    older_than: float,
    *,
    statuses: Sequence[str] = ("done", "failed"),
    batch: int = 1000,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Delete jobs finished (in *statuses*) more than *older_than* seconds ago; return how
    many. In batches of *batch* rows, one transaction each, *progress(deleted_so_far)* after
    each."""
    one_batch = calls.prune_batch(queue.dialect, statuses, older_than, batch)
    total = 0
    while True:
        n = queue._call(one_batch)
        total += n
        if progress is not None:
            progress(total)
        if n < batch:
            return total
