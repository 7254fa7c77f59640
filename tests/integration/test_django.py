"""skiplock's django.tasks backend and ``manage.py skiplock_worker``, in a real Django
project (tests/django_project) run in subprocesses against each database server.

Each test gets a database of its own on the server (created and dropped here), migrated
by ``manage.py migrate``. Runs on the default Python with Django 5.2 and the django-tasks
backport; tests/integration/test_django6.py runs this file again on Python 3.12 with Django 6.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import new_database, required

import skiplock
from skiplock.drivers.url import parse_url

pytest.importorskip("django", reason="pip install 'skiplock[django]'")

PROJECT = Path(__file__).resolve().parents[1] / "django_project"


class Project:
    """The test project on one database: ``manage(...)``, ``scenario(...)``, workers."""

    def __init__(self, url: str, tmp: Path, where: Path = PROJECT) -> None:
        self.env = {**os.environ, "SKIPLOCK_DJANGO_URL": url, "PYTHONUNBUFFERED": "1"}
        self.where = where
        self.tmp = tmp
        self.workers: list[subprocess.Popen[bytes]] = []

    def run(
        self, *args: str, timeout: float = 180, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, *args],
            cwd=self.where,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0 or not check, f"{args}: {done.stdout}\n{done.stderr}"
        return done

    def manage(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return self.run("manage.py", *args, timeout=timeout)

    def scenario(self, name: str, *args: str) -> Any:
        return json.loads(self.run("scenario.py", name, *args).stdout.strip().splitlines()[-1])

    def result(self, result_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.scenario("result", result_id)
        return found

    def start_worker(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.tmp / f"{name}.log"
        with open(log, "wb") as out:
            p = subprocess.Popen(
                [sys.executable, "manage.py", "skiplock_worker", "--worker-id", name, *args],
                cwd=self.where,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.workers.append(p)
        return p, log

    def wait_started(self, result_id: str, worker: str, timeout: float = 90) -> None:
        """Until *worker* has written its attempt row (its task function runs)."""
        self.wait_running(result_id, timeout)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.result(result_id)["worker_ids"][-1:] == [worker]:
                return
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {worker} to start task {result_id}")

    def wait_running(self, result_id: str, timeout: float = 90) -> None:
        """Until the task's job is running (read through skiplock, not a subprocess)."""
        q = skiplock.connect(self.env["SKIPLOCK_DJANGO_URL"], table="skiplock_tasks")
        try:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                job = q.get(int(result_id))
                if job is not None and job.status == "running":
                    return
                time.sleep(0.1)
        finally:
            q.close()
        raise AssertionError(f"timed out waiting for task {result_id} to run")


@pytest.fixture
def database(backend: str, url: str) -> Iterator[str]:
    """The URL of a new database on the backend's server, dropped afterwards."""
    u = parse_url(url)
    if u.dialect not in ("postgresql", "mysql"):
        pytest.skip(f"{backend}: the test project has Django's PostgreSQL and MySQL backends")
    if u.dialect == "mysql":
        try:
            import MySQLdb  # noqa: F401
        except ImportError:
            reason = f"{backend}: Django's MySQL backend needs mysqlclient (pip install it)"
            if required(backend):
                pytest.fail(f"required backend unusable: {reason}", pytrace=False)
            pytest.skip(reason)
    with new_database(url, "skiplock_dj") as found:
        yield found


@pytest.fixture
def project(database: str, tmp_path: Path) -> Iterator[Project]:
    p = Project(database, tmp_path)
    try:
        p.manage("migrate", "-v0")
        yield p
    finally:
        for w in p.workers:
            if w.poll() is None:
                w.kill()
            w.wait(30)


def test_enqueue_commits_and_rolls_back_with_the_atomic_block(project: Project) -> None:
    got = project.scenario("atomic")
    assert got == {
        "seen_inside": True,
        "kept": True,
        "undone": False,
        "outside": True,
        "notes": ["kept"],
        "status": "READY",
    }


def test_bad_input_raises_its_own_error_and_writes_nothing(project: Project) -> None:
    assert project.scenario("bad_input") == {
        "not_json": "PayloadError",
        "nan": "PayloadError",
        "priority": "InvalidTask" if _django6(project) else "InvalidTaskError",
        "queue": "InvalidTask" if _django6(project) else "InvalidTaskError",
        "ids": ["TaskResultDoesNotExist"] * 4,
        "MAX_ATTEMPTS": "ConfigurationError",
        "LEASE": "ConfigurationError",
        "RETRY_DELAY": "ConfigurationError",
        "DATABASE": "ConfigurationError",
        "notes": ["after", "survives"],
        "jobs": 0,
    }


def _django6(project: Project) -> bool:
    out = project.run("-c", "import django; print(django.VERSION[0])").stdout
    return int(out) >= 6


def test_worker_runs_tasks_and_results_show_through_get_result(project: Project) -> None:
    calls = [["add", [2, 3]], ["explode", ["boom"]], ["which_attempt", []], ["add_async", [4, 5]]]
    ok, bad, ctx, coro = project.scenario("enqueue_calls", json.dumps(calls))
    assert project.result(ok)["status"] == "READY"
    project.manage("skiplock_worker", "--batch", "--worker-id", "w1")

    r, failed, with_context, from_coroutine = project.scenario("results", ok, bad, ctx, coro)
    assert r["status"] == "SUCCESSFUL" and r["is_finished"]
    assert r["return_value"]["sum"] == 5
    assert r["args"] == [2, 3] and r["kwargs"] == {}
    assert r["attempts"] == 1 and r["worker_ids"] == ["w1"] and r["errors"] == []
    assert r["enqueued_at"] <= r["started_at"] <= r["finished_at"]
    assert r["started_at"] == r["last_attempted_at"]

    # MAX_ATTEMPTS 2 in the test project: two attempts, each error with its traceback
    r = failed
    assert r["status"] == "FAILED" and r["is_finished"]
    assert r["attempts"] == 2 and r["worker_ids"] == ["w1", "w1"]
    assert [e["exception_class_path"] for e in r["errors"]] == ["builtins.ValueError"] * 2
    assert r["exception_class"] == "ValueError"
    for e in r["errors"]:
        assert "Traceback (most recent call last)" in e["traceback"]
        assert "ValueError: boom" in e["traceback"]
        assert "in explode" in e["traceback"]
    assert "return_value" not in r
    assert r["started_at"] < r["last_attempted_at"] <= r["finished_at"]

    assert with_context["return_value"] == 1  # TaskContext.attempt
    assert from_coroutine["return_value"] == 9  # an async task
    assert project.scenario("missing", "999999") is True


def test_larger_django_priority_runs_first_and_run_after_waits(project: Project) -> None:
    got = project.scenario("enqueue_priorities")
    project.manage("skiplock_worker", "--batch", "--concurrency", "1")
    assert project.scenario("notes") == ["p100", "p50", "p0", "p-10", "p-100"]
    later = project.result(got["later"])
    assert later["status"] == "READY" and later["attempts"] == 0
    assert project.result(got["ids"]["100"])["priority"] == 100


def test_a_killed_workers_task_comes_back_after_its_lease(project: Project) -> None:
    """Django's database backend leaves such a task RUNNING for ever (nothing claims a
    RUNNING row again); here the claim takes it back once the lease has ended."""
    first, _ = project.start_worker("first", "--lease", "1")
    job = project.scenario("enqueue", "stall_first", "600")["id"]
    project.wait_started(job, "first")
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    assert project.result(job)["status"] == "RUNNING"
    project.manage("skiplock_worker", "--batch", "--lease", "1", "--worker-id", "second")
    r = project.result(job)
    assert r["status"] == "SUCCESSFUL" and r["return_value"] == "on time"
    assert r["attempts"] == 2 and r["worker_ids"] == ["first", "second"]


def test_a_slow_task_keeps_its_claim_through_heartbeats(project: Project) -> None:
    """A task running more than 2 leases long, with a second worker waiting for work all along:
    heartbeats keep it the first worker's, so it runs once."""
    project.start_worker("first", "--lease", "1.5")
    job = project.scenario("enqueue", "sleep_for", "3.5")["id"]
    project.wait_running(job)
    project.manage("skiplock_worker", "--batch", "--lease", "1.5", "--worker-id", "second")
    r = project.result(job)
    assert r["status"] == "SUCCESSFUL" and r["return_value"] == "slept"
    assert r["attempts"] == 1 and r["worker_ids"] == ["first"]


def test_a_late_result_is_rejected_and_its_writes_roll_back(project: Project) -> None:
    """A worker frozen past its lease (SIGSTOP) finishes its task after another worker
    ran it again: its fenced result is rejected, and (ATOMIC) the task's own row too."""
    project.env["SKIPLOCK_DJANGO_ATOMIC"] = "1"
    frozen, log = project.start_worker("frozen", "--lease", "2")
    # the task waits for the file `release` (at most 10 minutes): it must still be in its
    # task when SIGSTOP comes, after wait_started's polls (each a Django subprocess: on a
    # loaded machine, over 8 s in all, where a task of a fixed 8 s failed once)
    release = project.tmp / "release"
    job = project.scenario("enqueue", "stall_first", "600", json.dumps(str(release)))["id"]
    project.wait_started(job, "frozen")
    frozen.send_signal(signal.SIGSTOP)
    try:
        project.manage("skiplock_worker", "--batch", "--lease", "2", "--worker-id", "other")
    finally:
        frozen.send_signal(signal.SIGCONT)
        release.touch()  # the frozen worker's task ends now, late
    end = time.monotonic() + 90
    while "lost its lease" not in log.read_text() and time.monotonic() < end:
        time.sleep(0.3)
    assert "lost its lease" in log.read_text(), log.read_text()
    frozen.send_signal(signal.SIGTERM)
    assert frozen.wait(60) == 0, log.read_text()
    r = project.result(job)
    assert r["status"] == "SUCCESSFUL" and r["return_value"] == "on time"
    assert r["attempts"] == 2 and r["worker_ids"] == ["frozen", "other"]
    assert "late" not in project.scenario("notes")


BACKEND = "skiplock.contrib.django.SkiplockBackend"


def _add_backends(project: Project, **entries: dict[str, Any]) -> None:
    """TASKS entries added to the project's settings (a backend added after its migrate)."""
    project.env["SKIPLOCK_DJANGO_MORE_TASKS"] = json.dumps(entries)


def _version(url: str, table: str) -> int:
    """The schema version of skiplock's *table* on *url* (0: no such table)."""
    q = skiplock.connect(url, table=table)
    try:
        return q.schema_version()
    finally:
        q.close()


def _runs_through(project: Project, backend: str) -> None:
    """A task enqueued through the TASKS backend *backend* is run by its skiplock_worker."""
    got = project.scenario("enqueue_using", backend, "add", "2", "3")
    assert got["status"] == "READY"
    project.manage("skiplock_worker", "--backend", backend, "--batch", "--worker-id", "w2")
    r = project.scenario("result_using", backend, got["id"])
    assert r["status"] == "SUCCESSFUL" and r["return_value"]["sum"] == 5
    assert r["worker_ids"] == ["w2"]


def test_a_backend_added_after_the_first_migrate_gets_its_table_from_migrate(
    project: Project,
) -> None:
    url = project.env["SKIPLOCK_DJANGO_URL"]
    current = _version(url, "skiplock_tasks")  # made by the fixture's migrate
    assert current > 0 and _version(url, "skiplock_second") == 0
    second = {"BACKEND": BACKEND, "OPTIONS": {"TABLE": "skiplock_second"}}
    _add_backends(project, second=second)
    project.manage("migrate", "--plan")
    project.manage("migrate", "--check")
    assert _version(url, "skiplock_second") == 0  # neither writes
    project.manage("migrate", "-v0")  # no Django migration left to apply
    assert _version(url, "skiplock_second") == current
    _runs_through(project, "second")

    _add_backends(project, second=second, third={"BACKEND": BACKEND, "OPTIONS": {"TABLE": "t3"}})
    project.manage("migrate", "skiplock", "zero", "-v0")
    assert _version(url, "t3") == 0  # skiplock's app unapplied: its tables are not made


def test_migrate_brings_an_older_skiplock_table_to_the_current_version(project: Project) -> None:
    url = project.env["SKIPLOCK_DJANGO_URL"]
    current = _version(url, "skiplock_tasks")
    q = skiplock.connect(url, table="skiplock_old")
    try:
        q.migrate(to=1)  # as an older skiplock left it
    finally:
        q.close()
    _add_backends(project, old={"BACKEND": BACKEND, "OPTIONS": {"TABLE": "skiplock_old"}})
    out = project.manage("migrate").stdout  # no Django migration left to apply
    assert _version(url, "skiplock_old") == current
    versions = ", ".join(str(v) for v in range(2, current + 1))
    assert f"table 'skiplock_old' of TASKS['old'] on 'default': schema versions {versions}" in out
    _runs_through(project, "old")


@pytest.fixture
def other_database(database: str, url: str) -> Iterator[str]:
    with new_database(url, "skiplock_dj") as found:
        yield found


def test_a_backend_on_another_database_gets_its_table_from_migrate_database(
    project: Project, other_database: str
) -> None:
    url = project.env["SKIPLOCK_DJANGO_URL"]
    current = _version(url, "skiplock_tasks")
    project.env["SKIPLOCK_DJANGO_OTHER_URL"] = other_database
    options = {"DATABASE": "other", "TABLE": "skiplock_elsewhere"}
    _add_backends(project, elsewhere={"BACKEND": BACKEND, "OPTIONS": options})
    project.manage("migrate", "-v0")  # the default database only
    assert _version(url, "skiplock_elsewhere") == 0
    assert _version(other_database, "skiplock_elsewhere") == 0
    project.manage("migrate", "--database", "other", "-v0")
    assert _version(other_database, "skiplock_elsewhere") == current
    assert _version(other_database, "skiplock_tasks") == 0  # that backend is on default
    assert _version(url, "skiplock_elsewhere") == 0
    _runs_through(project, "elsewhere")


def test_migrate_names_a_backend_it_cannot_reach_and_still_makes_the_others(
    project: Project,
) -> None:
    url = project.env["SKIPLOCK_DJANGO_URL"]
    current = _version(url, "skiplock_tasks")
    scheme = url.split("://", 1)[0]
    unreachable = f"{scheme}://someone:s3cretpw@127.0.0.1:1/nowhere"  # nothing listens
    broken = {"TABLE": "skiplock_broken", "URL": unreachable}
    _add_backends(
        project,
        broken={"BACKEND": BACKEND, "OPTIONS": broken},
        second={"BACKEND": BACKEND, "OPTIONS": {"TABLE": "skiplock_second"}},
    )
    done = project.run("manage.py", "migrate", "-v0", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    err = done.stderr
    assert "CommandError: skiplock could not make or migrate its table for " in err, err
    assert "TASKS['broken'] table 'skiplock_broken': " in err and "could not connect" in err
    assert "s3cretpw" not in done.stdout + err and "someone:***@127.0.0.1:1" in err
    assert "Traceback" not in err
    assert _version(url, "skiplock_second") == current  # the backend after it is made


DOC = Path(__file__).resolve().parents[2] / "docs" / "django.md"
_DOC_SETTINGS = """\
import sys
sys.path.insert(0, {project!r})
from dbsettings import DATABASES  # the test's database

SECRET_KEY = "docs test"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

{settings}

INSTALLED_APPS += ["django.contrib.auth", "django.contrib.contenttypes", "myapp"]
try:
    import django.tasks
except ImportError:
    INSTALLED_APPS.insert(0, "django_tasks")
"""


def _doc_blocks() -> dict[str, str]:
    found = re.findall(r"<!-- docs-test: (\w+) -->\n```\w+\n(.*?)```", DOC.read_text(), re.S)
    return dict(found)


def test_the_docs_settings_task_enqueue_and_commands_work(database: str, tmp_path: Path) -> None:
    blocks = _doc_blocks()
    assert set(blocks) == {"settings", "tasks", "enqueue", "commands"}
    where = tmp_path / "site"
    (where / "myapp").mkdir(parents=True)
    (where / "myapp" / "__init__.py").write_text("")
    (where / "myapp" / "tasks.py").write_text(blocks["tasks"])
    (where / "settings.py").write_text(
        _DOC_SETTINGS.format(project=str(PROJECT), settings=blocks["settings"])
    )
    shutil.copy(PROJECT / "manage.py", where / "manage.py")
    site = Project(database, tmp_path, where)
    for line in blocks["commands"].splitlines():
        command = line.split("#", 1)[0].split()
        assert command[:2] == ["python", "manage.py"], line
        if "skiplock_worker" in command:
            command.append("--batch")  # the docs' worker runs until stopped
            enqueued = site.run("manage.py", "shell", "-c", blocks["enqueue"] + "print(result.id)")
            result_id = enqueued.stdout.split()[-1]
        site.run(*command[1:])
    check = (
        "from myapp.tasks import send_welcome\n"
        f"r = send_welcome.get_result({result_id!r})\n"
        "print(r.status, r.return_value, r.task.queue_name, r.task.priority)"
    )
    out = site.run("manage.py", "shell", "-c", check).stdout.split("\n")[-2]
    assert out == "SUCCESSFUL welcome, user 1 email 10"


def test_the_queue_url_comes_from_djangos_settings_and_masks_the_password() -> None:
    from types import SimpleNamespace

    from skiplock.contrib.django._urls import queue_url

    def conn(vendor: str, **s: str) -> SimpleNamespace:
        return SimpleNamespace(vendor=vendor, alias="default", settings_dict=s)

    url = queue_url(conn("postgresql", NAME="app", USER="me", PASSWORD="p@ss:/w", HOST="db"))
    assert url == "postgresql://me:p%40ss%3A%2Fw@db:5432/app"
    parsed = parse_url(url)
    assert parsed.password == "p@ss:/w" and "p@ss" not in parsed.masked()
    assert queue_url(conn("mysql", NAME="app", PORT="3307")) == "mysql://localhost:3307/app"
    assert queue_url(conn("microsoft", NAME="app", HOST="::1")).startswith("mssql://[::1]:1433")
    with pytest.raises(skiplock.ConfigurationError, match="not on Django's 'sqlite'"):
        queue_url(conn("sqlite", NAME="db.sqlite3"))


def test_skiplock_worker_runs_a_fleet_with_metrics_and_logs_each_retry_s_error(
    project: Project,
) -> None:
    """``--processes 2 --metrics-port 0``: a supervisor, its two processes (each Django set
    up, a worker id of its own) and one /metrics; the retried line names the error."""
    calls = [["add", [n, n]] for n in range(6)] + [["explode", ["boom"]]]
    ids = project.scenario("enqueue_calls", json.dumps(calls))
    done = project.manage(
        "skiplock_worker", "--batch", "--processes", "2", "--metrics-port", "0",
        "--concurrency", "2", timeout=240,
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert "fleet of 2 processes" in log and "metrics of the fleet on http://" in log, log
    results = project.scenario("results", *ids)
    assert [r["status"] for r in results] == ["SUCCESSFUL"] * 6 + ["FAILED"]
    assert [r["return_value"]["sum"] for r in results[:6]] == [2 * n for n in range(6)]
    workers = {w for r in results for w in r["worker_ids"]}
    assert all(len(w) == 32 for w in workers)  # random, one per process
    assert re.search(r"job \d+ retried: .*: ValueError: boom", log), log

    one = project.scenario("enqueue", "add", "1", "2")["id"]
    done = project.manage("skiplock_worker", "--batch", "--metrics-port", "0")
    assert re.search(r"metrics on http://127\.0\.0\.1:\d+/metrics", done.stderr), done.stderr
    assert project.result(one)["status"] == "SUCCESSFUL"

    with pytest.raises(AssertionError, match="--worker-id names one process"):
        project.manage("skiplock_worker", "--processes", "2", "--worker-id", "x")
    # the same check as `skiplock worker --processes`: words, 0, signs and non-ASCII digits
    for bad in ("two", "0", "+2", "1001", "\u0662"):
        with pytest.raises(AssertionError, match=r"--processes: .* is not a number of processes"):
            project.manage("skiplock_worker", "--processes", bad)
