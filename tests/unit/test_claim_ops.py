"""The claim's logic (:mod:`skiplock._core.claim`) run against scripted answers
(:mod:`.fake_adapter`): which statements each database's claim sends, in which order, and
what it makes of the rows. Unit tests of the logic, not guarantees: the conformance
suite proves those against real servers."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from skiplock.dialects import get_dialect

from skiplock._core.claim import KEY_RATE_PREFIX, ClaimParams, claim
from skiplock._core.job import Claimed
from skiplock._core.sql import ErrorInfo, StatementError, TableName
from skiplock.drivers.url import parse_url

from .fake_adapter import FakeAdapter, Step, run_script, step

TOKEN = 4242
LEASE_MS = 30_000
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def dialect(scheme: str, repair: bool = False) -> Any:
    d = get_dialect(parse_url(f"{scheme}://u@h/db"), TableName.parse("jobs"))
    if not repair:  # the key repair not due (it runs at most every 10 s)
        d.state.repair_due = float("inf")
    return d


def row(job_id: int, **values: Any) -> dict[str, Any]:
    """A claimed job's row, as a claim statement returns it."""
    out: dict[str, Any] = {
        "id": job_id,
        "queue": "default",
        "payload": json.dumps({"n": job_id}),
        "priority": 0,
        "status": "running",
        "attempt": 1,
        "max_attempts": 3,
        "run_at": NOW + timedelta(milliseconds=LEASE_MS),
        "lease_until": NOW + timedelta(milliseconds=LEASE_MS),
        "idempotency_key": f"key-{job_id}",
        "created_at": NOW,
        "order_key": None,
        "claim_id": TOKEN,
        "has_parents": False,
        "has_children": False,
        "key_rate": None,
        "key_rate_ms": None,
    }
    out.update(values)
    return out


def run(
    d: Any,
    script: list[Step],
    queues: tuple[str, ...] = ("default",),
    limit: int = 10,
    limits: dict[str, int] | None = None,
    rates: dict[str, tuple[int, int]] | None = None,
) -> Claimed:
    op = claim(d, ClaimParams(queues, limit, LEASE_MS, TOKEN), limits or {}, rates or {})
    return run_script(op, d.sql, script)


# -- PostgreSQL: one statement --------------------------------------------------------------


def test_postgresql_claims_in_one_statement_and_settles_what_it_ended() -> None:
    d = dialect("postgresql", repair=True)
    got = run(
        d,
        [
            step("key_repair", {"after": None}, rows=[{"last_key": None, "n": 0}]),
            step(
                "claim",
                {"queue": "default", "limit": 10, "lease_ms": LEASE_MS, "claim_id": TOKEN},
                rows=[
                    row(3),
                    row(1),
                    row(2, status="failed", has_children=True),  # spent attempts
                    row(4, priority=-1, order_key="k"),
                ],
            ),
            step("key_next", {"keys": ["k"]}),  # the key's next job is its head now
            step("deps_children", {"id_list": "[2]"}),  # the failed job's children settle
        ],
    )
    assert [j.id for j in got] == [4, 1, 3]  # claim order: priority, then id
    assert all(j.status == "running" and j.lease == LEASE_MS / 1000 for j in got)
    assert got.retry_in is None


def test_postgresql_claims_several_queues_with_their_own_statement() -> None:
    d = dialect("postgresql")
    script = [step("claim_queues", {"queues": ["a", "b"], "limit": 5}, rows=[row(1, queue="b")])]
    [job] = run(d, script, queues=("a", "b"), limit=5)
    assert (job.id, job.queue) == (1, "b")


def test_nothing_to_claim_is_one_statement() -> None:
    assert run(dialect("postgresql"), [step("claim")]) == []
    assert run(dialect("mysql"), [step("claim_pick")]) == []
    assert run(dialect("mssql"), [step("claim")]) == []


def test_a_job_enqueued_after_others_gets_its_parents_results() -> None:
    d = dialect("postgresql")
    script = [
        step("claim", rows=[row(5, has_parents=True), row(6)]),
        step("deps_results", {"id_list": "[5]"}, rows=[{"child": 5, "parent": 1, "result": "7"}]),
    ]
    a, b = run(d, script)
    assert (a.parent_results, b.parent_results) == ({1: 7}, {})


def test_a_row_that_cannot_be_decoded_ends_failed_and_the_batch_goes_on() -> None:
    d = dialect("postgresql")
    script = [
        step("claim", rows=[row(1, payload="{not json"), row(2)]),
        step("fail", {"id": 1, "attempt": 1, "claim_id": TOKEN}, rows=[{"has_children": True}]),
        step("deps_children", {"id_list": "[1]"}),
    ]
    assert [j.id for j in run(d, script)] == [2]


# -- MySQL, MariaDB: pick, then take ---------------------------------------------------------

DB_NOW = datetime(2026, 1, 2, 3, 4, 5)  # MySQL's UTC_TIMESTAMP(6): naive


def picked(job_id: int, **values: Any) -> dict[str, Any]:
    """A row as MySQL's pick reads it: before the claim, with the database's now."""
    before = {"status": "pending", "attempt": 0, "claim_id": None, "db_now": DB_NOW}
    return row(job_id, **{**before, **values})


def pairs(*rows: tuple[int, int]) -> str:
    return json.dumps([list(r) for r in rows])


def test_mysql_picks_then_takes_with_a_compare_and_set() -> None:
    d = dialect("mysql")
    until = DB_NOW + timedelta(milliseconds=LEASE_MS)
    got = run(
        d,
        [
            step(
                "claim_pick",
                {"queue": "default", "limit": 10},
                rows=[picked(1), picked(2, order_key="k"), picked(3, order_key="busy")],
            ),
            # keyed jobs only with their key's lock, tried without waiting: "busy" is held
            step("key_try", {"keys": '["busy", "k"]'}, rows=[{"order_key": "k"}]),
            step("key_rows", rows=[{"order_key": "busy"}, {"order_key": "k"}]),
            step(
                "claim_take",
                {"pairs": pairs((1, 0), (2, 0)), "claim_id": TOKEN, "lease_until": until},
                count=2,
            ),
            step("key_next", {"keys": '["k"]'}),  # (JSON: no arrays here)
        ],
    )
    assert [j.id for j in got] == [1, 2]
    for job in got:  # what the take wrote, without reading the rows again
        assert (job.status, job.attempt, job.claim_id) == ("running", 1, TOKEN)
        assert job.lease_until == until.replace(tzinfo=timezone.utc)


def test_mysql_keeps_only_what_its_take_changed_when_another_claim_took_rows_first() -> None:
    d = dialect("mysql")
    rival = TOKEN + 1
    got = run(
        d,
        [
            step("claim_pick", rows=[picked(1), picked(2), picked(3)]),
            step("claim_take", {"pairs": pairs((1, 0), (2, 0), (3, 0))}, count=1),
            step(
                "claim_which",
                {"ids": [1, 2, 3]},
                rows=[
                    {"id": 1, "attempt": 1, "claim_id": rival},
                    {"id": 2, "attempt": 1, "claim_id": TOKEN},
                    {"id": 3, "attempt": 1, "claim_id": rival},
                ],
            ),
        ],
    )
    assert [j.id for j in got] == [2]


def test_mysql_takes_nothing_when_its_take_matched_no_row() -> None:
    d = dialect("mysql")
    script = [step("claim_pick", rows=[picked(1), picked(2)]), step("claim_take", count=0)]
    assert run(d, script) == []


def test_mysql_ends_spent_attempts_failed_before_taking_the_others() -> None:
    d = dialect("mysql")
    spent = picked(1, status="running", attempt=3, max_attempts=3)
    got = run(
        d,
        [
            step("claim_pick", rows=[spent, picked(2)]),
            step("claim_expire", {"pairs": pairs((1, 3))}, count=1),
            step("deps_children", {"id_list": "[1]"}),
            step("claim_take", {"pairs": pairs((2, 0))}, count=1),
        ],
    )
    assert [j.id for j in got] == [2]


# -- SQL Server: one batch -------------------------------------------------------------------


def test_mssql_claims_in_one_batch_and_settles_what_it_ended() -> None:
    d = dialect("mssql")
    script = [
        step(
            "claim",
            {"queues": ["a", "b"], "limit": 10, "claim_id": TOKEN, "lease_s": 30},
            rows=[row(7, priority=1), row(8, status="failed", has_children=True), row(9)],
        ),
        step("deps_children"),
    ]
    op = claim(d, ClaimParams(("a", "b"), 10, LEASE_MS, TOKEN), {}, {})
    adapter = FakeAdapter(d.sql, script)
    got = adapter.run(op)
    assert [j.id for j in got] == [9, 7]
    # one request: the isolation level set first, then the claim, in one batch
    batch = adapter.sent[0][2].sql  # type: ignore[union-attr]
    code = [line for line in batch.splitlines() if line.strip() and not line.startswith("--")]
    assert code[0] == "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"
    assert "READPAST" in batch and "OUTPUT" in batch


# -- limits: a queue's concurrency, a queue's rate, a key's rate ------------------------------


@pytest.mark.parametrize("scheme", ["postgresql", "mssql"])
def test_a_capped_queue_is_claimed_under_its_lock_up_to_the_room_left(scheme: str) -> None:
    d = dialect(scheme)
    script = [
        step("queue_lock", {"queue": "capped"}, rows=[{"held": 1}]),
        step("queue_running", {"queue": "capped"}, rows=[{"n": 3}]),
        step("claim", {"limit": 2}, rows=[row(1, queue="capped"), row(2, queue="capped")]),
    ]
    got = run(d, script, queues=("capped",), limits={"capped": 5})
    assert [j.id for j in got] == [1, 2]


def test_a_capped_queue_gives_nothing_while_another_claim_holds_its_lock() -> None:
    d = dialect("postgresql")
    script = [step("queue_lock", rows=[{"held": 0}]), step("claim", {"queue": "free"})]
    assert run(d, script, queues=("capped", "free"), limits={"capped": 5}) == []


def test_a_full_capped_queue_leaves_room_for_the_free_ones() -> None:
    d = dialect("postgresql")
    script = [
        step("queue_lock", rows=[{"held": 1}]),
        step("queue_running", rows=[{"n": 5}]),
        step("claim", {"queue": "free", "limit": 10}, rows=[row(1, queue="free")]),
    ]
    [job] = run(d, script, queues=("capped", "free"), limits={"capped": 5})
    assert job.queue == "free"


def test_a_rated_queue_takes_the_room_of_its_window_and_logs_the_claim() -> None:
    d = dialect("postgresql")
    script = [
        step("queue_lock", {"queue": "r"}, rows=[{"held": True}]),
        step(
            "rate_window",
            {"queue": "r", "per_ms": 60_000},
            rows=[{"used": 2, "wait_ms": 500.0, "now": NOW}],
        ),
        step("claim", {"queue": "r", "limit": 1}, rows=[row(1, queue="r")]),
        step("rate_prune", {"queue": "r", "per_ms": 60_000}),
        step("rate_record", {"queue": "r", "n": 1}),
    ]
    got = run(d, script, queues=("r",), rates={"r": (3, 60_000)})
    assert [j.id for j in got] == [1]
    assert got.retry_in == 0.5  # the window is full: room once its oldest claim leaves


def test_a_full_window_claims_nothing_and_says_when_it_has_room() -> None:
    d = dialect("mysql")
    script = [
        step("queue_lock", rows=[{"1": 1}]),
        step("rate_window", rows=[{"used": 3, "wait_ms": 250.0, "now": DB_NOW}]),
    ]
    got = run(d, script, queues=("r",), rates={"r": (3, 60_000)})
    assert got == [] and got.retry_in == 0.25


def test_a_rated_queue_with_a_cap_counts_its_running_jobs_too() -> None:
    d = dialect("postgresql")
    script = [
        step("queue_lock", rows=[{"held": True}]),
        step("rate_window", rows=[{"used": 0, "wait_ms": None, "now": NOW}]),
        step("queue_running", rows=[{"n": 2}]),  # the cap is reached: no claim
    ]
    got = run(d, script, queues=("r",), limits={"r": 2}, rates={"r": (3, 60_000)})
    assert got == [] and got.retry_in is None


def key_lock(key: str) -> str:
    return KEY_RATE_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def test_a_keys_rate_admits_what_its_window_has_room_for_and_gives_back_the_rest() -> None:
    d = dialect("postgresql")
    keyed = {"order_key": "k", "key_rate": 1, "key_rate_ms": 60_000}
    until = NOW + timedelta(milliseconds=LEASE_MS)
    got = run(
        d,
        [
            step("claim", {"limit": 3}, rows=[row(1, **keyed), row(2, **keyed), row(3)]),
            step("key_next", {"keys": ["k"]}),
            step("queue_lock", {"queue": key_lock("k")}, rows=[{"held": True}]),
            step(
                "rate_window", {"per_ms": 60_000}, rows=[{"used": 0, "wait_ms": None, "now": NOW}]
            ),
            step("key_admit", {"ids": [1], "claim_id": TOKEN, "lease_until": until}),
            step("rate_prune", {"queue": key_lock("k")}),
            step("rate_record", {"queue": key_lock("k"), "n": 1}),
            step("key_defer", {"ids": [2], "claim_id": TOKEN, "delay_ms": 60_000}),
            # what went back left room: one more claim of the free queues for it
            step("claim", {"limit": 1}, rows=[row(4)]),
        ],
        limit=3,
    )
    assert [j.id for j in got] == [1, 3, 4]
    assert got[0].lease_until == until  # its lease starts at its admission
    assert got.retry_in == 60.0


def test_a_keys_rate_gives_every_job_back_while_another_claim_holds_the_key() -> None:
    d = dialect("mysql")
    keyed = {"order_key": "k", "key_rate": 5, "key_rate_ms": 1000}
    got = run(
        d,
        [
            step("claim_pick", rows=[picked(1, **keyed)]),
            step("key_try", rows=[{"order_key": "k"}]),
            step("claim_take", count=1),
            step("key_next"),
            # MySQL's claim lock is a row: found, but held by another claim
            step("queue_lock"),
            step("queue_lock_exists", rows=[{"1": 1}]),
            step("key_defer", {"ids": [1], "delay_ms": 10}),
            step("claim_pick"),  # the room given back, claimed again: nothing due
        ],
    )
    assert got == [] and got.retry_in == 0.01


# -- errors ----------------------------------------------------------------------------------


def test_an_error_mid_claim_leaves_the_operation_at_that_statement() -> None:
    d = dialect("mysql")
    deadlock = ErrorInfo(frozenset({1213}), "operational", "Deadlock found")
    script = [
        step("claim_pick", rows=[picked(1)]),
        step("claim_take", error=deadlock),
        step("key_next"),  # never sent
    ]
    op = claim(d, ClaimParams(("default",), 10, LEASE_MS, TOKEN), {}, {})
    with pytest.raises(StatementError) as caught:
        run_script(op, d.sql, script)
    assert caught.value.info.number() == 1213
    assert d.classify(caught.value.info) == (True, False)  # retried by the queue
