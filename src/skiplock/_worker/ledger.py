"""The ledger: the jobs a worker holds, from their claim until their outcome is settled.

Every part of the worker (producer, runners, outcome writer, completer, heartbeat,
shutdown) shares this one object and nothing else that changes. It has one lock, held
only for a few dictionary and list operations: no I/O happens under it, no callback is
called from it, and no other lock is taken while it is held. That makes it the innermost
lock of the worker (see :mod:`skiplock._worker` for the order); callers that write to the
database take a snapshot here, release the lock, then write.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ..job import Job

__all__ = ["NO_COMPLETION", "Held", "Ledger"]

#: what :meth:`Ledger.ended` gets for a job that is not to be completed by the completer
NO_COMPLETION: Any = object()

_COUNTED = {
    "pending": "retried",
    "done": "done",
    "failed": "failed",
    "lost": "lost",
    "cancelled": "cancelled",
}


@dataclass
class Held:
    """A claimed job until its outcome is written."""

    job: Job
    deadline: float | None
    finished: bool = False  # the handler returned or raised
    started: float = 0.0  # time.monotonic() at the claim
    error: BaseException | None = None  # what the handler raised, for the outcome's log line


class Ledger:
    """Held jobs, completions waiting for their batch, and the outcome counts.

    ``active`` counts jobs claimed whose handler has not returned: it limits claims to
    ``concurrency``. ``counts`` (done, retried, failed, cancelled, lost, released) is the dictionary
    :attr:`skiplock.Worker.counts` shows; it is only written under the lock.
    """

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        #: free slots worth a claim of their own (see :meth:`gather`)
        self.batch = max(1, concurrency // 2)
        self.counts = dict.fromkeys(
            ("done", "retried", "failed", "cancelled", "lost", "released"), 0
        )
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}
        self._to_complete: list[tuple[Job, Any]] = []
        self._unsure: set[int] = set()  # ids whose completion's COMMIT outcome is unknown
        self._first_done = 0.0  # when the oldest completion waiting in _to_complete arrived
        self._active = 0

    # -- the producer's side ----------------------------------------------------------------

    @property
    def active(self) -> int:
        return self._active  # one int read: no lock, and only ever a hint between two locks

    def free(self) -> int:
        return self.concurrency - self._active

    def hold(self, job: Job, deadline: float | None) -> None:
        with self._lock:
            self._held[job.id] = Held(job, deadline, started=time.monotonic())
            self._active += 1

    def gather(self, poll_interval: float, window: float) -> float:
        """Seconds to wait before a round trip is worth it; 0: go now.

        While handlers run, the next round trip (the completions, and a claim for every
        free slot) waits until half the slots are free, or until the oldest finished job
        has waited *window* seconds: one statement then carries many jobs instead of one
        each, and a single free slot is still refilled soon after its job finishes.
        :meth:`ended` says when to wake the producer for it."""
        with self._lock:
            if self._active == 0 or self.concurrency - self._active >= self.batch:
                return 0.0
            if not self._to_complete:
                return poll_interval  # woken by the runners long before, normally
            return max(0.0, self._first_done + window - time.monotonic())

    def held_attempts(self) -> list[tuple[int, int]]:
        """``(id, attempt)`` of every held job: single mode's hand-over excludes them."""
        with self._lock:
            return [(h.job.id, h.job.attempt) for h in self._held.values()]

    def mark_lock_lost(self) -> None:
        """Single mode lost its lock: set ``job.lock_lost`` on every held job."""
        with self._lock:
            for h in self._held.values():
                h.job.lock_lost = True

    # -- the runners' side ----------------------------------------------------------------

    def ended(self, job: Job, completion: Any = NO_COMPLETION) -> bool:
        """*job*'s handler returned or raised (its slot is free); with *completion*, queue
        it for the completer. True when the producer should be woken: when
        :meth:`gather`'s answer changes, not once per job."""
        with self._lock:
            if completion is not NO_COMPLETION:
                if not self._to_complete:
                    self._first_done = time.monotonic()
                self._to_complete.append((job, completion))
            self._active -= 1
            if job.id in self._held:
                self._held[job.id].finished = True
            free = self.concurrency - self._active
            return self._active == 0 or free == self.batch or len(self._to_complete) == 1

    # -- settling -------------------------------------------------------------------------

    def settle(self, job: Job, outcome: str | None) -> tuple[Held | None, str | None]:
        """Stop holding *job* and count *outcome* (pending, done, failed, cancelled, lost),
        once. Returns the job's record and the counted key (None: not held, or not an
        outcome that counts), so the caller can log the outcome outside the lock."""
        with self._lock:
            held = self._held.pop(job.id, None)
            self._unsure.discard(job.id)
            key = _COUNTED.get(outcome) if held is not None and outcome is not None else None
            if key is not None:
                self.counts[key] += 1
            return held, key

    def note_error(self, job: Job, exc: BaseException) -> None:
        """What *job*'s handler raised (or its timeout), for its outcome's log line."""
        with self._lock:
            if job.id in self._held:
                self._held[job.id].error = exc

    def count(self, key: str) -> None:
        with self._lock:
            self.counts[key] += 1

    # -- the completer's side -------------------------------------------------------------

    def has_completions(self) -> bool:
        with self._lock:
            return bool(self._to_complete)

    def take_completions(self) -> tuple[list[tuple[Job, Any]], list[Job]]:
        """The completions waiting, and those of them whose last COMMIT was unknown."""
        with self._lock:
            batch, self._to_complete = self._to_complete, []
            return batch, [job for job, _ in batch if job.id in self._unsure]

    def still_ours(self, batch: list[tuple[Job, Any]]) -> list[tuple[Job, Any]]:
        with self._lock:
            return [(j, r) for j, r in batch if j.id in self._held and not j.lost]

    def put_back(self, batch: list[tuple[Job, Any]]) -> None:
        """A completion batch failed (its COMMIT may have happened): try again later, and
        read each job's record back first."""
        with self._lock:
            self._unsure.update(j.id for j, _ in batch)
            self._to_complete[:0] = [(j, r) for j, r in batch if j.id in self._held]

    # -- the heartbeat's and the shutdown's side -------------------------------------------

    def beatable(self) -> list[Held]:
        """Held jobs whose lease is ours to extend. A job whose handler completed (or
        failed) it in its own transaction is no longer running: beating it would find it
        gone and call it lost."""
        with self._lock:
            return [h for h in self._held.values() if not h.job.lost and h.job.status == "running"]

    def running(self, job_id: int) -> Held | None:
        """The held job *job_id* if its handler is still running (a cancel request's
        listener looks it up)."""
        with self._lock:
            h = self._held.get(job_id)
            return h if h is not None and not h.finished and not h.job.lost else None

    def still_beatable(self, h: Held) -> bool:
        with self._lock:
            return not h.job.lost and self._held.get(h.job.id) is h and h.job.status == "running"

    def busy(self) -> bool:
        with self._lock:
            return self._active > 0 or bool(self._to_complete)

    def unfinished(self) -> list[Job]:
        with self._lock:
            return [h.job for h in self._held.values() if not h.finished]
