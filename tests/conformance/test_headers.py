"""Job headers: text pairs stored with a job (``enqueue(..., headers=...)``), read back as
``job.headers`` on claimed jobs, ``get`` and ``list_jobs``; checked before anything is
written. Runs on the sync and the async API (BOTH_APIS)."""

from __future__ import annotations

from typing import Any

import pytest

import skiplock
from skiplock import ConfigurationError

TRACE = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "n": "ü✓"}


def test_headers_round_trip_through_claim_and_get(queue: skiplock.Queue) -> None:
    with_headers = queue.enqueue({"v": 1}, headers=TRACE)
    without = queue.enqueue({"v": 2})
    empty = queue.enqueue({"v": 3}, headers={})
    jobs = {j.id: j for j in queue.claim(limit=3)}
    assert jobs[with_headers].headers == TRACE
    assert jobs[without].headers == {} and jobs[empty].headers == {}
    record = queue.get(with_headers)
    assert record is not None and record.headers == TRACE
    listed = {j.id: j.headers for j in queue.list_jobs()}
    assert listed == {with_headers: TRACE, without: {}, empty: {}}


def test_headers_on_dedupe_and_keyed_enqueues(queue: skiplock.Queue) -> None:
    first = queue.enqueue("x", dedupe_key="d", headers={"a": "1"})
    assert queue.enqueue("x", dedupe_key="d", headers={"a": "2"}) == first
    keyed = queue.enqueue("y", key="k", headers={"b": "2"})
    assert (queue.get(first) or pytest.fail()).headers == {"a": "1"}
    assert (queue.get(keyed) or pytest.fail()).headers == {"b": "2"}


def test_headers_on_windowed_and_debounced_enqueues(queue: skiplock.Queue) -> None:
    """A window keeps the first job's headers; a debounce gives the pending job the newest
    payload and headers (docs/job-control.md)."""
    first = queue.enqueue("w", dedupe_key="win", dedupe_for=60, headers={"a": "1"})
    assert queue.enqueue("w", dedupe_key="win", dedupe_for=60, headers={"a": "2"}) == first
    assert (queue.get(first) or pytest.fail()).headers == {"a": "1"}
    bounced = queue.enqueue("v1", dedupe_key="deb", debounce=30, headers={"v": "1"})
    assert queue.enqueue("v2", dedupe_key="deb", debounce=30, headers={"v": "2"}) == bounced
    job = queue.get(bounced) or pytest.fail()
    assert (job.payload, job.headers) == ("v2", {"v": "2"})
    (many,) = queue.enqueue_many(["m"], dedupe_keys=["mk"], dedupe_for=60, headers={"m": "1"})
    assert (queue.get(many) or pytest.fail()).headers == {"m": "1"}


@pytest.mark.parametrize("n", [3, 300])  # 300: PostgreSQL writes the batch with COPY
def test_enqueue_many_gives_every_job_the_headers(queue: skiplock.Queue, n: int) -> None:
    ids = queue.enqueue_many(range(n), headers={"batch": "b1"})
    claimed = queue.claim(limit=n)
    assert sorted(j.id for j in claimed) == sorted(ids)
    assert all(j.headers == {"batch": "b1"} for j in claimed)


def test_headers_in_a_transaction(queue: skiplock.Queue) -> None:
    with queue.transaction() as tx:
        job_id = tx.enqueue("t", headers={"request-id": "r-1"})
        [many] = tx.enqueue_many(["u"], headers={"request-id": "r-2"})
    assert (queue.get(job_id) or pytest.fail()).headers == {"request-id": "r-1"}
    assert (queue.get(many) or pytest.fail()).headers == {"request-id": "r-2"}


def test_a_claim_says_how_long_the_job_waited(queue: skiplock.Queue) -> None:
    queue.enqueue("late", delay=0.3)
    queue.enqueue("now")
    [job] = queue.claim()
    assert job.payload == "now"
    assert job.waited is not None and 0 <= job.waited < 5
    assert (queue.get(job.id) or pytest.fail()).waited is None  # a claim's figure only


BAD: list[tuple[Any, str]] = [
    (["a"], "dict of str to str"),
    ({"a": 1}, "str value"),
    ({1: "a"}, "non-empty str"),
    ({"": "a"}, "non-empty str"),
    ({"a": "x" * 9000}, "at most 8192"),
    ({"a": "\ud800"}, "valid Unicode"),
]


@pytest.mark.one_table
@pytest.mark.parametrize(("headers", "message"), BAD)
def test_bad_headers_are_refused_and_nothing_is_written(
    queue: skiplock.Queue, headers: Any, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        queue.enqueue("x", headers=headers)
    with pytest.raises(ConfigurationError, match=message):
        queue.enqueue_many(["x", "y"], headers=headers)
    assert queue.list_jobs() == []
