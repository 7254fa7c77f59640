"""Wake-ups: how an idle worker learns at once that a job was enqueued.

The producer tells its :class:`Wakeup` when it is about to wait (:meth:`Wakeup.idle`) and
when a claim found jobs again (:meth:`Wakeup.busy`); it sets ``flags.wake`` when a job may
be waiting. Whatever the wake-up, the producer still polls, backing off to
``poll_interval`` while idle (see :mod:`.producer`): that finds scheduled jobs and expired
leases, and covers a wake-up path that is down.

Which one is the dialect's declared capability (``dialect.wakeup``), never its database:

- ``notify`` (PostgreSQL; :class:`Marks` with a :class:`Listener`): LISTEN/NOTIFY. The
  enqueue trigger notifies only while a worker has marked itself waiting (migration
  0006; ``dialect.wake_marks``), because a NOTIFY makes concurrent enqueuers commit one
  at a time.
- ``probe`` (:class:`Prober`): while the producer waits, a thread reads the table's
  highest id every :data:`PROBE_INTERVAL` (every :data:`PROBE_SLOW` once idle for
  :data:`PROBE_FAST_FOR`) on a connection of its own and wakes the producer when it
  changes.

The LISTEN connection also hears cancel requests of running jobs (their own channel) and
hands each job id to *on_cancel* (the heartbeat's ``beat_now``); without it they are seen
at the next beat.
"""

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
    """The producer's side of a wake-up path. This one does nothing: the producer polls."""

    def idle(self) -> bool:
        """The producer found nothing to claim and is about to wait. True: the wake-up was
        armed just now, so look at the table once more before waiting (a job committed
        before it was armed has woken nobody)."""
        return False

    def busy(self) -> None:
        """A claim found jobs: the producer will look again by itself."""

    def retry_after(self) -> float | None:
        """After :meth:`idle`: None when the wake-up is armed (or there is none), else
        how soon to look at the table and try to arm it again, since a job committed
        meanwhile may wake nobody."""
        return None

    def threads(self) -> list[threading.Thread]:
        """The helper threads to start with the worker (they end with ``flags.finished``)."""
        return []

    def close(self) -> None:
        """The producer has stopped (called on its thread)."""

    def finish(self) -> None:
        """The worker has finished (``flags.finished`` is set): make the helper threads
        return now rather than at the end of their current wait."""


def make_wakeup(
    queue: Queue, flags: Flags, on_cancel: Callable[[int], None] | None = None
) -> Wakeup:
    """The wake-up path of *queue*'s database; *on_cancel* gets the id of a running job
    whose cancel request the LISTEN connection heard."""
    port = port_of(queue)
    if port.wakeup == "notify":
        return Marks(port, Listener(port, flags, on_cancel))
    if port.wakeup == "probe":
        return Prober(port, flags)
    return Wakeup()


class Listener:
    """The listener thread's body (:meth:`run`): holds one LISTEN connection of its own,
    reopened with a backoff after a failure, until the worker has finished. ``pid`` is the
    backend of the LISTEN session while it is up, else None."""

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
    """PostgreSQL: the waiting worker's mark in ``<table>_idle`` (keyed by its LISTEN
    session's pid), written before it waits and deleted when it claims again, so that the
    enqueue trigger notifies only while someone waits. Runs on the producer's thread.

    No wake-up is lost: after the mark commits, the worker tries the trigger's advisory
    lock exclusively until no enqueuer holds it (every enqueuer that looked for marks
    before this one was visible has then committed) and only then is armed: its next
    claim sees those jobs, and every later enqueuer sees the mark and notifies. While the
    lock stays taken (a transaction that enqueued has not ended yet) the worker is not
    armed: it looks at the table and tries again after :data:`SETTLE_RETRY`, doubling up to
    its usual back-off (:meth:`retry_after`), so a job that transaction commits is found
    within milliseconds of the commit, however long the poll interval."""

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
        if self.listener.pid is None:  # not in wait_notify: it sees ``finished`` at once
            return
        with suppress(BackendError):  # else the listener ends within its 1 s wait
            self.port.notify_listeners()


class Prober(Wakeup):
    """Without LISTEN/NOTIFY: while the producer waits, the probe thread reads the table's
    highest committed id (``wake_probe``) every :data:`PROBE_INTERVAL` (:data:`PROBE_SLOW`
    after :data:`PROBE_FAST_FOR` seconds without a claimed job or a change) and sets
    ``flags.wake`` when it differs from the last read. It sleeps while the producer is
    busy, and polling goes on while its connection is down.

    Nothing to arm: the producer clears ``wake`` before each claim, so a change read after
    that wakes it, and one read before it was committed before that claim looked. An id
    committed after a higher one was read (two enqueues committing out of order) changes
    nothing and is found by the producer's back-off polls, the first ~50 ms later."""

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
    """Run ``step(conn)`` until *finished*, on one connection of its own: opened by
    *open_conn* when first needed (once ``ready()`` says so), and after a failure closed
    (``dropped()`` is told) and reopened after a back-off of 0.5 s doubling to 30 s.
    Polling covers for it meanwhile, so a failure is logged at DEBUG only."""
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
