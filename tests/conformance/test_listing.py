"""Seeing what the queue holds: ``list_jobs`` filters, orders newest first and pages by id."""

from __future__ import annotations

from typing import Any

import pytest

import skiplock


def _fill(q: skiplock.Queue) -> dict[str, list[int]]:
    """Jobs in every state, on two queues; ids by state."""
    ids = {"pending": q.enqueue_many([{"n": i} for i in range(5)], queue="a")}
    ids["pending"] += q.enqueue_many([{"n": i} for i in range(3)], queue="b", max_attempts=1)
    done, failed, running = q.claim(queues=["b"], limit=3)
    q.complete(done, result={"ok": True})
    q.fail(failed, ValueError("no such user 'bob'"))
    ids["pending"] = [i for i in ids["pending"] if i not in (done.id, failed.id, running.id)]
    ids.update(done=[done.id], failed=[failed.id], running=[running.id])
    ids["cancelled"] = [ids["pending"].pop()]
    assert q.cancel(ids["cancelled"][0]) == "cancelled"
    return ids


def test_lists_newest_first_with_every_field(queue: skiplock.Queue) -> None:
    ids = _fill(queue)
    jobs = queue.list_jobs()
    assert [j.id for j in jobs] == sorted(
        (i for group in ids.values() for i in group), reverse=True
    )
    (failed,) = [j for j in jobs if j.status == "failed"]
    assert failed.last_error == "ValueError: no such user 'bob'" and failed.queue == "b"
    assert failed.finished_at is not None and failed.attempt == 1
    (done,) = [j for j in jobs if j.status == "done"]
    assert done.result == {"ok": True}
    assert queue.get(done.id) == done


def test_filters_by_status_and_queue(queue: skiplock.Queue) -> None:
    ids = _fill(queue)
    assert [j.id for j in queue.list_jobs(status="failed")] == ids["failed"]
    both = queue.list_jobs(status=["done", "failed"])
    assert sorted(j.id for j in both) == sorted(ids["done"] + ids["failed"])
    assert {j.queue for j in queue.list_jobs(queue="a")} == {"a"}
    assert len(queue.list_jobs(queue="a")) == 5
    assert [j.id for j in queue.list_jobs(status="cancelled")] == ids["cancelled"]
    assert len(queue.list_jobs(status="pending", queue="a")) == 4
    assert queue.list_jobs(queue="b", status="pending") == []
    assert queue.list_jobs(queue="nobody") == []


def test_pages_by_before_id_never_repeat_or_skip(queue: skiplock.Queue) -> None:
    ids = queue.enqueue_many(range(23))
    seen: list[int] = []
    before = None
    while True:
        page = queue.list_jobs(limit=5, before_id=before)
        if not page:
            break
        assert len(page) <= 5
        seen += [j.id for j in page]
        before = page[-1].id
        queue.enqueue("meanwhile")  # newer jobs do not shift the pages already read
    assert seen == sorted(ids, reverse=True)


def test_reads_inside_the_callers_transaction(queue: skiplock.Queue) -> None:
    with queue.transaction() as tx:
        job_id = tx.enqueue("mine")
        assert [j.id for j in queue.list_jobs(conn=tx.connection)] == [job_id]
    assert [j.id for j in queue.list_jobs()] == [job_id]


@pytest.mark.one_table
@pytest.mark.parametrize(
    "bad",
    [
        {"status": "lost"},
        {"status": []},
        {"status": 3},
        {"status": ["done", None]},
        {"queue": ""},
        {"queue": 7},
        {"limit": 0},
        {"limit": 1001},
        {"limit": True},
        {"before_id": 0},
        {"before_id": "9"},
        {"before_id": 2**63},
    ],
)
def test_bad_arguments_are_configuration_errors(queue: skiplock.Queue, bad: dict[str, Any]) -> None:
    with pytest.raises(skiplock.ConfigurationError):
        queue.list_jobs(**bad)
