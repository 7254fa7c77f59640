"""What a new user hit first on the command line (issue 11), each fixed and kept fixed."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conformance.conftest import wait_until, workers  # noqa: F401 (a fixture)

import skiplock
from skiplock.cli import EXIT_CODES, main

MakeQueue = Callable[..., skiplock.Queue]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tasks_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A module of the user's own, importable by name from the current directory."""
    name = "usertasks_" + re.sub(r"\W", "_", request.node.name)
    (tmp_path / f"{name}.py").write_text(
        "import skiplock\n"
        "app = skiplock.App()\n"
        "@app.task(queue='email', max_attempts=2, priority=7)\n"
        "def send(to):\n"
        "    return to\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_enqueue_uses_the_task_options_and_refuses_unknown_tasks(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str], tasks_module: str
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    code, out, err = cli(capsys, "enqueue", f"{tasks_module}.send", "bob@example.com", *where)
    assert code == 0, err
    job = q.get(int(out))
    assert job is not None
    assert (job.queue, job.max_attempts, job.priority) == ("email", 2, 7)

    code, out, _ = cli(
        capsys, "enqueue", f"{tasks_module}.send", "x", "--queue", "bulk", "--max-attempts", "9",
        *where,
    )  # fmt: skip
    job = q.get(int(out))
    assert job is not None and (job.queue, job.max_attempts, job.priority) == ("bulk", 9, 7)

    before = q.stats().pending
    code, _, err = cli(capsys, "enqueue", f"{tasks_module}.nosuch", "x", *where)
    assert code == EXIT_CODES["config"] and "unknown task" in err and "--app" in err
    app = f"{tasks_module}:app"
    code, _, err = cli(capsys, "enqueue", "--app", app, "other", "--queue", "q", *where)
    assert code == EXIT_CODES["config"] and f"{tasks_module}.send" in err
    assert q.stats().pending == before  # nothing written


def test_a_job_that_can_never_run_fails_at_once_with_one_line(
    make_queue: MakeQueue,
    caplog: pytest.LogCaptureFixture,
    workers: list[skiplock.Worker],  # noqa: F811
) -> None:
    q = make_queue()
    app = skiplock.App(q)

    @app.task
    def known() -> None:
        pass

    unknown = q.enqueue({"task": "nosuch", "args": [], "kwargs": {}}, max_attempts=5)
    not_a_call = q.enqueue(["just", "a", "list"], max_attempts=5)
    caplog.set_level(logging.INFO, logger="skiplock")
    w = app.worker(queues=["default"], lease=5, poll_interval=0.1)
    workers.append(w.start())
    for job_id in (unknown, not_a_call):
        wait_until(lambda j=job_id: q.get(j).status == "failed", 30, f"job {job_id} to fail")  # type: ignore[union-attr,misc]
        record = q.get(job_id)
        assert record is not None and record.attempt == 1
    assert "no task named 'nosuch'" in (q.get(unknown).last_error or "")  # type: ignore[union-attr]
    assert "is not a task call" in (q.get(not_a_call).last_error or "")  # type: ignore[union-attr]

    def warned(job_id: int) -> list[logging.LogRecord]:
        return [r for r in caplog.records
                if r.levelno >= logging.WARNING and f"job {job_id} " in r.getMessage()]  # fmt: skip

    for job_id in (unknown, not_a_call):
        # the outcome's line is logged just after the COMMIT the queue already shows
        wait_until(lambda j=job_id: warned(j), 10, f"job {job_id}'s line")  # type: ignore[misc]
        mine = warned(job_id)
        assert len(mine) == 1, [r.getMessage() for r in mine]
        assert mine[0].exc_info is None  # one clear line, no traceback


def test_url_before_or_after_the_command(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    q.enqueue({"n": 1})
    for args in (
        ["--url", url, "--table", str(q.table), "stats", "--json"],
        ["stats", "--json", "--url", url, "--table", str(q.table)],
        ["--url", "nosuch://h/db", "stats", "--json", "--url", url, "--table", str(q.table)],
    ):
        code, out, err = cli(capsys, *args)
        assert code == 0, err
        assert '"pending": 1' in out


def test_no_url_names_the_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKIPLOCK_URL", raising=False)
    for command in (["stats"], ["migrate"], ["cancel", "1"], ["sql"]):
        code, _, err = cli(capsys, *command)
        assert code == EXIT_CODES["config"], command
        assert "--url" in err and "SKIPLOCK_URL" in err and "url=..." not in err


def _with(url: str, *, user: str | None = None, database: str | None = None) -> str:
    scheme, rest = url.split("://", 1)
    auth, _, hostpath = rest.rpartition("@")
    host, _, path = hostpath.partition("/")
    db, sep, options = path.partition("?")
    if user is not None:
        auth = user
    return f"{scheme}://{auth + '@' if auth else ''}{host}/{database or db}{sep}{options}"


def test_a_missing_database_or_role_says_what_is_missing(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "stats", "--url", _with(url, database="skiplock_nosuchdb"))
    assert code == EXIT_CODES["database"]
    assert "could not connect" in err and "skiplock_nosuchdb" in err
    assert "lost the connection" not in err
    code, _, err = cli(capsys, "stats", "--url", _with(url, user="skiplock_nosuchrole"))
    assert code == EXIT_CODES["database"]
    assert "could not connect" in err and "skiplock_nosuchrole" in err
    assert "lost the connection" not in err


#: (arguments after "enqueue", the argument the message must name). Old code: broken JSON
#: in --payload was enqueued as a string (exit 0); NaN / Infinity / 1e999 were read by
#: Python's json, refused by the encoder as PayloadError and reported as a bug (exit 1)
NOT_JSON = [
    (["--payload", '{"to": "ada"'], "--payload"),
    (["--payload", "not json"], "--payload"),
    (["--payload", ""], "--payload"),
    (["--payload", "NaN"], "--payload"),
    (["--payload", "Infinity"], "--payload"),
    (["--payload=-Infinity"], "--payload"),
    (["--payload", '{"x": [1, NaN]}'], "--payload"),
    (["--payload", "1e999"], "--payload"),
    (["--payload", "9" * 5000], "--payload"),
    (["--payload", "[" * 100_000], "--payload"),
    (["t.send", "NaN", "--queue", "q"], "ARG 1"),
    (["--queue", "q", "--", "t.send", "1", "-Infinity"], "ARG 2"),
    (["t.send", "Infinity", "--queue", "q"], "ARG 1"),
    (["--queue", "q", "--", "t.send", "-1e400"], "ARG 1"),
    (["t.send", '{"to": "ada"', "--queue", "q"], "ARG 1"),
    (["t.send", "[1, 2", "--queue", "q"], "ARG 1"),
    (["t.send", '"unclosed', "--queue", "q"], "ARG 1"),
    (["t.send", "--queue", "q", "--kwargs", '{"to": "ada"'], "--kwargs"),
    (["t.send", "--queue", "q", "--kwargs", '{"n": NaN}'], "--kwargs"),
]


def test_arguments_that_are_not_json_exit_2_naming_the_argument(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    for args, named in NOT_JSON:
        code, out, err = cli(capsys, *where, "enqueue", *args)
        assert code == EXIT_CODES["usage"], (args, out, err)
        assert f"error: {named} " in err and "not JSON" in err and not out, (args, err)
        assert "report it" not in err and "Traceback" not in err
    assert q.stats().pending == 0 and q.list_jobs() == []


def test_text_args_and_payloads_json_refuses_are_still_told_apart(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    # an ARG that is not JSON and does not start like JSON is text (docs/cli.md)
    text_args = ["ada@example.com", "Nan", "nan", "inf", "1_000", "hello world", "-"]
    code, out, err = cli(capsys, "enqueue", "t.send", *text_args, "--queue", "q", *where)
    assert code == 0, err
    job = q.get(int(out))
    assert job is not None and job.payload["args"] == text_args
    code, out, err = cli(capsys, "enqueue", "t.send", "1.5", '"NaN"', "--queue", "q", *where)
    assert code == 0, err
    job = q.get(int(out))
    assert job is not None and job.payload["args"] == [1.5, "NaN"]
    # --payload is JSON, always: a JSON string is a string payload
    code, out, err = cli(capsys, "enqueue", "--payload", '"plain"', *where)
    assert code == 0, err
    job = q.get(int(out))
    assert job is not None and job.payload == "plain"


def test_json_that_no_database_stores_exits_3(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # JSON, but refused by the payload checks (a PayloadError): old code exit 1, "a bug"
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    deep = "[" * 150 + "]" * 150
    for args in (["--payload", deep], ["t.send", deep, "--queue", "q"]):
        code, out, err = cli(capsys, "enqueue", *args, *where)
        assert code == EXIT_CODES["config"], (args, err)
        assert "nested more than 100 levels" in err and not out
    assert q.stats().pending == 0
