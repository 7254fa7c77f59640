"""What the dashboard and ``skiplock workers`` read, built from rows. No I/O."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .job import utc

__all__ = ["GONE_AFTER_BEATS", "QueueOverview", "TickInfo", "WorkerInfo", "overviews"]

#: a worker whose row was last refreshed this many of its beats ago is shown gone
GONE_AFTER_BEATS = 3.0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One worker process of the live worker list (``Queue.workers()``); ``gone`` once it
    missed :data:`GONE_AFTER_BEATS` beats (killed, frozen or cut off)."""

    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    in_flight: int
    interval: float
    started_at: datetime | None
    last_seen: datetime | None
    seen_ago: float

    @property
    def gone(self) -> bool:
        return self.seen_ago > GONE_AFTER_BEATS * self.interval

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> WorkerInfo:
        try:
            queues = tuple(str(q) for q in json.loads(row["queues"]))
        except (TypeError, ValueError):
            queues = (str(row["queues"]),)
        return cls(
            id=str(row["id"]),
            host=str(row["host"]),
            pid=int(row["pid"]),
            queues=queues,
            concurrency=int(row["concurrency"]),
            in_flight=int(row["in_flight"]),
            interval=int(row["beat_ms"]) / 1000,
            started_at=utc(row.get("started_at")),
            last_seen=utc(row.get("last_seen")),
            seen_ago=max(0.0, float(row.get("seen_ago") or 0)),
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values (times in ISO 8601)."""
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "queues": list(self.queues),
            "concurrency": self.concurrency,
            "in_flight": self.in_flight,
            "interval": self.interval,
            "started_at": _iso(self.started_at),
            "last_seen": _iso(self.last_seen),
            "seen_ago": round(self.seen_ago, 3),
            "gone": self.gone,
        }


@dataclass(slots=True)
class QueueOverview:
    """One queue's state (``Queue.overview()``), on the database's clock. ``done`` and
    ``failed`` count the last ``window`` seconds; ``capped``: those are lower bounds."""

    queue: str
    pending: int = 0
    scheduled: int = 0
    running: int = 0
    expired: int = 0
    oldest_pending_age: float | None = None
    done: int = 0
    failed: int = 0
    window: float = 600.0
    per_minute: list[int] = field(default_factory=list)
    capped: bool = False
    paused: bool = False

    @property
    def throughput(self) -> float:
        """Jobs done per minute over the window."""
        return self.done / max(1.0, self.window / 60)

    def as_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "pending": self.pending,
            "scheduled": self.scheduled,
            "running": self.running,
            "expired": self.expired,
            "oldest_pending_age": self.oldest_pending_age,
            "done_recent": self.done,
            "failed_recent": self.failed,
            "window_seconds": self.window,
            "done_per_minute": list(self.per_minute),
            "capped": self.capped,
            "paused": self.paused,
        }


def overviews(
    active: Iterable[Mapping[str, Any]],
    recent: Iterable[Mapping[str, Any]],
    window_s: int,
    cap: int,
    paused: Iterable[str] = (),
) -> list[QueueOverview]:
    """The overview of every queue in *active*, *recent* and *paused*, by name."""
    minutes = max(1, -(-window_s // 60))
    found: dict[str, QueueOverview] = {}

    def of(name: Any) -> QueueOverview:
        name = str(name)
        if name not in found:
            found[name] = QueueOverview(name, window=float(window_s), per_minute=[0] * minutes)
        return found[name]

    for row in active:
        o = of(row["queue"])
        age = row.get("oldest_pending_age")
        o.pending = int(row.get("pending") or 0)
        o.scheduled = int(row.get("scheduled") or 0)
        o.running = int(row.get("running") or 0)
        o.expired = int(row.get("expired") or 0)
        o.oldest_pending_age = None if age is None else max(0.0, float(age))
    read = 0
    for row in recent:
        o = of(row["queue"])
        n = int(row["n"])
        read += n
        if row["status"] == "done":
            o.done += n
            minute = min(minutes - 1, max(0, int(row.get("minute") or 0)))
            o.per_minute[minute] += n
        else:
            o.failed += n
    if read >= cap:
        for o in found.values():
            o.capped = True
    for name in paused:
        of(name).paused = True
    return [found[k] for k in sorted(found)]


@dataclass(frozen=True, slots=True)
class TickInfo:
    """A periodic schedule's latest tick and how many ticks its ledger keeps."""

    schedule: str
    last_tick: datetime | None
    ticks: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TickInfo:
        return cls(str(row["schedule"]), utc(row.get("last_tick")), int(row["ticks"]))

    def as_dict(self) -> dict[str, Any]:
        return {"schedule": self.schedule, "last_tick": _iso(self.last_tick), "ticks": self.ticks}


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
