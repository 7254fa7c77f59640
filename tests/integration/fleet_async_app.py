"""An App with an ``async def`` task, for tests/integration/test_fleet.py: each process of
its fleet runs a :class:`skiplock.AsyncWorker`. Table from ``FLEET_TABLE``, URL from
``SKIPLOCK_URL``. ``hang`` is a sync task, which that worker runs in a thread."""

from __future__ import annotations

import asyncio
import os
import time

import skiplock

app = skiplock.App(os.environ["SKIPLOCK_URL"], table=os.environ["FLEET_TABLE"])


@app.task(name="pid")
async def pid(sleep: float = 0.01) -> int:
    await asyncio.sleep(sleep)
    return os.getpid()


@app.task(name="hang", timeout=1, max_attempts=2)
def hang() -> None:
    time.sleep(3600)  # a thread no one can stop: in a fleet, its process ends
