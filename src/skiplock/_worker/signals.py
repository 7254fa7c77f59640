"""SIGTERM / SIGINT for a worker run on the main thread, handled without taking a lock.

Python runs a signal handler on the main thread between two bytecodes, wherever that
thread is: inside ``threading.Event.clear()`` or ``wait()`` too, holding the event's
internal lock. A handler that then sets that event (a worker's stop does) waits for a lock
its own thread holds, forever: a ``skiplock worker`` hung so after SIGTERM in a CI run.
So the handler only writes the signal's number to a pipe (``os.write`` takes no Python
lock), and a thread of its own reads the pipe and calls the worker's reaction there.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

__all__ = ["SignalRelay"]


class SignalRelay:
    """While open, *signals* call ``on_signal(signum)`` on the relay's thread, in order."""

    def __init__(self, signals: Iterable[int], on_signal: Callable[[int], None]) -> None:
        self._on_signal = on_signal
        self._read, self._write = os.pipe()
        self._thread = threading.Thread(target=self._run, name="skiplock-signals", daemon=True)
        self._thread.start()
        self._previous: dict[int, Any] = {}
        for signum in signals:
            self._previous[signum] = signal.signal(signum, self._handler)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        os.write(self._write, bytes([signum]))

    def _run(self) -> None:
        while data := os.read(self._read, 16):  # empty: the relay was closed
            for signum in data:
                self._on_signal(signum)

    def close(self) -> None:
        """Put the previous handlers back and end the relay's thread."""
        for signum, old in self._previous.items():
            signal.signal(signum, old)
        os.close(self._write)  # the reader sees the end of the pipe
        self._thread.join(5)
        os.close(self._read)
