"""Bad input ends in skiplock's own errors with helpful messages, and writes nothing."""

from __future__ import annotations

import math
import sys

import pytest

import skiplock


@pytest.mark.parametrize(
    "bad",
    ["x'; DROP TABLE jobs; --", 'a"b', "a`b", "a;b", "a b", "", "1abc", "a.b.c", "a" * 49, "é"],
)
def test_unsafe_table_names_are_refused(url: str, bad: str) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="unsafe table name"):
        skiplock.connect(url, table=bad)


@pytest.mark.one_table
@pytest.mark.parametrize(
    "payload",
    [object(), {1, 2}, math.nan, math.inf, {"k": b"bytes"}, {(1, 2): "tuple key"}],
)
def test_non_json_payload_is_a_type_error_and_nothing_is_written(
    queue: skiplock.Queue, payload: object
) -> None:
    with pytest.raises(TypeError, match="not JSON") as info:
        queue.enqueue(payload)
    assert isinstance(info.value, skiplock.PayloadError)
    with pytest.raises(skiplock.PayloadError):
        queue.enqueue_many(["fine", payload])
    assert queue.stats().pending == 0


def test_circular_payload_is_refused(queue: skiplock.Queue) -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(skiplock.PayloadError):
        queue.enqueue(loop)


def test_non_json_result_changes_nothing(queue: skiplock.Queue) -> None:
    queue.enqueue("x")
    [job] = queue.claim()
    with pytest.raises(skiplock.PayloadError):
        queue.complete(job, result=object())
    record = queue.get(job.id)
    assert record is not None and record.status == "running"
    queue.complete(job, result=[1, "two", None, True, 2.5])
    record = queue.get(job.id)
    assert record is not None and record.result == [1, "two", None, True, 2.5]


@pytest.mark.one_table
@pytest.mark.parametrize(
    "payload",
    [
        None,
        "",
        "quote ' and \" and ; -- and \\",
        "nul \x00 and surrogate \ud800 and emoji \U0001f600",
        {"nested": [[[[[{"deep": True}]]]]]},
        2**80,
        -0.0,
        "x" * 200_000,
        {"ü": "ß", "": 0},
    ],
)
def test_hostile_payloads_round_trip(queue: skiplock.Queue, payload: object) -> None:
    job_id = queue.enqueue(payload)
    record = queue.get(job_id)
    assert record is not None and record.payload == payload


def test_hostile_queue_and_dedupe_names_are_values_not_sql(queue: skiplock.Queue) -> None:
    name = "q'; DROP TABLE x; --"
    job_id = queue.enqueue(1, queue=name, dedupe_key="k' OR '1'='1")
    assert queue.enqueue(2, queue=name, dedupe_key="k' OR '1'='1") == job_id
    [job] = queue.claim(queues=[name])
    assert job.queue == name


@pytest.mark.one_table
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"queue": ""}, "queue"),
        ({"queue": 5}, "queue"),
        ({"queue": "a\x00b"}, "control"),
        ({"priority": "high"}, "priority"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"delay": -1}, "delay"),
        ({"delay": math.nan}, "delay"),
        ({"delay": 1, "run_at": None}, None),
        ({"dedupe_key": ""}, "dedupe_key"),
    ],
)
def test_bad_enqueue_options(
    queue: skiplock.Queue, kwargs: dict[str, object], match: str | None
) -> None:
    if match is None:
        queue.enqueue("fine", **kwargs)  # type: ignore[arg-type]
        return
    with pytest.raises(skiplock.ConfigurationError, match=match):
        queue.enqueue("x", **kwargs)  # type: ignore[arg-type]


def test_naive_run_at_is_refused(queue: skiplock.Queue) -> None:
    from datetime import datetime

    with pytest.raises(skiplock.ConfigurationError, match="timezone-aware"):
        queue.enqueue("x", run_at=datetime(2030, 1, 1))


def test_bad_claim_options(queue: skiplock.Queue) -> None:
    with pytest.raises(skiplock.ConfigurationError):
        queue.claim(limit=0)
    with pytest.raises(skiplock.ConfigurationError):
        queue.claim(lease=0)
    with pytest.raises(skiplock.ConfigurationError):
        queue.claim(queues=[])


def test_wrong_password_is_not_shown(url: str) -> None:
    from skiplock.drivers.url import parse_url

    u = parse_url(url)
    port = f":{u.port}" if u.port else ""
    secret = "s3cr3t-Pa55"
    q = skiplock.connect(f"{u.scheme}://nosuchuser:{secret}@{u.host}{port}/{u.database}")
    with pytest.raises(skiplock.BackendError) as info:
        q.ping()
    assert secret not in str(info.value)
    assert secret not in repr(q)


def test_missing_driver_names_the_extra(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    q = skiplock.connect(url)
    module = q.dialect.driver_module
    for name in list(sys.modules):
        if name == module or name.startswith(module + ".") or name == module.split(".")[0]:
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module.split(".")[0], None)
    q2 = skiplock.connect(url)
    with pytest.raises(skiplock.ConfigurationError, match=r"pip install 'skiplock\["):
        q2.ping()
