"""The driver adapters that no server here can exercise (SQL Server: pymssql, pyodbc):
parameter conversion, row shapes, error numbers, and the SQL each would send.

The cursors below stand in for a driver's cursor only (what it returns for a statement),
never for a database: the statements' behaviour is proved by the conformance suite
wherever a server exists.
"""

from __future__ import annotations

import re
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest
from skiplock.dialects import get_dialect

from skiplock._core.sql import ROWCOUNT, ROWS, Statement, TableName
from skiplock.drivers.mssql import PymssqlAdapter, PyodbcAdapter, qmark
from skiplock.drivers.url import parse_url
from unit.test_dialect_sql import SAMPLE


def mssql() -> Any:
    return get_dialect(parse_url("mssql://u@h/db"), TableName.parse("skiplock_jobs"))


class FakeCursor:
    """A cursor's answers: result sets as (description, rows), one after another."""

    def __init__(self, results: list[tuple[list[str] | None, list[tuple[Any, ...]]]]) -> None:
        self.results = results
        self.executed: list[tuple[str, Any]] = []
        self.rowcount = 1
        self.closed = False

    @property
    def description(self) -> list[tuple[str]] | None:
        names = self.results[0][0]
        return None if names is None else [(n,) for n in names]

    def execute(self, sql: str, params: Any = None) -> None:
        self.executed.append((sql, params))

    def nextset(self) -> bool:
        if len(self.results) > 1:
            self.results.pop(0)
            return True
        return False

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.results[0][1]

    def close(self) -> None:
        self.closed = True


def adapter(cls: type[Any], cursor: FakeCursor, module: Any = None) -> Any:
    conn = SimpleNamespace(cursor=lambda **kw: cursor)
    module = module or SimpleNamespace(Error=Exception)
    return cls(conn, module)


def test_qmark_orders_values_and_repeats_names() -> None:
    sql, values = qmark("a = %(a)s AND b = %(b)s OR a2 = %(a)s", {"a": 1, "b": "x", "c": 3})
    assert sql == "a = ? AND b = ? OR a2 = ?" and values == [1, "x", 1]
    with pytest.raises(KeyError):
        qmark("%(missing)s", {})


@pytest.mark.parametrize("statement", [s for s in sorted(mssql().sql) if not s.endswith("_row")])
def test_every_mssql_statement_converts_to_qmark(statement: str) -> None:
    d = mssql()
    sql = d.sql[statement]
    if "{rows}" in sql:
        rows = [
            {"n": 0, "id": 1, "attempt": 1, "claim_id": 9, "payload": "[]", "idempotency_key": "k"}
        ]
        sql, row_params = d.values_sql(statement, [{**r, "result": None} for r in rows])
        params = {**SAMPLE, **row_params}
    else:
        params = dict(SAMPLE)
    sql, bound = d.bind(sql, params)
    text, values = qmark(sql, bound)
    assert "%(" not in text
    assert text.count("?") == len(values)
    assert not any(isinstance(v, datetime) for v in values)  # bound as ISO text


def test_pyodbc_skips_results_without_columns_to_the_rows() -> None:
    # the claim batch: SET TRANSACTION ISOLATION LEVEL (no result set), then the UPDATE
    cur = FakeCursor([(None, []), (["id", "status"], [(7, "running")])])
    a = adapter(PyodbcAdapter, cur)
    rows = a.execute(Statement("SET …; UPDATE … %(limit)s", {"limit": 3}, ROWS))
    assert rows == [{"id": 7, "status": "running"}]
    assert cur.executed == [("SET …; UPDATE … ?", [3])] and cur.closed


def test_pyodbc_rowcount_and_a_statement_without_parameters() -> None:
    cur = FakeCursor([(None, [])])
    cur.rowcount = 1
    a = adapter(PyodbcAdapter, cur)
    assert a.execute(Statement("UPDATE t SET x = 1", None, ROWCOUNT)) == 1
    assert cur.executed == [("UPDATE t SET x = 1", None)]


def test_pymssql_rows_become_dicts_and_params_stay_named() -> None:
    cur = FakeCursor([(["id", "payload"], [(1, '{"a": 1}'), (2, "[]")])])
    a = adapter(PymssqlAdapter, cur)
    rows = a.execute(Statement("SELECT %(x)s", {"x": 1}, ROWS))
    assert rows == [{"id": 1, "payload": '{"a": 1}'}, {"id": 2, "payload": "[]"}]
    assert cur.executed == [("SELECT %(x)s", {"x": 1})]


class OdbcError(Exception):
    pass


class OdbcOperationalError(OdbcError):
    pass


class OdbcIntegrityError(OdbcError):
    pass


ODBC = SimpleNamespace(
    Error=OdbcError, OperationalError=OdbcOperationalError, IntegrityError=OdbcIntegrityError
)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            OdbcOperationalError(
                "40001",
                "[40001] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Transaction "
                "(Process ID 52) was deadlocked on lock resources (1205) (SQLExecDirectW)",
            ),
            (True, False),
        ),
        (
            OdbcOperationalError(
                "08S01",
                "[08S01] [Microsoft][ODBC Driver 18 for SQL Server]Communication link "
                "failure (0) (SQLExecDirectW)",
            ),
            (True, True),
        ),
        (
            OdbcError("42000", "[42000] ... Incorrect syntax near 'x'. (102) (SQLExecDirectW)"),
            (False, False),
        ),
    ],
)
def test_pyodbc_errors_are_classified_by_their_numbers(
    exc: Exception, expected: tuple[bool, bool]
) -> None:
    a = PyodbcAdapter(None, ODBC)
    assert mssql().classify(a.error_info(exc)) == expected


def test_a_pyodbc_duplicate_key_is_read_as_an_active_key() -> None:
    exc = OdbcIntegrityError(
        "23000", "[23000] ... Cannot insert duplicate key row ... (2601) (SQLExecDirectW)"
    )
    info = PyodbcAdapter(None, ODBC).error_info(exc)
    assert (info.codes, info.kind) == (frozenset({2601, "23000"}), "integrity")
    assert "Cannot insert duplicate key row" in info.message
    op = mssql().insert_dedupe_once(dict(SAMPLE))
    next(op)
    from skiplock._core.sql import StatementError

    with pytest.raises(StopIteration) as stop:
        op.throw(StatementError(info, exc))
    assert stop.value.value is None  # the caller then looks the key up


def test_placeholders_are_only_named_ones() -> None:
    for sql in mssql().sql.values():
        assert not re.search(r"%(?!\(\w+\)s)", sql)


def test_mysql_connector_reports_a_lost_connection_under_another_class_as_lost() -> None:
    # mysql-connector raises ProgrammingError("Failed processing pyformat-parameters; MySQL
    # Connection not available") from the OperationalError of a connection gone while it
    # prepared a statement: lost (retryable), by the cause chain or by the message alone.
    errors = pytest.importorskip("mysql.connector.errors")
    from skiplock.drivers.mysql import MySQLConnectorAdapter

    dialect = get_dialect(parse_url("mysql://root@localhost/test"), TableName.parse("jobs"))
    adapter = MySQLConnectorAdapter(None, pytest.importorskip("mysql.connector"))
    text = "Failed processing pyformat-parameters; MySQL Connection not available"
    try:
        try:
            raise errors.OperationalError("Lost connection to MySQL server", errno=2013)
        except errors.OperationalError as cause:
            raise errors.ProgrammingError(text) from cause
    except errors.ProgrammingError as exc:
        chained: BaseException = exc
    assert dialect.classify(adapter.error_info(chained)) == (True, True)
    assert dialect.classify(adapter.error_info(errors.ProgrammingError(text))) == (True, True)
    plain = errors.ProgrammingError("You have an error in your SQL syntax", errno=1064)
    assert dialect.classify(adapter.error_info(plain)) == (False, False)


def test_the_c_extensions_own_lost_connection_error_is_caught_and_lost() -> None:
    # CMySQLConnection.commit() lets _mysql_connector.MySQLInterfaceError escape unwrapped
    # when the server went away (a worker thread died of it in the full suite on MySQL).
    cext = pytest.importorskip("_mysql_connector")
    from skiplock.drivers.mysql import MySQLConnectorAdapter

    dialect = get_dialect(parse_url("mysql://root@localhost/test"), TableName.parse("jobs"))
    adapter = MySQLConnectorAdapter(None, pytest.importorskip("mysql.connector"))
    exc = cext.MySQLInterfaceError("Lost connection to MySQL server during query")
    assert isinstance(exc, adapter.errors)
    assert dialect.classify(adapter.error_info(exc)) == (True, True)


def test_psycopg_binds_a_list_of_ints_or_of_none_only_as_one_array_literal() -> None:
    # a completion batch's ids and attempts, and its results when every handler returned
    # None; anything else is left to psycopg (the statements cast each, ::bigint[] etc.)
    from skiplock.drivers.postgresql import bound

    params = {"ids": [1, 2], "results": [None, None], "mixed": [None, "x"], "flags": [True]}
    assert bound(params) == {**params, "ids": "{1,2}", "results": "{NULL,NULL}"}
    assert bound({"empty": [], "n": 1}) == {"empty": [], "n": 1}
