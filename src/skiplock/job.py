"""The job record and what the queue reads: :class:`Job`, :class:`Claimed`, :class:`Stats`
and the dashboard's records."""

from __future__ import annotations

from ._core.job import STATUSES, Claimed, Job, Stats, utc
from ._core.read_models import QueueOverview, TickInfo, WorkerInfo

__all__ = [
    "STATUSES",
    "Claimed",
    "Job",
    "QueueOverview",
    "Stats",
    "TickInfo",
    "WorkerInfo",
    "utc",
]
