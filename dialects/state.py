"""What a queue's operations change as they run: :class:`RunState`, shared by its threads
under a lock.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["KEY_REPAIR_BATCH", "KEY_REPAIR_S", "RunState"]

#: seconds between two runs of ``key_repair`` by one queue's claims
KEY_REPAIR_S = 10.0
#: what one run of ``key_repair`` reads at most: keys (PostgreSQL), index entries
#: (MySQL, MariaDB); the next run goes on from where it stopped
KEY_REPAIR_BATCH = 1000


class RunState:
    """One queue's counters and the key repair's place, shared by its threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._released = 0
        #: when the queue's next claim runs the key repair (time.monotonic())
        self.repair_due = 0.0
        self._repair_after: Any = None
        #: how much one run of the key repair reads
        self.repair_batch = KEY_REPAIR_BATCH

    @property
    def released(self) -> int:
        """Jobs released by parents' ends on this queue (a worker claims again when it
        grew)."""
        with self._lock:
            return self._released

    def count_released(self, n: int) -> None:
        with self._lock:
            self._released += n

    def repair_now(self) -> bool:
        """Whether the key repair runs now: True for one caller every :data:`KEY_REPAIR_S`
        seconds."""
        now = time.monotonic()
        with self._lock:
            if now < self.repair_due:
                return False
            self.repair_due = now + KEY_REPAIR_S
            return True

    @property
    def repair_after(self) -> Any:
        """Where the next key repair goes on (None: from the start)."""
        with self._lock:
            return self._repair_after

    @repair_after.setter
    def repair_after(self, value: Any) -> None:
        with self._lock:
            self._repair_after = value
