"""``key_concurrency=N``: at most N jobs of a key run at once across every worker, and a
job starts only once every earlier job of its key has started (schema version 5)."""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

import skiplock

from .conftest import as_release, wait_until
from .test_keys import run_threads
from .test_migrations import FIXTURES, make_v1_table, v1_statements

KEYS, PER_KEY = 6, 30


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The largest number of *intervals* open at one moment (an end before a start at the
    same instant: the first ended before the next began)."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    open_now = worst = 0
    for _, step in events:
        open_now += step
        worst = max(worst, open_now)
    return worst


@pytest.mark.parametrize("n", [2, 3])
def test_at_most_n_of_a_key_run_and_they_start_in_enqueue_order(
    queue: skiplock.Queue, n: int
) -> None:
    order: dict[str, list[int]] = defaultdict(list)
    for i in range(PER_KEY):
        for k in range(KEYS):
            order[f"k{k}"].append(queue.enqueue({"i": i}, key=f"k{k}", key_concurrency=n))
    queue.enqueue_many([{"free": i} for i in range(20)])
    held: dict[str, list[tuple[float, float]]] = defaultdict(list)
    #: per key: (job id, when its claim was called, when it returned)
    claimed: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            called = time.monotonic()
            jobs = queue.claim(limit=4, lease=120)
            if not jobs:
                if queue.stats().pending + queue.stats().running == 0:
                    return
                time.sleep(0.002)
                continue
            began = time.monotonic()  # after the claim committed: inside the held time
            keys = [j.key for j in jobs if j.key is not None]
            assert len(keys) == len(set(keys)), "one claim took two jobs of a key"
            with lock:
                for job in jobs:
                    if job.key is not None:
                        claimed[job.key].append((job.id, called, began))
            for job in jobs:
                time.sleep(0.004)  # the handler
                with lock:
                    if job.key is not None:
                        held[job.key].append((began, time.monotonic()))
                queue.complete(job)

    run_threads(worker, 400)
    worst = {k: most_at_once(v) for k, v in held.items()}
    assert max(worst.values()) <= n, worst
    assert max(worst.values()) >= 2, worst  # N above 1 does run jobs of a key together
    for key, ids in order.items():
        got = sorted(claimed[key])
        assert [i for i, _, _ in got] == ids  # each claimed once
        # A job is claimed only once the one before it was: so no claim of a job may have
        # returned before the claim of the job before it was even called.
        for (a, called, _), (b, _, returned) in itertools.pairwise(got):
            assert called < returned, f"{key}: job {b} started before job {a} was claimed"
    assert queue.stats().done == KEYS * PER_KEY + 20


def startable(q: skiplock.Queue, **options: object) -> list[int]:
    """Claim until nothing more is claimable: the ids of every job that could start now.
    (One claim statement takes at most one job of a key: the next one's turn comes once
    the claim of the one before it has committed.)"""
    ids: list[int] = []
    while got := q.claim(limit=10, **options):  # type: ignore[arg-type]
        ids += [j.id for j in got]
    return sorted(ids)


def held_jobs(q: skiplock.Queue, **options: object) -> list[skiplock.Job]:
    jobs: list[skiplock.Job] = []
    while got := q.claim(limit=10, **options):  # type: ignore[arg-type]
        jobs += got
    return sorted(jobs, key=lambda j: j.id)


def test_the_nth_job_waits_for_a_running_one_to_end(queue: skiplock.Queue) -> None:
    a, b, c, d = (queue.enqueue({"n": i}, key="k", key_concurrency=2) for i in range(4))
    first = held_jobs(queue, lease=60)
    assert [j.id for j in first] == [a, b]
    assert startable(queue) == []  # c waits: two of its key run
    queue.complete(next(j for j in first if j.id == b))  # a later one ending frees a place
    assert startable(queue) == [c]
    many = queue.enqueue_many([{"m": 1}, {"m": 2}], key="k", key_concurrency=2)
    assert startable(queue) == []
    queue.fail(next(j for j in first if j.id == a), "boom", final=True)
    assert startable(queue) == [d]
    assert startable(queue) == []
    assert queue.get(many[0]).status == "pending"  # type: ignore[union-attr]


def test_a_retried_job_keeps_its_place_under_n(queue: skiplock.Queue) -> None:
    a, b, c = (
        queue.enqueue({"n": i}, key="k", key_concurrency=2, max_attempts=3) for i in range(3)
    )
    ja, jb = held_jobs(queue)
    assert (ja.id, jb.id) == (a, b)
    assert queue.fail(ja, "again", retry_in=0.3) == "pending"
    # a is pending again, ahead of c: c waits although only one job of the key runs
    assert startable(queue) == []
    got: list[skiplock.Job] = []
    wait_until(lambda: got.extend(queue.claim(limit=10)) or got, 30, "the retry to come due")
    assert [j.id for j in got] == [a]
    queue.complete(jb)
    assert startable(queue) == [c]


def test_an_abandoned_lease_holds_its_place_until_it_ends(queue: skiplock.Queue) -> None:
    a, b, c = (queue.enqueue({"n": i}, key="k", key_concurrency=2) for i in range(3))
    # 2 s: held_jobs claims until nothing is left, and on a loaded machine a shorter lease
    # could end before its last claim, handing a or b out twice
    crashed = held_jobs(queue, lease=2)
    assert [j.id for j in crashed] == [a, b]
    assert startable(queue) == []  # the dead workers' jobs count until their leases end
    back: list[skiplock.Job] = []
    wait_until(lambda: back.extend(queue.claim(limit=10, lease=60)) or len(back) >= 2, 30, "")
    assert sorted(j.id for j in back) == [a, b]  # taken back, not c
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(crashed[0])
    queue.complete(back[0])
    assert startable(queue) == [c]


def test_jobs_of_one_key_that_disagree_on_n(queue: skiplock.Queue) -> None:
    # Each job's own N is checked when it starts (docs/sql.md): a strict job waits for
    # every other job of its key to end, but does not hold back later jobs with a larger N.
    a, b = (queue.enqueue({"n": i}, key="k", key_concurrency=3) for i in range(2))
    strict = queue.enqueue({"n": 2}, key="k")
    d = queue.enqueue({"n": 3}, key="k", key_concurrency=3)
    first = held_jobs(queue)
    assert [j.id for j in first] == [a, b]  # strict waits, and d waits behind it
    queue.complete(first[0])
    assert startable(queue) == []  # strict: one other job of its key still runs
    queue.complete(first[1])
    [js] = queue.claim(limit=10)
    assert js.id == strict
    assert startable(queue) == [d]  # one other running (strict) < d's 3


@pytest.mark.one_table
@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"key": "k", "key_concurrency": 0}, "key_concurrency"),
        ({"key": "k", "key_concurrency": -1}, "key_concurrency"),
        ({"key": "k", "key_concurrency": 10_001}, "key_concurrency"),
        ({"key": "k", "key_concurrency": "3"}, "key_concurrency"),
        ({"key": "k", "key_concurrency": 2.0}, "key_concurrency"),
        ({"key": "k", "key_concurrency": True}, "key_concurrency"),
        ({"key_concurrency": 3}, "pass key="),
    ],
)
def test_bad_key_concurrency_is_refused_and_nothing_is_written(
    queue: skiplock.Queue, options: dict[str, object], match: str
) -> None:
    with queue.transaction() as tx:
        kept = tx.enqueue({"kept": 1})
        with pytest.raises(skiplock.ConfigurationError, match=match):
            tx.enqueue({"n": 1}, **options)
        with pytest.raises(skiplock.ConfigurationError, match=match):
            tx.enqueue_many([{"n": 1}], **options)
    # the caller's transaction was untouched: it committed its own job, nothing else
    assert [j.id for j in queue.list_jobs()] == [kept]


def test_a_task_carries_its_key_concurrency(queue: skiplock.Queue) -> None:
    app = skiplock.App(queue)

    @app.task(name="sync_account", key_concurrency=2)
    def sync_account(n: int) -> None: ...

    ids = [sync_account.enqueue([i], key="acct-1") for i in range(3)]
    free = sync_account.defer(9)  # no key: the task's N limits nothing
    assert startable(queue) == sorted([*ids[:2], free])
    with pytest.raises(skiplock.ConfigurationError, match="key_concurrency"):
        app.task(name="bad", key_concurrency=0)(lambda: None)
    # a call's own N overrides the task's
    solo = [sync_account.enqueue([i], key="acct-2", key_concurrency=1) for i in range(2)]
    assert startable(queue) == [solo[0]]


def v4_statements(q: skiplock.Queue) -> dict[str, str]:
    """The statements of schema version 4's release (per-key order, N = 1 only)."""
    return v1_statements(q, FIXTURES.parent / "schema_v4")


@pytest.mark.requires("index_names")  # adopts a table of version 1 by its indexes' names
def test_migration_5_on_a_version_4_table_holding_jobs_in_every_state(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    setup = make_queue()
    make_v1_table(setup)
    assert make_queue().migrate(to=4) == [2, 3, 4]
    old = make_queue()  # version 4's release, still running through the upgrade
    as_release(old, v4_statements(old))
    old._schema_ok = True
    done_id = old.enqueue({"s": "done"}, key="a")
    old.complete(old.claim()[0])
    failed_id = old.enqueue({"s": "failed"}, max_attempts=1)
    old.fail(old.claim()[0], "boom")
    cancelled_id = old.enqueue({"s": "cancelled"}, queue="c")
    assert old.cancel(cancelled_id) == "cancelled"
    live_id = old.enqueue({"s": "live"}, key="a", queue="held")
    (live,) = old.claim(queues="held", lease=300)
    behind = old.enqueue({"s": "behind live"}, key="a", queue="held")
    stale_id = old.enqueue({"s": "expired"}, key="b", queue="stale")
    (stale,) = old.claim(queues="stale", lease=0.5)
    scheduled_id = old.enqueue({"s": "scheduled"}, delay=3600)
    pending = old.enqueue_many([{"n": i} for i in range(10)], key="p")
    assert make_queue().migrate(to=5) == [5]
    assert make_queue().migrate(to=5) == []  # idempotent
    assert make_queue().migrate() == list(range(6, setup.schema.latest + 1))  # later ones
    new = make_queue()
    # the old release's keyed jobs are strict (N = 1) on the new statements
    assert startable(new, queues=["default", "held"]) == [pending[0]]
    wait_until(lambda: new.stats().expired == 1, 30, "the short lease to end")
    [again] = new.claim(queues="stale", lease=60)
    assert again.id == stale_id and again.attempt == 2
    with pytest.raises(skiplock.LeaseLost):
        old.complete(stale)  # fencing intact across the upgrade
    old.complete(live)  # the old release's fenced write on the migrated table
    assert new.get(live_id).status == "done"  # type: ignore[union-attr]
    assert startable(new, queues="held") == [behind]
    # the old release keeps claiming and enqueuing on the new table
    late = old.enqueue({"s": "old enqueue"}, key="z")
    assert [j.id for j in held_jobs(old, queues="default") if j.key == "z"] == [late]
    both = [new.enqueue({"n": i}, key="n", key_concurrency=2) for i in range(3)]
    assert [j.id for j in held_jobs(new) if j.key == "n"] == both[:2]
    states = {i: new.get(i).status for i in (done_id, failed_id, cancelled_id, scheduled_id)}  # type: ignore[union-attr]
    assert states == {
        done_id: "done",
        failed_id: "failed",
        cancelled_id: "cancelled",
        scheduled_id: "pending",
    }
