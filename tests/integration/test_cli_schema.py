"""``skiplock install / migrate / sql / uninstall / cancel`` on every backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import skiplock
from skiplock.cli import EXIT_CODES, main

MakeQueue = Callable[..., skiplock.Queue]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_migrate_sql_and_uninstall(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    latest = q.schema.latest
    where = ["--url", url, "--table", str(q.table)]
    code, out, _ = cli(capsys, "migrate", *where)
    assert (code, out.strip()) == (0, f"table {q.table}: schema version {latest}, nothing to do")

    code, _, err = cli(capsys, "uninstall", *where)
    assert code == EXIT_CODES["config"] and "--yes" in err
    assert q.schema_version() == latest  # nothing dropped without --yes
    code, out, _ = cli(capsys, "uninstall", "--yes", *where)
    assert code == 0 and "dropped" in out
    assert q.schema_version() == 0
    code, _, err = cli(capsys, "stats", *where)
    assert code == EXIT_CODES["config"] and "skiplock install" in err

    code, out, _ = cli(capsys, "migrate", "--to", "1", *where)
    assert (code, out.strip()) == (0, f"table {q.table}: schema version 0 → 1")
    code, _, err = cli(capsys, "stats", *where)
    assert code == EXIT_CODES["config"] and "skiplock migrate" in err
    code, _, err = cli(capsys, "worker", "json:dumps", *where)  # a worker refuses it too
    assert code == EXIT_CODES["config"] and "skiplock migrate" in err
    code, out, _ = cli(capsys, "install", *where)
    assert code == 0 and f"schema version {latest}" in out
    code, out, _ = cli(capsys, "stats", "--json", *where)
    assert code == 0

    # The printed script, run by hand on a fresh table, gives a table the queue accepts.
    code, script, _ = cli(capsys, "sql", "--url", url, "--table", str(q.table))
    assert code == 0
    q.uninstall()
    with q.transaction() as tx:  # one session, as a SQL client runs a script
        for part in script.split(q.dialect.script_end + "\n"):
            statement = part.strip()
            if statement and not all(line.startswith("--") for line in statement.splitlines()):
                tx.execute(statement)
    fresh = make_queue()
    assert fresh.schema_version() == latest
    assert fresh.enqueue({"n": 1}) > 0


def test_sql_without_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "sql", "--dialect", "mssql", "--table", "app.jobs")
    assert code == 0 and "CREATE TABLE [app].[jobs] (" in out and "\nGO\n" in out
    code, out, _ = cli(capsys, "sql", "--dialect", "postgresql", "--from", "1")
    assert code == 0 and "0001_initial" not in out and "0002_cancel" in out
    code, _, err = cli(capsys, "sql", "--dialect", "mysql", "--from", "99")
    assert code == EXIT_CODES["config"] and "--from" in err
    code, _, err = cli(capsys, "sql", "--dialect", "mysql", "--table", "bad-name")
    assert code == EXIT_CODES["config"] and "unsafe table name" in err


def test_cancel(make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    pending = q.enqueue({"n": 1})
    running = q.enqueue({"n": 2}, queue="busy")
    q.claim(queues="busy")
    code, out, _ = cli(capsys, "cancel", str(pending), *where)
    assert (code, out.strip()) == (0, f"job {pending} cancelled")
    code, out, _ = cli(capsys, "cancel", str(running), *where)
    assert code == 0 and "cancel requested" in out
    code, out, _ = cli(capsys, "cancel", str(pending), *where)
    assert (code, out.strip()) == (0, f"job {pending} cancelled")  # still; nothing changes
    done = q.enqueue({"n": 3}, queue="quick")
    q.complete(q.claim(queues="quick")[0])
    code, out, _ = cli(capsys, "cancel", str(done), *where)
    assert (code, out.strip()) == (0, f"job {done} already finished (done): nothing changed")
    code, _, err = cli(capsys, "cancel", "999999999", *where)
    assert code == EXIT_CODES["config"] and "no job 999999999" in err
    assert q.get(pending).status == "cancelled"  # type: ignore[union-attr]
    assert q.get(running).status == "running"  # type: ignore[union-attr]
