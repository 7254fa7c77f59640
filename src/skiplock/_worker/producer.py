"""The producer: the worker's main loop. It claims for the free slots, hands jobs to the runner,
writes completions alongside its claims, and backs off through outages. In single mode it claims
on the lock's connection, after the previous holder's jobs."""

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
    """Claims and hands over jobs until ``flags.stopping`` is set."""

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
        """Claim until stopped; retry retryable BackendErrors with a back-off."""
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
        self.handover, self.others_seen, self.clear_since = True, False, None

    def previous_holder_done(self) -> bool:
        """Single mode: True once no other job runs nor missed its lease by less than a lease,
        for a whole lease if one was seen."""
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
        """The lock's connection is gone: flag held jobs, give back the waiting."""
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
