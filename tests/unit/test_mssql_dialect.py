"""The parts of the SQL Server dialect that need no server: error classification (fake
exceptions shaped as pymssql raises them), version checks, binding."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

import pytest
from skiplock.dialects import get_dialect
from skiplock.dialects.mssql import (
    MSSQLDialect,
    lock_digest,
    parse_server_version,
    sql_datetime,
)

import skiplock
from skiplock._core.sql import ErrorInfo, TableName
from skiplock.drivers.mssql import pymssql_error_number as error_number
from skiplock.drivers.mssql import pymssql_error_numbers
from skiplock.drivers.url import parse_url


def classify_error(exc: BaseException, interface_error: type[BaseException]) -> tuple[bool, bool]:
    """As the queue classifies a pymssql error: the adapter reads the numbers, the dialect
    judges them."""
    kind = "interface" if isinstance(exc, interface_error) else "operational"
    return dialect().classify(ErrorInfo(pymssql_error_numbers(exc), kind))


class OperationalError(Exception):
    pass


class IntegrityError(Exception):
    pass


class InterfaceError(Exception):
    pass


def server_error(number: int, text: str = "", cls: type[Exception] = OperationalError) -> Exception:
    """As pymssql's Cursor.execute raises a server error: ``cls((number, b"…"),)``."""
    message = (
        f"{text or 'message'}DB-Lib error message 20018, severity 16:\n"
        "General SQL Server error: Check messages from the SQL Server\n"
    ).encode()
    return cls((number, message))


DEAD = (
    b"DB-Lib error message 20047, severity 9:\nDBPROCESS is dead or not enabled\n"
    b"Net-Lib error during Connection reset by peer (104)\n"
)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (server_error(1205, "Transaction (Process ID 53) was deadlocked"), (True, False)),
        (server_error(1222, "Lock request time out period exceeded."), (True, False)),
        (server_error(3960, "Snapshot isolation transaction aborted"), (True, False)),
        (server_error(601, "Could not continue scan with NOLOCK"), (True, False)),
        (server_error(40613, "Database is not currently available"), (True, False)),
        (server_error(2627, "Violation of UNIQUE KEY", IntegrityError), (False, False)),
        (server_error(18456, "Login failed for user 'x'."), (False, False)),
        (server_error(102, "Incorrect syntax near 'x'."), (False, False)),
        (
            server_error(596, "Cannot continue the execution: session in the kill state"),
            (True, True),
        ),
        (OperationalError((20047, DEAD)), (True, True)),
        (
            OperationalError(
                (20009, b"DB-Lib error message 20009, severity 9:\nUnable to connect")
            ),
            (True, True),
        ),
        (
            OperationalError((20003, b"DB-Lib error message 20003, severity 6:\ntimed out")),
            (True, True),
        ),
        (
            OperationalError((20006, b"DB-Lib error message 20006, severity 9:\nWrite failed")),
            (True, True),
        ),
        (OperationalError("Cannot commit transaction: " + str((20047, DEAD))), (True, True)),
        (InterfaceError("Connection is closed."), (True, True)),
        (OperationalError("something without a number"), (False, False)),
    ],
)
def test_errors_are_classified_by_number(exc: Exception, expected: tuple[bool, bool]) -> None:
    assert classify_error(exc, InterfaceError) == expected


def test_a_server_error_is_not_mistaken_for_its_trailing_dblib_messages() -> None:
    # pymssql appends "DB-Lib error message 20018" to every server error; 1205 decides
    exc = server_error(1205, "deadlocked ... DB-Lib error message 20047 in the text")
    assert classify_error(exc, InterfaceError) == (True, False)


def test_error_number_reads_every_shape() -> None:
    class WithNumber(Exception):
        number = 1222

    assert error_number(WithNumber("x")) == 1222
    assert error_number(OperationalError((2601, b"dup"))) == 2601
    assert error_number(OperationalError(1205)) == 1205
    assert error_number(OperationalError("Cannot begin transaction: (20006, b'x')")) == 20006
    assert error_number(OperationalError()) is None


@pytest.mark.parametrize(
    ("version", "edition", "ok"),
    [
        ("16.0.4135.4", 3, True),  # 2022
        ("13.0.1601.5", 2, True),  # 2016 RTM
        ("15.0.2000.5", 4, True),  # 2019 Express
        ("12.0.6024.0", 3, False),  # 2014
        ("11.0.7001.0", 2, False),  # 2012
        ("12.0.2000.8", 5, True),  # Azure SQL Database reports 12.x
        ("12.0.2000.8", 8, True),  # Azure SQL Managed Instance
        ("", None, False),
    ],
)
def test_server_version_check(version: str, edition: int | None, ok: bool) -> None:
    if ok:
        info = parse_server_version(version, edition, "Microsoft SQL Server ...\n")
        assert info.product == "SQL Server"
        assert info.version[0] == int(version.split(".")[0])
        assert info.version_string == "Microsoft SQL Server ..."
        return
    with pytest.raises(skiplock.UnsupportedServer, match=r"SQL Server 2016 \(13\.x\)"):
        parse_server_version(version, edition, "")


def dialect() -> MSSQLDialect:
    d = get_dialect(
        parse_url("mssql://sa:secret@db.example:1433/app?tds_version=7.3"), TableName.parse("jobs")
    )
    assert isinstance(d, MSSQLDialect)
    return d


def test_quote_and_connect_arguments() -> None:
    d = dialect()
    assert d.quote("jobs") == "[jobs]" and d.quote("a]b") == "[a]]b]"
    kwargs = d.connect_kwargs()
    assert kwargs["server"] == "db.example" and kwargs["port"] == "1433"
    assert kwargs["autocommit"] is False
    assert kwargs["tds_version"] == "7.3"  # the URL's options win
    assert kwargs["password"] == "secret"
    assert "secret" not in repr(d.url)


def test_bind_splits_durations_and_formats_datetimes() -> None:
    d = dialect()
    when = datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=-5)))
    _, bound = d.bind(
        "%(run_at)s %(delay_ms)s", {"run_at": when, "delay_ms": 10 * 365 * 86400 * 1000 + 7}
    )
    assert bound["run_at"] == "2030-05-06T12:08:09.123456"
    assert bound["delay_s"] == 10 * 365 * 86400 and bound["delay_rem_ms"] == 7
    assert bound["delay_s"] < 2**31
    assert sql_datetime(datetime(2030, 1, 1, tzinfo=timezone.utc)) == "2030-01-01T00:00:00.000000"
    sql, bound = d.bind("queue IN (%(queues)s)", {"queues": ["a", "b"]})
    assert sql == "queue IN (%(queues__0)s, %(queues__1)s)"


def test_is_closed_on_a_closed_pymssql_connection() -> None:
    class Closed:
        @property
        def _conn(self) -> object:
            raise InterfaceError("Connection is closed.")

    class Open:
        class _conn:
            connected = True

    assert dialect().is_closed(Closed())
    assert not dialect().is_closed(Open())


def test_url_options_reach_the_driver_with_their_types() -> None:
    d = get_dialect(
        parse_url("mssql://sa@h/db?login_timeout=5&timeout=30&tds_version=7.3&charset=UTF-8"),
        TableName.parse("jobs"),
    )
    kwargs = d.connect_kwargs()  # type: ignore[attr-defined]
    assert (kwargs["login_timeout"], kwargs["timeout"]) == (5, 30)
    assert (kwargs["tds_version"], kwargs["charset"]) == ("7.3", "UTF-8")
    for bad, match in (("timeout=soon", "whole number"), ("autocommit=1", "not accepted")):
        with pytest.raises(skiplock.ConfigurationError, match=match):
            get_dialect(parse_url(f"mssql://h/db?{bad}"), TableName.parse("j"))


def test_a_refused_connection_is_a_lost_connection_without_the_password() -> None:
    pytest.importorskip("pymssql")
    q = skiplock.connect("mssql://sa:s3cret-Pa55@127.0.0.1:1/db?login_timeout=2")
    with pytest.raises(skiplock.BackendError) as info:
        q.ping()  # the real driver, refused by a closed port: no server is needed
    assert info.value.connection_lost and info.value.retryable
    assert "s3cret" not in str(info.value) and "mssql://sa:***@127.0.0.1:1/db" in str(info.value)
    assert type(info.value.__cause__).__name__ == "OperationalError"


def test_every_url_option_is_a_parameter_pymssql_connect_applies() -> None:
    # unit level (no SQL Server here): each keyword skiplock passes is a named parameter
    # of pymssql.connect, none lost in a **kwargs it ignores
    import inspect

    pymssql = pytest.importorskip("pymssql")
    params = inspect.signature(pymssql.connect).parameters
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    accepted = get_dialect(parse_url("mssql://h/db"), TableName.parse("j")).URL_OPTIONS
    values = {"tds_version": "7.4", "charset": "UTF-8", "encryption": "require"}
    every = "&".join(
        f"{n}={values.get(n, 'x' if o.kind == 'text' else '3')}" for n, o in accepted.items()
    )
    dialect = get_dialect(parse_url(f"mssql://sa:pw@h:1433/db?{every}"), TableName.parse("j"))
    kwargs = dialect.connect_kwargs()
    assert set(dialect.URL_OPTIONS) <= set(kwargs)
    assert set(kwargs) <= set(params), set(kwargs) - set(params)


def test_login_timeout_bounds_a_server_that_never_answers() -> None:
    import socket
    import time

    pytest.importorskip("pymssql")
    with socket.create_server(("127.0.0.1", 0), backlog=16) as silent:
        port = silent.getsockname()[1]
        q = skiplock.connect(f"mssql://sa:pw@127.0.0.1:{port}/db?login_timeout=2")
        start = time.monotonic()
        with pytest.raises(skiplock.BackendError, match="could not connect"):
            q.ping()
        waited = time.monotonic() - start
    assert 1.5 <= waited < 6, waited  # the default is 10 s


class RecordingConnection:
    """What a pymssql connection sends the server (no server here): pymssql keeps a
    transaction open whenever autocommit is off (BEGIN TRAN at connect and after each
    COMMIT or ROLLBACK; ROLLBACK TRAN when autocommit goes on), as _pymssql.pyx does."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.autocommit_state = False
        self.in_transaction = True
        self.params: object = None

    def autocommit(self, status: bool) -> None:
        if status != self.autocommit_state:
            self.sent.append("ROLLBACK TRAN" if status else "BEGIN TRAN")
            self.in_transaction = not status
            self.autocommit_state = status

    def commit(self) -> None:
        if not self.autocommit_state:
            self.sent += ["COMMIT TRAN", "BEGIN TRAN"]

    rollback = commit

    def cursor(self, as_dict: bool = False) -> RecordingConnection:
        return self

    description = None
    rowcount = 1

    def execute(self, sql: str, params: object = None) -> None:
        if "KILL" in sql and self.in_transaction:  # as SQL Server answers
            raise OperationalError((6615, b"KILL command cannot be used inside user transactions."))
        self.sent.append(sql)
        self.params = params

    def close(self) -> None:
        pass


def test_kill_session_runs_outside_a_transaction() -> None:
    # old code: KILL ran in pymssql's open transaction, and SQL Server refused it (6615)
    conn = RecordingConnection()
    dialect().kill_session(conn, 53)
    [kill] = [s for s in conn.sent if "KILL" in s]
    assert conn.params == {"session": 53}
    assert conn.sent.index(kill) > conn.sent.index("ROLLBACK TRAN")
    assert conn.sent[-1] == "BEGIN TRAN" and not conn.autocommit_state  # as it was


def test_a_table_found_under_a_name_of_another_case_is_refused() -> None:
    # old code: under SQL Server's default collation OBJECT_ID(N'[jobs]') found [Jobs], and
    # a queue on "jobs" used (and uninstall() dropped) the queue "Jobs"'s table. The
    # catalog's answer is scripted here (no SQL Server); test_table_names.py runs it on one.
    from skiplock._shell.schema import Schema

    for found, refused in (("jobs", False), ("Jobs", True), ("JOBS", True)):
        op = Schema(dialect()).version()
        statement = next(op)
        assert "AS jobs_name" in statement.sql and statement.params["name"] == "jobs"
        answer = [{"has_jobs": 1, "has_version": 1, "jobs_name": found}]
        if refused:
            with pytest.raises(skiplock.ConfigurationError, match=r"\[Jobs\]|\[JOBS\]"):
                op.send(answer)
        else:
            assert "MAX(version)" in op.send(answer).sql  # on to the version record


def test_lock_names_end_with_the_names_nvarchar_sha256_in_upper_case_hex() -> None:
    # CONVERT(NVARCHAR(64), HASHBYTES('SHA2_256', CAST(x AS NVARCHAR(255))), 2) on SQL
    # Server: the name's UTF-16LE bytes, cut at 255 code units, hashed, upper-case hex;
    # computed by the dialect (Babelfish runs no CONVERT style 2), so the locks keep the
    # names an older release gave them
    assert lock_digest("customer-42") == (
        hashlib.sha256("customer-42".encode("utf-16-le")).hexdigest().upper()
    )
    assert lock_digest("x" * 300) == lock_digest("x" * 255) != lock_digest("x" * 254)
    assert lock_digest("\U0001f600") == hashlib.sha256(b"=\xd8\x00\xde").hexdigest().upper()
    d = dialect()
    sql, bound = d.bind(d.sql["key_lock"], {"order_key": "k"})
    assert bound["order_key_digest"] == lock_digest("k") and "%(order_key_digest)s" in sql
    code = "\n".join(line.split("--")[0] for line in sql.splitlines())
    assert "HASHBYTES" not in code and "CONVERT" not in code
    _, bound = d.bind(d.sql["queue_lock"], {"queue": "q"})
    assert bound["queue_digest"] == lock_digest("q")
    _, bound = d.bind("%(queue)s", {"queue": "q"})
    assert "queue_digest" not in bound  # only where a statement names it


def test_a_batch_gets_its_ids_in_its_order_from_the_read_back_range() -> None:
    # enqueue_many reads its ids back from the identity range its INSERT used: rows of
    # other transactions in that range are dropped by idempotency key
    d = dialect()
    rows = [("[1]", "AAAA-1"), ("[2]", "bbbb-2")]
    op = d.insert_many({"queue": "q", "order_key": None}, rows, False)
    statement = next(op)
    code = "\n".join(line.split("--")[0] for line in statement.sql.splitlines())
    assert "IDENT_CURRENT" in code and "OUTPUT" not in code
    found = [
        {"id": 10, "idempotency_key": "aaaa-1"},
        {"id": 11, "idempotency_key": "cccc-3"},  # another batch's, interleaved
        {"id": 12, "idempotency_key": "BBBB-2"},
    ]
    with pytest.raises(StopIteration) as done:
        op.send(found)
    assert done.value.value == [10, 12]
