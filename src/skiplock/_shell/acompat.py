"""The primitives that differ between the asyncio source modules and the sync modules
generated from them (``scripts/async_to_sync``; psycopg's ``_acompat.py`` is the model).

The source names the asyncio one (``AEvent``, ``asleep``, ``wait_event_async``); the
generator renames it to its sync twin here (``Event``, ``sleep``, ``wait_event``). Each
pair does the same thing, one for the tasks of one event loop, one for threads.
"""

from __future__ import annotations

import asyncio
import threading
import time

__all__ = ["AEvent", "Event", "asleep", "sleep", "wait_event", "wait_event_async"]

Event = threading.Event
AEvent = asyncio.Event

sleep = time.sleep
asleep = asyncio.sleep


def wait_event(event: threading.Event, timeout: float) -> bool:
    """Wait up to *timeout* seconds for *event*; True if it was set."""
    return event.wait(timeout)


async def wait_event_async(event: asyncio.Event, timeout: float) -> bool:
    """Wait up to *timeout* seconds for *event*; True if it was set. A cancellation of
    the waiting task is raised as it comes, even when the event is set in the same turn
    of the loop: ``asyncio.wait_for`` before Python 3.12 then returns the result and the
    cancellation is lost (the task runs on past an ``asyncio.timeout()``), so it is not
    used here."""
    if event.is_set():
        return True
    waiting = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((waiting,), timeout=timeout)
    finally:
        waiting.cancel()
    return event.is_set()
