"""Every duration is bounded (ten years): a huge or non-finite one is skiplock's own
ConfigurationError, with nothing written, never an OverflowError or a dead thread."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skiplock
from skiplock.maintenance import prune

HUGE = [10**400, 10**20, 1e11, 1e300, math.inf, 10 * 365 * 86400 + 1]
#: too long for a duration, whatever its type
too_long = st.one_of(
    st.integers(min_value=10 * 365 * 86400 + 1),
    st.floats(min_value=10 * 365 * 86400 + 1, allow_nan=False),
    st.just(10**400),
)


@pytest.mark.one_table
@pytest.mark.parametrize("value", HUGE, ids=["1e400", "1e20", "1e11", "1e300", "inf", "10y+1s"])
def test_huge_durations_are_refused_everywhere(url: str, queue: skiplock.Queue, value: Any) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="delay"):
        queue.enqueue("x", delay=value)
    with pytest.raises(skiplock.ConfigurationError, match="delay"):
        queue.enqueue_many(["x"], delay=value)
    assert queue.stats().pending + queue.stats().scheduled == 0
    queue.enqueue("x", max_attempts=3)
    with pytest.raises(skiplock.ConfigurationError, match="lease"):
        queue.claim(lease=value)
    [job] = queue.claim(lease=30)
    with pytest.raises(skiplock.ConfigurationError, match="lease"):
        queue.heartbeat(job, lease=value)
    with pytest.raises(skiplock.ConfigurationError, match="retry_in"):
        queue.fail(job, "boom", retry_in=value)
    record = queue.get(job.id)
    assert record is not None and (record.status, record.attempt) == ("running", 1)
    with pytest.raises(skiplock.ConfigurationError, match="older_than"):
        prune(queue, value)
    with pytest.raises(skiplock.ConfigurationError, match="timeout"):
        skiplock.App(url).task(timeout=value)(lambda: None)
    for option in ("lease", "heartbeat", "grace", "poll_interval", "timeout"):
        with pytest.raises(skiplock.ConfigurationError, match=option):
            skiplock.Worker(queue, lambda job: None, **{option: value})


def test_worker_times_beyond_the_threading_limits_are_refused(queue: skiplock.Queue) -> None:
    # old code: poll_interval=1e10 crashed the loop, lease=1e11 the heartbeat thread
    with pytest.raises(skiplock.ConfigurationError, match="poll_interval"):
        skiplock.Worker(queue, lambda job: None, poll_interval=1e10)
    with pytest.raises(skiplock.ConfigurationError, match="lease"):
        skiplock.Worker(queue, lambda job: None, lease=1e11)
    skiplock.Worker(queue, lambda job: None, lease=86400 * 365, poll_interval=86400)


@pytest.mark.parametrize(
    "when",
    [
        datetime.max.replace(tzinfo=timezone(timedelta(hours=-5))),
        datetime.min.replace(tzinfo=timezone(timedelta(hours=5))),
    ],
)
def test_run_at_out_of_range_in_utc_is_refused(queue: skiplock.Queue, when: datetime) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="run_at"):
        queue.enqueue("x", run_at=when)
    with pytest.raises(skiplock.ConfigurationError, match="run_at"):
        queue.enqueue_many(["x"], run_at=when)
    assert queue.stats().scheduled + queue.stats().pending == 0


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=too_long, sign=st.sampled_from([1, -1]))
def test_any_too_long_duration_is_a_configuration_error(
    queue: skiplock.Queue, value: Any, sign: int
) -> None:
    with pytest.raises(skiplock.ConfigurationError):
        queue.enqueue("x", delay=sign * value)
    with pytest.raises(skiplock.ConfigurationError):
        queue.claim(lease=sign * value)
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.Worker(queue, lambda job: None, poll_interval=sign * value)
    assert queue.stats().pending + queue.stats().scheduled == 0
