"""A fake database for unit tests of the sans-I/O operations (:mod:`skiplock._core.sql`).

:class:`FakeAdapter` stands where a driver's adapter stands: the real loop
(``skiplock.drivers.base.Adapter.run``) drives an operation over it, and it answers each
request from a script of :class:`Step` s, after checking that the request is the step's
statement (by its name in the dialect's ``.sql`` file, read back from the text) with the
step's parameters. A step may answer with rows, a row count or an error. These tests show
what the logic asks and does with the answers; what a real server does is the
conformance suite's to prove.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from skiplock._core.sql import (
    LASTROWID,
    NOTHING,
    ROWCOUNT,
    ROWS,
    TUPLES,
    Control,
    ErrorInfo,
    Op,
    Request,
    Statement,
    Tuples,
)
from skiplock.drivers.base import Adapter

__all__ = ["FakeAdapter", "FakeError", "Step", "run_script", "step"]

T = TypeVar("T")

#: list parameters as a dialect without arrays expands them: %(ids__0)s, %(ids__1)s, …
_EXPANDED = re.compile(r"%\((\w+)__0\)s(?:, %\(\1__\d+\)s)*")
_ITEM = re.compile(r"(\w+)__(\d+)$")


@dataclass(frozen=True)
class Step:
    """One request the script expects, and its answer."""

    #: the statement's name in the dialect's ``.sql`` file, or ``COMMIT`` / ``ROLLBACK``
    name: str
    #: parameters the request must bind (others may be there too)
    params: Mapping[str, Any] = field(default_factory=dict)
    #: the rows answered (``ROWS``, ``TUPLES``; their number for ``ROWCOUNT`` when no count)
    rows: Sequence[Mapping[str, Any]] = ()
    #: the row count (or last row id) answered
    count: int | None = None
    #: the driver error the request raises instead
    error: ErrorInfo | None = None


def step(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    rows: Sequence[Mapping[str, Any]] = (),
    count: int | None = None,
    error: ErrorInfo | None = None,
) -> Step:
    return Step(name, params or {}, rows, count, error)


class FakeError(Exception):
    """What the fake driver raises for a step with an error."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info.message or "scripted error")
        self.info = info


class FakeAdapter:
    """Answers requests from *script*; *statements* are the dialect's, by name."""

    errors = (FakeError,)

    def __init__(self, statements: Mapping[str, str], script: Sequence[Step]) -> None:
        self.names = {_shape(sql): name for name, sql in statements.items()}
        self.script = list(script)
        #: the requests received, as (name, parameters, request)
        self.sent: list[tuple[str, dict[str, Any], Request]] = []

    def name_of(self, request: Request) -> str:
        if isinstance(request, Control):
            return request.action.upper()
        assert isinstance(request, Statement), request
        shape = _shape(request.sql)
        assert shape in self.names, f"not a statement of the dialect: {request.sql[:200]}"
        return self.names[shape]

    def execute(self, request: Request) -> Any:
        name = self.name_of(request)
        params = _grouped(request.params if isinstance(request, Statement) else None)
        self.sent.append((name, params, request))
        n = len(self.sent)
        assert self.script, f"request {n} ({name}) is past the end of the script"
        expected = self.script.pop(0)
        assert name == expected.name, f"request {n}: {name} sent, {expected.name} expected"
        for key, value in expected.params.items():
            assert key in params, f"request {n} ({name}): no parameter {key!r}"
            assert params[key] == value, f"request {n} ({name}) {key}: {params[key]!r}"
        if expected.error is not None:
            raise FakeError(expected.error)
        if not isinstance(request, Statement):
            return None
        rows = [dict(r) for r in expected.rows]
        want = request.want
        if want == ROWS:
            return rows
        if want == TUPLES:
            return Tuples.of(rows)  # as an adapter that reads dicts answers
        if want in (ROWCOUNT, LASTROWID):
            return len(rows) if expected.count is None else expected.count
        assert want == NOTHING
        return None

    def error_info(self, exc: BaseException) -> ErrorInfo:
        assert isinstance(exc, FakeError)
        return exc.info

    def run(self, op: Op[T]) -> T:
        """Drive *op* with the real loop; its value, once every step of the script ran."""
        value = Adapter.run(self, op)  # type: ignore[arg-type]
        left = [s.name for s in self.script]
        assert not left, f"the operation ended before the script did: {left}"
        return value


def run_script(op: Op[T], statements: Mapping[str, str], script: Sequence[Step]) -> T:
    """Run *op* over a :class:`FakeAdapter` of *script*."""
    return FakeAdapter(statements, script).run(op)


def _shape(sql: str) -> str:
    """A statement's text as recognised: comments and runs of spaces gone, expanded list
    parameters folded back into one."""
    lines = (line.split("--")[0] for line in sql.splitlines())
    text = re.sub(r"\s+", " ", " ".join(lines)).strip()
    return _EXPANDED.sub(r"%(\1)s", text)


def _grouped(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The bound parameters, the items of an expanded list (``ids__0``, …) as one list."""
    out: dict[str, Any] = {}
    items: dict[str, dict[int, Any]] = {}
    for key, value in (params or {}).items():
        m = _ITEM.match(key)
        if m:
            items.setdefault(m[1], {})[int(m[2])] = value
        else:
            out[key] = value
    for key, values in items.items():
        out[key] = [values[i] for i in sorted(values)]
    return out
