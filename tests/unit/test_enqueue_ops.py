"""Which one-job enqueues are one statement (:attr:`skiplock._core.calls.Call.one_statement`:
where the driver makes it free, they run in autocommit), on every dialect, against scripted
answers (:mod:`.fake_adapter`)."""

from __future__ import annotations

from typing import Any

import pytest
from skiplock.dialects import get_dialect

from skiplock._core import calls
from skiplock._core.checks import EnqueueOptions
from skiplock._core.sql import TableName
from skiplock.drivers.url import parse_url

from .fake_adapter import run_script, step

SCHEMES = ("postgresql", "mysql", "mariadb", "mssql")


def dialect(scheme: str) -> Any:
    return get_dialect(parse_url(f"{scheme}://u@h/db"), TableName.parse("jobs"))


def options(**given: Any) -> EnqueueOptions:
    return EnqueueOptions.check(queue="default", priority=0, max_attempts=3, **given)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_plain_enqueue_is_one_statement(scheme: str) -> None:
    d = dialect(scheme)
    call = calls.enqueue(d, {"n": 1}, options(delay=2), None)
    assert call.one_statement and call.make is not None
    answer = {"rows": [{"id": 7}]} if scheme in ("postgresql", "mssql") else {"count": 7}
    assert run_script(call.make(False), d.sql, [step("enqueue", **answer)]) == 7


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    "given",
    [{"key": "k"}, {"dedupe_key": "d"}, {"after": [1]}],
    ids=["key", "dedupe_key", "after"],
)
def test_an_enqueue_with_a_key_or_parents_keeps_its_transaction(
    scheme: str, given: dict[str, Any]
) -> None:
    call = calls.enqueue(dialect(scheme), {"n": 1}, options(**given), None)
    assert not call.one_statement
