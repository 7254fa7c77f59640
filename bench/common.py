"""Helpers shared by the benchmark scripts: timing, medians, URLs, result rows."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

#: the payload every benchmark job carries (a no-op job with a small JSON body)
PAYLOAD = {"n": 1}


def v1_claim_index(dialect: str, table: str, quote: Callable[[str], str]) -> str:
    """The DDL that adds version 1's claim index back to *table* (PostgreSQL migration
    0016 and MySQL/MariaDB 0017 drop it), to measure what it cost each job: *dialect* is
    ``postgresql`` or another (MySQL, MariaDB), *quote* the dialect's identifier quoting."""
    if dialect == "postgresql":
        return (
            f"CREATE INDEX {quote(table + '_claim_idx')} ON {quote(table)}"
            " (queue, priority, run_at, id) WHERE status IN ('pending', 'running')"
        )
    return (
        f"ALTER TABLE {quote(table)} ADD INDEX {quote(table + '_claim')}"
        " (claimable, queue, priority, run_at, id)"
    )


@dataclass
class Figure:
    """One measurement: a name, its samples, and which code path produced it."""

    system: str
    metric: str
    unit: str
    samples: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def pg_dsn(url: str) -> str:
    """A libpq/asyncpg DSN from a postgresql:// URL (scheme normalised)."""
    parts = urlsplit(url)
    return parts._replace(scheme="postgresql").geturl()


def mysql_kwargs(url: str) -> dict[str, object]:
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        "database": parts.path.lstrip("/"),
    }


def cpu_seconds(pid: int, tid: int | None = None) -> float:
    """User + system CPU seconds of process *pid*, or of its thread *tid*
    (``/proc/<pid>[/task/<tid>]/stat``). OSError when it is gone."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_finished(started: Any, count: Any, n: int, timeout: float, deadline: float) -> int:
    """Wait for *started* (an ``asyncio.Event`` the peer sets when its last job ends) up to
    *timeout*, then poll ``await count()`` every 5 ms until it reaches *n* or *deadline*
    (``time.monotonic()``); the last count."""
    import asyncio
    import contextlib

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(started.wait(), timeout)
    done: int = await count()
    while done < n and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
        done = await count()
    return done


class Window:
    """Wall-clock and process CPU seconds (every thread's) since it was made."""

    def __init__(self) -> None:
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()

    def stop(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall0, time.process_time() - self.cpu0
