"""An App with an ``async def`` task, for tests/integration/test_fleet.py: each process of
its fleet runs a :class:`skiplock.AsyncWorker`. Table from ``FLEET_TABLE``, URL from
``SKIPLOCK_URL``."""

from __future__ import annotations

import asyncio
import os

import skiplock

app = skiplock.App(os.environ["SKIPLOCK_URL"], table=os.environ["FLEET_TABLE"])


@app.task(name="pid")
async def pid(sleep: float = 0.01) -> int:
    await asyncio.sleep(sleep)
    return os.getpid()
