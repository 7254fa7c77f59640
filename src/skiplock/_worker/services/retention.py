"""Retention: a worker's background thread that deletes jobs finished long ago.

Every round deletes, in batches of a few hundred rows (one short transaction each, which
also adds its rows to the table's ``pruned`` total that ``stats`` shows), the
jobs in a final state (``done``, ``failed``, ``cancelled``) whose ``finished_at`` is older
than the retention, by the database's clock. Only one worker of a table prunes at a time:
a round runs while its thread holds a session advisory lock of its own (not the
single-worker lock), taken without waiting; a worker that finds it held skips that round.
"""

from __future__ import annotations

import logging
import random
import threading
from datetime import timedelta

from ..._core.checks import seconds as _seconds
from ..._core.job import STATUSES
from ...errors import ConfigurationError, SkiplockError
from ...queue import Queue
from ..port import RetentionPort, port_of
from .lock import lock_identity

__all__ = ["DEFAULT_RETENTION", "Retention"]

log = logging.getLogger("skiplock.worker")

#: the final states whose jobs are pruned (``cancelled`` too, where the schema has it)
FINISHED = [s for s in ("done", "failed", "cancelled") if s in STATUSES]
#: a week, in seconds
DEFAULT_RETENTION = 7 * 86400.0
#: rows per DELETE: each batch is one short transaction that locks only its own rows
BATCH = 500
#: the longest time between two rounds
_EVERY = 60.0


def retention_seconds(value: object) -> float | None:
    """*value* (seconds, a ``timedelta``, or None to keep everything) as seconds."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return _seconds(value, "retention", high=100 * 365 * 86400.0)


class Retention:
    """Prunes *queue*'s finished jobs older than *keep* seconds, every ``min(60 s,
    keep / 10)``; ``counts["pruned"]`` adds up the rows this instance deleted.

    Locks: a session advisory lock per table (on a connection of its own, only during a
    round), and each batch's rows while its DELETE runs. Database errors end the round
    (logged at WARNING); the next round tries again. Never raises into the worker.
    """

    def __init__(
        self, queue: Queue, keep: float, *, batch: int = BATCH, counts: dict[str, int] | None = None
    ) -> None:
        self.port: RetentionPort = port_of(queue)
        if not self.port.has_locks():
            raise ConfigurationError(
                f"retention needs advisory locks, which {queue.url.flavor}'s dialect lacks: "
                "pass retention=None and prune with `skiplock prune`"
            )
        self.queue = queue
        self.keep = keep
        self.batch = batch
        self.every = min(_EVERY, max(keep / 10, 0.05))
        self.key, self.name = lock_identity(queue, purpose="retention")
        #: where the rows deleted are counted, under "pruned" (a worker's ``counts``)
        self.counts = {} if counts is None else counts
        self.counts.setdefault("pruned", 0)
        self.rounds = 0  # rounds this instance ran while holding the lock

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run rounds in a daemon thread until *stop* is set; returns the thread."""
        thread = threading.Thread(
            target=self._serve, args=(stop,), name="skiplock-retention", daemon=True
        )
        thread.start()
        return thread

    def _serve(self, stop: threading.Event) -> None:
        # A random first wait spreads the rounds of workers started together.
        while not stop.wait(self.every * random.uniform(0.5, 1.0)):
            try:
                self.run_once(stop)
            except SkiplockError as exc:
                log.warning("pruning finished jobs failed (%s); trying again later", exc)

    def run_once(self, stop: threading.Event | None = None) -> int | None:
        """One round: the rows deleted, or None when another worker holds the lock."""
        conn = self.port.lock(self.key, self.name, "the retention lock")
        try:
            if not conn.acquire(0.0):
                return None
            self.rounds += 1
            deleted = self._delete(stop)
            if deleted:
                log.info("pruned %d jobs finished more than %.0fs ago", deleted, self.keep)
            return deleted
        finally:
            conn.close()  # the server drops a session lock with its connection

    def _delete(self, stop: threading.Event | None) -> int:
        total = 0
        while stop is None or not stop.is_set():
            n = self.port.prune_finished(FINISHED, round(self.keep * 1000), self.batch)
            total += n
            self.counts["pruned"] += n  # only this thread writes this key
            if n < self.batch:
                break
        return total
