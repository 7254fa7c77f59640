"""Nothing above ``dialects/`` names a statement: no string of the package outside
``dialects/`` is the name of a statement of ``dialects/*.sql``, but for names that are
also words of the public face (a status, a public method or keyword, an ``__all__``
entry). The dialect contract has no method that takes a statement's name. Each check is
run on a snippet of the old code too, so it cannot pass by finding nothing."""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path
from typing import get_args

from skiplock.dialects import contract

import skiplock
from skiplock import AsyncQueue, Queue
from skiplock._core.job import STATUSES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "skiplock"


def statement_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "dialects").glob("*.sql"):
        names |= set(re.findall(r"^-- name: (\w+)", path.read_text(), re.MULTILINE))
    return names


def _all_entries() -> set[str]:
    """Every name in an ``__all__`` of the package (a function may share a name)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                found |= {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
    return found


@functools.cache
def public_words() -> frozenset[str]:
    words = set(STATUSES) | set(skiplock.__all__) | _all_entries()
    for cls in (Queue, AsyncQueue):
        words |= {n for n in dir(cls) if not n.startswith("_")}
    words |= set(inspect.signature(Queue.enqueue).parameters)
    words |= set(get_args(contract.Outcome))  # the contract's own words for outcomes
    return frozenset(words | {"session"})  # (pytest's fixture scope)


def named_statements(source: str, names: set[str]) -> list[str]:
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_nothing_above_the_dialects_names_a_statement() -> None:
    names = statement_names() - public_words()
    assert "clock" in names and "live_leases" in names  # the check has something to find
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if (hits := named_statements(path.read_text(), names))
    }
    assert found == {}


def test_the_check_finds_a_statement_named() -> None:
    old = 'row = q._run("reading the clock", None, q.dialect.fetch_one_op, "clock")'
    assert named_statements(old, statement_names() - public_words()) == ["clock"]


def test_no_contract_method_takes_a_statement_name() -> None:
    methods = [
        (name, fn)
        for name, fn in inspect.getmembers(contract.Dialect, inspect.isfunction)
        if not name.startswith("_")
    ]
    assert len(methods) > 50
    generic = {"stmt", "fetch_op", "fetch_one_op", "count_op", "statements_op", "fenced", "end"}
    assert not generic & {name for name, _ in methods}
    mapping = [name for name, fn in methods if "Mapping[str, Any]" in str(inspect.signature(fn))]
    assert mapping == []
