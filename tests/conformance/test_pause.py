"""Pause and resume (docs/control.md): a paused queue's jobs are not claimed, by
``q.claim`` or by a worker, while its running jobs finish and enqueueing goes on; a
claim already under way when the pause commits keeps what it took."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import skiplock
from skiplock import Worker
from skiplock._worker import claiming

from .conftest import wait_until

MakeQueue = Callable[..., Any]


def test_a_paused_queue_gives_nothing_and_the_others_go_on(make_queue: MakeQueue) -> None:
    q = make_queue()
    a = q.enqueue({"n": 1}, queue="a")
    q.enqueue({"n": 2}, queue="b")
    assert q.paused() == set()
    q.pause("a")
    q.pause("a")  # idempotent
    assert q.paused() == {"a"}
    assert q.claim(queues="a") == []
    [b] = q.claim(queues=["a", "b"], limit=5)  # several queues: the paused one is left
    assert b.queue == "b"
    late = q.enqueue({"n": 3}, queue="a")  # enqueueing goes on while paused
    assert q.get(late).status == "pending"
    s = q.stats()
    assert (s.pending, s.paused) == (2, ("a",))
    assert q.stats(["b"]).paused == ()
    assert q.stats("a").paused == ("a",)

    q.resume("a")
    q.resume("a")
    q.resume("never-paused")  # changes nothing
    assert q.paused() == set()
    assert [j.id for j in q.claim(queues="a", limit=5)] == [a, late]


def test_a_paused_queue_s_claimed_jobs_finish(make_queue: MakeQueue) -> None:
    q = make_queue()
    q.enqueue_many([{"n": i} for i in range(3)], queue="a")
    first, second = q.claim(queues="a", limit=2, lease=60)
    q.pause("a")
    q.heartbeat(first)  # the fenced writes of claimed jobs go on
    q.complete(first, result={"ok": 1})
    q.fail(second, "boom", retry_in=0)  # retried: pending again, but not claimed
    assert q.get(second.id).status == "pending"
    assert q.claim(queues="a", limit=5) == []
    q.resume("a")
    assert len(q.claim(queues="a", limit=5)) == 2


@pytest.mark.requires("skip_locked")  # the claim after the pause steps over held rows
def test_a_claim_in_flight_when_the_pause_commits_keeps_its_jobs(make_queue: MakeQueue) -> None:
    # The claim's statement read the flag before the pause committed: what it took is its
    # own (it commits, the jobs run); every claim that starts after the pause takes nothing.
    q = make_queue()
    q.enqueue_many([{"n": i} for i in range(4)], queue="a")
    with q.transaction() as tx:
        taken = tx.claim(queues="a", limit=2, lease=60)
        assert len(taken) == 2
        q.pause("a")  # another connection: neither waits for the other
        assert q.claim(queues="a", limit=5) == []
    assert {q.get(j.id).status for j in taken} == {"running"}
    for job in taken:
        q.complete(job)
    assert q.claim(queues="a", limit=5) == []
    assert q.stats().pending == 2


def test_a_pause_racing_claims_never_lets_a_claim_that_began_after_it_take_a_job(
    make_queue: MakeQueue,
) -> None:
    # Threads claim while the queue is paused mid-way: each claim that began after
    # pause() returned must come back empty.
    q = make_queue()
    q.enqueue_many([{"n": i} for i in range(3000)], queue="a")
    paused_at: list[float] = []
    late: list[int] = []
    taken: list[int] = []
    stop = threading.Event()

    def claimer() -> None:
        while not stop.is_set():
            began = time.monotonic()
            jobs = q.claim(queues="a", limit=2, lease=60)
            taken.extend(j.id for j in jobs)
            if paused_at and began > paused_at[0]:
                late.extend(j.id for j in jobs)

    threads = [threading.Thread(target=claimer) for _ in range(4)]
    for t in threads:
        t.start()
    # pause while the claims are under way (counted, not timed: a fast machine could
    # drain the queue in a fixed sleep, a loaded one claim nothing in it)
    wait_until(lambda: len(taken) >= 20, 30, "the claimers to get going")
    q.pause("a")
    paused_at.append(time.monotonic())
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join(30)
    assert late == []
    assert q.stats().pending > 0  # the pause came before the queue ran dry


def test_bad_queue_names_are_refused(make_queue: MakeQueue) -> None:
    q = make_queue()
    for name in ("", 7, None, "a\x00b", "trailing "):
        with pytest.raises(skiplock.ConfigurationError):
            q.pause(name)
        with pytest.raises(skiplock.ConfigurationError):
            q.resume(name)
    assert q.paused() == set()


def test_a_worker_stops_taking_a_paused_queue_and_picks_up_on_resume(
    make_queue: MakeQueue, worker_cls: type[Worker], workers: list[Worker]
) -> None:
    q = make_queue()
    started: list[tuple[float, str]] = []
    release = threading.Event()
    lock = threading.Lock()

    def handler(job: skiplock.Job) -> None:
        with lock:
            started.append((time.monotonic(), job.queue))
        if job.payload.get("hold"):
            release.wait(30)
        else:
            time.sleep(0.02)

    w = worker_cls(q, handler, queues=["a", "b"], concurrency=2, poll_interval=0.5)
    workers.append(w)
    holder = q.enqueue({"hold": True}, queue="a")
    w.start()
    wait_until(lambda: started, 10, "the held job to start")
    q.pause("a")
    paused = time.monotonic()
    q.enqueue_many([{"n": i} for i in range(5)], queue="a")
    q.enqueue_many([{"n": i} for i in range(5)], queue="b")
    wait_until(lambda: sum(1 for _, n in started if n == "b") == 5, 10, "queue b to run")
    release.set()  # the paused queue's running job finishes
    wait_until(lambda: q.get(holder).status == "done", 10, "the held job to finish")
    time.sleep(1.0)
    assert [n for t, n in started if t > paused and n == "a"] == []
    assert q.stats("a").pending == 5

    q.resume("a")
    resumed = time.monotonic()
    # Wait for a handler to start, not for pending to reach 0: a claimed job is no
    # longer pending before its handler has run a line.
    wait_until(
        lambda: any(t > resumed and n == "a" for t, n in list(started)), 10, "queue a to run again"
    )
    first = min(t for t, n in list(started) if t > resumed and n == "a")
    assert first - resumed < 1.5  # PostgreSQL: notified at once; else the next poll
    wait_until(lambda: q.stats("a").done == 6, 10, "queue a's jobs to finish")


def test_a_resume_wakes_idle_workers_at_once_where_it_can_notify(
    make_queue: MakeQueue,
    worker_cls: type[Worker],
    workers: list[Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Polls 5 s apart (the first one too): a claim within 1.5 s of the resume is the
    # notification's doing, not a poll's.
    q = make_queue()
    if not q.dialect.supports_notify:
        pytest.skip("this database has no LISTEN/NOTIFY: a resume is seen at the next poll")
    monkeypatch.setattr(claiming, "MIN_POLL", 5.0)
    started: list[float] = []
    w = worker_cls(q, lambda job: started.append(time.monotonic()), poll_interval=5.0)
    workers.append(w)
    q.pause("default")
    w.start()
    time.sleep(0.5)  # the worker has found nothing and waits
    q.enqueue({"n": 1})  # wakes it (the enqueue trigger); its claim finds the queue paused
    time.sleep(1.0)
    assert started == []
    q.resume("default")
    resumed = time.monotonic()
    wait_until(lambda: started, 10, "the job to start")
    assert started[0] - resumed < 1.5
