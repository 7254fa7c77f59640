"""Periodic jobs on every backend: each tick is enqueued once however many schedulers race
for it; after downtime only the newest missed tick runs unless ``catch_up``."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

import skiplock
from conformance.conftest import wait_until
from skiplock import Worker
from skiplock._worker.lifecycle import Scheduler
from skiplock.periodic import Schedule

UTC = timezone.utc


def ticks_of(q: skiplock.Queue, name: str) -> list[datetime]:
    """The ticks of the jobs of schedule *name*, oldest first (one entry per job)."""
    found = []
    for job in q.list_jobs(limit=1000):
        info = job.payload.get("periodic") if isinstance(job.payload, dict) else None
        if info and info["schedule"] == name:
            found.append(datetime.fromisoformat(info["tick"]))
    return sorted(found)


def test_schedulers_racing_for_one_tick_enqueue_it_once(queue: skiplock.Queue) -> None:
    s = Schedule(name="race", cron="0 * * * *", task="t", timezone="Europe/Paris")
    # 2026-10-25 in Paris: 02:00 happens twice (CEST, then CET), an hour apart
    first = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)
    second = datetime(2026, 10, 25, 1, 0, tzinfo=UTC)
    results: dict[datetime, list[int | None]] = {first: [], second: []}
    go = threading.Barrier(8)

    def race(tick: datetime) -> None:
        scheduler = Scheduler(skiplock.connect(str(queue.url), table=str(queue.table)), [s])
        try:
            go.wait(30)
            results[tick].append(scheduler.enqueue_tick(s, tick))
        finally:
            scheduler.queue.close()

    threads = [threading.Thread(target=race, args=(t,)) for t in (first, second) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for tick in (first, second):
        winners = [r for r in results[tick] if r is not None]
        assert len(results[tick]) == 4 and len(winners) == 1, results
    assert ticks_of(queue, "race") == [first, second]
    walls = sorted(j.payload["periodic"]["tick"] for j in queue.list_jobs())
    assert walls == ["2026-10-25T02:00:00+01:00", "2026-10-25T02:00:00+02:00"]
    # the same tick again, later: still one job
    assert Scheduler(queue, [s]).enqueue_tick(s, first) is None
    assert queue.stats().pending == 2


def test_four_workers_over_several_ticks_make_one_job_per_tick(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    app = skiplock.App(queue)
    ran: list[tuple[int, datetime]] = []
    lock = threading.Lock()

    @app.periodic(cron="* * * * * *", timezone="Europe/Paris", catch_up=True)
    @app.task(pass_job=True, name="every_second")
    def every_second(job: skiplock.Job, tick: datetime) -> None:
        with lock:
            ran.append((job.id, tick))

    for _ in range(4):
        workers.append(app.worker(concurrency=2, retention=None).start())
    wait_until(lambda: len(ran) >= 6, timeout=60, what="six ticks run")
    for w in workers:
        w.stop(wait=False)
    for w in workers:
        w.stop(timeout=30)

    ticks = ticks_of(queue, "every_second")
    assert len(ticks) == len(set(ticks)) >= 6  # one job per tick
    seconds = [int(t.timestamp()) for t in ticks]
    assert seconds == list(range(seconds[0], seconds[0] + len(seconds)))  # none skipped
    assert all(t.microsecond == 0 and t.utcoffset() in (timedelta(hours=1), timedelta(hours=2))
               for t in ticks)  # fmt: skip
    assert sum(w.counts["scheduled"] for w in workers) == len(ticks)
    for job_id, tick in ran:  # the handler got its own job's tick, in the zone
        record = queue.get(job_id)
        assert record is not None
        assert tick == datetime.fromisoformat(record.payload["periodic"]["tick"])
        assert tick.tzinfo == ZoneInfo("Europe/Paris")


def test_an_apps_periodic_async_task_runs_on_the_asyncio_worker(queue: skiplock.Queue) -> None:
    # App.async_worker passes the app's schedules too: the scheduler's thread runs beside
    # the asyncio worker's parts, and the tick reaches an async def task on the loop.
    app = skiplock.App(queue)
    ran: list[datetime] = []

    @app.periodic(cron="* * * * * *", catch_up=True)
    @app.task(name="async_tick")
    async def async_tick(tick: datetime) -> None:
        await asyncio.sleep(0)
        ran.append(tick)

    worker = app.async_worker(concurrency=2, retention=None)

    async def serve() -> None:
        async with worker:
            deadline = time.monotonic() + 60
            while len(ran) < 2:
                assert time.monotonic() < deadline, "no periodic job ran"
                await asyncio.sleep(0.1)

    asyncio.run(serve())
    assert worker.counts["scheduled"] >= 2 and worker.counts["done"] >= 2
    ticks = ticks_of(queue, "async_tick")
    assert len(ticks) == len(set(ticks)) and set(ran) <= set(ticks)


@pytest.mark.parametrize("order", ["periodic-above-task", "task-above-periodic"])
def test_task_and_periodic_decorators_work_in_either_order(
    queue: skiplock.Queue, order: str
) -> None:
    """The task's options hold for its schedule's jobs whichever decorator is on top."""
    app = skiplock.App(queue)
    ran: list[datetime] = []

    def report(tick: datetime) -> None:
        ran.append(tick)

    options = {"name": "report", "queue": "reports", "priority": 3, "max_attempts": 2}
    if order == "periodic-above-task":
        task = app.periodic(cron="* * * * * *")(app.task(**options)(report))
    else:
        task = app.task(**options)(app.periodic(cron="* * * * * *")(report))
    assert set(app.tasks) == {"report"} and app.tasks["report"] is task
    assert [(s.name, s.task, s.queue) for s in app.schedules.values()] == [
        ("report", "report", "reports")
    ]
    worker = app.worker(retention=None, poll_interval=0.05)
    assert list(worker.queues) == ["reports"]
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: ran, 30, "a tick run")
    finally:
        worker.stop()
        thread.join(30)  # before the fixture closes the queue the worker uses
    assert not thread.is_alive()
    job = queue.list_jobs(queue="reports", limit=1)[0]
    assert (job.payload["task"], job.priority, job.max_attempts) == ("report", 3, 2)
    # a Task given to @app.task again is refused by name, not with an AttributeError
    with pytest.raises(skiplock.ConfigurationError, match="'report' is a task already"):
        app.task(task)  # type: ignore[call-overload]


def _run_until_scheduled(scheduler: Scheduler, n: int) -> None:
    deadline = time.monotonic() + 30
    while scheduler.counts["scheduled"] < n:
        assert time.monotonic() < deadline, "no tick was enqueued"
        time.sleep(min(0.5, scheduler.run_once()))


def test_after_downtime_only_the_newest_missed_tick_runs_unless_catch_up(
    queue: skiplock.Queue,
) -> None:
    every = Schedule(name="sec", cron="* * * * * *", task="t")
    first = Scheduler(queue, [every])
    assert first.run_once() <= 1.1  # a fresh schedule starts now: no past tick
    assert ticks_of(queue, "sec") == []
    _run_until_scheduled(first, 1)
    (last,) = ticks_of(queue, "sec")

    time.sleep(3.5)  # no scheduler runs: three ticks or more are missed
    restarted = Scheduler(queue, [every])
    before = restarted.now()
    restarted.run_once()
    after = restarted.now()
    ticks = ticks_of(queue, "sec")
    assert len(ticks) == 2 and ticks[0] == last and ticks[1] >= last + timedelta(seconds=3)
    assert before - timedelta(seconds=1) < ticks[1] <= after  # the newest missed tick only

    time.sleep(3.5)
    catching = Scheduler(queue, [Schedule(name="sec", cron="* * * * * *", task="t", catch_up=True)])
    catching.run_once()
    more = ticks_of(queue, "sec")[2:]
    assert len(more) >= 3
    seconds = [int(t.timestamp()) for t in more]
    assert seconds == list(range(int(ticks[1].timestamp()) + 1, seconds[-1] + 1))  # every one


def test_a_schedule_that_never_ran_does_not_run_its_past_ticks(queue: skiplock.Queue) -> None:
    yearly = Schedule(name="new-year", cron="0 0 1 1 *", task="t")
    scheduler = Scheduler(queue, [yearly])
    assert 0 < scheduler.run_once() <= 30.1  # wakes up to read the clock again
    assert queue.stats().pending == 0 and scheduler.counts["scheduled"] == 0


def test_two_schedules_with_one_name_are_refused(queue: skiplock.Queue) -> None:
    s = Schedule(name="dup", cron="* * * * *", task="t")
    with pytest.raises(skiplock.ConfigurationError, match="share a name"):
        Worker(
            queue, lambda job: None, periodic=[s, Schedule(name="dup", cron="0 * * * *", task="u")]
        )


def test_install_makes_the_ledger_and_uninstall_drops_it(queue: skiplock.Queue) -> None:
    s = Schedule(name="ledger", cron="0 * * * *", task="t")
    tick = datetime(2026, 1, 1, tzinfo=UTC)
    assert Scheduler(queue, [s]).enqueue_tick(s, tick) is not None
    assert Scheduler(queue, [s]).last_tick(s) == tick
    queue.uninstall()
    queue.install()  # migrations 1..latest again: an empty ledger
    assert Scheduler(queue, [s]).last_tick(s) is None
    assert Scheduler(queue, [s]).enqueue_tick(s, tick) is not None
