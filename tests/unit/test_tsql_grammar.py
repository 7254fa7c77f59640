"""The SQL Server statements checked by a second T-SQL parser, sqlfluff's ``tsql`` dialect,
which knows SQL Server's grammar better than sqlglot: sqlglot took
``EXEC (N'…' + QUOTENAME(@old))`` (which SQL Server refuses to compile) and a reserved
keyword as a bare column alias (``AS top``); sqlfluff refuses both.

Every statement pymssql would send (with test_dialect_sql's sample values bound) and every
statement of the migrations is parsed; a statement sqlfluff cannot parse fails, unless its
cause is one of :data:`SQLFLUFF_GAPS`: valid T-SQL that sqlfluff's grammar lacks, each
rewritten to an equivalent form before parsing, so the rest of the statement is still
checked.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from skiplock._shell.schema import load_migrations

from .test_dialect_sql import MSSQL_FULL, dialect, sent_by_pymssql

#: valid T-SQL that sqlfluff cannot parse: (pattern, the same in a form it parses, a
#: statement SQL Server runs that sqlfluff refuses, why)
SQLFLUFF_GAPS: list[tuple[str, str, str, str]] = [
    (
        r"\bdefinition\b",
        "[definition]",
        "SELECT definition FROM sys.check_constraints",
        "sqlfluff's tsql takes DEFINITION for a keyword; SQL Server does not reserve it "
        "(the column sys.check_constraints.definition)",
    ),
]


@functools.cache
def _linter() -> Any:
    core = pytest.importorskip("sqlfluff.core")
    return core.Linter(config=core.FluffConfig(overrides={"dialect": "tsql"}))


def tsql_errors(text: str) -> list[str]:
    """What sqlfluff's tsql dialect cannot parse in *text* (nothing: it parses)."""
    for pattern, replacement, _, _ in SQLFLUFF_GAPS:
        text = re.sub(pattern, replacement, text)
    parsed = _linter().parse_string(text)
    found = [v.desc() for v in parsed.violations]
    if parsed.tree is not None:
        found += [f"unparsable: {s.raw[:120]}" for s in parsed.tree.recursive_crawl("unparsable")]
    return found


@pytest.mark.parametrize("statement", MSSQL_FULL)
def test_mssql_statement_parses_with_sqlfluff(statement: str) -> None:
    assert tsql_errors(sent_by_pymssql(statement)) == []


#: (schema_state, schema_create and uninstall are among the named statements, bound)
MIGRATION_STATEMENTS = [s for m in load_migrations(dialect("mssql")) for t in m.steps for s in t]


@pytest.mark.parametrize(
    "statement", MIGRATION_STATEMENTS, ids=[f"{i}" for i in range(len(MIGRATION_STATEMENTS))]
)
def test_mssql_migration_statement_parses_with_sqlfluff(statement: str) -> None:
    assert tsql_errors(statement) == []


@pytest.mark.parametrize(
    ("bad", "good"),
    [
        # migrations 0002 and 0013 before: EXEC takes variables and literals, no call
        (
            "DECLARE @old sysname = N'x'; IF @old IS NOT NULL "
            "EXEC (N'ALTER TABLE [t] DROP CONSTRAINT ' + QUOTENAME(@old))",
            "DECLARE @old sysname = N'x'; DECLARE @sql nvarchar(max) = "
            "N'ALTER TABLE [t] DROP CONSTRAINT ' + QUOTENAME(@old); "
            "IF @old IS NOT NULL EXEC (@sql)",
        ),
        # wake_probe before: TOP is a reserved keyword
        ("SELECT (SELECT MAX(id) FROM [t]) AS top", "SELECT (SELECT MAX(id) FROM [t]) AS [top]"),
    ],
    ids=["exec-expression", "reserved-alias"],
)
def test_sqlfluff_refuses_what_sql_server_refuses(bad: str, good: str) -> None:
    sqlglot = pytest.importorskip("sqlglot")
    assert sqlglot.parse(bad, read="tsql")  # what the first parser let through
    assert tsql_errors(bad)
    assert tsql_errors(good) == []


def test_every_sqlfluff_gap_is_still_one() -> None:
    # a gap sqlfluff has closed leaves the list (the statements are then checked as written)
    for pattern, _, example, why in SQLFLUFF_GAPS:
        assert re.search(pattern, example)
        assert _linter().parse_string(example).violations, f"sqlfluff parses it now: {why}"


def test_every_babelfish_gap_names_a_statement_or_a_migration() -> None:
    # tests/golden/mssql/BABELFISH_GAPS.md: a renamed or removed statement leaves it
    gaps = Path(__file__).parents[1] / "golden" / "mssql" / "BABELFISH_GAPS.md"
    rows = [r for r in gaps.read_text(encoding="utf-8").splitlines() if r.startswith("| `")]
    names = [n for r in rows for n in re.findall(r"`(\w+)`", r.split("|")[1])]
    known = set(dialect("mssql").sql) | {m.name for m in load_migrations(dialect("mssql"))}
    assert names and set(names) <= known, sorted(set(names) - known)
