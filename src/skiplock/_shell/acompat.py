"""The primitives that differ between an asyncio source module and the sync module generated
from it: ``scripts/async_to_sync`` renames ``AEvent``, ``asleep`` and ``wait_event_async``
to ``Event``, ``sleep`` and ``wait_event``."""

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
    """Wait up to *timeout* seconds for *event*; True if it was set."""
    # not asyncio.wait_for: before Python 3.12 it loses a cancellation that comes in the
    # turn the event is set, and the task runs on past an asyncio.timeout()
    if event.is_set():
        return True
    waiting = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((waiting,), timeout=timeout)
    finally:
        waiting.cancel()
    return event.is_set()
