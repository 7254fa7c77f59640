"""Retention: a worker thread that deletes finished jobs older than the retention, in short
batches, under a lock of its own (a round is skipped when another worker holds it)."""

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
    """*value* (seconds, ``timedelta`` or None) as seconds."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return _seconds(value, "retention", high=100 * 365 * 86400.0)


class Retention:
    """Prunes *queue*'s jobs finished over *keep* seconds ago. Never raises into the worker."""

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
        """Run rounds until *stop* is set, in a daemon thread."""
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
        """One round: rows deleted, or None when another worker prunes."""
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
