"""Operations on many jobs at once: retry the failed ones, prune the finished ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._core.checks import integer as _int
from ._core.checks import milliseconds as _ms
from ._core.checks import queue_names as _queues
from ._core.params import JobPruneParams, JobRetryFailedParams
from .errors import ConfigurationError
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
    params = JobRetryFailedParams(
        ids=None if ids is None else tuple(_int(i, "a job id", 1, 2**63 - 1) for i in ids),
        queues=None if queues is None else tuple(_queues(queues)),
        attempts=None if attempts is None else _int(attempts, "attempts", 1),
    )
    return queue._run("retrying jobs", None, queue.dialect.job_retry_failed, params)


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
    wanted = list(dict.fromkeys(statuses))
    if not wanted or any(s not in ("done", "failed") for s in wanted):
        raise ConfigurationError(f"statuses must be 'done' and/or 'failed', not {statuses!r:.80}")
    limit = _int(batch, "batch", 1, 1_000_000)
    params = JobPruneParams(tuple(wanted), _ms(older_than, "older_than"), limit)
    total = 0
    while True:
        n = queue._run("pruning jobs", None, queue.dialect.job_prune, params)
        total += n
        if progress is not None:
            progress(total)
        if n < limit:
            return total
