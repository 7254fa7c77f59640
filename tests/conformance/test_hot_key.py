"""A hot key (issue 23): a key's jobs behind its first pending one wait out of the claim
index (``key_wait``), so a claim reads a bounded number of rows however many jobs the key
holds, and the flag never keeps a key's head from running: enqueues racing claims, a cancel
of the head, a ``retry_failed`` of an older job (docs/sql.md, "Per-key order")."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

import skiplock
import skiplock.maintenance

from .conftest import as_release, wait_until
from .test_key_concurrency import most_at_once
from .test_migrations import FIXTURES, v1_statements

HOT = 5000


def _flagged_dialect(queue: skiplock.Queue) -> None:
    if not queue.dialect.caps.key_order:
        pytest.skip(f"{queue.dialect.name}: a hot key's jobs are not flagged on this dialect")


def rows_read(queue: skiplock.Queue, conn: Any) -> int:
    """Rows this connection has read so far: on PostgreSQL its transaction's index scans,
    rows fetched through them and rows read by table scans of *queue*'s table; on MySQL and
    MariaDB its session's handler reads (every table)."""
    cur = conn.cursor()
    try:
        if queue.dialect.name == "postgresql":
            t = queue.dialect.table
            name = ".".join(f'"{p}"' for p in (t.schema, t.name) if p is not None)
            cur.execute(
                "SELECT COALESCE(idx_scan, 0) + COALESCE(idx_tup_fetch, 0) + seq_tup_read"
                " FROM pg_stat_xact_user_tables WHERE relid = %s::regclass",
                (name,),
            )
            return int(cur.fetchone()[0])
        cur.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
        counts = {str(name): int(value) for name, value in cur.fetchall()}
        return sum(v for k, v in counts.items() if k != "Handler_read_rnd_deleted")
    finally:
        cur.close()


def test_a_claim_reads_a_bounded_number_of_rows_whatever_the_keys_length(
    queue: skiplock.Queue,
) -> None:
    """The property the flag exists for, counted, not timed: with 5,000 jobs of one key, a
    claim (the key's head running, so it gets nothing of the key) reads a few rows. Before
    the flag it read every job of the key (5,000 claim-index entries and as many look-ups)."""
    _flagged_dialect(queue)
    queue.enqueue_many([{"n": i} for i in range(HOT)], key="hot")
    [head] = queue.claim(limit=10)
    free = queue.enqueue({"free": 1})
    with queue.transaction() as tx:
        before = rows_read(queue, tx.connection)
        got = queue.claim(limit=10, conn=tx.connection)
        read = rows_read(queue, tx.connection) - before
    assert [j.id for j in got] == [free]
    assert read < 100, f"one claim read {read} rows for a key of {HOT} jobs"
    queue.complete(head)
    with queue.transaction() as tx:
        before = rows_read(queue, tx.connection)
        [nxt] = queue.claim(limit=10, conn=tx.connection)
        read = rows_read(queue, tx.connection) - before
    assert nxt.id == head.id + 1
    assert read < 100, f"the claim of the next job read {read} rows"


def test_a_hot_key_drains_with_n_respected(queue: skiplock.Queue) -> None:
    """600 jobs of one key with key_concurrency=2 and keyless jobs, four claimers: each
    job starts once and never more than 2 of the key hold a claim at once (the order of
    starts: test_enqueues_racing_claims_of_the_head_never_leave_a_job_waiting, N = 1)."""
    _flagged_dialect(queue)  # elsewhere each claim reads the whole key: minutes, not seconds
    n = 2
    ids = queue.enqueue_many([{"n": i} for i in range(600)], key="hot", key_concurrency=n)
    queue.enqueue_many([{"free": i} for i in range(200)])
    held: list[tuple[float, float]] = []
    started: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                jobs = queue.claim(limit=20, lease=120)
                began = time.monotonic()
                if not jobs:
                    s = queue.stats()
                    if s.pending + s.running == 0:
                        return
                    continue
                with lock:
                    started.extend(j.id for j in jobs if j.key == "hot")
                ended = time.monotonic()  # before the completion commits: inside the held time
                with lock:
                    held.extend((began, ended) for j in jobs if j.key == "hot")
                queue.complete_many(jobs)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(150)
    assert not errors, errors
    assert sorted(started) == ids  # each once
    assert most_at_once(held) <= n
    assert queue.stats().done == 800


def test_enqueues_racing_claims_of_the_head_never_leave_a_job_waiting(
    queue: skiplock.Queue,
) -> None:
    """Enqueuers of one key race claimers that take its head: every job runs, one at a time,
    in enqueue order, and the key drains once the enqueues stop, with the repair off (a job
    left flagged behind a head already taken would wait for ever)."""
    enqueued: list[int] = []
    started: list[int] = []
    running: dict[str, int] = defaultdict(int)
    worst = [0]
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def enqueuer(k: int) -> None:
        try:
            for i in range(60):
                job_id = queue.enqueue({"k": k, "i": i}, key="race")
                with lock:
                    enqueued.append(job_id)
        except BaseException as exc:
            errors.append(exc)

    def claimer() -> None:
        try:
            while not stop.is_set():
                jobs = queue.claim(limit=5, lease=60)
                with lock:
                    for j in jobs:
                        started.append(j.id)
                        running[str(j.key)] += 1
                        worst[0] = max(worst[0], running[str(j.key)])
                for j in jobs:
                    with lock:
                        running[str(j.key)] -= 1
                    queue.complete(j)
        except BaseException as exc:
            errors.append(exc)

    # The safety net off (key_repair, every 10 s): only the claims' own clearing drains it.
    queue.dialect.state.repair_due = float("inf")
    claimers = [threading.Thread(target=claimer) for _ in range(3)]
    enqueuers = [threading.Thread(target=enqueuer, args=(k,)) for k in range(3)]
    for t in claimers + enqueuers:
        t.start()
    for t in enqueuers:
        t.join(120)
    try:
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and len(started) < len(enqueued):
            time.sleep(0.01)
    finally:
        stop.set()
        for t in claimers:
            t.join(60)
    assert not errors, errors
    assert len(enqueued) == 180
    assert started == sorted(enqueued), "not every job started, or not in enqueue order"
    assert worst[0] == 1


def test_a_cancel_of_the_head_or_of_a_waiting_job_moves_the_key_on(
    queue: skiplock.Queue,
) -> None:
    a, b, c, d = (queue.enqueue({"n": n}, key="k") for n in range(4))
    assert queue.cancel(a) == "cancelled"  # the head: b is the head now
    [jb] = queue.claim(limit=10)
    assert jb.id == b
    assert queue.cancel(c) == "cancelled"  # waiting behind b: nothing to clear
    queue.complete(jb)
    [jd] = queue.claim(limit=10)
    assert jd.id == d
    queue.complete(jd)
    assert queue.claim(limit=10) == []


def test_retry_failed_of_an_older_job_makes_it_the_head(queue: skiplock.Queue) -> None:
    a = queue.enqueue({"n": 0}, key="k", max_attempts=1)
    [ja] = queue.claim()
    queue.fail(ja, "boom", final=True)
    b, c = queue.enqueue({"n": 1}, key="k"), queue.enqueue({"n": 2}, key="k")
    assert skiplock.maintenance.retry_failed(queue, ids=[a]) == 1
    order = []
    for _ in range(3):
        [j] = queue.claim(limit=10)
        assert queue.claim(limit=10) == []  # one at a time
        order.append(j.id)
        queue.complete(j)
    assert order == [a, b, c]


def _this_and_the_previous_release(
    make_queue: Callable[..., skiplock.Queue],
) -> tuple[skiplock.Queue, skiplock.Queue]:
    """A queue of this release, whose worker has polled once (its repair ran), and one with
    schema version 7's statements: a worker of the previous release, still running."""
    new = make_queue()
    _flagged_dialect(new)
    old = make_queue()
    as_release(old, v1_statements(old, FIXTURES.parent / "schema_v7"))
    old._schema_ok = True
    assert new.claim() == []
    return new, old


def test_the_previous_releases_claims_leave_a_flag_the_repair_clears(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    """Through an online upgrade the previous release's workers claim a key's head without
    clearing its next job's flag; a worker of this release gives the key its head back
    within key_repair's period (10 s) and runs the rest in order."""
    new, old = _this_and_the_previous_release(make_queue)
    a, b, c = (new.enqueue({"n": n}, key="k") for n in range(3))
    [ja] = old.claim()
    assert ja.id == a
    old.complete(ja)
    began = time.monotonic()
    assert new.claim() == []  # b still waits: the old claim did not clear its flag
    got: list[skiplock.Job] = []
    wait_until(lambda: got.extend(new.claim()) or got, 15, "the repair to give the key b")
    assert [j.id for j in got] == [b]
    assert time.monotonic() - began < 12
    new.complete(got[0])
    [jc] = new.claim()
    assert jc.id == c


def test_a_flagged_job_the_previous_release_claimed_is_claimed_again_when_its_lease_ends(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    """The previous release's claims ignore the flag: once a key's head is done, one of its
    workers may take the next job with its flag still set, then die. That job's lease ends
    and a worker of this release claims it again (on MySQL/MariaDB the flag keeps a job out
    of the claim index, running or not: the repair clears it on running jobs too)."""
    new, old = _this_and_the_previous_release(make_queue)
    a, b = (new.enqueue({"n": n}, key="k") for n in range(2))
    [ja] = old.claim()
    assert ja.id == a
    old.complete(ja)
    [jb] = old.claim(lease=0.5)  # b, still flagged; its worker dies with it
    assert jb.id == b
    got: list[skiplock.Job] = []
    wait_until(lambda: got.extend(new.claim()) or got, 20, "b's ended lease to be claimed")
    assert [(j.id, j.attempt) for j in got] == [(b, 2)]
    new.complete(got[0])
    assert new.get(b).status == "done"  # type: ignore[union-attr]


def test_a_repair_run_reads_a_bounded_batch_and_the_runs_reach_every_key(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    """The repair (every 10 s per Queue, before a claim) reads at most ``repair_batch``
    keys (PostgreSQL) or index entries (MySQL, MariaDB) a run, from where the previous run
    stopped: with 2,000 jobs waiting under one key and 200 keys with a job waiting, one
    run reads a few rows (before: every waiting job's entry, or a step per key), and the
    keys whose head the previous release's claims left flagged, sorted after all of
    those, get it back within a round of runs."""
    new, old = _this_and_the_previous_release(make_queue)
    new.enqueue_many([{"n": i} for i in range(2000)], key="a-hot")
    for i in range(200):
        new.enqueue_many([{"n": 0}, {"n": 1}], key=f"b-{i:03}")
    stale = []
    for name in ("c-1", "c-2", "c-3", "c-4", "c-5"):
        new.enqueue({"n": 0}, key=name, queue="stale")
        stale.append(new.enqueue({"n": 1}, key=name, queue="stale"))
    heads = old.claim(queues=["stale"], limit=10)  # the previous release: no flag cleared
    assert len(heads) == 5
    for job in heads:
        old.complete(job)
    if new.dialect.name == "postgresql":  # its statistics, as autovacuum gathers them
        with new.transaction() as tx:
            tx.execute(f"ANALYZE {new.dialect.table}")
    new.dialect.state.repair_batch = 3
    got: list[skiplock.Job] = []
    runs = 0
    while len(got) < 5 and runs < 150:
        runs += 1
        new.dialect.state.repair_due = 0.0
        with new.transaction() as tx:
            before = rows_read(new, tx.connection)
            got.extend(new.claim(queues=["stale"], limit=10, conn=tx.connection))
            read = rows_read(new, tx.connection) - before
        assert read < 150, f"run {runs} of the repair read {read} rows"
    assert sorted(j.id for j in got) == stale, f"after {runs} runs"
    # a round: the hot key is one step, the 200 keys 67 runs of 3, then the five
    assert runs <= 80
