"""Wake-ups: how an idle worker learns at once that a job was enqueued (polling goes on
regardless). By the database's capability: ``notify`` (:class:`Marks` and a :class:`Listener`),
``probe`` (:class:`Prober`) or none."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Protocol, TypeVar

from ..errors import BackendError
from ..queue import Queue
from .port import Listening, Probe, WakePort, port_of
from .settings import Flags

__all__ = ["PROBE_INTERVAL", "Listener", "Marks", "Prober", "Wakeup", "make_wakeup"]

log = logging.getLogger("skiplock.worker")

#: seconds between two probes of an idle worker without LISTEN/NOTIFY (40 one-row reads a
#: second: a wake-up within ~25 ms) for PROBE_FAST_FOR seconds after it last claimed a job
#: or saw the table change; then PROBE_SLOW (10 a second). docs/performance.md has what they
#: cost the server.
PROBE_INTERVAL = 0.025
PROBE_FAST_FOR = 10.0
PROBE_SLOW = 0.1
#: how many times, 2 ms apart, a worker tries to see the enqueuers settled after marking
_SETTLE_TRIES = 3
#: while the enqueuers have not settled, the producer looks again after this long, doubling
#: each time (up to its own back-off): an enqueue is usually committed within milliseconds
SETTLE_RETRY = 0.01


class Wakeup:
    """The producer's side of a wake-up path; this one only polls."""

    def idle(self) -> bool:
        """About to wait. True: armed just now, look at the table once more."""
        return False

    def busy(self) -> None:
        """A claim found jobs."""

    def retry_after(self) -> float | None:
        """None when armed, else how soon to look again."""
        return None

    def threads(self) -> list[threading.Thread]:
        """The helper threads to start with the worker."""
        return []

    def close(self) -> None:
        """The producer has stopped."""

    def finish(self) -> None:
        """The worker has finished: end the helper threads now."""


def make_wakeup(
    queue: Queue, flags: Flags, on_cancel: Callable[[int], None] | None = None
) -> Wakeup:
    """The wake-up path of *queue*'s database; *on_cancel* gets the ids of cancel requests heard."""
    port = port_of(queue)
    if port.wakeup == "notify":
        return Marks(port, Listener(port, flags, on_cancel))
    if port.wakeup == "probe":
        return Prober(port, flags)
    return Wakeup()


class Listener:
    """The listener thread: one LISTEN connection; ``pid`` while it is up."""

    def __init__(
        self, port: WakePort, flags: Flags, on_cancel: Callable[[int], None] | None = None
    ) -> None:
        self.port = port
        self.flags = flags
        self.pid: int | None = None
        self.on_cancel = on_cancel

    def run(self) -> None:
        hold_connection(
            self.flags.finished, "LISTEN connection", self._open, self._step, self._dropped
        )
        self.pid = None

    def _open(self) -> Listening:
        conn = self.port.listen()
        self.pid = conn.pid
        self.flags.wake.set()  # notifications sent while it was down are lost
        return conn

    def _step(self, conn: Listening) -> None:
        cancels: list[int] = []
        if conn.wait(1.0, cancels):
            self.flags.wake.set()
        for job_id in cancels:
            if self.on_cancel is not None:
                self.on_cancel(job_id)

    def _dropped(self) -> None:
        self.pid = None


class Marks(Wakeup):
    """LISTEN/NOTIFY with waiting marks: the trigger notifies only while a worker is marked, and
    a worker is armed only once the enqueuers that may have missed its mark have committed (until
    then it looks again after :data:`SETTLE_RETRY`, doubling)."""

    def __init__(self, port: WakePort, listener: Listener) -> None:
        self.port = port
        self.listener = listener
        self.marked: int | None = None  # the pid our mark holds
        self.armed = False
        self.swept: int | None = None  # the pid whose first mark swept stale ones
        self.retry: float | None = None  # not armed for want of settled enqueuers: see idle
        #: False with statements older than schema version 6 (whose trigger always notifies)
        self.marking = port.wake_marks

    def threads(self) -> list[threading.Thread]:
        return [threading.Thread(target=self.listener.run, name="skiplock-listen", daemon=True)]

    def idle(self) -> bool:
        pid = self.listener.pid
        if pid is None or not self.marking:  # no LISTEN session / nothing to mark
            self.armed = False
            return False
        if self.armed and self.marked == pid:
            return False
        retry, self.retry = self.retry, None
        try:
            if self.marked != pid:
                sweep = self.swept != pid
                self.port.mark_waiting(pid, sweep)
                self.marked, self.armed, self.swept = pid, False, pid
            for attempt in range(_SETTLE_TRIES):
                if attempt:
                    time.sleep(0.002)
                if self.port.enqueuers_settled():
                    self.armed = True
                    return True
            self.retry = SETTLE_RETRY if retry is None else retry * 2
        except BackendError as exc:
            log.debug("could not mark the worker waiting (%s); polling", exc)
        return False

    def retry_after(self) -> float | None:
        return self.retry

    def busy(self) -> None:
        self.retry = None
        if self.marked is None:
            return
        pid, self.marked, self.armed = self.marked, None, False
        try:
            self.port.unmark_waiting(pid)
        except BackendError as exc:  # a mark left behind only causes needless NOTIFYs
            log.debug("could not unmark the worker (%s)", exc)

    def close(self) -> None:
        self.busy()

    def finish(self) -> None:
        if self.listener.pid is None:  # not in wake_wait: it sees ``finished`` at once
            return
        with suppress(BackendError):  # else the listener ends within its 1 s wait
            self.port.notify_listeners()


class Prober(Wakeup):
    """While the producer waits, a thread reads the table's highest id every
    :data:`PROBE_INTERVAL` (:data:`PROBE_SLOW` when idle) and wakes it on a change."""

    def __init__(self, port: WakePort, flags: Flags) -> None:
        self.port = port
        self.flags = flags
        self.waiting = threading.Event()
        #: when the producer last claimed jobs or a probe saw a change (monotonic)
        self.recent = time.monotonic()
        #: probes run (read by the bench)
        self.probes = 0
        self._last: object = None  # what the last probe read

    def threads(self) -> list[threading.Thread]:
        return [threading.Thread(target=self.run, name="skiplock-probe", daemon=True)]

    def idle(self) -> bool:
        self.waiting.set()
        return False

    def busy(self) -> None:
        self.waiting.clear()
        self.recent = time.monotonic()

    def close(self) -> None:
        self.waiting.clear()

    def finish(self) -> None:
        self.waiting.set()  # the thread leaves its wait for the producer, sees ``finished``

    def run(self) -> None:
        hold_connection(
            self.flags.finished,
            "wake-up probe",
            self.port.probe,
            self._probe,
            ready=lambda: self.waiting.wait(1.0),
        )

    def _probe(self, conn: Probe) -> None:
        top = conn.read()
        self.probes += 1
        if top != self._last:
            self._last, self.recent = top, time.monotonic()
            self.flags.wake.set()
        fast = time.monotonic() - self.recent < PROBE_FAST_FOR
        self.flags.finished.wait(PROBE_INTERVAL if fast else PROBE_SLOW)


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


def hold_connection(
    finished: threading.Event,
    what: str,
    open_conn: Callable[[], C],
    step: Callable[[C], None],
    dropped: Callable[[], None] = lambda: None,
    ready: Callable[[], bool] = lambda: True,
) -> None:
    """Run ``step(conn)`` until *finished*, reopening the connection after a failure with a
    back-off; failures are logged at DEBUG."""
    conn: C | None = None
    pause = 0.5
    try:
        while not finished.is_set():
            if not ready() or finished.is_set():
                continue
            try:
                if conn is None:
                    conn = open_conn()
                    pause = 0.5
                step(conn)
            except Exception as exc:  # polling goes on meanwhile; try again later
                log.debug("%s failed (%s); polling only for now", what, exc)
                dropped()
                if conn is not None:
                    with suppress(Exception):
                        conn.close()
                conn = None
                finished.wait(pause)
                pause = min(pause * 2, 30.0)
    finally:
        if conn is not None:
            with suppress(Exception):
                conn.close()
