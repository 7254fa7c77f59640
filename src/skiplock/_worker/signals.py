"""SIGTERM / SIGINT without taking a lock: the handler writes the signal to a pipe, a thread
reacts. The first stops with a grace, a SIGINT after it exits at once."""

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
    """What *signum* asks after *earlier* ones."""
    if earlier == 0:
        return STOP
    return EXIT_NOW if signum == signal.SIGINT else REPEATED


class SignalRelay:
    """While open, *signals* call ``on_signal(signum)`` on its thread."""

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
        """Restore the handlers; end the thread."""
        for signum, old in self._previous.items():
            signal.signal(signum, old)
        os.close(self._write)  # the reader sees the end of the pipe
        self._thread.join(5)
        os.close(self._read)


def on_stop_signal(signum: int, earlier: int, grace: float, stop: Callable[[], None]) -> None:
    """Stop, ignore, or exit with 128 + *signum*."""
    request = stop_request(signum, earlier)
    if request == EXIT_NOW:
        log.warning("second signal %d: exiting now; leases will bring jobs back", signum)
        os._exit(128 + signum)
    if request == REPEATED:
        log.info("signal %d again: still stopping (SIGINT exits now)", signum)
        return
    log.info("signal %d: stopping (grace %.0fs; SIGINT again exits now)", signum, grace)
    stop()
