"""Batched completions, one fenced statement, alongside the producer's next claim."""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .._core.job import Job
from ..errors import BackendError
from ..queue import Queue
from .ledger import Ledger
from .outcome import Outcomes

__all__ = ["Completer"]

log = logging.getLogger("skiplock.worker")


class Completer:
    """Writes the waiting completions under ``outcomes.writes``."""

    def __init__(self, queue: Queue, ledger: Ledger, outcomes: Outcomes) -> None:
        self.queue = queue
        self.ledger = ledger
        self.outcomes = outcomes
        self._thread: ThreadPoolExecutor | None = None

    def open(self) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="skiplock-flush")

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown()

    def begin(self) -> Future[None] | None:
        """Start a flush on its thread if completions wait; else None."""
        if self._thread is None or not self.ledger.has_completions():
            return None
        return self._thread.submit(self.flush)

    def flush(self) -> None:
        """Complete the waiting jobs; BackendError keeps the batch."""
        batch, unsure = self.ledger.take_completions()
        if not batch:
            return
        with self.outcomes.writes:
            try:
                for job in unsure:  # a COMMIT whose outcome was unknown: read what happened
                    self.outcomes.read_back(job, ("done",), "a completion")
                batch = self.ledger.still_ours(batch)
                with self.outcomes.waking():
                    lost = self.queue.complete_many(batch) if batch else []
            except BackendError:
                self.ledger.put_back(batch)
                raise
            self._settle(batch, lost)

    def _settle(self, batch: list[tuple[Job, Any]], lost: list[Job]) -> None:
        if lost:
            lost_ids = {j.id for j in lost}
            for job, _ in batch:
                if job.id in lost_ids:
                    self.outcomes.lost(job, "its completion")
            done = [job for job, _ in batch if job.id not in lost_ids]
        else:
            done = [job for job, _ in batch]
        self.outcomes.settled_many(done, "done")  # one lock for the batch
