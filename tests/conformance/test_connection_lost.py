"""A connection killed on the server counts as lost (retryable) whatever error class the
driver raises for it, on every backend: the real exception, built by the driver."""

from __future__ import annotations

import skiplock

from .test_single import kill_session


def test_a_connection_killed_before_a_statement_with_parameters_is_lost(
    queue: skiplock.Queue,
) -> None:
    # mysql-connector reads @@sql_mode at a connection's first statement with parameters:
    # killed before it, the cursor raises ProgrammingError("Failed processing
    # pyformat-parameters; MySQL Connection not available") with the OperationalError as
    # its cause. Classified as a plain error, it ended the worker's thread.
    conn = queue.connection()
    try:
        cur = conn.cursor()
        cur.execute(queue.dialect.sql["session_id"])  # a statement without parameters
        session = int(cur.fetchall()[0][0])
        conn.commit()
        kill_session(queue, session)
        try:
            cur.execute("SELECT %(a)s AS a", {"a": 1})
            cur.fetchall()
        except queue.dialect.driver_errors() as exc:
            raised: BaseException = exc
        else:
            raise AssertionError("a killed connection ran a statement")
    finally:
        conn.close()
    err = queue.dialect.wrap(raised, "running a statement")
    assert err.connection_lost, f"{type(raised).__name__}: {raised}"
    assert err.retryable
