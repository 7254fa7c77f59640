"""Periodic jobs: each tick of a :class:`~skiplock.Schedule` enqueued once, however many workers
run: the tick's ledger row and its job commit together, and the row's primary key lets one
scheduler win."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

from ..._core.arguments import EnqueueOptions
from ..._core.checks import dumps as _dumps
from ...errors import ConfigurationError, SkiplockError
from ...periodic import MAX_CATCH_UP, Schedule, tick_kwargs
from ...queue import Queue
from ..port import PeriodicPort, port_of

__all__ = ["MAX_CATCH_UP", "Schedule", "Scheduler", "tick_kwargs"]

log = logging.getLogger("skiplock.worker")

#: the longest a scheduler sleeps before it reads the database's clock again
_MAX_SLEEP = 30.0
#: ledger rows kept per schedule before its newest tick (its newest row is always kept)
_HISTORY = timedelta(days=1)


class Scheduler:
    """Enqueues the due ticks of *schedules* in a thread; errors are retried."""

    def __init__(
        self,
        queue: Queue,
        schedules: Sequence[Schedule],
        *,
        counts: dict[str, int] | None = None,
    ) -> None:
        if not all(isinstance(s, Schedule) for s in schedules):
            raise ConfigurationError("periodic must be a list of skiplock Schedule objects")
        names = [s.name for s in schedules]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"two schedules share a name: {sorted(names)!r:.200}")
        self.port: PeriodicPort = port_of(queue)
        self.queue = queue
        self.schedules = list(schedules)
        self.counts = {} if counts is None else counts
        self.counts.setdefault("scheduled", 0)
        self._started: datetime | None = None

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run until *stop* is set, in a daemon thread; returns it."""
        thread = threading.Thread(
            target=self._serve, args=(stop,), name="skiplock-periodic", daemon=True
        )
        thread.start()
        return thread

    def _serve(self, stop: threading.Event) -> None:
        pause = 1.0
        while not stop.is_set():
            try:
                wait = self.run_once()
                pause = 1.0
            except SkiplockError as exc:
                log.warning("periodic jobs: %s; trying again in %.0fs", exc, pause)
                wait, pause = pause, min(pause * 2, _MAX_SLEEP)
            stop.wait(wait)

    def now(self) -> datetime:
        """The database's clock."""
        return self.port.now()

    def run_once(self) -> float:
        """Enqueue the ticks due; seconds until the next (at most 30)."""
        now = self.now()
        if self._started is None:
            self._started = now
        soonest = now + timedelta(seconds=_MAX_SLEEP)
        for s in self.schedules:
            last = self.last_tick(s) or self._started
            ticks, left_out = s.due(last, now)
            if left_out:
                log.warning(
                    "schedule %r missed more than %d ticks: enqueueing the newest %d",
                    s.name,
                    s.limit,
                    len(ticks),
                )
            for tick in ticks:
                self.enqueue_tick(s, tick)
            soonest = min(soonest, s.next_tick(max(now, *ticks) if ticks else now))
        return max(0.01, (soonest - now).total_seconds() + 0.01)

    def last_tick(self, s: Schedule) -> datetime | None:
        """The newest tick of *s* in the ledger, or None."""
        return self.port.last_tick(s.name)

    def enqueue_tick(self, s: Schedule, tick: datetime) -> int | None:
        """Enqueue *tick*'s job unless done already; its id, or None."""
        options = EnqueueOptions.check(
            queue=s.queue, priority=s.priority, max_attempts=s.max_attempts
        )
        payload = _dumps(s.payload(tick), "payload")
        job_id = self.port.enqueue_tick(s.name, tick, options, payload, tick - _HISTORY)
        if job_id is not None:
            self.counts["scheduled"] += 1  # only this thread writes this key
            log.info("enqueued job %d for tick %s of %r", job_id, tick.isoformat(), s.name)
        return job_id
