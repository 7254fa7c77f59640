"""The job record and queue statistics: :class:`Job` (what a claim returns, and what every
fenced write names), :class:`Claimed` (a claim's list of jobs) and :class:`Stats`.
Defined in the no-I/O core (:mod:`skiplock._core.job`, with how a row becomes one); this
is where users import them from, as ``skiplock.Job`` / ``skiplock.Stats`` too."""

from __future__ import annotations

from ._core.job import STATUSES, Claimed, Job, Stats, utc
from ._core.observe import QueueOverview, TickInfo, WorkerInfo

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
