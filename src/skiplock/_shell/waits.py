# Generated from src/skiplock/_shell/waits_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""``q.wait()`` by polling, where no notification tells of a job's end: one look-up per tick
for every waiting job of the queue, run by whichever waiter finds it due.

Generated from ``waits_async.py`` by ``scripts/async_to_sync``; edit that file.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .acompat import Event, wait_event

__all__ = ["CAP", "CHUNK", "FIRST", "Waiter", "Waits"]

#: the first look-up comes this long after a wait begins on a queue where none waited
FIRST = 0.002
#: then 1.5 times later each time, up to every CAP seconds (p99 of bench/wait.py ~CAP +
#: one statement; see docs/performance.md)
CAP = 0.02
#: ids per look-up statement (a wait for more jobs runs more than one)
CHUNK = 1000
#: ids → the ended ones among them, each as read (None: gone)
Look = Callable[[Sequence[int]], Mapping[int, Any]]


class Waiter:
    """One wait: its event is set once its job ended (``job``) or is gone (``job`` None)."""

    def __init__(self) -> None:
        self.event = Event()
        self.job: Any = None


class Waits:
    """The jobs one queue's waits poll for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # held for bookkeeping only, never across I/O
        self._waiters: dict[int, list[Waiter]] = {}
        self._busy = False  # a look-up is under way
        self._due = 0.0  # when the next one is due (time.monotonic)
        self._pause = FIRST
        #: look-up statements run (read by tests and bench/wait.py)
        self.looks = 0

    def add(self, job_id: int) -> Waiter:
        """Wait for *job_id*; :meth:`remove` it when done."""
        waiter = Waiter()
        with self._lock:
            if not self._waiters:  # nobody waited: the back-off starts again
                self._pause = FIRST
                self._due = time.monotonic() + FIRST
            self._waiters.setdefault(job_id, []).append(waiter)
        return waiter

    def remove(self, job_id: int, waiter: Waiter) -> None:
        with self._lock:
            waiters = self._waiters.get(job_id, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self._waiters.pop(job_id, None)

    def until(self, waiter: Waiter, seconds: float | None, look: Look) -> None:
        """Wait up to *seconds* for *waiter*'s event, running *look* when it is due."""
        end = None if seconds is None else time.monotonic() + seconds
        event = waiter.event
        while not event.is_set():
            now = time.monotonic()
            if end is not None and now >= end:
                return
            ids = self._turn(now)
            if ids is None:
                pause = self._pause_at(now)
                wait_event(event, pause if end is None else min(pause, end - now))
                continue
            ended: dict[int, Any] = {}
            try:
                for start in range(0, len(ids), CHUNK):
                    ended.update(look(ids[start : start + CHUNK]))
                    self.looks += 1
            finally:
                self._done(ended)

    def _turn(self, now: float) -> list[int] | None:
        """The ids to look up, when it is this waiter's turn (then :meth:`_done`)."""
        with self._lock:
            if self._busy or now < self._due or not self._waiters:
                return None
            self._busy = True
            return list(self._waiters)

    def _done(self, ended: Mapping[int, Any]) -> None:
        with self._lock:
            self._busy = False
            self._due = time.monotonic() + self._pause
            self._pause = min(self._pause * 1.5, CAP)
            for job_id, job in ended.items():
                for waiter in self._waiters.get(job_id, ()):
                    waiter.job = job
                    waiter.event.set()

    def _pause_at(self, now: float) -> float:
        """How long a waiter that did not look waits before it looks again."""
        with self._lock:
            return self._pause if self._busy else max(0.0, self._due - now)
