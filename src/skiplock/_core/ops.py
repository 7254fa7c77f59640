"""Sans-I/O operations: what a dialect asks of a connection."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "COMMIT",
    "LASTROWID",
    "NOTHING",
    "ROLLBACK",
    "ROWCOUNT",
    "ROWS",
    "TUPLES",
    "Control",
    "Copy",
    "ErrorInfo",
    "Op",
    "Request",
    "Statement",
    "StatementError",
    "Tuples",
]

T = TypeVar("T")

#: what a :class:`Statement` wants back
NOTHING, ROWS, ROWCOUNT, LASTROWID, TUPLES = 0, 1, 2, 3, 4

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Tuples:
    """Rows as tuples: the column *names*, in order, and a tuple of values per row."""

    names: tuple[str, ...]
    rows: list[tuple[Any, ...]]

    @classmethod
    def of(cls, rows: list[Row]) -> Tuples:
        """Dict rows as tuples of the first row's columns."""
        names = tuple(rows[0]) if rows else ()
        return cls(names, [tuple(map(row.get, names)) for row in rows])

    def dicts(self) -> list[Row]:
        names = self.names
        return [dict(zip(names, row, strict=True)) for row in self.rows]

    def column(self, name: str) -> list[Any]:
        """Every row's value of column *name* (None for each when there is no such column)."""
        if name not in self.names:
            return [None] * len(self.rows)
        i = self.names.index(name)
        return [row[i] for row in self.rows]


@dataclass(frozen=True, slots=True)
class Statement:
    """Run *sql* with *params* bound; answer with what *want* names."""

    sql: str
    params: Mapping[str, Any] | None = None
    want: int = ROWS


@dataclass(frozen=True, slots=True)
class Copy:
    """``COPY … FROM STDIN`` of *rows* (tuples in the statement's column order)."""

    sql: str
    rows: Iterable[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Control:
    """End the transaction on skiplock's own connection: ``commit`` or ``rollback``."""

    action: str


COMMIT = Control("commit")
ROLLBACK = Control("rollback")

Request = Statement | Copy | Control
#: an operation: yields requests, receives their results, returns its value
Op = Generator[Request, Any, T]


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What an adapter read from a driver's exception, for the dialect to classify."""

    codes: frozenset[int | str] = field(default_factory=frozenset)
    kind: str = "other"
    message: str = ""

    def number(self) -> int:
        """The first integer code, or 0."""
        return next((c for c in self.codes if isinstance(c, int)), 0)

    def state(self) -> str:
        """The first text code (a SQLSTATE), or ''."""
        return next((c for c in self.codes if isinstance(c, str)), "")


class StatementError(Exception):
    """A request failed in the driver (thrown into the operation)."""

    def __init__(self, info: ErrorInfo, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.info = info
        self.cause = cause
