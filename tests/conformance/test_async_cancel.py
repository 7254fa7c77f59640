"""Calls interrupted anywhere, on every backend: an ``AsyncQueue`` call or ``transaction()``
block whose task is cancelled (a ``KeyboardInterrupt`` on the sync side) gives its pooled
connection back or drops it, never keeps it, and leaves each job in one of the outcomes
docs/async.md lists.

The pool is read through ``pool_stats()``; the jobs and the application's rows through a
sync Queue of the same table (another connection); COMMIT is made slow by a deferred
trigger (PostgreSQL) or by a proxy that holds the server's reply to it (every backend).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

import skiplock
from skiplock import Job

from .proxy import Proxy

#: the pool's bound in these tests: a kept connection shows within a few cancellations
MAX_SIZE = 2
#: the lease of the claims cancelled at random: a claim that committed unseen comes back
LEASE = 2.0
ROUNDS = 25  # three calls each, most of them cancelled: at least ten times max_size
KINDS = ("enqueue", "claim", "complete", "transaction")


def run(main: Callable[[], Awaitable[None]], timeout: float = 120) -> None:
    asyncio.run(asyncio.wait_for(main(), timeout))


def async_queue(
    queue: skiplock.Queue, url: str | None = None, max_size: int = MAX_SIZE
) -> skiplock.AsyncQueue:
    return skiplock.connect_async(
        url or str(queue.url), table=str(queue.table), max_size=max_size, pool_timeout=5
    )


def assert_pool_whole(aq: skiplock.AsyncQueue | skiplock.Queue) -> None:
    s = aq.pool_stats()
    assert (s.in_use, s.waiting) == (0, 0), s
    assert s.open <= MAX_SIZE, s


def all_jobs(queue: skiplock.Queue) -> dict[int, Job]:
    jobs: dict[int, Job] = {}
    before = None
    while page := queue.list_jobs(limit=1000, before_id=before):
        jobs.update((j.id, j) for j in page)
        before = page[-1].id
    return jobs


def side_rows(queue: skiplock.Queue, side_table: str) -> list[tuple[int, str]]:
    with queue.transaction() as tx:
        rows = tx.fetchall(f"SELECT job_id, note FROM {side_table}")
    return [(int(r[0]), str(r[1])) for r in rows]


@dataclass
class Seen:
    """What the calls of the random test returned, or that they were cancelled."""

    enqueued: dict[int, int | None] = field(default_factory=dict)  # marker: id, None: unknown
    in_tx: set[int] = field(default_factory=set)  # markers of transaction blocks
    held: list[Job] = field(default_factory=list)  # claimed by a claim that returned
    done: set[int] = field(default_factory=set)  # completed by a complete that returned
    maybe_done: set[int] = field(default_factory=set)  # a complete was cancelled
    lease_lost: int = 0
    cancelled: int = 0
    returned: int = 0
    errors: list[BaseException] = field(default_factory=list)


async def random_call(
    aq: skiplock.AsyncQueue, kind: str, marker: int, seen: Seen, side_table: str
) -> None:
    """One call; what it returned is written into *seen* (nothing if it is cancelled)."""
    if kind == "complete" and not seen.held:
        kind = "enqueue"
    if kind == "enqueue":
        seen.enqueued[marker] = None
        seen.enqueued[marker] = await aq.enqueue({"n": marker})
    elif kind == "claim":
        seen.held.extend(await aq.claim(limit=2, lease=LEASE))
    elif kind == "complete":
        job = seen.held.pop()
        seen.maybe_done.add(job.id)
        try:
            await aq.complete(job, result=marker)
        except skiplock.LeaseLost:  # held past its lease (a slow round): taken again
            seen.maybe_done.discard(job.id)
            seen.lease_lost += 1
            return
        seen.maybe_done.discard(job.id)
        seen.done.add(job.id)
    else:
        seen.in_tx.add(marker)
        note = f"tx{marker}"
        async with aq.transaction() as tx:
            await tx.execute(
                f"INSERT INTO {side_table} (job_id, note) VALUES (0, %(note)s)", {"note": note}
            )
            job_id = await tx.enqueue({"tx": marker})
            await tx.execute(
                f"UPDATE {side_table} SET job_id = %(id)s WHERE note = %(note)s",
                {"id": job_id, "note": note},
            )


async def cancel_soon(task: asyncio.Task[None], rng: random.Random, call_time: float) -> None:
    """Cancel *task* after a random number of the loop's turns (the first await points in
    turn) or a random delay of up to three times *call_time*, the time one call takes here
    (mid-statement, mid-COMMIT, in the pool's wait; some calls end first)."""
    if rng.random() < 0.3:
        for _ in range(rng.randrange(0, 100)):
            await asyncio.sleep(0)
    else:
        await asyncio.sleep(rng.uniform(0, 3 * call_time))
    task.cancel()


def test_calls_cancelled_at_random_points_keep_no_connection_and_lose_no_job(
    queue: skiplock.Queue, side_table: str
) -> None:
    seed = int(os.environ.get("SKIPLOCK_CANCEL_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    seen = Seen()

    async def main() -> None:
        aq = async_queue(queue)
        try:
            marker = 0
            # none cancelled; the first round opens the connections, the second is timed
            # (a connection's set-up is no part of a call here)
            for _ in range(2):
                start = time.monotonic()
                for kind in ("transaction", "enqueue", "claim", "complete"):
                    marker += 1
                    await random_call(aq, kind, marker, seen, side_table)
            call_time = (time.monotonic() - start) / 4
            # jobs held for the completes, some left pending for the claims
            await aq.enqueue_many([{"ahead": k} for k in range(30)])
            seen.held.extend(await aq.claim(limit=15, lease=LEASE))
            for _ in range(ROUNDS):
                tasks = []
                for kind in rng.choices(KINDS, k=3):
                    marker += 1
                    tasks.append(
                        asyncio.ensure_future(random_call(aq, kind, marker, seen, side_table))
                    )
                cancels = [asyncio.ensure_future(cancel_soon(t, rng, call_time)) for t in tasks]
                for r in await asyncio.gather(*tasks, return_exceptions=True):
                    if isinstance(r, asyncio.CancelledError):
                        seen.cancelled += 1
                    elif isinstance(r, BaseException):
                        seen.errors.append(r)
                    else:
                        seen.returned += 1
                await asyncio.gather(*cancels)
                # after every round: nothing is kept by a call that has ended
                assert aq.pool_stats().in_use == 0, (seed, aq.pool_stats())
            assert not seen.errors, (seed, seen.errors)
            assert seen.cancelled >= MAX_SIZE * 10, (seed, seen.cancelled, seen.returned)
            assert_pool_whole(aq)
            # the queue still answers, within its pool_timeout
            await asyncio.wait_for(aq.enqueue({"after": seed}), 10)
            assert_pool_whole(aq)
        finally:
            await aq.close()

    run(main)
    jobs = all_jobs(queue)
    context = f"seed {seed}: {seen.cancelled} cancelled, {seen.returned} returned"
    by_marker: dict[tuple[str, int], Job] = {}
    for job in jobs.values():
        [(name, value)] = job.payload.items()
        if name in ("after", "ahead"):
            continue
        assert (name, value) not in by_marker, (context, job)  # enqueued once at most
        by_marker[(name, value)] = job
    # every enqueue that returned is there; a cancelled one is there or not, once at most
    for n, job_id in seen.enqueued.items():
        found = by_marker.get(("n", n))
        if job_id is not None:
            assert found is not None and found.id == job_id, (context, n, job_id)
    assert {v for k, v in by_marker if k == "n"} <= set(seen.enqueued), context
    # a transaction block committed its row and its job together, or neither
    rows = side_rows(queue, side_table)
    notes = [note for _, note in rows]
    assert len(notes) == len(set(notes)), (context, rows)
    with_rows = {int(note[2:]): job_id for job_id, note in rows}
    in_tx_jobs = {v: job.id for (k, v), job in by_marker.items() if k == "tx"}
    assert with_rows == in_tx_jobs, (context, with_rows, in_tx_jobs)
    assert set(with_rows) <= seen.in_tx, context
    # a complete that returned is done; a cancelled one is done or still running
    for job_id in seen.done:
        assert jobs[job_id].status == "done", (context, jobs[job_id])
    for job_id in seen.maybe_done:
        assert jobs[job_id].status in ("done", "running"), (context, jobs[job_id])
    assert {j.status for j in jobs.values()} <= {"pending", "running", "done"}, context
    # a claim cancelled after its COMMIT left its job running until the lease ends: then
    # the job is claimed again, and every job can be drained
    time.sleep(LEASE + 0.2)

    async def drain() -> None:
        aq = async_queue(queue)
        try:
            while claimed := await aq.claim(limit=100, lease=30):
                await aq.complete_many(claimed)
            assert_pool_whole(aq)
        finally:
            await aq.close()

    run(drain)
    after = all_jobs(queue)
    assert set(after) == set(jobs), context
    assert {j.status for j in after.values()} == {"done"}, context


def test_a_task_cancelled_in_the_turn_it_is_handed_a_connection_is_cancelled(
    queue: skiplock.Queue,
) -> None:
    """The cancellation is not lost (``asyncio.wait_for`` before Python 3.12 returned the
    result instead), and the connection handed over goes back to the pool."""

    async def main() -> None:
        aq = async_queue(queue, max_size=1)
        try:
            await aq.get(1)
            async with aq.transaction():
                waiting = asyncio.ensure_future(aq.get(1))  # the only connection is here
                end = time.monotonic() + 10
                while aq.pool_stats().waiting != 1:
                    assert time.monotonic() < end, "the second call did not wait"
                    await asyncio.sleep(0.01)
            # the block's COMMIT handed its connection to the waiting call, in this turn
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            s = aq.pool_stats()
            assert (s.in_use, s.idle, s.waiting) == (0, 1, 0), s  # returned, not kept
            await asyncio.wait_for(aq.get(1), 10)
        finally:
            await aq.close()

    run(main)


# -- a COMMIT cancelled while it runs --------------------------------------------------------


@contextmanager
def slow_commit_trigger(queue: skiplock.Queue, side_table: str) -> Iterator[None]:
    """PostgreSQL: a deferred constraint trigger on the side table that sleeps 0.5 s, so a
    transaction that wrote a side row spends that long in COMMIT."""
    fn = queue.dialect.quote(f"{queue.table.name}_slow")
    with queue.transaction() as tx:
        tx.execute(
            f"CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(0.5); RETURN NULL; END $$"
        )
        tx.execute(
            f"CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON {side_table} "
            f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {fn}()"
        )
    try:
        yield
    finally:
        with queue.transaction() as tx:
            tx.execute(f"DROP TRIGGER IF EXISTS slow_commit ON {side_table}")
            tx.execute(f"DROP FUNCTION IF EXISTS {fn}()")


def in_commit(queue: skiplock.Queue, pid: int) -> bool:
    """PostgreSQL: session *pid* is running its COMMIT now."""
    with queue.transaction() as tx:
        row = tx.fetchone(
            "SELECT state, query FROM pg_stat_activity WHERE pid = %(pid)s", {"pid": pid}
        )
    return row is not None and row[0] == "active" and str(row[1]).upper().startswith("COMMIT")


def committed_together(queue: skiplock.Queue, side_table: str) -> bool:
    """The block's side row and job: both committed (True) or neither (False)."""
    rows = side_rows(queue, side_table)
    jobs = all_jobs(queue)
    assert len(rows) == len(jobs) <= 1, (rows, jobs)
    if rows:
        assert rows[0][0] in jobs, (rows, jobs)
    return bool(rows)


@pytest.mark.parametrize("slow", ["trigger", "proxy"])
def test_a_block_cancelled_in_its_commit_drops_its_connection(
    queue: skiplock.Queue, side_table: str, url: str, slow: str
) -> None:
    if slow == "trigger" and queue.dialect.name != "postgresql":
        pytest.skip("a deferred constraint trigger (a slow COMMIT) is PostgreSQL's")
    proxy = Proxy(url) if slow == "proxy" else None
    where: dict[str, Any] = {}

    async def block(aq: skiplock.AsyncQueue) -> None:
        async with aq.transaction() as tx:
            row = await tx.fetchone(queue.dialect.sql["session_id"])
            assert row is not None
            where["pid"] = int(row[0])
            await tx.execute(f"INSERT INTO {side_table} (job_id, note) VALUES (0, 'c')")
            job_id = await tx.enqueue({"commit": 1})
            await tx.execute(
                f"UPDATE {side_table} SET job_id = %(id)s WHERE note = 'c'", {"id": job_id}
            )
            if proxy is not None:
                # the COMMIT's reply (a statement may come before it: see transaction())
                proxy.hold_replies(after=b"COMMIT")

    async def main() -> None:
        through = None
        if proxy is not None:  # in plain text, so that the proxy can see the COMMIT
            mysql = queue.dialect.name == "mysql"
            through = proxy.url + ("?ssl_disabled=true" if mysql else "")
        aq = async_queue(queue, through)
        try:
            await aq.get(1)  # the schema checked, one connection open and idle
            task = asyncio.ensure_future(block(aq))
            end = time.monotonic() + 10
            while True:  # until the block is in its COMMIT
                assert time.monotonic() < end and not task.done(), "the COMMIT was not seen"
                await asyncio.sleep(0.01)
                if proxy is not None:
                    if proxy.held:  # the server has answered; the client waits for it
                        break
                elif "pid" in where and await asyncio.to_thread(in_commit, queue, where["pid"]):
                    break
            task.cancel()
            if proxy is not None:
                await asyncio.sleep(0.05)
                proxy.release_replies()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert_pool_whole(aq)
            assert aq.pool_stats().idle == 0  # dropped, not returned
            # the queue still answers, on a new connection
            await asyncio.wait_for(aq.stats(), 10)
            assert_pool_whole(aq)
        finally:
            await aq.close()

    try:
        if slow == "trigger":
            with slow_commit_trigger(queue, side_table):
                run(main)
        else:
            run(main)
    finally:
        if proxy is not None:
            proxy.close()
    # committed or not, but the row and the job together. The proxy held the reply of a
    # COMMIT the server had run: committed. psycopg cancels the statement on the server
    # before it raises CancelledError: the trigger's sleep fails, and the COMMIT with it.
    assert committed_together(queue, side_table) == (slow == "proxy")


def test_a_sync_block_interrupted_in_its_commit_drops_its_connection(
    queue: skiplock.Queue, side_table: str, url: str
) -> None:
    """The sync Queue's twin: ``KeyboardInterrupt`` (SIGINT) while COMMIT runs."""
    if queue.dialect.name != "postgresql":
        pytest.skip("a deferred constraint trigger (a slow COMMIT) is PostgreSQL's")
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("SIGINT interrupts the main thread only")
    q = skiplock.connect(url, table=str(queue.table), max_size=MAX_SIZE, pool_timeout=5)
    pid: list[int] = []

    def interrupt_in_commit() -> None:
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if pid and in_commit(queue, pid[0]):
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
                return
            time.sleep(0.01)

    armed = True

    def on_sigint(signum: int, frame: Any) -> None:
        if armed:  # a signal that came late is dropped, not raised in pytest's code
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        with slow_commit_trigger(queue, side_table):
            q.get(1)
            watcher = threading.Thread(target=interrupt_in_commit)
            watcher.start()
            try:
                with pytest.raises(KeyboardInterrupt), q.transaction() as tx:
                    row = tx.fetchone(q.dialect.sql["session_id"])
                    assert row is not None
                    tx.execute(f"INSERT INTO {side_table} (job_id, note) VALUES (0, 'c')")
                    pid.append(int(row[0]))
            finally:
                armed = False
                watcher.join()
            assert_pool_whole(q)
            assert q.pool_stats().idle == 0  # dropped, not returned
            q.stats()  # the queue still answers, on a new connection
            assert_pool_whole(q)
    finally:
        signal.signal(signal.SIGINT, previous)
        q.close()
    assert side_rows(queue, side_table) == []  # psycopg cancelled the COMMIT on the server


def test_a_call_run_in_a_thread_is_closed_only_after_its_cancelled_statement(
    queue: skiplock.Queue,
) -> None:
    """SQL Server's AsyncQueue runs the sync driver in threads (``ThreadAdapter``): a
    cancelled call's thread goes on with its statement, and the close that drops the
    connection waits for it instead of running beside it. (No SQL Server here: the same
    adapter over this backend's sync driver.)"""
    from skiplock._core.sql import ROWS, Statement
    from skiplock.drivers.base_async import ThreadAdapter

    sleep = "pg_sleep" if queue.dialect.name == "postgresql" else "SLEEP"
    conn = queue.connection()
    sync = queue.dialect.adapter(conn)
    events: list[str] = []
    run_statement = sync.execute

    def execute(request: Any) -> Any:
        try:
            return run_statement(request)
        finally:
            events.append("statement ended")

    class Closing:  # the connection as the adapter's close sees it
        def close(self) -> None:
            events.append("closed")
            conn.close()

    sync.execute = execute  # type: ignore[method-assign]
    own = ThreadAdapter(sync)
    own.connection = Closing()

    async def main() -> None:
        task = asyncio.ensure_future(own.execute(Statement(f"SELECT {sleep}(0.3)", None, ROWS)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await own.close()

    try:
        run(main)
    finally:
        conn.close()
    assert events == ["statement ended", "closed"]
