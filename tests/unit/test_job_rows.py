"""A claim's rows read as tuples (``Job.reader``, :class:`~skiplock._core.sql.Tuples`)
build the same job as the same row read as a dict (``Job.from_row``)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from skiplock import Job, PayloadError
from skiplock._core.sql import Tuples

ROW = {
    "id": 3,
    "queue": "default",
    "payload": '{"n":1}',
    "priority": 0,
    "status": "running",
    "attempt": 2,
    "max_attempts": 5,
    "run_at": datetime(2026, 12, 4, 22, 0, tzinfo=timezone.utc),
    "lease_until": datetime(2026, 12, 4, 22, 0, 30),  # naive: UTC, made aware
    "idempotency_key": "3f8c1d2e-0000-4000-8000-000000000000",
    "dedupe_key": None,
    "last_error": "ValueError: once",
    "result": None,
    "created_at": datetime(2026, 12, 4, 21, 59, tzinfo=timezone.utc),
    "cancel_requested": True,
    "order_key": "k",
    "claim_id": 99,
    "headers": '{"trace": "t1"}',
    "snoozes": 1,
    "waited_us": 1500,
    "has_parents": None,  # a claim's own columns, not the job's
    "key_rate": None,
}


def test_a_tuple_row_builds_the_job_its_dict_row_builds() -> None:
    rows = Tuples.of([ROW, {**ROW, "id": 4, "headers": None, "waited_us": None}])
    read = Job.reader(rows.names)  # finished_at and progress are not among the columns
    jobs = [read(values) for values in rows.rows]
    assert jobs == [Job.from_row(row) for row in rows.dicts()]
    first = jobs[0]
    assert (first.id, first.payload, first.headers, first.waited) == (
        3,
        {"n": 1},
        {"trace": "t1"},
        0.0015,
    )
    assert first.lease_until == datetime(2026, 12, 4, 22, 0, 30, tzinfo=timezone.utc)
    assert first.cancel_requested and first.finished_at is None and first.progress is None
    assert jobs[1].headers == {} and jobs[1].waited is None


def test_every_column_present_and_a_required_one_missing() -> None:
    full = {**ROW, "finished_at": None, "progress": '{"p": 1}'}
    rows = Tuples.of([full])
    assert Job.reader(rows.names)(rows.rows[0]) == Job.from_row(full)
    assert Job.reader(rows.names)(rows.rows[0]).progress == {"p": 1}
    with pytest.raises(KeyError):
        Job.reader([name for name in ROW if name != "attempt"])


def test_a_payload_that_cannot_be_decoded_raises_as_from_row_does() -> None:
    rows = Tuples.of([{**ROW, "payload": "{not json"}])
    with pytest.raises(PayloadError):
        Job.reader(rows.names)(rows.rows[0])


def test_tuples_of_dict_rows_and_back() -> None:
    assert Tuples.of([]) == Tuples((), [])
    rows = Tuples.of([{"a": 1, "b": 2}, {"b": 3}])  # a missing column reads as None
    assert rows.rows == [(1, 2), (None, 3)] and rows.column("b") == [2, 3]
    assert rows.column("c") == [None, None]
    assert Tuples(("a",), [(1,)]).dicts() == [{"a": 1}]
