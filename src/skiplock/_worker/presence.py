"""The worker's row in the live worker list; its errors are logged, never fatal."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from .ledger import Ledger
from .settings import Settings

__all__ = ["Presence"]

log = logging.getLogger("skiplock.worker")


class Presence:
    """One worker process's row."""

    def __init__(self, settings: Settings, ledger: Ledger) -> None:
        self.settings = settings
        self.ledger = ledger
        self.id = uuid.uuid4().hex
        self._registered = False
        self._failing = False

    def register(self) -> None:
        s = self.settings
        try:
            s.queue.register_worker(
                self.id,
                host=socket.gethostname()[:255] or "unknown",
                pid=os.getpid(),
                queues=s.queues,
                concurrency=s.concurrency,
                interval=s.heartbeat,
            )
            self._registered = True
            self._failing = False
        except Exception as exc:  # never fatal: see the module's docstring
            self._failed(exc)

    def beat(self) -> None:
        if not self._registered:
            self.register()
            return
        try:
            if not self.settings.queue.beat_worker(self.id, in_flight=self.ledger.active):
                self.register()  # the row was forgotten (a long outage): write it again
            self._failing = False
        except Exception as exc:  # never fatal: see the module's docstring
            self._failed(exc)

    def start(self, stop: threading.Event) -> threading.Thread:
        """Beat until *stop* is set, in a daemon thread."""

        def run() -> None:
            while not stop.wait(self.settings.heartbeat):
                self.beat()

        t = threading.Thread(target=run, name="skiplock-presence", daemon=True)
        t.start()
        return t

    def unregister(self) -> None:
        if not self._registered:  # no row was written (the table missing, say): none to remove
            return
        try:
            self.settings.queue.unregister_worker(self.id)
        except Exception as exc:
            log.warning("could not remove this worker from the worker list (%r)", exc)

    def _failed(self, exc: Exception) -> None:
        if not self._failing:  # once per outage
            log.warning("could not update this worker's row in the worker list (%r)", exc)
        self._failing = True
