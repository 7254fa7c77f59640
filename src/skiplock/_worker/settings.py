"""A worker's settings (fixed) and its three flags."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .._core.checks import seconds
from .._core.job import Job
from ..errors import ConfigurationError
from ..queue import Queue
from .services.lock import SingleLock

__all__ = ["Flags", "Settings"]

log = logging.getLogger("skiplock.worker")


@dataclass(frozen=True)
class Settings:
    """A worker's options, checked."""

    queue: Queue
    queues: list[str]
    concurrency: int
    lease: float
    heartbeat: float
    timeout: float | Callable[[Job], float | None] | None
    grace: float
    poll_interval: float
    wait_for_lock: bool
    lock: SingleLock | None
    #: jobs a claim may take beyond the free slots (0: none; see Ledger)
    prefetch: int = 0

    def deadline_in(self, job: Job) -> float | None:
        """Seconds *job* may run; None: no limit."""
        if not callable(self.timeout):
            return self.timeout
        try:
            limit = self.timeout(job)
            return None if limit is None else seconds(limit, "timeout", strict=True)
        except Exception as exc:
            log.error(
                "job %d attempt %d runs with no timeout: timeout(job) %s",
                job.id,
                job.attempt,
                f"raised {exc!r:.200}"
                if not isinstance(exc, ConfigurationError)
                else f"gave a bad value ({exc})",
            )
            return None


@dataclass
class Flags:
    """``wake``: look again. ``stopping``: no more claims. ``finished``: all over."""

    wake: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
