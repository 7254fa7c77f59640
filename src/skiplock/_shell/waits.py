# Generated from src/skiplock/_shell/waits_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""``q.wait()`` by polling (where no notification tells of a job's end: MySQL, MariaDB, SQL
Server, or PostgreSQL when its listener cannot be opened): one look-up per tick for every
job the queue's waits wait for, however many there are.

Each queue has one :class:`AsyncWaits`. A wait adds its job (:meth:`AsyncWaits.add`) and
then waits on its own event (:meth:`AsyncWaits.until`). There is no thread or task of its
own: when the next look-up is due and none is under way, the waiter that sees it first
runs it for all (``wait_look``: the statuses of the waited ids, :data:`CHUNK` per
statement) and sets the events of the jobs that ended or are gone. Ticks: 2 ms after the
first wait begins, then 1.5 times longer each time, up to every :data:`CAP` seconds.

May import: :mod:`skiplock._shell.acompat` and the standard library.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from .acompat import Event, wait_event

__all__ = ["CAP", "CHUNK", "FIRST", "Waits"]

#: the first look-up comes this long after a wait begins on a queue where none waited
FIRST = 0.002
#: then 1.5 times later each time, up to every CAP seconds (p99 of bench/wait.py ~CAP +
#: one statement; see docs/performance.md)
CAP = 0.02
#: ids per look-up statement (a wait for more jobs runs more than one)
CHUNK = 1000
#: the statuses of a job that has not ended
_ACTIVE = frozenset({"waiting", "pending", "running"})

Look = Callable[[Sequence[int]], dict[int, str]]


class Waits:
    """The jobs one queue's waits poll for (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # held for bookkeeping only, never across I/O
        self._events: dict[int, list[Event]] = {}
        self._busy = False  # a look-up is under way
        self._due = 0.0  # when the next one is due (time.monotonic)
        self._pause = FIRST
        #: look-up statements run (read by tests and bench/wait.py)
        self.looks = 0

    def add(self, job_id: int) -> Event:
        """Wait for *job_id* from now on: the event is set once a look-up finds it ended
        (or gone). :meth:`remove` it when done."""
        event = Event()
        with self._lock:
            if not self._events:  # nobody waited: the back-off starts again
                self._pause = FIRST
                self._due = time.monotonic() + FIRST
            self._events.setdefault(job_id, []).append(event)
        return event

    def remove(self, job_id: int, event: Event) -> None:
        with self._lock:
            events = self._events.get(job_id, [])
            if event in events:
                events.remove(event)
            if not events:
                self._events.pop(job_id, None)

    def until(self, event: Event, seconds: float | None, look: Look) -> None:
        """Wait up to *seconds* (None: no limit) for *event*, running the look-up with
        *look* (ids → their statuses) whenever it is due and no other waiter runs it."""
        end = None if seconds is None else time.monotonic() + seconds
        while not event.is_set():
            now = time.monotonic()
            if end is not None and now >= end:
                return
            ids = self._turn(now)
            if ids is None:
                pause = self._pause_at(now)
                wait_event(event, pause if end is None else min(pause, end - now))
                continue
            ended: list[int] = []
            try:
                for start in range(0, len(ids), CHUNK):
                    chunk = ids[start : start + CHUNK]
                    statuses = look(chunk)
                    self.looks += 1
                    ended += [i for i in chunk if statuses.get(i) not in _ACTIVE]
            finally:
                self._done(ended)

    def _turn(self, now: float) -> list[int] | None:
        """The ids to look up when it is this waiter's turn (then call :meth:`_done`)."""
        with self._lock:
            if self._busy or now < self._due or not self._events:
                return None
            self._busy = True
            return list(self._events)

    def _done(self, ended: list[int]) -> None:
        with self._lock:
            self._busy = False
            self._due = time.monotonic() + self._pause
            self._pause = min(self._pause * 1.5, CAP)
            for job_id in ended:
                for event in self._events.get(job_id, ()):
                    event.set()

    def _pause_at(self, now: float) -> float:
        """How long a waiter that did not run the look-up waits before it looks again."""
        with self._lock:
            return self._pause if self._busy else max(0.0, self._due - now)
