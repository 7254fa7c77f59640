"""What the dashboard reads through the queue, on every backend, sync and async: every
queue's state (``overview``), the periodic ledger (``ticks``), the jobs of one task
(``list_jobs(task=)``) and the live worker list's rows (register, beat, unregister, gone)."""

from __future__ import annotations

from typing import Any

import pytest

import skiplock
from skiplock.errors import ConfigurationError

from .conftest import wait_until


def test_overview_counts_each_queue_by_state(queue: skiplock.Queue) -> None:
    queue.enqueue({"n": 1}, queue="mail")
    queue.enqueue({"n": 2}, queue="mail")
    queue.enqueue({"n": 3}, queue="mail", delay=3600)
    queue.enqueue({"n": 4}, queue="mail")
    queue.enqueue({"n": 5}, queue="pdf")
    (running,) = queue.claim(queues="pdf", lease=60)
    done = queue.enqueue({"n": 6}, queue="pdf")
    failed = queue.enqueue({"n": 7}, queue="pdf")
    for job_id, outcome in ((done, "done"), (failed, "failed")):
        (job,) = queue.claim(queues="pdf", lease=60)
        assert job.id == job_id
        if outcome == "done":
            queue.complete(job)
        else:
            queue.fail(job, "boom", final=True)
    (mail_job,) = queue.claim(queues="mail", lease=60)
    queue.complete(mail_job)
    by_name = {o.queue: o for o in queue.overview()}
    assert set(by_name) == {"mail", "pdf"}
    mail, pdf = by_name["mail"], by_name["pdf"]
    assert (mail.pending, mail.scheduled, mail.running, mail.done, mail.failed) == (2, 1, 0, 1, 0)
    assert (pdf.pending, pdf.scheduled, pdf.running, pdf.done, pdf.failed) == (0, 0, 1, 1, 1)
    assert mail.oldest_pending_age is not None and 0 <= mail.oldest_pending_age < 60
    assert pdf.oldest_pending_age is None
    assert sum(mail.per_minute) == 1 and mail.per_minute[0] + mail.per_minute[1] == 1
    assert not mail.capped and running.status == "running"
    assert mail.as_dict()["done_recent"] == 1


def test_overview_counts_the_jobs_waiting_behind_their_key(queue: skiplock.Queue) -> None:
    # A keyed job enqueued behind its key's pending head is out of the claim index
    # (key_wait, migration 0015 / 0016) and the overview reads that index: it must still
    # count such jobs, pending and scheduled alike.
    queue.enqueue_many([{"n": i} for i in range(4)], queue="k", key="acct")
    queue.enqueue({"n": 9}, queue="k", key="acct", delay=3600)
    queue.enqueue({"n": 10}, queue="k")
    (head,) = queue.claim(queues="k", limit=1, lease=60)
    assert head.payload == {"n": 0}
    (k,) = queue.overview()
    assert (k.queue, k.pending, k.scheduled, k.running) == ("k", 4, 1, 1)
    stats = queue.stats("k")
    assert (stats.pending, stats.scheduled, stats.running) == (4, 1, 1)


def test_overview_is_bounded_and_says_so(queue: skiplock.Queue) -> None:
    ids = queue.enqueue_many([{"n": i} for i in range(5)], queue="q")
    for _ in ids:
        (job,) = queue.claim(queues="q")
        queue.complete(job)
    (o,) = queue.overview(cap=3)
    assert o.capped and 3 <= o.done <= 5
    (o,) = queue.overview()
    assert not o.capped and o.done == 5


def test_list_jobs_of_one_task(queue: skiplock.Queue) -> None:
    a = queue.enqueue({"task": "app.mail", "args": []})
    queue.enqueue({"task": "app.pdf", "args": []})
    queue.enqueue(["not", "an", "object"])
    queue.enqueue("a string")
    b = queue.enqueue({"task": "app.mail", "args": [1]}, queue="other")
    assert [j.id for j in queue.list_jobs(task="app.mail")] == [b, a]
    assert [j.id for j in queue.list_jobs(task="app.mail", queue="default")] == [a]
    assert queue.list_jobs(task="app.mail", status="done") == []
    assert queue.list_jobs(task="nothing") == []


@pytest.mark.one_table
@pytest.mark.parametrize("bad", [{"task": ""}, {"task": 3}, {"task": "x\x00"}])
def test_bad_task_names_are_refused(queue: skiplock.Queue, bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        queue.list_jobs(**bad)


def test_ticks_show_each_schedules_latest_tick(queue: skiplock.Queue) -> None:
    assert queue.ticks() == []
    # what a worker's periodic scheduler writes for each tick it enqueues
    with queue.transaction() as tx:
        for name, hour in (("report", 1), ("report", 2), ("cleanup", 3)):
            tx.execute(
                f"INSERT INTO {queue.dialect.quote(queue.table.ticks_table)} (schedule, tick, "
                "created_at) VALUES (%(s)s, %(t)s, %(t)s)",
                {"s": name, "t": _at(hour)},
            )
    ticks = queue.ticks()
    assert [(t.schedule, t.ticks) for t in ticks] == [("cleanup", 1), ("report", 2)]
    assert ticks[1].last_tick == _at(2)


def _at(hour: int) -> Any:
    from datetime import datetime, timezone

    return datetime(2030, 1, 1, hour, tzinfo=timezone.utc)


def test_worker_rows_register_beat_and_go(queue: skiplock.Queue) -> None:
    queue.register_worker(
        "w-1", host="host-a", pid=123, queues=["a", "b"], concurrency=4, interval=0.3
    )
    (w,) = queue.workers()
    assert (w.id, w.host, w.pid, w.queues, w.concurrency, w.in_flight) == (
        "w-1",
        "host-a",
        123,
        ("a", "b"),
        4,
        0,
    )
    assert not w.gone and w.interval == 0.3
    assert queue.beat_worker("w-1", in_flight=3)
    assert queue.workers()[0].in_flight == 3
    # a worker that stops beating (killed) is shown gone after a few of its beats
    wait_until(lambda: queue.workers()[0].gone, 10, "the silent worker to be shown gone")
    assert queue.workers()[0].seen_ago > 0.9
    assert queue.beat_worker("w-1", in_flight=0)  # back: not gone any more
    assert not queue.workers()[0].gone
    queue.unregister_worker("w-1")
    assert queue.workers() == []
    assert not queue.beat_worker("w-1", in_flight=0)  # gone: the worker registers again
    queue.unregister_worker("w-1")  # idempotent


def test_uninstall_drops_the_worker_list(queue: skiplock.Queue) -> None:
    queue.register_worker("w-1", host="h", pid=1, queues=["a"], concurrency=1, interval=1)
    queue.uninstall()
    with pytest.raises(skiplock.BackendError), queue.transaction() as tx:
        tx.execute(f"SELECT id FROM {queue.dialect.quote(queue.table.workers_table)}")
