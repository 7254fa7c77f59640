"""``skiplock demo``: the guarantees, shown with real worker processes (docs/cli.md)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .._core.job import Job
from ..app import App
from ..errors import ConfigurationError, LeaseLost
from ..queue import Queue

__all__ = ["app", "run_demo"]

T = TypeVar("T")

LEASE = 1.5  # short, so that the story fits in seconds; heartbeats every 0.5 s
SLOW = 2.5  # the slow jobs outlive the lease unless heartbeats extend it
QUEUE = "demo"

#: the tasks the demo's worker processes run
app = App()


def _tables(q: Queue) -> tuple[str, str]:
    d, name = q.dialect, q.table.name
    return d.quote(f"{name}_runs"), d.quote(f"{name}_receipts")


@app.task(name="demo.work", queue=QUEUE, pass_job=True, max_attempts=3)
def work(job: Job, seconds: float, kind: str = "normal") -> None:
    """Log the run, sleep, then commit a receipt and the fenced completion together."""
    q = app.queue
    runs, receipts = _tables(q)
    mine = {"j": job.id, "a": job.attempt, "p": os.getpid()}
    with q.transaction() as tx:
        tx.execute(f"INSERT INTO {runs} (job_id, attempt, pid) VALUES (%(j)s, %(a)s, %(p)s)", mine)
    if kind == "flaky" and job.attempt == 1:
        raise RuntimeError("flaky job: fails on its first attempt")
    time.sleep(seconds)
    try:
        with q.transaction() as tx:
            tx.execute(
                f"INSERT INTO {receipts} (job_id, attempt, pid) VALUES (%(j)s, %(a)s, %(p)s)", mine
            )
            tx.complete(job)  # fenced: LeaseLost rolls the receipt back too
    except LeaseLost:
        with q.transaction() as tx:
            tx.execute(
                f"UPDATE {runs} SET outcome = 'rejected' WHERE job_id = %(j)s AND attempt = %(a)s",
                mine,
            )
        raise


class DemoFailed(Exception):
    pass


class _Demo:
    def __init__(self, q: Queue, url: str, workers: int, jobs: int, verbose: bool) -> None:
        self.url = url
        self.q, self.n_workers, self.n_jobs, self.verbose = q, workers, jobs, verbose
        self.runs, self.receipts = _tables(q)
        self.started = time.monotonic()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logdir = tempfile.mkdtemp(prefix="skiplock-demo-")

    def say(self, text: str) -> None:
        stamp = f"{time.monotonic() - self.started:5.1f}s  "
        print(textwrap.fill(text, 79, initial_indent=stamp, subsequent_indent=" " * 8), flush=True)

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        with self.q.transaction() as tx:
            cur = tx.connection.cursor()
            try:
                cur.execute(sql, params or {})
                return [tuple(r) for r in cur.fetchall()]
            finally:
                cur.close()

    def scalar(self, sql: str, params: dict[str, Any] | None = None) -> int:
        return int(self.rows(sql, params)[0][0] or 0)

    def wait(self, what: str, probe: Callable[[], T | None], timeout: float = 20.0) -> T:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = probe()
            if found:
                return found
            time.sleep(0.05)
        raise DemoFailed(f"gave up after {timeout:.0f}s waiting until {what}")

    def run_of(self, job_id: int, attempt: int, rejected: bool = False) -> int | None:
        sql = f"SELECT pid FROM {self.runs} WHERE job_id = %(j)s AND attempt = %(a)s"
        if rejected:
            sql += " AND outcome = 'rejected'"
        found = self.rows(sql, {"j": job_id, "a": attempt})
        return int(found[0][0]) if found else None

    # -- the story --------------------------------------------------------------------------

    def setup(self) -> None:
        q, t = self.q, self.q.dialect.quote(self.q.table.name)
        with q.transaction() as tx:
            for name in (self.runs, self.receipts, t):
                tx.execute(f"DROP TABLE IF EXISTS {name}")
            tx.execute(
                f"CREATE TABLE {self.runs} (job_id BIGINT NOT NULL, attempt INT NOT NULL, "
                "pid INT NOT NULL, outcome VARCHAR(16) NULL)"
            )
            tx.execute(
                f"CREATE TABLE {self.receipts} (job_id BIGINT NOT NULL, attempt INT NOT NULL, "
                "pid INT NOT NULL)"
            )
        q.install()

    def spawn(self, count: int) -> None:
        env = {**os.environ, "SKIPLOCK_URL": self.url}  # never on a command line
        for _ in range(count):
            i = len(self.procs)
            log = open(os.path.join(self.logdir, f"worker-{i}.log"), "wb")  # noqa: SIM115
            cmd = [sys.executable, "-m", "skiplock", "worker", "skiplock.demo.story:app"]
            cmd += ["--table", str(self.q.table), "--concurrency", "1", "--lease", str(LEASE)]
            cmd += ["--grace", "5"]
            out = None if self.verbose else log
            self.procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=out))

    def story(self) -> None:
        slow = self.enqueue(SLOW, "slow", priority=-1)
        flaky = self.enqueue(0.1, "flaky")
        for i in range(self.n_jobs):
            self.enqueue(0.05 + 0.15 * (i % 3))
        self.say(
            f"enqueued {self.n_jobs + 2} jobs on queue {QUEUE!r}: job {slow} is slow "
            f"({SLOW}s), job {flaky} fails once"
        )
        self.spawn(self.n_workers)
        pids = ", ".join(str(p.pid) for p in self.procs)
        self.say(
            f"started {self.n_workers} worker processes (pids {pids}); "
            f"lease {LEASE}s, heartbeat every {LEASE / 3:.1f}s"
        )

        frozen = self.wait(f"job {slow} starts", lambda: self.run_of(slow, 1))
        os.kill(frozen, signal.SIGSTOP)
        self.say(
            f"worker {frozen} took job {slow} (attempt 1) and froze: SIGSTOP, like a "
            "long GC pause; its heartbeats stop too"
        )
        second = self.wait(f"job {slow} is claimed again", lambda: self.run_of(slow, 2))
        self.say(f"job {slow}'s lease ran out; worker {second} took it back as attempt 2")
        self.wait(f"job {slow} is done", lambda: self._status(slow) == "done", SLOW + 20)
        self.say(f"job {slow} done by attempt 2; waking worker {frozen} (SIGCONT)")
        os.kill(frozen, signal.SIGCONT)
        self.wait(f"worker {frozen}'s late write is refused", lambda: self.run_of(slow, 1, True))
        self.say(
            f"worker {frozen} finished attempt 1 late: its write (job {slow}, attempt 1) "
            "was rejected by fencing, and its receipt rolled back with it"
        )

        doomed = self.enqueue(SLOW, "killed", priority=-1)
        victim = self.wait(f"job {doomed} starts", lambda: self.run_of(doomed, 1))
        os.kill(victim, signal.SIGKILL)
        self.say(f"worker {victim} took job {doomed} and was killed outright (SIGKILL)")
        taker = self.wait(f"job {doomed} comes back", lambda: self.run_of(doomed, 2))
        self.say(f"job {doomed}'s lease ran out; worker {taker} took it back as attempt 2")
        self.wait("the queue is drained", self._drained, SLOW + 30)
        per_worker = self.rows(f"SELECT pid, count(*) FROM {self.runs} GROUP BY pid ORDER BY pid")
        shares = ", ".join(f"{pid}: {n}" for pid, n in per_worker)
        self.say(
            f"queue drained (handler runs per worker {shares}); stopping the workers with SIGTERM"
        )
        codes = self.stop_workers()
        self.say(f"workers exited with codes {codes} (-9: the one killed)")

    def enqueue(self, *args: Any, priority: int = 0) -> int:
        sender = App(self.q)  # the workers' app knows the task; this one only sends
        return sender.enqueue("demo.work", args, queue=QUEUE, max_attempts=3, priority=priority)

    def _status(self, job_id: int) -> str | None:
        record = self.q.get(job_id)
        return None if record is None else record.status

    def _drained(self) -> bool:
        s = self.q.stats()
        return s.pending + s.scheduled + s.running + s.expired == 0

    def stop_workers(self) -> list[int]:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        return [p.wait(timeout=15) for p in self.procs]

    def summary(self) -> bool:
        t = self.q.dialect.quote(self.q.table.name)
        total = self.scalar(f"SELECT count(*) FROM {t}")
        done = self.scalar(f"SELECT count(*) FROM {t} WHERE status = 'done'")
        retried = self.scalar(f"SELECT count(*) FROM {t} WHERE attempt > 1")
        runs = self.scalar(f"SELECT count(*) FROM {self.runs}")
        receipts = self.scalar(f"SELECT count(*) FROM {self.receipts}")
        once = self.scalar(f"SELECT count(DISTINCT job_id) FROM {self.receipts}")
        rejected = self.scalar(
            f"SELECT count(*) FROM {self.runs} r WHERE r.outcome = 'rejected' AND NOT EXISTS "
            f"(SELECT 1 FROM {self.receipts} c WHERE c.job_id = r.job_id "
            "AND c.attempt = r.attempt)"
        )
        lost = total - self.scalar(
            f"SELECT count(*) FROM {t} j WHERE j.status = 'done' AND EXISTS "
            f"(SELECT 1 FROM {self.receipts} c WHERE c.job_id = j.id)"
        )
        print("\nSummary, read from the database:")
        print(f"  jobs enqueued          {total:4}")
        print(
            f"  jobs done              {done:4}   {receipts} receipts for {once} jobs: "
            f"{receipts - once} written twice"
        )
        print(f"  jobs retried           {retried:4}   (attempt > 1; {runs} handler runs in all)")
        print(f"  late writes rejected   {rejected:4}   (fencing; nothing of theirs committed)")
        print(f"  jobs lost              {lost:4}")
        ok = total == done == once == receipts and lost == 0 and rejected >= 1 and retried >= 3
        print("\nAll jobs done exactly once." if ok else "\nCHECK FAILED: see the figures above.")
        return ok

    def cleanup(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        t = self.q.dialect.quote(self.q.table.name)
        try:
            with self.q.transaction() as tx:
                for name in (self.runs, self.receipts, t):
                    tx.execute(f"DROP TABLE IF EXISTS {name}")
                if self.q.dialect.supports_notify:  # the table's NOTIFY trigger function
                    notify = self.q.dialect.quote(f"{self.q.table.name}_notify")
                    tx.execute(f"DROP FUNCTION IF EXISTS {notify}()")
        finally:
            self.q.close()
            shutil.rmtree(self.logdir, ignore_errors=True)

    def show_logs(self) -> None:
        for name in sorted(os.listdir(self.logdir)):
            with open(os.path.join(self.logdir, name), errors="replace") as f:
                tail = f.read().splitlines()[-15:]
            print(f"--- {name} (last lines)\n" + "\n".join(tail), file=sys.stderr)


def run_demo(
    url: str | None = None, *, workers: int = 3, jobs: int = 24, verbose: bool = False
) -> bool:
    """Run the demo on *url*, or on an embedded PostgreSQL; True if every check held."""
    from .embedded import EmbeddedPostgres

    if workers < 2 or jobs < 0:
        raise ConfigurationError("the demo needs --workers 2 or more and --jobs 0 or more")
    embedded = None
    if url is None:
        print("starting an embedded PostgreSQL (pass --url to use your own database)…", flush=True)
        embedded = EmbeddedPostgres()
        url = embedded.start()
    try:
        q = Queue(url, table=f"skiplock_demo_{os.getpid()}")
        info = q.ping()
        where = "embedded, temporary" if embedded else "tables dropped at the end"
        version = ".".join(map(str, info.version))
        print(f"skiplock demo on {info.product} {version} at {q.url} ({where})\n", flush=True)
        demo = _Demo(q, url, workers, jobs, verbose)
        try:
            demo.setup()
            demo.story()
            return demo.summary()
        except DemoFailed as exc:
            print(f"\nDEMO FAILED: {exc}", file=sys.stderr)
            demo.show_logs()
            return False
        finally:
            demo.cleanup()
    finally:
        if embedded is not None:
            embedded.stop()
