"""Periodic jobs: :class:`Schedule`, a task's calls on a cron schedule (docs/worker.md,
"Periodic jobs"). No I/O: a worker's scheduler enqueues each tick once."""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from typing import Any

from ._core.checks import dumps as _dumps
from ._core.checks import integer as _int
from ._core.checks import text as _text
from ._core.job import utc
from .errors import ConfigurationError

__all__ = ["MAX_CATCH_UP", "PERIODIC", "Schedule", "tick_kwargs"]

UTC = timezone.utc
#: the most missed ticks ``catch_up=True`` enqueues (the newest ones)
MAX_CATCH_UP = 100
#: the payload key of a scheduled job's tick
PERIODIC = "periodic"


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
    """A task's calls on a cron schedule; ``name`` keys its ticks (one job per name and
    tick). ``catch_up``: how many missed ticks are enqueued (False: the newest, True: up to
    :data:`MAX_CATCH_UP`, N: up to N). The task gets the tick, an aware datetime in
    ``timezone``, as the keyword ``tick_arg`` (None: not passed). Raises
    :class:`~skiplock.ConfigurationError` for a bad cron, timezone or option,
    :class:`~skiplock.PayloadError` for arguments that are not JSON."""

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
        """The ticks in (*after*, *now*] (UTC), the newest :attr:`limit`; and whether older
        ones were left out."""
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
            PERIODIC: {
                "schedule": self.name,
                "tick": local.isoformat(),
                "timezone": self.timezone,
                "arg": self.tick_arg,
            },
        }


def tick_kwargs(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword argument a periodic job's task gets: its tick ({} for other jobs)."""
    info = payload.get(PERIODIC)
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
