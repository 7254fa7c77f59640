"""SIGTERM / SIGINT for a worker run on the main thread, handled without taking a lock.

Python runs a signal handler on the main thread between two bytecodes, wherever that
thread is: inside ``threading.Event.clear()`` or ``wait()`` too, holding the event's
internal lock. A handler that then sets that event (a worker's stop does) waits for a lock
its own thread holds, forever: a ``skiplock worker`` hung so after SIGTERM in a CI run.
So the handler only writes the signal's number to a pipe (``os.write`` takes no Python
lock), and a thread of its own reads the pipe and calls the worker's reaction there.

What a stop signal asks (:func:`stop_request`, for the workers and a fleet's supervisor
alike): the first SIGTERM or SIGINT stops with a grace; a SIGINT after it (Ctrl-C again)
exits at once; a repeated SIGTERM changes nothing, since one stop often arrives as several
SIGTERMs (GNU ``timeout`` signals the process and then its whole group; systemd and
container runtimes signal every process of a unit or group).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

__all__ = ["EXIT_NOW", "REPEATED", "STOP", "SignalRelay", "on_stop_signal", "stop_request"]

log = logging.getLogger("skiplock.worker")

STOP, REPEATED, EXIT_NOW = "stop", "repeated", "exit now"


def stop_request(signum: int, earlier: int) -> str:
    """What stop signal *signum* asks after *earlier* ones: :data:`STOP` (the first),
    :data:`EXIT_NOW` (a SIGINT after one) or :data:`REPEATED` (a SIGTERM after one:
    nothing more)."""
    if earlier == 0:
        return STOP
    return EXIT_NOW if signum == signal.SIGINT else REPEATED


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


def on_stop_signal(signum: int, earlier: int, grace: float, stop: Callable[[], None]) -> None:
    """A worker's reaction to stop signal *signum* after *earlier* ones (see
    :func:`stop_request`): *stop* (which returns at once), nothing, or the process's exit
    with 128 + *signum* (leases bring its jobs back)."""
    request = stop_request(signum, earlier)
    if request == EXIT_NOW:
        log.warning("second signal %d: exiting now; leases will bring jobs back", signum)
        os._exit(128 + signum)
    if request == REPEATED:
        log.info("signal %d again: still stopping (SIGINT exits now)", signum)
        return
    log.info("signal %d: stopping (grace %.0fs; SIGINT again exits now)", signum, grace)
    stop()
