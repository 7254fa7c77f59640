"""What every part of a worker reads: its settings (fixed at start) and its three flags.

Nothing here is locked: the settings never change once the worker is built, and the flags
are :class:`threading.Event` objects, safe from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .._core.job import Job
from ..queue import Queue
from .services.lock import SingleLock

__all__ = ["Flags", "Settings"]


@dataclass(frozen=True)
class Settings:
    """A worker's options after its argument checks (see :class:`skiplock.Worker`)."""

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
        """Seconds *job* may run before it is abandoned; None: no limit."""
        return self.timeout(job) if callable(self.timeout) else self.timeout


@dataclass
class Flags:
    """``wake``: the producer should look again now (a job was enqueued, or finished, or
    the worker is stopping). ``stopping``: no more claims. ``finished``: the producer and
    the shutdown are over; the heartbeat and the listener end."""

    wake: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
