"""Times: a job's timestamps are aware datetimes in UTC, and skiplock's own sessions read
the database's clock in UTC, whatever zone the server would give a session."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import pytest

import skiplock

#: the session zone a connection is given before skiplock sets its own (+05:45: no whole
#: hour, so a time read in it and taken for UTC would be off by a visible amount)
ZONE = "Asia/Kathmandu"

SESSION_ZONE = {
    "postgresql": ("SELECT current_setting('TimeZone')", "UTC"),
    "mysql": ("SELECT @@session.time_zone", "+00:00"),
    "mssql": None,  # DATETIME2 has no zone: every statement names SYSUTCDATETIME()
}


def test_own_sessions_are_in_utc_and_job_times_are_utc(
    make_queue: Callable[..., skiplock.Queue], monkeypatch: pytest.MonkeyPatch
) -> None:
    # libpq sends PGTZ as the new session's TimeZone; MySQL sessions start in the server's
    monkeypatch.setenv("PGTZ", ZONE)
    q = make_queue()
    zone = SESSION_ZONE[q.dialect.name]
    with q.transaction() as tx:
        if zone is not None:
            sql, want = zone
            assert tx.fetchone(sql) == (want,)
    job_id = q.enqueue({"n": 1})
    [job] = q.claim(lease=60)
    record = q.get(job_id)
    assert record is not None
    for t in (job.run_at, job.lease_until, job.created_at, record.lease_until, record.created_at):
        assert t is not None and t.tzinfo is timezone.utc
    assert job.lease_until is not None and job.created_at is not None
    assert 55 < (job.lease_until - job.created_at).total_seconds() < 65
    assert job.run_at == job.lease_until == record.lease_until
    # the right instant, not the session zone's wall clock taken for UTC (5 h 45 off); the
    # server's clock may differ from this machine's by a little
    assert abs((job.created_at - datetime.now(timezone.utc)).total_seconds()) < 120
