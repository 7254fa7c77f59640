"""dedupe_key: one active job per key; a new one once it is finished."""

from __future__ import annotations

import threading

import skiplock


def test_dedupe_returns_the_active_job(queue: skiplock.Queue) -> None:
    first = queue.enqueue({"v": 1}, dedupe_key="report-42")
    assert queue.enqueue({"v": 2}, dedupe_key="report-42") == first
    [job] = queue.claim()
    assert queue.enqueue({"v": 3}, dedupe_key="report-42") == first  # running still counts
    queue.complete(job)
    second = queue.enqueue({"v": 4}, dedupe_key="report-42")
    assert second != first
    record = queue.get(second)
    assert record is not None and record.payload == {"v": 4}
    assert queue.enqueue("other", dedupe_key="report-43") not in (first, second)


def test_dedupe_after_failure_allows_a_new_job(queue: skiplock.Queue) -> None:
    first = queue.enqueue("x", dedupe_key="k", max_attempts=1)
    [job] = queue.claim()
    assert queue.fail(job, "no") == "failed"
    assert queue.enqueue("x", dedupe_key="k") != first


def test_dedupe_under_concurrent_enqueues(queue: skiplock.Queue) -> None:
    results: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def enqueue() -> None:
        try:
            start.wait()
            for _ in range(5):
                results.append(queue.enqueue("same", dedupe_key="only-one"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=enqueue) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert len(results) == 40 and len(set(results)) == 1
    assert queue.stats().pending == 1
