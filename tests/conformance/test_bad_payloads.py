"""Payloads: too deep or with keys JSON cannot keep are refused before anything is written,
and a stored payload that cannot be decoded fails its own job only, never its batch or the
worker."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import pytest

import skiplock
from skiplock._core.checks import MAX_DEPTH

from .conftest import wait_until


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):  # depth levels of lists
        value = [value]
    return value


def in_a_deep_stack(levels: int, fn: Any) -> Any:
    """Call *fn* with *levels* frames of our own below it (a caller's deep stack)."""
    return fn() if levels == 0 else in_a_deep_stack(levels - 1, fn)


def test_depth_is_bounded_whatever_the_callers_stack(queue: skiplock.Queue) -> None:
    # Old code: 990 levels pass from a shallow stack (Python's recursion limit is what
    # bounded it), and the same payload fails from a deeper one.
    for depth in (MAX_DEPTH + 1, 990, 5000):
        with pytest.raises(skiplock.PayloadError, match=r"nested more than|Recursion"):
            queue.enqueue(nested(depth))
        with pytest.raises(skiplock.PayloadError):
            queue.enqueue_many(["fine", {"k": nested(depth)}])
    assert queue.stats().pending == 0
    deepest = nested(MAX_DEPTH)
    limit = sys.getrecursionlimit()
    job_id = in_a_deep_stack(limit - MAX_DEPTH - 200, lambda: queue.enqueue(deepest))
    [job] = queue.claim()
    assert job.id == job_id and job.payload == deepest
    with pytest.raises(skiplock.PayloadError, match="nested more than"):
        queue.complete(job, result={"r": nested(MAX_DEPTH)})
    queue.complete(job, result=nested(MAX_DEPTH))


@pytest.mark.one_table
@pytest.mark.parametrize(
    "payload",
    [{1: "a", "1": "b"}, {1: "a"}, {None: 1}, {True: 1}, {1.5: 2}, [{"ok": {2: "x"}}]],
)
def test_keys_that_are_not_strings_are_refused(queue: skiplock.Queue, payload: Any) -> None:
    with pytest.raises(skiplock.PayloadError, match="key that is not a string"):
        queue.enqueue(payload)
    with pytest.raises(skiplock.PayloadError, match="key that is not a string"):
        queue.enqueue_many([{"a": 1}, payload])
    assert queue.stats().pending == 0
    queue.enqueue("x")
    [job] = queue.claim()
    with pytest.raises(skiplock.PayloadError, match="key that is not a string"):
        queue.complete(job, result=payload)
    record = queue.get(job.id)
    assert record is not None and record.status == "running"


def spoil(queue: skiplock.Queue, job_id: int, stored: str) -> None:
    """Write *stored* as the job's payload with raw SQL, behind skiplock's back."""
    table = queue.dialect.quote(queue.table.name)
    with queue.transaction() as tx:
        tx.execute(
            f"UPDATE {table} SET payload = %(p)s WHERE id = %(id)s", {"p": stored, "id": job_id}
        )


def stored_outcome(queue: skiplock.Queue, job_id: int) -> tuple[str, int, str]:
    """status, attempt and last_error read with raw SQL (get() decodes the payload)."""
    table = queue.dialect.quote(queue.table.name)
    conn = queue.connection()
    try:
        cur = conn.cursor()
        cur.execute(
            f"SELECT status, attempt, last_error FROM {table} WHERE id = %(id)s", {"id": job_id}
        )
        status, attempt, error = cur.fetchone()
        cur.close()
        conn.rollback()
    finally:
        conn.close()
    return str(status), int(attempt), str(error)


# valid JSON, deeper than Python can decode: 5,000 levels decode on Python 3.13 (its json
# module counts against a C recursion limit of 10,000), 10,000 raise RecursionError on 3.10
# to 3.13; PostgreSQL's jsonb takes 12,000 but not 20,000 (max_stack_depth 2 MB). skiplock
# reads the depth first and never decodes it: a finalizer that the garbage collector ran
# in the decoder's deepest frames failed, and so did pytest's hook reporting it (Python
# 3.11, the installed package's conformance run)
TOO_DEEP = "[" * 12_000 + "]" * 12_000


def test_an_undecodable_payload_fails_alone_in_its_claim_batch(queue: skiplock.Queue) -> None:
    ids = queue.enqueue_many([1, 2, 3, 4], max_attempts=5)
    spoil(queue, ids[1], TOO_DEEP)
    jobs = queue.claim(limit=10)
    assert sorted(j.payload for j in jobs) == [1, 3, 4]
    stats = queue.stats()
    assert (stats.failed, stats.running) == (1, 3)
    assert not queue.complete_many(jobs)
    status, attempt, error = stored_outcome(queue, ids[1])
    assert (status, attempt) == ("failed", 1)
    assert "payload cannot be decoded" in error and f"nested more than {MAX_DEPTH}" in error
    with pytest.raises(skiplock.PayloadError, match="cannot be decoded"):
        queue.get(ids[1])


@pytest.mark.parametrize(
    ("stored", "decodes"),
    [
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, True),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), False),
        ('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), False),
        # brackets inside strings are text, escaped quotes and all
        ('["' + "[" * 500 + '", "\\"' + "{" * 500 + '"]', True),
        ("[" + "[1], " * 500 + "2]", True),
    ],
    ids=["100-lists", "101-lists", "101-objects", "brackets-in-strings", "wide"],
)
def test_a_stored_payload_decodes_to_the_depth_an_enqueue_accepts(
    queue: skiplock.Queue, stored: str, decodes: bool
) -> None:
    [job_id] = queue.enqueue_many(["placeholder"])
    spoil(queue, job_id, stored)
    if decodes:
        record = queue.get(job_id)
        assert record is not None and record.payload == json.loads(stored)
    else:
        with pytest.raises(skiplock.PayloadError, match=f"nested more than {MAX_DEPTH}"):
            queue.get(job_id)


def test_the_worker_survives_an_undecodable_payload(
    queue: skiplock.Queue, workers: list[skiplock.Worker]
) -> None:
    ran: list[Any] = []
    seen = threading.Lock()

    def handler(job: skiplock.Job) -> None:
        with seen:
            ran.append(job.payload)

    ids = queue.enqueue_many(["a", "b", "c"], max_attempts=5)
    spoil(queue, ids[0], TOO_DEEP)
    w = skiplock.Worker(queue, handler, concurrency=4, lease=30, poll_interval=0.1)
    workers.append(w.start())
    wait_until(lambda: queue.stats().done == 2, timeout=30, what="the good jobs done")
    stats = queue.stats()
    assert (stats.failed, stats.pending, stats.running) == (1, 0, 0)
    # still alive: a job enqueued afterwards runs
    queue.enqueue("later")
    wait_until(lambda: queue.stats().done == 3, timeout=30, what="a later job done")
    assert sorted(ran) == ["b", "c", "later"]
    assert stored_outcome(queue, ids[0])[0] == "failed"


@pytest.mark.parametrize(
    "payload",
    [float("nan"), float("inf"), -float("inf"), {"x": [1, float("nan")]}, {"n": 1e308 * 10}],
)
def test_nan_and_infinity_are_payload_errors_and_nothing_is_written(
    queue: skiplock.Queue, payload: Any
) -> None:
    # Python's json writes NaN / Infinity, which is not JSON and no database stores alike
    with pytest.raises(skiplock.PayloadError, match="finite numbers"):
        queue.enqueue(payload)
    with pytest.raises(skiplock.PayloadError):
        queue.enqueue_many([{"fine": 1}, payload])
    with pytest.raises(skiplock.PayloadError):
        queue.enqueue(payload, dedupe_key="nan-key")
    assert queue.stats().pending == 0 and queue.list_jobs() == []
    queue.enqueue({"ok": 1})
    [job] = queue.claim(limit=1)
    with pytest.raises(skiplock.PayloadError):
        queue.complete(job, result=payload)
    assert (queue.get(job.id) or job).status == "running"
