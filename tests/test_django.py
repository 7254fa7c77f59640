"""skiplock's django.tasks backend and ``manage.py skiplock_worker``, in a real Django
project (tests/django_project) run in subprocesses against each database server.

Each test gets a database of its own on the server (created and dropped here), migrated
by ``manage.py migrate``. Runs on the default Python with Django 5.2 and the django-tasks
backport; tests/test_django6.py runs this file again on Python 3.12 with Django 6.
"""

from __future__ import annotations

import itertools
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
from conftest import required

import skiplock
from skiplock._url import parse_url

pytest.importorskip("django", reason="pip install 'skiplock[django]'")

PROJECT = Path(__file__).resolve().parent / "django_project"
_counter = itertools.count()


def _admin(url: str, statement: str) -> None:
    """CREATE / DROP DATABASE on the server, outside any transaction."""
    q = skiplock.connect(url, table="skiplock_probe")
    conn = q.connection()
    try:
        if q.url.dialect == "postgresql":
            conn.rollback()
            conn.autocommit = True
        cur = conn.cursor()
        cur.execute(statement)
        cur.close()
    finally:
        conn.close()
        q.close()


class Project:
    """The test project on one database: ``manage(...)``, ``scenario(...)``, workers."""

    def __init__(self, url: str, tmp: Path, where: Path = PROJECT) -> None:
        self.env = {**os.environ, "SKIPLOCK_DJANGO_URL": url, "PYTHONUNBUFFERED": "1"}
        self.where = where
        self.tmp = tmp
        self.workers: list[subprocess.Popen[bytes]] = []

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, *args],
            cwd=self.where,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
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
    name = f"skiplock_dj_{os.getpid()}_{next(_counter)}"
    _admin(url, f"DROP DATABASE IF EXISTS {name}")
    _admin(url, f"CREATE DATABASE {name}")
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        _admin(url, f"DROP DATABASE IF EXISTS {name}")


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
    job = project.scenario("enqueue", "stall_first", "4")["id"]
    project.wait_started(job, "frozen")
    frozen.send_signal(signal.SIGSTOP)
    try:
        project.manage("skiplock_worker", "--batch", "--lease", "2", "--worker-id", "other")
    finally:
        frozen.send_signal(signal.SIGCONT)
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


DOC = Path(__file__).resolve().parents[1] / "docs" / "django.md"
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
