"""Claiming: the :class:`Producer`, the worker's main loop, claims for the free slots, hands jobs
to the runner, writes completions alongside its claims and backs off through outages (in single
mode it claims on the lock's connection, after the previous holder's jobs). Wake-ups tell an
idle producer at once that a job was enqueued (polling goes on regardless), by the database's
capability: ``notify`` (:class:`Marks` and a :class:`Listener`), ``probe`` (:class:`Prober`)
or none."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Protocol, TypeVar

from .._core.job import Job
from ..errors import BackendError
from ..queue import Queue
from .outcomes import Completer
from .port import Listening, Probe, WakePort
from .runners import Runner
from .state import Flags, HeldJobs, Settings

__all__ = [
    "GATHER",
    "MIN_POLL",
    "PROBE_INTERVAL",
    "Listener",
    "Marks",
    "Prober",
    "Producer",
    "Wakeup",
    "make_wakeup",
]

log = logging.getLogger("skiplock.worker")


MIN_POLL = 0.05
#: how long a finished job's completion may wait for others to share its statement (a real
#: job hardly notices 5 ms; measured with the runner pool: a no-op drain at concurrency
#: 100 went from 3,000 to 19,000 jobs/s once claims and completions were gathered)
GATHER = 0.005


class Producer:
    """Claims and hands over jobs until ``flags.stopping`` is set."""

    def __init__(
        self,
        settings: Settings,
        jobs: HeldJobs,
        completer: Completer,
        runner: Runner,
        flags: Flags,
        wakeup: Wakeup | None = None,
    ) -> None:
        self.settings = settings
        self.jobs = jobs
        self.completer = completer
        self.runner = runner
        self.flags = flags
        self.wakeup = wakeup or Wakeup()
        #: single mode: the lock was just taken, the last holder's jobs may still run
        self.handover = False
        #: during a hand-over: another worker's job was seen running, and since when
        #: (time.monotonic()) none has been (see :meth:`previous_holder_done`)
        self.others_seen = False
        self.clear_since: float | None = None
        #: after a claim a rate limit held back: seconds until its queue has room again
        self.retry_in: float | None = None

    def loop(self) -> None:
        """Claim until stopped; retry retryable BackendErrors with a back-off."""
        idle, outage = MIN_POLL, 0
        wake, stopping = self.flags.wake, self.flags.stopping
        while not stopping.is_set():
            wake.clear()  # a wake-up after this line ends the wait below at once
            gather = self.jobs.gather(self.settings.poll_interval, GATHER)
            if gather > 0:
                wake.wait(gather)
                continue
            try:
                claimed = self.flush_and_claim()
            except BackendError as exc:
                if not (exc.retryable or exc.connection_lost):
                    raise
                outage += 1
                pause = min(30.0, 0.5 * 2 ** min(outage, 6)) * random.uniform(0.75, 1.25)
                log.warning("database unavailable (%s); retrying in %.1fs", exc, pause)
                stopping.wait(pause)
                continue
            if outage:
                log.info("database reachable again")
                outage = 0
            if claimed:
                idle = MIN_POLL
                self.wakeup.busy()
                continue
            if self.retry_in is not None:  # a rate limit: its queue has room again then
                wake.wait(min(self.retry_in, self.settings.poll_interval))
                continue
            if self.jobs.free() > 0 and self.wakeup.idle():
                continue  # armed just now: a job committed before that woke nobody
            retry = self.wakeup.retry_after()
            if retry is not None and retry < idle:  # not armed: look again soon
                wake.wait(retry)
            elif not wake.wait(idle):  # a wake-up (a job finished) is not idleness
                idle = min(idle * 2, self.settings.poll_interval)

    def flush_and_claim(self) -> int:
        """Write completions and claim at once, on two connections."""
        done = self.completer.begin()
        with self.completer.outcomes.waking():  # expired jobs it failed released others
            if done is None:
                return self.claim()
            try:
                return self.claim()
            finally:
                done.result()

    def claim(self) -> int:
        """Claim and hand jobs to the runner; the number claimed."""
        s = self.settings
        lock = s.lock
        if lock is not None and not lock.held:
            # Running jobs go on under fencing; no new claim until the lock is ours again.
            if not lock.retake():
                return 0
            log.warning("holding the single-worker lock %r again", lock.name)
            self.begin_handover()
        if self.handover:
            if not self.previous_holder_done():
                return 0
            self.handover = False
            log.info("no other worker's job is running: claiming")
        self.retry_in = None
        free = self.jobs.free()
        if free <= 0:
            return 0

        if lock is None:
            jobs: list[Job] = s.queue.claim(queues=s.queues, limit=free, lease=s.lease)
        else:
            # On the lock's own connection: the claim commits only while the lock is held,
            # so a worker whose lock connection was just cut cannot claim next to the new
            # holder, even before its heartbeat notices.
            found = lock.claim(s.queues, free, s.lease, unsure=self.completer.outcomes.unclaim)
            if found is None:
                self.lock_lost()
                return 0
            jobs = found
        self.retry_in = getattr(jobs, "retry_in", None)  # Claimed.retry_in (rate_limits)
        if s.timeout is None:
            self.jobs.hold([(job, None) for job in jobs])
        else:
            self.jobs.hold([(job, s.deadline_in(job)) for job in jobs])
        for job in jobs:
            self.runner.submit(job)
        return len(jobs)

    def begin_handover(self) -> None:
        self.handover, self.others_seen, self.clear_since = True, False, None

    def previous_holder_done(self) -> bool:
        """Single mode: True once no other job runs nor missed its lease by less than a lease,
        for a whole lease if one was seen."""
        assert self.settings.lock is not None
        ours = self.jobs.held_attempts()
        now = time.monotonic()
        if self.settings.lock.others_running(ours, margin=self.settings.lease):
            self.others_seen, self.clear_since = True, None
            return False
        if not self.others_seen:
            return True
        if self.clear_since is None:
            self.clear_since = now
        return now - self.clear_since >= self.settings.lease

    def lock_lost(self) -> None:
        """The lock's connection is gone: flag held jobs, give back the waiting."""
        assert self.settings.lock is not None
        self.jobs.mark_lock_lost()  # the handlers may look, and stop early
        # jobs claimed ahead are not begun without the lock: give them back at once
        self.completer.outcomes.release_waiting()
        log.warning(
            "lost the single-worker lock %r (its connection ended): claiming stops until it "
            "is held again and the new holder's jobs are finished; running jobs go on under "
            "fencing (job.lock_lost is set)",
            self.settings.lock.name,
        )
        self.flags.wake.set()


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
    port: WakePort = queue._port()
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
