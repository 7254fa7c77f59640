"""Every dialect's statements, rendered for a fixed table, against golden files; and the
SQL Server statements parsed as T-SQL, since no SQL Server runs where these tests run.

The conformance suite proves behaviour wherever a server exists; these tests make any
change to the SQL text visible in review (``SKIPLOCK_UPDATE_GOLDEN=1`` rewrites the
golden files under ``tests/golden/<dialect>/``), and prove that the T-SQL that pymssql
would send parses and keeps its lock hints.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from skiplock.dialects import DIALECT_MODULES, Dialect, get_dialect

from skiplock._core.sql import TableName
from skiplock.drivers.url import parse_url

GOLDEN = Path(__file__).parents[1] / "golden"
TABLE = "skiplock_jobs"
UPDATE = os.environ.get("SKIPLOCK_UPDATE_GOLDEN") == "1"
URLS = {
    "postgresql": "postgresql://u@h/db",
    "mysql": "mysql://u@h/db",
    "mssql": "mssql://u@h/db",
}

#: every parameter any statement names, with values that exercise quoting and the
#: millisecond split (2**31 ms is about 25 days)
SAMPLE: dict[str, Any] = {
    "queue": "it's",
    "queues": ["a", "b'c"],
    "payload": '{"k": "v"}',
    "priority": -3,
    "max_attempts": 5,
    "run_at": datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=timezone(timedelta(hours=2))),
    "delay_ms": 2**31 + 1234,
    "lease_ms": 30_000,
    "limit": 10,
    "idempotency_key": "6f1c4a36-2a4b-4c59-9a55-2b0f3b9a1c10",
    "order_key": "customer-42",
    "key_limit": 3,
    "key_rate": 10,
    "key_rate_ms": 1000,
    "headers": '{"traceparent":"00-ab"}',
    "dedupe_key": "report-42",
    "id": 7,
    "attempt": 2,
    "claim_id": 2**63 - 1,
    "result": None,
    "error": "boom",
    "all_queues": False,
    "all_ids": False,
    "all_statuses": False,
    "before_id": 2**63 - 1,
    "ids": [1, 2],
    "attempts": None,
    "statuses": ["done", "failed"],
    "older_ms": 7 * 86_400_000,
    "deleted": 13,
    "name": "skiplock:it's",
    "wait_ms": 5000,
    "wait_s": 5,
    "margin_s": 30,
    "session": 53,
    "schedule": "report's",
    "tick": datetime(2030, 3, 31, 1, 0, tzinfo=timezone.utc),
    "before": datetime(2030, 3, 30, 1, 0, tzinfo=timezone.utc),
    "lease_until": datetime(2030, 1, 2, 1, 4, 35, 678901, tzinfo=timezone.utc),
    "version": 2,
    "schema": None,
    "version_name": "skiplock_jobs_schema",
    "sessions": [53, 54],
    # pause and rate limits
    "paused": True,
    "per_ms": 1000,
    "n": 20,
    # the dashboard and the live worker list
    "task": "app.send_mail",
    "cap": 100_000,
    "window_s": 600,
    "in_flight": 3,
    "host": "web'1",
    "pid": 4242,
    "concurrency": 8,
    "beat_ms": 10_000,
    "older_s": 86_400,
    # job control
    "max_snoozes": 1000,
    "progress": '{"done": 3}',
    "dedupe_ms": 60_000,
    "debounce_key": "search-7",
    "id_list": "[7, 8]",
    "edges": "[[9, 7], [9, 8]]",
    "run": True,
    "hold": True,
}


def dialect(name: str) -> Dialect:
    return get_dialect(parse_url(URLS[name]), TableName.parse(TABLE))


def statements() -> list[tuple[str, str]]:
    return [(d, s) for d in sorted(URLS) for s in sorted(dialect(d).sql)]


def test_every_dialect_is_covered() -> None:
    assert set(URLS) == set(DIALECT_MODULES)


def code_of(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


#: a write fenced by the claim: it names the claim's attempt (one job, or a batch's rows)
FENCED = re.compile(r"attempt = %\(attempt\)s|\.attempt = (v\.attempt|p\.at)\b")


@pytest.mark.parametrize(("name", "statement"), statements())
def test_every_fenced_write_checks_the_claim_token(name: str, statement: str) -> None:
    """A write that names the claim's attempt names its token too (docs/guarantees.md,
    Fencing): after a failover the same attempt can be handed out again, the token never.
    A new fenced statement gets ``%(claim_id)s`` from ``_fenced`` (src/skiplock/_core/calls.py)."""
    code = code_of(dialect(name).sql[statement])
    if FENCED.search(code) and not statement.startswith("claim"):
        assert "claim_id" in code, f"{name}.sql {statement}: fenced by attempt, not by token"


@pytest.mark.parametrize(("name", "statement"), statements())
def test_statement_matches_its_golden_file(name: str, statement: str) -> None:
    rendered = dialect(name).sql[statement].rstrip() + "\n"
    path = GOLDEN / name / f"{statement}.sql"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with SKIPLOCK_UPDATE_GOLDEN=1"
    assert rendered == path.read_text(encoding="utf-8"), (
        f"{name}.sql statement {statement!r} changed: review the diff, then rewrite the "
        "golden files with SKIPLOCK_UPDATE_GOLDEN=1"
    )


@pytest.mark.parametrize(("name", "statement"), statements())
def test_comments_name_only_bound_placeholders(name: str, statement: str) -> None:
    # The drivers see comments too: a %(name)s there is a parameter the call must bind,
    # so a comment may name only what the statement itself binds (one naming %(queue)s
    # once broke the multi-queue claim on PostgreSQL).
    code, comments = [], []
    for line in dialect(name).sql[statement].splitlines():
        before, _, after = line.partition("--")
        code.append(before)
        comments.append(after)
    named = set(re.findall(r"%\((\w+)\)s", "\n".join(comments)))
    bound = set(re.findall(r"%\((\w+)\)s", "\n".join(code)))
    assert named <= bound, f"{statement}: comments name {sorted(named - bound)}"


@pytest.mark.parametrize("name", sorted(URLS))
def test_no_stale_golden_files(name: str) -> None:
    on_disk = {p.stem for p in (GOLDEN / name).glob("*.sql")}
    stale = on_disk - set(dialect(name).sql)
    if UPDATE:
        for stem in stale:
            (GOLDEN / name / f"{stem}.sql").unlink()
        return
    assert not stale, f"golden files for statements that no longer exist: {sorted(stale)}"


# -- SQL Server: what pymssql would send, parsed as T-SQL ---------------------------------


def sent_by_pymssql(statement: str) -> str:
    """The text pymssql sends for *statement* with :data:`SAMPLE` bound (its own
    substitution, so a placeholder without a value fails here)."""
    _mssql = pytest.importorskip("pymssql._mssql")
    d = dialect("mssql")
    params = dict(SAMPLE)
    if "{rows}" in d.sql[statement]:
        rows = [
            {
                "n": i,
                "id": i,
                "attempt": 1,
                "claim_id": None,
                "payload": "[]",
                "idempotency_key": "k",
                "result": r,
            }
            for i, r in enumerate([None, '{"r": 1}'])
        ]
        sql, row_params = d.values_sql(statement, rows)  # type: ignore[attr-defined]
        params.update(row_params)
    else:
        sql = d.sql[statement]
    sql, bound = d.bind(sql, params)
    text: str = _mssql.substitute_params(sql, bound).decode("utf-8")
    return text


def parse_tsql(text: str) -> list[Any]:
    sqlglot = pytest.importorskip("sqlglot")
    trees = [t for t in sqlglot.parse(text, read="tsql") if t is not None]
    assert trees
    for tree in trees:  # a Command is sqlglot giving up on a statement
        assert not isinstance(tree, sqlglot.exp.Command), tree.sql("tsql")
    return trees


MSSQL_FULL = [s for s in sorted(dialect("mssql").sql) if not s.endswith("_row")]


@pytest.mark.parametrize("statement", MSSQL_FULL)
def test_mssql_statement_parses_as_tsql(statement: str) -> None:
    text = sent_by_pymssql(statement)
    assert "%(" not in text
    parse_tsql(text)


def test_mssql_claim_keeps_its_hints_and_output() -> None:
    from sqlglot import exp

    text = sent_by_pymssql("claim")
    first, declare, pick, claim = parse_tsql(text)
    assert isinstance(first, exp.Set)
    assert re.search(r"ISOLATION LEVEL READ COMMITTED", first.sql("tsql"))
    assert "@picked" in declare.sql("tsql")
    # the pick: the locking read whose update locks hold until COMMIT
    assert isinstance(pick, exp.Insert) and "@picked" in pick.this.sql("tsql")
    select = pick.expression
    assert isinstance(select, exp.Select)
    hints = {
        h.sql("tsql").upper() for w in select.find_all(exp.WithTableHint) for h in w.expressions
    }
    assert {"ROWLOCK", "READPAST", "UPDLOCK"} <= hints
    top = select.args.get("limit")
    assert top is not None and top.expression.sql("tsql") == "10"  # TOP (n)
    order = [o.this.sql("tsql") for o in select.args["order"].expressions]
    assert order == ["c.priority", "c.run_at", "c.id"]
    assert "SELECT TOP (10) c.id" in text
    # the claim: the picked ids, written in the same batch and transaction
    assert isinstance(claim, exp.Update)
    output = claim.args.get("returning")
    assert output is not None and "inserted.*" in output.sql("tsql")
    out = claim.sql("tsql")
    assert "JOIN @picked AS p ON p.id = j.id" in out
    # the split lease: DATEADD never gets more than an int
    assert "DATEADD(SECOND, 30," in out and "DATEADD(MILLISECOND, 0," in out


def test_mssql_claim_ends_spent_leases_failed_like_postgresql() -> None:
    pg = dialect("postgresql").sql["claim"]
    ms = dialect("mssql").sql["claim"]
    spent = "j.status = 'running' AND j.attempt >= j.max_attempts"
    # both decide per row, with the same condition, every column the claim assigns
    columns = (
        "status",
        "attempt",
        "lease_until",
        "run_at",
        "last_error",
        "finished_at",
        "claim_id",
    )
    for column in columns:
        for text in (pg, ms):
            assert f"{column} = CASE WHEN {spent}" in text, column
    for text in (pg, ms):
        assert "lease expired: attempt " in text
        assert "did not finish before its lease ended (worker died or stalled)" in text


def test_mssql_install_has_the_filtered_indexes() -> None:
    from skiplock._shell.schema import load_migrations

    text = "\n".join(load_migrations(dialect("mssql"))[0].steps[0])
    assert "WHERE status IN ('pending', 'running')" in text
    assert re.search(
        r"CREATE UNIQUE INDEX \[skiplock_jobs_dedupe\] ON \[skiplock_jobs\] \(dedupe_key\)\s+"
        r"WHERE dedupe_key IS NOT NULL AND status IN \('pending', 'running'\)",
        text,
    )
    assert "DATETIME2(6)" in text and "NVARCHAR(MAX)" in text
    session = dialect("mssql").sql["session"]
    assert "SET QUOTED_IDENTIFIER ON" in session and "SET XACT_ABORT OFF" in session


def test_mssql_datetimes_and_long_durations_are_bound_exactly() -> None:
    text = sent_by_pymssql("enqueue")
    assert "CAST(N'2030-01-02T01:04:05.678901' AS DATETIME2(6))" in text  # UTC, microseconds
    seconds, rest = divmod(2**31 + 1234, 1000)
    assert f"DATEADD(MILLISECOND, {rest}," in text and f"DATEADD(SECOND, {seconds}," in text
    assert "N'it''s'" in text


def test_mssql_batches_are_chunked() -> None:
    from skiplock.dialects import mssql

    d = dialect("mssql")
    assert isinstance(d, mssql.MSSQLDialect)
    sql, params = d.values_sql(
        "complete_many", [{"id": 1, "attempt": 1, "claim_id": 9, "result": None}] * 3
    )
    assert sql.count("CAST(%(id_") == 3 and params["id_2"] == 1
    assert mssql.BATCH_ROWS <= 1000  # INSERT ... VALUES refuses more than 1000 rows


# -- the versioned schema: every dialect's migrations, as `skiplock sql` prints them -------


@pytest.mark.parametrize("name", sorted(URLS))
def test_schema_script_matches_its_golden_file(name: str) -> None:
    from skiplock._shell.schema import Schema

    rendered = Schema(dialect(name)).script()
    path = GOLDEN / name / "schema_script.sql.txt"
    if UPDATE:
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8"), (
        f"{name} migrations changed: review the diff, then SKIPLOCK_UPDATE_GOLDEN=1"
    )


def test_schema_script_from_a_version_starts_after_it() -> None:
    from skiplock._shell.schema import Schema

    schema = Schema(dialect("postgresql"))
    script = schema.script(1)
    assert "0001_initial" not in script and "-- 0002_cancel" in script
    assert 'CREATE TABLE IF NOT EXISTS "skiplock_jobs" (' not in script
    assert schema.script(schema.latest).count("INSERT INTO") == 0


def mssql_migration_statements() -> list[str]:
    from skiplock._shell.schema import load_migrations

    d = dialect("mssql")
    # schema_state, schema_create and uninstall are named statements: parsed bound, as
    # pymssql sends them, by test_mssql_statement_parses_as_tsql
    return [s for m in load_migrations(d) for step in m.steps for s in step]


@pytest.mark.parametrize("statement", mssql_migration_statements())
def test_mssql_migration_statement_parses_as_tsql(statement: str) -> None:
    sqlglot = pytest.importorskip("sqlglot")
    trees = [t for t in sqlglot.parse(statement, read="tsql") if t is not None]
    assert trees


#: an argument of ``EXEC (…)``: SQL Server's EXECUTE takes only string variables and
#: string literals joined by ``+`` (``{ @var | [N]'text' } [ + …n ]``); a function call
#: such as QUOTENAME(@old) is a syntax error that fails the whole batch
_EXEC_PART = r"\s*(?:@\w+|N?'(?:[^']|'')*')\s*"
_EXEC_ARGUMENT = re.compile(rf"{_EXEC_PART}(?:\+{_EXEC_PART})*")


def exec_arguments(text: str) -> list[str]:
    """The text inside each ``EXEC (…)`` / ``EXECUTE (…)`` of *text* (string literals
    skipped while the parentheses are matched)."""
    found = []
    for start in re.finditer(r"\bEXEC(?:UTE)?\s*\(", text, re.IGNORECASE):
        depth, i, quoted = 1, start.end(), False
        while depth:
            ch = text[i]
            if ch == "'":
                quoted = not quoted  # '' inside a literal toggles twice
            elif not quoted:
                depth += {"(": 1, ")": -1}.get(ch, 0)
            i += 1
        found.append(text[start.end() : i - 1])
    return found


def mssql_texts() -> list[str]:
    d = dialect("mssql")
    return mssql_migration_statements() + [d.sql[n] for n in sorted(d.sql)]


def test_exec_arguments_are_variables_and_literals_only() -> None:
    # old code: migrations 0002 and 0013 ran EXEC (N'ALTER TABLE … ' + QUOTENAME(@old)),
    # which SQL Server refuses to compile, so install() stopped at schema version 2
    arguments = [a for text in mssql_texts() for a in exec_arguments(code_of(text))]
    assert arguments, "the dialect's dynamic SQL (kill_session, the old status CHECKs)"
    for argument in arguments:
        assert _EXEC_ARGUMENT.fullmatch(argument), f"EXEC ({argument})"
    assert exec_arguments("EXEC (N'a(' + @b)") == ["N'a(' + @b"]
    assert not _EXEC_ARGUMENT.fullmatch("N'x' + QUOTENAME(@old)")
