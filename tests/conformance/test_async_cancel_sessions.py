"""Cancelled ``AsyncQueue`` calls, counted on the server: the sessions of a database that
only the queue under test uses (``pg_stat_activity``, the processlist), never more than
its pool's bound (and, on PostgreSQL, one listener per wait), and none once
``aq.close()`` has returned, without a garbage collection (it is switched off here: a
connection dropped without being closed would otherwise close when collected, at a time
no one chooses).

A call is cancelled after every number of loop turns from 0 until it completes before
its cancel, on a new queue each time (so the cancel lands in each await of opening the
first connection, reading the server's version, the schema check, the statement and
COMMIT); then ``aq.wait`` calls under ``asyncio.wait_for``, as an application writes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import time
from collections.abc import Iterator

import pytest
from conftest import new_database

import skiplock

MAX_SIZE = 2


@pytest.fixture
def own_database(url: str) -> Iterator[str]:
    """The URL of a database of this test's own, whose sessions are the queue's only."""
    if not url.startswith(("postgresql", "mysql", "mariadb")):
        pytest.skip("sessions are counted on PostgreSQL, MySQL and MariaDB")
    with new_database(url, "sk_sessions") as found:
        yield found


@pytest.fixture
def no_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def sessions(queue: skiplock.Queue, database_url: str) -> int:
    """The sessions the server holds on *database_url*'s database, read over *queue*'s
    connection (another database)."""
    name = database_url.rsplit("/", 1)[1].split("?", 1)[0]
    if database_url.startswith("postgresql"):
        sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = %(name)s"
    else:
        sql = "SELECT COUNT(*) FROM information_schema.processlist WHERE db = %(name)s"
    with queue.transaction() as tx:
        rows = tx.fetchall(sql, {"name": name})
    return int(rows[0][0])


async def _settle(queue: skiplock.Queue, database_url: str, most: int) -> int:
    """The session count once sessions being closed are gone (an aborted socket is closed
    a loop turn later, and the server sees it a moment after): at most *most*, or the
    last count seen after ten seconds. The loop runs meanwhile, as an application's does."""
    end = time.monotonic() + 10
    while (n := await asyncio.to_thread(sessions, queue, database_url)) > most:
        if time.monotonic() > end:
            break
        await asyncio.sleep(0.05)
    return n


def _prepare(database_url: str) -> int:
    q = skiplock.connect(database_url)
    try:
        q.install()
        return q.enqueue({"never": "run"})  # pending for ever: a wait never ends by itself
    finally:
        q.close()


async def _cancel_after(turns: int, call: asyncio.Task[object]) -> bool:
    """Cancel *call* after *turns* turns of the loop; True if it was cancelled (False:
    it had ended)."""
    for _ in range(turns):
        if call.done():
            break
        await asyncio.sleep(0)
    cancelled = call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    return cancelled


async def _turns_taken(call: asyncio.Future[object]) -> int:
    """How many turns of the loop *call* takes to end, uncancelled."""
    turns = 0
    while not call.done():
        await asyncio.sleep(0)
        turns += 1
    call.result()
    return turns


def test_a_call_cancelled_at_each_await_leaves_no_session(
    queue: skiplock.Queue, own_database: str, no_gc: None
) -> None:
    job_id = _prepare(own_database)

    async def round_(turns: int | None) -> tuple[bool, int]:
        """One call on a new queue (its first connection opened, the server's version
        read, the schema checked, the statement, COMMIT), cancelled after *turns* turns
        (None: not cancelled; how many turns it took); then the queue closed and the
        server's sessions counted."""
        aq = skiplock.connect_async(own_database, max_size=MAX_SIZE, pool_timeout=5)
        try:
            call = asyncio.ensure_future(aq.get(job_id))
            if turns is None:
                return False, await _turns_taken(call)
            cancelled = await _cancel_after(turns, call)
            s = aq.pool_stats()
            assert (s.in_use, s.waiting) == (0, 0) and s.open <= 1, (turns, s)
        finally:
            await aq.close()
        # closed means closed: nothing left for the server to count
        assert await _settle(queue, own_database, 0) == 0, f"cancelled after {turns} turns"
        return cancelled, turns

    async def main() -> int:
        _, whole = await round_(None)
        # every turn of the first 40 (where the awaits that need no I/O are), then about
        # forty more over the rest (each I/O wait spans many turns), and past the end
        dense = min(whole, 40)
        sweep = sorted({*range(dense), *range(dense, 2 * whole + 2, max(1, whole // 20))})
        return sum([(await round_(turns))[0] for turns in sweep])

    assert asyncio.run(main()) > 3  # the sweep cancelled the call in its awaits


def test_waits_cancelled_by_wait_for_hold_the_pools_bound_on_the_server(
    queue: skiplock.Queue, own_database: str, no_gc: None
) -> None:
    job_id = _prepare(own_database)
    waits = 3
    # on PostgreSQL each wait listens on a connection of its own, outside the pool
    bound = MAX_SIZE + (waits if own_database.startswith("postgresql") else 0)
    rng = random.Random(7)

    async def main() -> None:
        aq = skiplock.connect_async(own_database, max_size=MAX_SIZE, pool_timeout=5)
        try:
            for round_ in range(25):
                calls = [
                    asyncio.wait_for(aq.wait(job_id, timeout=30), rng.uniform(0, 0.06))
                    for _ in range(waits)
                ]
                results = await asyncio.gather(*calls, return_exceptions=True)
                timed_out = (asyncio.TimeoutError, TimeoutError)
                assert all(isinstance(r, timed_out) for r in results), results
                s = aq.pool_stats()
                assert (s.in_use, s.waiting) == (0, 0) and s.open <= MAX_SIZE, s
                n = await _settle(queue, own_database, bound)
                assert n <= bound, f"round {round_}: {n} sessions for a bound of {bound}"
        finally:
            await aq.close()
        assert await _settle(queue, own_database, 0) == 0, "sessions left after aq.close()"

    asyncio.run(main())
