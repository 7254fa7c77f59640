"""The producer: the worker's main loop. It claims jobs for the free slots (in batches),
hands them to the runner, starts each batch of completions alongside its claim, and backs
off through outages and idleness. In single mode it claims on the lock's connection and
waits, after taking the lock, until the previous holder's jobs are over (the hand-over).

Runs on one thread (the one that called :meth:`skiplock.Worker.run`); it is the only
caller of the runner's ``submit`` and of :meth:`~.ledger.Ledger.hold`.
"""

from __future__ import annotations

import logging
import random
import time

from .._core.job import Job
from ..errors import BackendError
from .completer import Completer
from .ledger import Ledger
from .runners import Runner
from .settings import Flags, Settings
from .wakeup import Wakeup

__all__ = ["GATHER", "MIN_POLL", "Producer"]

log = logging.getLogger("skiplock.worker")

MIN_POLL = 0.05
#: how long a finished job's completion may wait for others to share its statement (a real
#: job hardly notices 5 ms; measured with the runner pool: a no-op drain at concurrency
#: 100 went from 3,000 to 19,000 jobs/s once claims and completions were gathered)
GATHER = 0.005


class Producer:
    """Claims and hands over jobs until ``flags.stopping`` is set (see :meth:`loop`)."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        completer: Completer,
        runner: Runner,
        flags: Flags,
        wakeup: Wakeup | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
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
        """Claim until stopped. A BackendError that is neither retryable nor a lost
        connection is raised; the others are retried with a growing, jittered pause."""
        idle, outage = MIN_POLL, 0
        wake, stopping = self.flags.wake, self.flags.stopping
        while not stopping.is_set():
            wake.clear()  # a wake-up after this line ends the wait below at once
            gather = self.ledger.gather(self.settings.poll_interval, GATHER)
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
            if self.ledger.free() > 0 and self.wakeup.idle():
                continue  # armed just now: a job committed before that woke nobody
            retry = self.wakeup.retry_after()
            if retry is not None and retry < idle:  # not armed: look again soon
                wake.wait(retry)
            elif not wake.wait(idle):  # a wake-up (a job finished) is not idleness
                idle = min(idle * 2, self.settings.poll_interval)

    def flush_and_claim(self) -> int:
        """Write the finished jobs' completions and claim more, at the same time on two
        connections: the statements touch different rows, and the database works on both
        while this process waits (measured: no-op drains ~1.15x faster than one after the
        other, on PostgreSQL and on MySQL). A BackendError of either is raised (the
        flush's when both fail)."""
        done = self.completer.begin()
        with self.completer.outcomes.waking():  # expired jobs it failed released others
            if done is None:
                return self.claim()
            try:
                return self.claim()
            finally:
                done.result()

    def claim(self) -> int:
        """Claim up to the free slots (and the prefetch bound, see
        :meth:`~.ledger.Ledger.free`) and hand the jobs to the runner; the number claimed."""
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
        free = self.ledger.free()
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
            self.ledger.hold([(job, None) for job in jobs])
        else:
            self.ledger.hold([(job, s.deadline_in(job)) for job in jobs])
        for job in jobs:
            self.runner.submit(job)
        return len(jobs)

    def begin_handover(self) -> None:
        """The lock was just taken: claim nothing until :meth:`previous_holder_done`."""
        self.handover, self.others_seen, self.clear_since = True, False, None

    def previous_holder_done(self) -> bool:
        """Single mode, after taking the lock: True once no other job of the table runs,
        and none has gone without a heartbeat for less than a lease past its lease's end
        (see :meth:`SingleLock.others_running`), so jobs never run in two workers at once
        even when the previous holder was cut off from the database for a while.

        When another job was seen running since the lock was taken, that must then stay
        true for a whole lease more: a previous holder cut off for most of that time, its
        handlers alive, renews its leases only once it has a connection again (a TLS
        connect to MySQL took 0.4 s on a loaded machine), and a new holder that started
        at the first look that found its leases old would run beside them."""
        assert self.settings.lock is not None
        ours = self.ledger.held_attempts()
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
        """Called by the producer or the heartbeat when the lock's connection is gone."""
        assert self.settings.lock is not None
        self.ledger.mark_lock_lost()  # the handlers may look, and stop early
        # jobs claimed ahead are not begun without the lock: give them back at once
        self.completer.outcomes.release_waiting()
        log.warning(
            "lost the single-worker lock %r (its connection ended): claiming stops until it "
            "is held again and the new holder's jobs are finished; running jobs go on under "
            "fencing (job.lock_lost is set)",
            self.settings.lock.name,
        )
        self.flags.wake.set()
