"""Periodic schedules without a database: which ticks fall due, daylight-saving edges in
Europe/Paris, catch-up bounds, and the options a schedule refuses."""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import skiplock
from skiplock.periodic import MAX_CATCH_UP, Schedule, tick_kwargs

UTC = timezone.utc
PARIS = ZoneInfo("Europe/Paris")


def schedule(cron: str, tz: str = "Europe/Paris", **options: Any) -> Schedule:
    return Schedule(name="s", cron=cron, task="t", timezone=tz, **options)


def ticks(s: Schedule, start: datetime, end: datetime) -> list[str]:
    """Every tick in (start, end], as Paris wall-clock times with their offsets."""
    s = replace(s, catch_up=100_000)
    found, _ = s.due(start.astimezone(UTC), end.astimezone(UTC))
    return [t.astimezone(PARIS).isoformat() for t in found]


def test_ticks_are_utc_instants_of_the_zone_s_wall_clock() -> None:
    s = schedule("*/5 * * * *")
    start = datetime(2026, 1, 15, 9, 58, tzinfo=PARIS)
    assert ticks(s, start, start + timedelta(minutes=10)) == [
        "2026-01-15T10:00:00+01:00",
        "2026-01-15T10:05:00+01:00",
    ]
    assert s.next_tick(start.astimezone(UTC)) == datetime(2026, 1, 15, 9, 0, tzinfo=UTC)


def test_spring_forward_a_fixed_time_in_the_gap_runs_once_at_its_end() -> None:
    # 2026-03-29: Paris clocks go from 02:00 straight to 03:00.
    day = datetime(2026, 3, 28, 12, tzinfo=PARIS)
    assert ticks(schedule("30 2 * * *"), day, day + timedelta(days=2)) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]
    # hourly: the hour that does not exist has no tick; no instant repeats
    hourly = ticks(schedule("0 * * * *"), datetime(2026, 3, 29, 0, 30, tzinfo=PARIS),
                   datetime(2026, 3, 29, 4, 30, tzinfo=PARIS))  # fmt: skip
    assert hourly == [
        "2026-03-29T01:00:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T04:00:00+02:00",
    ]


def test_fall_back_a_fixed_time_runs_once_and_hourly_runs_in_both_repeated_hours() -> None:
    # 2026-10-25: Paris clocks go from 03:00 back to 02:00; 02:30 happens twice.
    day = datetime(2026, 10, 24, 12, tzinfo=PARIS)
    assert ticks(schedule("30 2 * * *"), day, day + timedelta(days=2)) == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]
    start = datetime(2026, 10, 25, 1, 30, tzinfo=PARIS)
    hourly = ticks(schedule("0 * * * *"), start, start + timedelta(hours=4))
    assert hourly == [
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00",
        "2026-10-25T03:00:00+01:00",
        "2026-10-25T04:00:00+01:00",
        "2026-10-25T05:00:00+01:00",  # 01:30 + 4 h of wall-clock time is 05:30
    ]
    instants = [datetime.fromisoformat(t) for t in hourly]
    assert len(set(instants)) == 5  # two ticks at 02:00 wall time, an hour apart: two keys


def test_due_keeps_the_newest_missed_tick_unless_catching_up() -> None:
    after = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    now = datetime(2026, 1, 1, 10, 0, 30, tzinfo=UTC)
    assert schedule("*/5 * * * *", "UTC").due(after, now) == (
        [datetime(2026, 1, 1, 10, 0, tzinfo=UTC)],
        True,
    )
    every, left_out = schedule("*/5 * * * *", "UTC", catch_up=True).due(after, now)
    assert len(every) == 12 and every[0] == after + timedelta(minutes=5) and not left_out
    three, left_out = schedule("*/5 * * * *", "UTC", catch_up=3).due(after, now)
    assert [t.minute for t in three] == [50, 55, 0] and left_out
    # nothing missed: the last tick was the newest
    assert schedule("*/5 * * * *", "UTC").due(now.replace(second=0), now) == ([], False)
    # a tick exactly at now is due
    assert schedule("*/5 * * * *", "UTC").due(after, after + timedelta(minutes=5))[0] == [
        after + timedelta(minutes=5)
    ]


def test_catch_up_is_bounded_even_for_a_per_second_schedule_a_year_late() -> None:
    s = schedule("* * * * * *", "UTC", catch_up=True)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    due, left_out = s.due(now - timedelta(days=365), now)
    assert len(due) == MAX_CATCH_UP and due[-1] == now and left_out
    assert due == [now - timedelta(seconds=MAX_CATCH_UP - 1 - i) for i in range(MAX_CATCH_UP)]


def test_the_payload_carries_the_tick_in_the_schedule_s_zone() -> None:
    s = schedule("0 3 * * *", args=[1], kwargs={"a": "b"})
    tick = datetime(2026, 7, 1, 1, 0, tzinfo=UTC)
    payload = s.payload(tick)
    assert payload["task"] == "t" and payload["args"] == [1] and payload["kwargs"] == {"a": "b"}
    assert payload["periodic"] == {
        "schedule": "s",
        "tick": "2026-07-01T03:00:00+02:00",
        "timezone": "Europe/Paris",
        "arg": "tick",
    }
    (got,) = tick_kwargs(payload).values()
    assert got == tick and got.tzinfo == PARIS and got.utcoffset() == timedelta(hours=2)
    assert tick_kwargs(schedule("0 3 * * *", tick_arg=None).payload(tick)) == {}
    assert tick_kwargs({"task": "t"}) == {}


@pytest.mark.parametrize(
    "bad",
    [
        {"cron": "every day"},
        {"cron": "61 * * * *"},
        {"cron": "0 0 31 2 *"},  # never fires
        {"cron": ""},
        {"cron": 5},
        {"timezone": "Mars/Olympus"},
        {"timezone": ""},
        {"name": ""},
        {"name": "x" * 256},
        {"catch_up": 0},
        {"catch_up": "all"},
        {"tick_arg": "not a name"},
        {"kwargs": {"tick": 1}},
        {"max_attempts": 0},
    ],
)
def test_bad_schedules_are_configuration_errors(bad: dict[str, Any]) -> None:
    options: dict[str, Any] = {"name": "s", "cron": "* * * * *", "task": "t", **bad}
    with pytest.raises(skiplock.ConfigurationError):
        Schedule(**options)


def test_arguments_that_are_not_json_are_payload_errors() -> None:
    with pytest.raises(skiplock.PayloadError):
        schedule("* * * * *", args=[object()])


def test_app_schedules_a_task_with_its_options_and_refuses_unknown_or_twice() -> None:
    app = skiplock.App("postgresql://u@h/db")

    @app.periodic(cron="*/5 * * * *", timezone="Europe/Paris")
    @app.task(queue="reports", priority=-1, max_attempts=2)
    def report(tick: datetime) -> None: ...

    @app.periodic(cron="0 * * * *")
    def plain(tick: datetime) -> None: ...

    s = app.schedules[report.name]
    assert (s.queue, s.priority, s.max_attempts, s.timezone) == ("reports", -1, 2, "Europe/Paris")
    assert app.schedules[plain.name].queue == "default" and plain.name in app.tasks
    second = app.schedule(report, cron="0 9 * * 1", args=["weekly"], name="weekly-report")
    assert second.args == ("weekly",) and app.schedules["weekly-report"] is second
    with pytest.raises(skiplock.ConfigurationError, match="exists already"):
        app.schedule(report, cron="* * * * *")
    with pytest.raises(skiplock.ConfigurationError, match="unknown task"):
        app.schedule("nobody", cron="* * * * *")
    worker = app.worker()
    assert worker.scheduler is not None and len(worker.scheduler.schedules) == 3


@pytest.fixture(params=["TZPATH, then tzdata", "tzdata only"])
def zone_source(request: pytest.FixtureRequest) -> Iterator[str]:
    """Zones read from the system's files, or (where a system has none, as on Windows)
    from the tzdata package only: a folder of zones is a directory there too, and opening
    it raised IsADirectoryError."""
    if request.param == "tzdata only":
        pytest.importorskip("tzdata")
        zoneinfo.reset_tzpath(to=[])
    try:
        yield str(request.param)
    finally:
        zoneinfo.reset_tzpath()


#: folders of zones, over-long names and names that are not relative keys: old code let
#: IsADirectoryError, OSError (ENAMETOOLONG) and ValueError (embedded null byte) through
HOSTILE_ZONES = [
    "Europe",
    "America",
    "US",
    "America/Argentina",
    "x" * 300,
    "Europe/" + "y" * 300,
    "../etc",
    "Europe/../../etc",
    "/etc/passwd",
    "Europe/",
    "a\x00b",
    "Europe/Paris\x00",
    "",
    " ",
    "\udc80",
    "tzdata.zi",
    "__init__.py",
    "Europe/__pycache__",
]


@pytest.mark.parametrize("name", HOSTILE_ZONES)
def test_zone_folders_and_hostile_zone_names_are_configuration_errors(
    zone_source: str, name: str
) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="timezone"):
        Schedule(name="s", cron="* * * * *", task="t", timezone=name)
    app = skiplock.App("postgresql://u@h/db")
    with pytest.raises(skiplock.ConfigurationError, match="timezone"):

        @app.periodic(cron="* * * * *", timezone=name)
        def job(tick: datetime) -> None: ...

    # a schedule with a real zone still works from the same source
    assert schedule("0 3 * * *").payload(datetime(2026, 1, 1, tzinfo=UTC))["periodic"]


@pytest.mark.parametrize("name", HOSTILE_ZONES)
def test_a_stored_tick_in_a_hostile_zone_keeps_its_offset(zone_source: str, name: str) -> None:
    # the worker reads the zone back from a claimed job's payload (a row anyone may write):
    # old code raised IsADirectoryError into the task call for {"timezone": "Europe"}
    payload = {"periodic": {"arg": "tick", "tick": "2026-07-01T03:00:00+02:00", "timezone": name}}
    (got,) = tick_kwargs(payload).values()
    assert got == datetime(2026, 7, 1, 1, 0, tzinfo=UTC) and got.utcoffset() == timedelta(hours=2)


@pytest.mark.parametrize("periodic", [[1], ["hourly"], [None]])
def test_a_worker_refuses_periodic_items_that_are_not_schedules(periodic: list[Any]) -> None:
    # old code read .name of each item before checking it: AttributeError, not this message
    q = skiplock.connect("postgresql://nobody@127.0.0.1:1/nothing")  # never opened
    with pytest.raises(skiplock.ConfigurationError, match="list of skiplock Schedule objects"):
        skiplock.Worker(q, lambda job: None, periodic=periodic)
