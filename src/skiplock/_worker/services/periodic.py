"""Periodic jobs: cron schedules whose every tick is enqueued once, however many workers run.

Every worker given schedules runs a :class:`Scheduler` thread. When a tick falls due, by
the database's clock, each scheduler inserts the row ``(schedule, tick)`` into the periodic
ledger ``<table>_ticks``, whose primary key is that pair, and enqueues the tick's job in
the same transaction: one insert wins, the others insert nothing and enqueue nothing. No
worker is elected; a scheduler that stops or stalls leaves the ticks to the others.

Missed ticks (no worker ran at the time): the ledger's newest row says where the schedule
stopped. By default only the newest missed tick is enqueued; ``catch_up=True`` enqueues
each, at most :data:`MAX_CATCH_UP` (the newest ones), ``catch_up=N`` at most N. A schedule
with no row yet starts at the first tick after its first scheduler started.

Cron expressions are read by cronsim (``pip install 'skiplock[cron]'``): five fields, or
six with seconds first. Daylight saving time follows Debian cron, as cronsim does: a
fixed-time job in a skipped hour runs at the end of the gap, a fixed-time job in a
repeated hour runs once, and ``*`` or stepped hours run in both repeated hours.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import threading
import uuid
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

from ..._core.arguments import EnqueueOptions
from ..._core.checks import dumps as _dumps
from ..._core.checks import integer as _int
from ..._core.checks import text as _text
from ..._core.job import utc
from ...errors import ConfigurationError, SkiplockError
from ...queue import Queue

__all__ = ["MAX_CATCH_UP", "Schedule", "Scheduler", "tick_kwargs"]

log = logging.getLogger("skiplock.worker")

UTC = timezone.utc
#: the most missed ticks ``catch_up=True`` enqueues (the newest ones)
MAX_CATCH_UP = 100
#: the longest a scheduler sleeps before it reads the database's clock again
_MAX_SLEEP = 30.0
#: ledger rows kept per schedule before its newest tick (its newest row is always kept)
_HISTORY = timedelta(days=1)


def _cron_module() -> Any:
    try:
        return importlib.import_module("cronsim")
    except ImportError:
        raise ConfigurationError(
            "periodic jobs need cronsim: pip install 'skiplock[cron]'"
        ) from None


def _zone(name: object) -> tzinfo:
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"timezone must be an IANA zone name, not {name!r:.80}")
    if name == "UTC":
        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # OSError: a folder of zones (Europe) or an over-long name, read from the tzdata
        # package where the system has no zone files; ValueError: ../x, a NUL, not TZif
        raise ConfigurationError(
            f"unknown timezone {name!r:.80}: use an IANA name such as 'Europe/Paris'"
        ) from None


@dataclass(frozen=True, eq=False)
class Schedule:
    """A task's calls on a cron schedule. ``name`` is the ledger's key: one job per
    (name, tick). The job gets the task's queue, priority and max_attempts, and the tick
    (an aware datetime in ``timezone``) as the keyword argument ``tick_arg`` (None: not
    passed). Raises :class:`~skiplock.ConfigurationError` for a bad cron expression,
    timezone or option, :class:`~skiplock.PayloadError` for arguments that are not JSON."""

    name: str
    cron: str
    task: str
    timezone: str = "UTC"
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    queue: str = "default"
    priority: int = 0
    max_attempts: int = 5
    catch_up: bool | int = False
    tick_arg: str | None = "tick"

    def __post_init__(self) -> None:
        _text(self.name, "the schedule's name")
        _text(self.task, "the task's name")
        _text(self.queue, "queue")
        _int(self.priority, "priority", -(2**31))
        _int(self.max_attempts, "max_attempts", 1)
        if not isinstance(self.cron, str) or not self.cron.strip():
            raise ConfigurationError(f"cron must be a cron expression, not {self.cron!r:.80}")
        object.__setattr__(self, "_zone", _zone(self.timezone))
        cronsim = _cron_module()
        try:
            next(cronsim.CronSim(self.cron, datetime.now(self._zone)))
        except (cronsim.CronSimError, StopIteration) as exc:
            raise ConfigurationError(
                f"bad cron expression {self.cron!r:.80} ({exc or 'it never fires'}): use five "
                "fields (minute hour day month weekday), or six with seconds first"
            ) from None
        if self.catch_up is not True and self.catch_up is not False:
            _int(self.catch_up, "catch_up (True, False or a number of ticks)", 1, 100_000)
        if self.tick_arg is not None:
            if not isinstance(self.tick_arg, str) or not self.tick_arg.isidentifier():
                raise ConfigurationError(f"tick_arg must be a name or None, not {self.tick_arg!r}")
            if self.tick_arg in self.kwargs:
                raise ConfigurationError(
                    f"kwargs may not hold {self.tick_arg!r}: the tick goes there"
                )
        _dumps([list(self.args), dict(self.kwargs)], "schedule's arguments")

    _zone: tzinfo = field(init=False, repr=False, default=UTC)

    @property
    def limit(self) -> int:
        """The most missed ticks enqueued at once."""
        if self.catch_up is True:
            return MAX_CATCH_UP
        return 1 if self.catch_up is False else int(self.catch_up)

    def _iter(self, start: datetime, reverse: bool = False) -> Any:
        return _cron_module().CronSim(self.cron, start.astimezone(self._zone), reverse=reverse)

    def next_tick(self, after: datetime) -> datetime:
        """The first tick strictly after *after*, in UTC."""
        return utc(next(self._iter(after))) or after

    def due(self, after: datetime, now: datetime) -> tuple[list[datetime], bool]:
        """The ticks in (*after*, *now*] (UTC), at most the newest :attr:`limit`; and
        whether older ones were left out."""
        limit = self.limit
        # Seek backwards to the (limit+1)-th newest tick, then list forwards from it:
        # forward iteration is the canonical one (DST rules), the backward one only seeks.
        probe = now.replace(microsecond=max(1, now.microsecond))  # a tick at now counts
        backwards = (utc(t) or now for t in self._iter(probe, reverse=True))
        older = list(
            itertools.islice(itertools.takewhile(lambda t: t > after, backwards), limit + 1)
        )
        start = older[-1] if len(older) == limit + 1 else after
        ticks: list[datetime] = []
        for t in self._iter(start):
            tick = utc(t)
            if tick is None or tick > now:
                break
            ticks.append(tick)
        left_out = len(older) == limit + 1 or len(ticks) > limit
        return ticks[-limit:], left_out

    def payload(self, tick: datetime) -> dict[str, Any]:
        local = tick.astimezone(self._zone)
        return {
            "task": self.task,
            "args": list(self.args),
            "kwargs": dict(self.kwargs),
            "periodic": {
                "schedule": self.name,
                "tick": local.isoformat(),
                "timezone": self.timezone,
                "arg": self.tick_arg,
            },
        }


def tick_kwargs(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword argument a periodic job's task gets: its tick, an aware datetime in the
    schedule's zone ({} for other jobs)."""
    info = payload.get("periodic")
    if not isinstance(info, dict):
        return {}
    arg, tick = info.get("arg"), info.get("tick")
    if not isinstance(arg, str) or not isinstance(tick, str):
        return {}
    when = datetime.fromisoformat(tick)
    zone = info.get("timezone")
    if isinstance(zone, str):
        with suppress(ConfigurationError):  # a zone this machine lacks: keep the offset
            when = when.astimezone(_zone(zone))
    return {arg: when}


class Scheduler:
    """Enqueues the due ticks of *schedules* on *queue*, in a thread of its own.

    Each tick is one transaction: the ledger row (its primary key decides which scheduler
    enqueues) and the job commit together. Locks: the ledger row, or the wait for another
    scheduler's insert of the same row. Database errors are logged and retried; the
    thread never raises into the worker. ``counts["scheduled"]`` adds up the jobs this
    scheduler enqueued (a worker's ``counts``).
    """

    def __init__(
        self,
        queue: Queue,
        schedules: Sequence[Schedule],
        *,
        counts: dict[str, int] | None = None,
    ) -> None:
        names = [s.name for s in schedules]
        if not all(isinstance(s, Schedule) for s in schedules):
            raise ConfigurationError("periodic must be a list of skiplock Schedule objects")
        if len(set(names)) != len(names):
            raise ConfigurationError(f"two schedules share a name: {sorted(names)!r:.200}")
        self.queue = queue
        self.schedules = list(schedules)
        self.counts = {} if counts is None else counts
        self.counts.setdefault("scheduled", 0)
        self._started: datetime | None = None

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run the schedules in a daemon thread until *stop* is set; returns the thread."""
        thread = threading.Thread(
            target=self._serve, args=(stop,), name="skiplock-periodic", daemon=True
        )
        thread.start()
        return thread

    def _serve(self, stop: threading.Event) -> None:
        pause = 1.0
        while not stop.is_set():
            try:
                wait = self.run_once()
                pause = 1.0
            except SkiplockError as exc:
                log.warning("periodic jobs: %s; trying again in %.0fs", exc, pause)
                wait, pause = pause, min(pause * 2, _MAX_SLEEP)
            stop.wait(wait)

    def now(self) -> datetime:
        """The database's clock."""
        q = self.queue
        row = q._run("reading the clock", None, q.dialect.fetch_one_op, "clock")
        found = utc((row or {}).get("now"))
        assert found is not None
        return found

    def run_once(self) -> float:
        """Enqueue every tick due now; return the seconds until the next one (at most 30)."""
        now = self.now()
        if self._started is None:
            self._started = now
        soonest = now + timedelta(seconds=_MAX_SLEEP)
        for s in self.schedules:
            last = self.last_tick(s) or self._started
            ticks, left_out = s.due(last, now)
            if left_out:
                log.warning(
                    "schedule %r missed more than %d ticks: enqueueing the newest %d",
                    s.name,
                    s.limit,
                    len(ticks),
                )
            for tick in ticks:
                self.enqueue_tick(s, tick)
            soonest = min(soonest, s.next_tick(max(now, *ticks) if ticks else now))
        return max(0.01, (soonest - now).total_seconds() + 0.01)

    def last_tick(self, s: Schedule) -> datetime | None:
        """The newest tick of *s* in the ledger (None: the schedule never ran)."""
        q, params = self.queue, {"schedule": s.name}
        row = q._run("reading ticks", None, q.dialect.fetch_one_op, "tick_last", params)
        return utc((row or {}).get("tick"))

    def enqueue_tick(self, s: Schedule, tick: datetime) -> int | None:
        """Enqueue *tick*'s job unless some scheduler already did; the job id, or None."""
        q = self.queue
        key = {"schedule": s.name, "tick": tick}

        options = EnqueueOptions.check(
            queue=s.queue, priority=s.priority, max_attempts=s.max_attempts
        )
        params = options.params()
        params["payload"] = _dumps(s.payload(tick), "payload")
        params["idempotency_key"] = str(uuid.uuid4())
        prune = {"schedule": s.name, "before": tick - _HISTORY}
        doing = f"enqueueing tick {tick.isoformat()} of {s.name!r}"
        job_id = q._run(doing, None, q.dialect.enqueue_tick, key, params, prune)
        if job_id is not None:
            self.counts["scheduled"] += 1  # only this thread writes this key
            log.info("enqueued job %d for tick %s of %r", job_id, tick.isoformat(), s.name)
        return job_id
