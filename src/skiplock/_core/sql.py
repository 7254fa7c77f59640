"""What the core asks of a connection, with no I/O: the operations (generators that yield
:class:`Statement`, :class:`Copy` and :class:`Control` requests and receive their results),
the named SQL statements of a dialect's ``.sql`` file, and the table's identifiers."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TypeVar

from ..errors import ConfigurationError

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
    "TableName",
    "Tuples",
    "load_statements",
    "parse_statements",
    "render_statements",
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


# -- named statements and identifiers ------------------------------------------------------

_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: room is left in 63/64/128-character identifier limits for index-name suffixes
MAX_IDENT = 48


@dataclass(frozen=True)
class TableName:
    """A checked table name, optionally ``schema.table``."""

    schema: str | None
    name: str

    @classmethod
    def parse(cls, text: object) -> TableName:
        if not isinstance(text, str):
            raise ConfigurationError(f"the table name must be a string, not {type(text).__name__}")
        parts = text.split(".")
        if len(parts) > 2 or not all(_IDENT.fullmatch(p) and len(p) <= MAX_IDENT for p in parts):
            raise ConfigurationError(
                f"unsafe table name {text!r}: use letters, digits and underscores, starting "
                f"with a letter or underscore, at most {MAX_IDENT} characters, optionally "
                "as schema.table"
            )
        if len(parts) == 2:
            return cls(schema=parts[0], name=parts[1])
        return cls(schema=None, name=parts[0])

    @property
    def version_table(self) -> str:
        """The bare name of the table that records this table's schema version."""
        return self.name + "_schema"

    @property
    def ticks_table(self) -> str:
        """The bare name of the periodic ledger: one row per tick enqueued."""
        return self.name + "_ticks"

    @property
    def counters_table(self) -> str:
        """The bare name of the table's running totals (``pruned``): one row per name."""
        return self.name + "_counters"

    @property
    def queues_table(self) -> str:
        """The bare name of the per-queue controls (``paused``): one row per queue ever
        paused."""
        return self.name + "_queues"

    @property
    def rates_table(self) -> str:
        """The bare name of the rate limits' claim log: one row per claim of a
        rate-limited queue, kept for one window."""
        return self.name + "_rates"

    @property
    def workers_table(self) -> str:
        """The bare name of the live worker list: one row per running worker process."""
        return self.name + "_workers"

    @property
    def deps_table(self) -> str:
        """The bare name of the workflows' edges: one row per (child, parent) of
        ``enqueue(..., after=[...])``."""
        return self.name + "_deps"

    @property
    def keys_table(self) -> str:
        """The bare name of the per-key lock rows (MySQL/MariaDB): one row per key used."""
        return self.name + "_keys"

    @property
    def idle_table(self) -> str:
        """The bare name of the waiting workers' marks (PostgreSQL): one row per worker."""
        return self.name + "_idle"

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name

    @property
    def tag(self) -> str:
        """8 hex digits from the exact bare name (names that differ in case differ)."""
        return hashlib.blake2s(self.name.encode("ascii"), digest_size=4).hexdigest()


def load_statements(package: str, filename: str) -> dict[str, str]:
    """Read the named blocks of *filename* in *package* (works from a wheel or a checkout)."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    return parse_statements(text, filename)


def parse_statements(text: str, filename: str) -> dict[str, str]:
    """The named blocks of *text* (read from *filename*, named in errors)."""
    pieces = _NAME_LINE.split(text)
    statements: dict[str, str] = {}
    for name, body in zip(pieces[1::2], pieces[2::2], strict=True):
        if name in statements:
            raise ValueError(f"{filename}: statement {name!r} is defined twice")
        statements[name] = body.strip().rstrip(";").strip()
    return statements


def render_statements(
    statements: Mapping[str, str], table: TableName, quote: Callable[[str], str]
) -> dict[str, str]:
    """Put the quoted table names into every statement."""

    def qualified(name: str) -> str:
        return quote(name) if table.schema is None else f"{quote(table.schema)}.{quote(name)}"

    jobs, versions = qualified(table.name), qualified(table.version_table)
    ticks, keys = qualified(table.ticks_table), qualified(table.keys_table)
    idle = qualified(table.idle_table)
    counters = qualified(table.counters_table)
    queues, rates = qualified(table.queues_table), qualified(table.rates_table)
    workers = qualified(table.workers_table)
    deps = qualified(table.deps_table)
    return {
        name: sql.replace("{table}", jobs)
        .replace("{version_table}", versions)
        .replace("{ticks_table}", ticks)
        .replace("{keys_table}", keys)
        .replace("{idle_table}", idle)
        .replace("{counters_table}", counters)
        .replace("{queues_table}", queues)
        .replace("{rates_table}", rates)
        .replace("{workers_table}", workers)
        .replace("{deps_table}", deps)
        .replace("{prefix}", table.name)
        .replace("{tag}", table.tag)
        .replace("{schema}", table.schema or "")
        for name, sql in statements.items()
    }
