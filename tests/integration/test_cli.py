"""The ``skiplock`` command on every backend, and the demo it runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conformance.conftest import wait_until, workers  # noqa: F401 (a fixture)

import skiplock
from skiplock.cli.main import EXIT_CODES, build_parser, duration, main
from skiplock.demo.embedded import available

MakeQueue = Callable[..., skiplock.Queue]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_durations() -> None:
    assert [duration(t) for t in ("90", "90s", "15m", "12h", "7d", "2w", "0.5")] == [
        90,
        90,
        900,
        43200,
        604800,
        1209600,
        0.5,
    ]
    for bad in ("", "soon", "-1d", "inf", "nan"):
        with pytest.raises(Exception, match="duration"):
            duration(bad)


def test_install_enqueue_stats_retry_prune(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    code, out, _ = cli(capsys, "install", *where)
    assert code == 0 and str(q.table) in out and q.url.masked() in out
    assert q.ping().driver in out  # which driver mode ran, where there is a choice

    code, out, _ = cli(
        capsys, "enqueue", "send", "1", "x", "--kwargs", '{"a": [1]}', "--max-attempts", "1",
        "--queue", "email", *where,
    )  # fmt: skip
    assert code == 0
    job_id = int(out)
    record = q.get(job_id)
    assert record is not None and record.queue == "email"
    assert record.payload == {"task": "send", "args": [1, "x"], "kwargs": {"a": [1]}}

    code, out, _ = cli(capsys, "stats", "--json", *where)
    assert code == 0 and json.loads(out)["pending"] == 1
    assert (json.loads(out)["pruned"], json.loads(out)["last_pruned_at"]) == (0, None)
    code, out, _ = cli(capsys, "stats", *where)
    assert code == 0 and out.splitlines()[2] == "pruned 0 finished jobs (all queues; never)"

    [job] = q.claim(queues="email")
    assert q.fail(job, "broken") == "failed"
    assert cli(capsys, "retry", *where)[0] == EXIT_CODES["config"]  # which ones?
    code, out, _ = cli(capsys, "retry", "--queue", "other", *where)
    assert (code, out.strip()) == (0, "0 failed jobs pending again")
    code, out, _ = cli(capsys, "retry", "--id", str(job_id), *where)
    assert (code, out.strip()) == (0, "1 failed job pending again")
    [again] = q.claim(queues="email")
    assert (again.attempt, again.max_attempts) == (2, 2)  # one more attempt was granted
    q.complete(again)

    time.sleep(0.05)
    code, out, _ = cli(capsys, "prune", "--older-than", "1h", *where)
    assert (code, out.strip()) == (0, "deleted 0 finished jobs")
    code, out, _ = cli(capsys, "prune", "--older-than", "0", "--batch", "1", *where)
    assert (code, out.strip()) == (0, "deleted 1 finished job")
    assert q.get(job_id) is None
    code, out, _ = cli(capsys, "stats", "--json", "--queue", "other", *where)
    assert json.loads(out)["pruned"] == 1 and json.loads(out)["last_pruned_at"] is not None
    code, out, _ = cli(capsys, "stats", *where)
    assert re.fullmatch(
        r"pruned 1 finished jobs \(all queues; last \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)",
        out.splitlines()[2],
    )


def test_enqueue_with_a_key_and_its_concurrency(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    q.install()
    where = ["--url", url, "--table", str(q.table), "--queue", "q"]
    ids = []
    for n in range(3):
        code, out, _ = cli(
            capsys, "enqueue", "t", str(n), "--key", "k", "--key-concurrency", "2", *where
        )
        assert code == 0
        ids.append(int(out))
    solo = [int(cli(capsys, "enqueue", "t", "--key", "s", *where)[1]) for _ in range(2)]
    started = []
    while got := q.claim(queues="q", limit=10):
        started += [j.id for j in got]
    assert sorted(started) == sorted([*ids[:2], solo[0]])  # two of k, one of s
    code, _, err = cli(capsys, "enqueue", "t", "--key", "k", "--key-concurrency", "0", *where)
    assert code == EXIT_CODES["config"] and "key_concurrency" in err
    code, _, err = cli(capsys, "enqueue", "t", "--key-concurrency", "2", *where)
    assert code == EXIT_CODES["config"] and "key=" in err
    assert q.stats(queues="q").pending == 2  # nothing written by the refused ones


def test_enqueue_with_a_key_rate(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    q.install()
    where = ["--url", url, "--table", str(q.table), "--queue", "q"]
    ids = []
    for n in range(3):
        args = ["enqueue", "t", str(n), "--key", "k", "--key-concurrency", "3"]
        code, out, _ = cli(capsys, *args, "--key-rate", "2/30", *where)
        assert code == 0
        ids.append(int(out))
    started = []
    for _ in range(5):
        started += [j.id for j in q.claim(queues="q", limit=10)]
    assert started == ids[:2]  # the third waits for the key's window
    for bad, says in [("2", "N/PER"), ("x/1", "N/PER"), ("0/1", "key_rate"), ("2/0", "key_rate")]:
        code, _, err = cli(capsys, "enqueue", "t", "--key", "k", "--key-rate", bad, *where)
        assert code == EXIT_CODES["config"] and says in err, (bad, err)
    code, _, err = cli(capsys, "enqueue", "t", "--key-rate", "2/1", *where)
    assert code == EXIT_CODES["config"] and "key=" in err
    s = q.stats(queues="q")
    assert (s.pending + s.scheduled, s.running) == (1, 2)  # nothing written by the refused


def test_errors_have_exit_codes_and_never_show_the_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKIPLOCK_URL", raising=False)
    code, _, err = cli(capsys, "stats")
    assert code == EXIT_CODES["config"] and "SKIPLOCK_URL" in err
    code, _, err = cli(capsys, "stats", "--url", "nosuch://u:s3cret@host/db")
    assert code == EXIT_CODES["config"] and "s3cret" not in err and "***" in err
    code, _, err = cli(capsys, "stats", "--url", "postgresql://u:s3cret@127.0.0.1:1/db")
    assert code == EXIT_CODES["database"] and "s3cret" not in err and "u:***@" in err
    code, _, err = cli(capsys, "enqueue", "--url", "postgresql://h/db")
    assert code == EXIT_CODES["config"] and "task name" in err
    with pytest.raises(SystemExit) as usage:
        main(["prune", "--url", "postgresql://h/db"])  # --older-than is required
    assert usage.value.code == EXIT_CODES["usage"]
    with pytest.raises(SystemExit) as usage:  # 0 s: a tight loop of queries
        main(["stats", "--url", "postgresql://h/db", "--watch", "0"])
    assert usage.value.code == EXIT_CODES["usage"]


def test_worker_single_no_wait_exits_5_while_another_holds_the_lock(
    make_queue: MakeQueue,
    url: str,
    tmp_path: Path,
    workers: list[skiplock.Worker],  # noqa: F811
) -> None:
    q = make_queue()
    if not q.dialect.supports_lock():
        pytest.skip("this database has no advisory-lock statements")
    holder = skiplock.Worker(q, lambda job: None, mode="single")
    workers.append(holder.start())
    wait_until(lambda: holder.lock is not None and holder.lock.held, what="the lock")
    (tmp_path / "noop.py").write_text("def handle(job):\n    return None\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "skiplock",
            "worker",
            "noop:handle",
            "--single",
            "--no-wait",
            "--table",
            str(q.table),
        ],
        cwd=tmp_path,
        env={**os.environ, "SKIPLOCK_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == EXIT_CODES["locked"], run.stderr
    assert "another worker holds the single-worker lock" in run.stderr
    assert "waiting" not in run.stderr  # it did not wait: it said so once, then exited


@pytest.mark.parametrize("kind", ["def", "async def"])  # async: runs on the AsyncWorker
def test_worker_runs_an_app_by_module_name(
    make_queue: MakeQueue, url: str, tmp_path: Path, kind: str
) -> None:
    q = make_queue()
    (tmp_path / "myapp.py").write_text(
        "import skiplock\n"
        "app = skiplock.App()\n"
        "@app.task(queue='email')\n"
        f"{kind} greet(name, punctuation='!'):\n"
        "    return 'hello ' + name + punctuation\n"
    )
    env = {**os.environ, "SKIPLOCK_URL": url}
    enq = subprocess.run(
        [sys.executable, "-m", "skiplock", "enqueue", "myapp.greet", "ada", "--queue", "email",
         "--kwargs", '{"punctuation": "?"}', "--table", str(q.table)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert enq.returncode == 0, enq.stderr
    job_id = int(enq.stdout)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skiplock", "worker", "myapp:app", "--table", str(q.table)],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: q.stats().done == 1, timeout=20, what="the job to be done")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    record = q.get(job_id)
    assert record is not None and record.result == "hello ada?"
    assert "worker started: queues email" in err
    assert f"job {job_id} done: myapp.greet, queue email, attempt 1/5" in err  # one line
    assert "mysql.connector" not in err  # the driver's chatter is silenced
    assert ("handlers on the event loop" in err) == (kind == "async def")


def test_worker_serves_metrics_on_metrics_port(
    make_queue: MakeQueue, url: str, tmp_path: Path
) -> None:
    import socket
    import urllib.request

    q = make_queue()
    (tmp_path / "mapp.py").write_text(
        "import skiplock\n"
        "app = skiplock.App()\n"
        "@app.task(name='ping')\n"
        "def ping():\n"
        "    return 'pong'\n"
    )
    q.enqueue({"task": "ping", "args": [], "kwargs": {}})
    with socket.socket() as s:  # a free port, as the system chooses it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SKIPLOCK_URL": url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skiplock", "worker", "mapp:app", "--table", str(q.table),
         "--metrics-port", str(port)],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = 'skiplock_jobs_processed_total{outcome="done",queue="default",task="ping"} 1.0'

    def scraped() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                return line in r.read().decode()
        except OSError:
            return False

    try:
        wait_until(scraped, timeout=20, what="the job counted at /metrics")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert f"metrics on http://127.0.0.1:{port}/metrics" in err


# -- the demo ------------------------------------------------------------------------------

SUMMARY = re.compile(
    r"^\s+(jobs enqueued|jobs done|jobs retried|late writes rejected|jobs lost)\s+(\d+)", re.M
)


def check_demo(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, run.stdout + run.stderr
    figures = dict(SUMMARY.findall(run.stdout))
    assert int(figures["jobs enqueued"]) == int(figures["jobs done"]) > 0
    assert int(figures["jobs retried"]) >= 3
    assert int(figures["late writes rejected"]) >= 1
    assert figures["jobs lost"] == "0"
    assert "0 written twice" in run.stdout
    assert "rejected by fencing" in run.stdout and "SIGKILL" in run.stdout


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skiplock", "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_demo_on_each_backend(url: str) -> None:
    started = time.monotonic()
    check_demo(demo("--url", url))
    assert time.monotonic() - started < 90  # a loaded 2-CPU machine; about 20 s when idle


@pytest.mark.skipif(not available(), reason="pip install 'skiplock[demo]'")
def test_demo_with_the_embedded_server() -> None:
    started = time.monotonic()
    run = demo()
    check_demo(run)
    assert "embedded" in run.stdout
    assert time.monotonic() - started < 100  # with the embedded server's start


def test_jobs_lists_a_table_or_json_and_show_prints_the_whole_record(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    ok = q.enqueue(
        {"task": "mail.send", "args": ["ada"], "kwargs": {}}, queue="email", headers={"rid": "r7"}
    )
    bad = q.enqueue({"task": "mail.send", "args": ["bob"], "kwargs": {}}, max_attempts=1)
    for job in q.claim(queues=["email", "default"], limit=2):
        if job.id == ok:
            q.complete(job)
        else:
            q.fail(job, "Traceback (most recent call last):\n  ...\nKeyError: 'bob'")

    code, out, _ = cli(capsys, "jobs", *where)
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:4] == ["id", "queue", "status", "attempt"]
    assert [line.split()[:3] for line in lines[1:]] == [
        [str(bad), "default", "failed"],
        [str(ok), "email", "done"],
    ]
    assert "mail.send" in lines[1] and "KeyError: 'bob'" in lines[1]

    code, out, _ = cli(capsys, "jobs", "--status", "failed", "--json", *where)
    (only,) = json.loads(out)
    assert code == 0 and only["id"] == bad and only["last_error"].endswith("KeyError: 'bob'")
    code, out, _ = cli(capsys, "jobs", "--status", "done", "--status", "failed", "--json", *where)
    assert code == 0 and sorted(j["id"] for j in json.loads(out)) == sorted([ok, bad])
    code, out, _ = cli(capsys, "jobs", "--queue", "email", "--limit", "1", *where)
    assert code == 0 and out.splitlines()[1].split()[0] == str(ok)
    assert f"--before-id {ok}" in out
    code, out, _ = cli(capsys, "jobs", "--queue", "email", "--before-id", str(ok), *where)
    assert code == 0 and out.strip() == "no jobs"

    code, out, _ = cli(capsys, "show", str(bad), *where)
    assert code == 0 and f"id:              {bad}" in out
    assert "  Traceback (most recent call last):\n" in out and "  KeyError: 'bob'" in out
    assert "idempotency_key:" in out and "finished_at:" in out
    code, out, _ = cli(capsys, "show", str(ok), "--json", *where)
    shown = json.loads(out)
    assert code == 0 and shown["status"] == "done" and shown["payload"]["args"] == ["ada"]
    assert shown["headers"] == {"rid": "r7"} and "waited" not in shown
    code, out, _ = cli(capsys, "show", str(ok), *where)
    assert 'headers:         {"rid": "r7"}' in out

    code, _, err = cli(capsys, "show", "999999", *where)
    assert code == EXIT_CODES["config"] and "no job 999999" in err
    code, _, err = cli(capsys, "jobs", "--limit", "0", *where)
    assert code == EXIT_CODES["config"] and "limit" in err
    with pytest.raises(SystemExit) as exit_info:
        cli(capsys, "jobs", "--status", "lost", *where)
    assert exit_info.value.code == EXIT_CODES["usage"]


def test_worker_runs_an_app_s_periodic_tasks_and_prunes_old_jobs(
    make_queue: MakeQueue, url: str, tmp_path: Path
) -> None:
    q = make_queue()
    old = q.enqueue("old", max_attempts=1)
    (job,) = q.claim()
    q.complete(job)
    (tmp_path / "cronapp.py").write_text(
        "import skiplock\n"
        "app = skiplock.App()\n"
        "@app.periodic(cron='* * * * * *', timezone='Europe/Paris')\n"
        "@app.task(queue='cron', name='beat')\n"
        "def beat(tick):\n"
        "    return tick.isoformat()\n"
    )
    env = {**os.environ, "SKIPLOCK_URL": url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skiplock", "worker", "cronapp:app", "--table", str(q.table),
         "--retention", "3s"],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    beats: list[skiplock.Job] = []

    def seen() -> bool:
        # read in one look: the worker prunes each periodic job too once it is 3 s old
        if q.get(old) is not None:
            return False
        beats[:] = q.list_jobs(status="done")
        return len(beats) >= 2

    try:
        # the old job goes once it is 3 s old (the worker prunes every ~0.3 s); newer
        # periodic jobs stay until they are 3 s old: some are always there
        wait_until(seen, timeout=60, what="two periodic jobs done and the old job pruned")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert all(j.queue == "cron" and j.result == j.payload["periodic"]["tick"] for j in beats)
    assert all(j.finished_at is not None for j in beats) and len(beats) >= 2
    assert "worker started: queues cron" in err and re.search(r"pruned \d+ jobs finished", err)
    assert re.search(r"worker stopped: .*pruned [1-9]\d*, scheduled [1-9]", err), err


def test_retention_option_parses_durations_and_none() -> None:
    from skiplock.cli.main import retention

    assert retention("7d") == 7 * 86400 and retention("none") is None
    assert retention("Never") is None
    with pytest.raises(Exception, match="duration"):
        retention("forever")


def test_pause_and_resume_a_queue_and_see_it_in_stats_and_jobs(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    q.enqueue({"n": 1}, queue="email")
    code, out, _ = cli(capsys, "pause", "email", *where)
    assert code == 0 and "paused" in out
    assert q.paused() == {"email"} and q.claim(queues="email") == []
    code, out, _ = cli(capsys, "stats", *where)
    assert code == 0 and out.splitlines()[-1] == "paused: email"
    code, out, _ = cli(capsys, "stats", "--json", *where)
    assert code == 0 and json.loads(out)["paused"] == ["email"]
    code, out, _ = cli(capsys, "stats", "--queue", "default", *where)
    assert code == 0 and "paused" not in out
    code, out, _ = cli(capsys, "jobs", *where)
    assert code == 0 and out.splitlines()[-1].startswith("paused: email ")
    code, out, _ = cli(capsys, "jobs", "--queue", "default", *where)
    assert code == 0 and "paused" not in out

    code, out, _ = cli(capsys, "resume", "email", *where)
    assert code == 0 and "resumed" in out
    assert q.paused() == set() and len(q.claim(queues="email")) == 1
    code, out, _ = cli(capsys, "stats", *where)
    assert "paused" not in out
    code, _, err = cli(capsys, "pause", "bad ", *where)
    assert code == EXIT_CODES["config"] and "space" in err
    assert {"pause", "resume"} <= set(build_parser().format_help().split())
