"""Wake-ups: on databases with LISTEN/NOTIFY, a listener that wakes the producer as soon
as a job is enqueued. Elsewhere (and while the listener's connection is down) the
producer polls, backing off to ``poll_interval`` while idle (see :mod:`.producer`).
The same connection hears cancel requests of running jobs and hands each job id to
*on_cancel* (the heartbeat's ``beat_now``); without it they are seen at the next beat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from ..queue import Queue
from .settings import Flags

__all__ = ["Listener"]

log = logging.getLogger("skiplock.worker")


class Listener:
    """The listener thread's body (:meth:`run`): holds one LISTEN connection of its own,
    reopened with a backoff after a failure, until the worker has finished."""

    def __init__(
        self, queue: Queue, flags: Flags, on_cancel: Callable[[int], None] | None = None
    ) -> None:
        self.queue = queue
        self.flags = flags
        self.on_cancel = on_cancel

    def run(self) -> None:
        d, pause = self.queue.dialect, 0.5
        conn: Any = None
        while not self.flags.finished.is_set():
            try:
                if conn is None:
                    conn = d.listen()
                    pause = 0.5
                cancels: list[int] = []
                if d.wait_notify(conn, 1.0, cancels):
                    self.flags.wake.set()
                for job_id in cancels:
                    if self.on_cancel is not None:
                        self.on_cancel(job_id)
            except Exception as exc:  # polling goes on meanwhile; try again later
                log.debug("LISTEN connection failed (%s); polling only for now", exc)
                if conn is not None:
                    with suppress(Exception):
                        conn.close()
                conn = None
                self.flags.finished.wait(pause)
                pause = min(pause * 2, 30.0)
        if conn is not None:
            with suppress(Exception):
                conn.close()
