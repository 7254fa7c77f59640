"""A failover while workers drain a queue: the primary is stopped hard and its replica
promoted; the workers and an enqueuing thread reach the new primary without a restart.

- PostgreSQL: scripts/pg-failover, two clusters of this machine's own PostgreSQL on their
  own ports, a streaming standby; clients reach the new primary through the multi-host URL
  (target_session_attrs=read-write).
- MariaDB: scripts/mariadb-failover, two servers of this machine's own mariadbd on their
  own ports, a GTID replica (semi-synchronous for "sync"); MySQL drivers take one host, so
  clients connect to a front port (socat) that the promotion points at the replica.
- MySQL: scripts/mysql-failover, the same with two servers of the mysqld that
  scripts/mysql-server installs in a Debian-unstable chroot (GTID replication, the
  semisync plugins for "sync", super_read_only on the replica).

- Synchronous replication: nothing acknowledged is lost, every job ends done, and each
  job's result row (written in its completion's transaction) exists exactly once.
- Asynchronous replication, the standby detached a second or more before the promotion
  (it lags, until two 3-second jobs began):
  the commits of that lag are lost with the old primary, so some claims are handed out
  again at the same attempt number. The handlers of those lost claims go on and try to
  commit their completions on the new primary: every one of those late writes must be
  refused (the claim's token), the test shows that some were tried, and every job the new
  primary knows ends done with one result row.

Needs the PostgreSQL server binaries (initdb, pg_basebackup, pg_ctl) and an unprivileged
user to run them as (``postgres``), or /usr/sbin/mariadbd, mariadb-install-db, the mariadb
client and socat (run as ``mysql``), or root, scripts/mysql-server's chroot (made by
``scripts/mysql-server start``) and socat; each is skipped otherwise, failed with
SKIPLOCK_REQUIRE=postgresql (mariadb, mysql)."""

from __future__ import annotations

import glob
import os
import random
import shutil
import socket
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import skiplock
from skiplock import Job, Worker

# one after another, on one xdist worker, with test_replica.py: the pairs of servers of the
# two modules share scripts and, for MySQL, the chroot of scripts/mysql-server
pytestmark = pytest.mark.xdist_group("server_pairs")

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
SCRIPT = SCRIPTS / "pg-failover"
TOTAL, PRELOAD, WORKERS, CONCURRENCY, LEASE = 5_000, 4_000, 4, 8, 5.0
TABLE, RESULTS = "failover_jobs", "failover_results"


def _required(server: str) -> bool:
    names = {n.strip().lower() for n in os.environ.get("SKIPLOCK_REQUIRE", "").split(",")}
    return bool({server, "all"} & names)


def _unavailable(reason: str, server: str = "postgresql") -> None:
    if _required(server):
        pytest.fail(reason)
    pytest.skip(reason)


def free_ports(n: int) -> list[int]:
    """*n* TCP ports of 127.0.0.1 that nothing listens on now."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Pair:
    """The primary + replica of scripts/pg-failover (or *script*)."""

    env: dict[str, str]
    url: str = ""
    script: Path = SCRIPT
    #: where the MariaDB or MySQL servers write primary.err and replica.err, as seen here
    logs: Path | None = None

    def replication_log(self) -> str:
        """What the MariaDB or MySQL servers logged about semi-synchronous replication
        (a primary that switched it off commits without the replica): for a failure's
        message."""
        lines = []
        for name in ("primary", "replica"):
            try:
                text = Path(self.logs or "", f"{name}.err").read_text(errors="replace")
            except OSError:
                continue
            lines += [f"{name}: {ln}" for ln in text.splitlines() if "emi-sync" in ln]
        return "\n".join(lines[-12:]) or "(nothing about semi-sync in the servers' logs)"

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.script), *args], env=self.env, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, f"{self.script.name} {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()


def make_pair(server: str, name: str, ports: list[int] | None = None) -> Pair:
    """The pair of *server* ("postgresql": scripts/pg-failover, "mariadb":
    scripts/mariadb-failover, "mysql": scripts/mysql-failover) in a folder named after
    *name* and this process, on *ports* (PostgreSQL: primary and standby, default 5441
    5442; MariaDB and MySQL: front, primary and replica, default three free ports); the
    test is skipped (or failed, see the module's docstring) when the server's programs are
    missing. Not started."""
    if server == "postgresql":
        if not glob.glob("/usr/lib/postgresql/*/bin/initdb") and not os.environ.get(
            "SKIPLOCK_PGFO_BIN"
        ):
            _unavailable("no PostgreSQL server binaries here (set SKIPLOCK_PGFO_BIN)")
        env = {**os.environ, "SKIPLOCK_PGFO_DIR": f"/tmp/skiplock-pg-{name}-{os.getpid()}"}
        if ports:
            env["SKIPLOCK_PGFO_PORTS"] = " ".join(map(str, ports))
        return Pair(env)
    if server == "mysql":
        cache = os.environ.get("SKIPLOCK_MYSQL_CACHE", "/var/cache/skiplock/mysql-chroot")
        root = Path(cache, "root")
        daemon = str(root / "usr/sbin/mysqld")
        if os.geteuid() != 0 or shutil.which("socat") is None or not os.path.exists(daemon):
            _unavailable(
                f"not root, no socat, or no MySQL server at {daemon} (scripts/mysql-server "
                "start installs it)",
                "mysql",
            )
        folder = f"/tmp/skiplock-mysql-{name}-{os.getpid()}"  # in the chroot
        env = {
            **os.environ,
            "SKIPLOCK_MYFO_DIR": folder,
            "SKIPLOCK_MYFO_PORTS": " ".join(map(str, ports or free_ports(3))),
        }
        return Pair(env, script=SCRIPTS / "mysql-failover", logs=root / folder.lstrip("/"))
    missing = [t for t in ("mariadb-install-db", "mariadb", "socat") if shutil.which(t) is None]
    daemon = os.environ.get("SKIPLOCK_MDBFO_BIN", "/usr/sbin/mariadbd")
    if missing or not os.path.exists(daemon):
        _unavailable(f"no MariaDB server ({daemon}) or no {missing} here", "mariadb")
    folder = f"/tmp/skiplock-mariadb-{name}-{os.getpid()}"
    env = {
        **os.environ,
        "SKIPLOCK_MDBFO_DIR": folder,
        "SKIPLOCK_MDBFO_PORTS": " ".join(map(str, ports or free_ports(3))),
    }
    return Pair(env, script=SCRIPTS / "mariadb-failover", logs=Path(folder))


@pytest.fixture(params=["postgresql", "mariadb", "mysql"])
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    made = make_pair(str(request.param), "failover")
    try:
        yield made
    finally:
        made.run("stop")


@dataclass
class Record:
    """What the handlers saw, on the client: each claim they ran (id, attempt, token, the
    claim's time on the database's clock) and each try of their fenced completion ((id,
    token): a claim's token names all the jobs it took; when it began on the wall clock,
    and how it ended)."""

    claims: list[tuple[int, int, int, float]] = field(default_factory=list)
    writes: list[tuple[tuple[int, int], float, str]] = field(default_factory=list)
    long_started: int = 0  # handlers of the 3-second jobs begun
    lock: threading.Lock = field(default_factory=threading.Lock)


def make_handler(q: skiplock.Queue, rec: Record) -> Callable[[Job], None]:
    insert = f"INSERT INTO {RESULTS} (job_id, attempt, claim_id) VALUES (%s, %s, %s)"

    def handle(job: Job) -> None:
        assert job.claim_id is not None and job.run_at is not None
        # when the claim's statement ran, on the database's clock (the claim set run_at to
        # the lease's end; heartbeats move lease_until, not this)
        claimed = job.run_at.timestamp() - LEASE
        with rec.lock:
            rec.claims.append((job.id, job.attempt, job.claim_id, claimed))
        # One job in 25 runs 3 s: those that began on the old primary still run when the
        # new one hands their jobs out again, so their late writes meet the second claim.
        if job.payload % 25 == 0:
            with rec.lock:
                rec.long_started += 1
            time.sleep(3.0)
        else:
            time.sleep(random.uniform(0.005, 0.04))
        give_up = time.monotonic() + 60
        while True:
            began = time.time()
            try:
                # The result row commits with the completion, or not at all.
                with q.transaction() as tx:
                    tx.execute(insert, (job.id, job.attempt, job.claim_id))
                    tx.complete(job)
            except skiplock.LeaseLost:
                with rec.lock:
                    rec.writes.append(((job.id, job.claim_id), began, "refused"))
                raise
            except skiplock.BackendError:
                # The primary is gone: try again until the new one answers (a handler that
                # began on the old primary thus commits late, or is refused).
                with rec.lock:
                    rec.writes.append(((job.id, job.claim_id), began, "error"))
                if time.monotonic() > give_up:
                    raise
                time.sleep(0.2)
                continue
            with rec.lock:
                rec.writes.append(((job.id, job.claim_id), began, "accepted"))
            return

    return handle


def settled(q: skiplock.Queue) -> bool:
    try:
        s = q.stats()
    except skiplock.BackendError:
        return False
    return bool(s.pending + s.scheduled + s.running + s.expired == 0)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_failover_to_a_standby_while_workers_drain(pair: Pair, mode: str) -> None:
    started = time.monotonic()
    url = pair.run("start", f"--{mode}")
    setup = skiplock.Queue(url, table=TABLE)
    setup.install()
    with setup.transaction() as tx:
        tx.execute(
            f"CREATE TABLE {RESULTS} (job_id bigint NOT NULL, attempt int NOT NULL, "
            "claim_id bigint)"
        )
    acked: dict[int, int] = {}  # payload: the id its acknowledged enqueue returned

    def enqueue(batch: list[int]) -> None:
        acked.update(zip(batch, setup.enqueue_many(batch, max_attempts=1000), strict=True))

    for start in range(0, PRELOAD, 1000):
        enqueue(list(range(start, start + 1000)))

    rec = Record()
    queues = [skiplock.Queue(url, table=TABLE) for _ in range(WORKERS)]
    workers = [
        Worker(q, make_handler(q, rec), concurrency=CONCURRENCY, lease=LEASE, retention=None)
        for q in queues
    ]
    stop_enqueuing, failed_over = threading.Event(), threading.Event()
    retried_batches: list[int] = []

    def enqueue_meanwhile() -> None:
        n = PRELOAD
        while n < TOTAL and not stop_enqueuing.is_set():
            if n >= TOTAL - 200 and not failed_over.is_set():
                time.sleep(0.05)  # the last 200 wait for the new primary
                continue
            batch = list(range(n, min(n + 10, TOTAL)))
            try:
                enqueue(batch)
            except skiplock.BackendError:
                retried_batches.append(n)  # outcome unknown or refused: enqueue it again
                time.sleep(0.2)
                continue
            n += len(batch)
            time.sleep(0.1)  # about 100 jobs a second: it runs through the failover

    enqueuer = threading.Thread(target=enqueue_meanwhile)
    for w in workers:
        w.start()
    enqueuer.start()
    try:
        end = time.monotonic() + 60
        while (setup.stats().done or 0) < 1_000:
            assert time.monotonic() < end, "the workers did not drain 1,000 jobs in 60 s"
            time.sleep(0.05)
        if mode == "async":
            pair.run("detach")  # the standby lags from now on...
            # ...by at least the second of claims and completions that follows, and until
            # two 3-second jobs began (a loaded machine claims slowly): their handlers
            # still run after the promotion and try their late writes
            seen, lag_end = rec.long_started, time.monotonic() + 15
            time.sleep(1.0)
            while rec.long_started < seen + 2 and time.monotonic() < lag_end:
                time.sleep(0.05)
        assert enqueuer.is_alive(), "the enqueuing thread ended before the failover"
        pair.run("kill")  # the primary is stopped hard...
        stopped = time.time()  # every claim and write of the old primary was before this
        pair.run("promote")  # ...and the standby promoted
        promoted = time.time()
        failed_over.set()
        new = skiplock.Queue(url, table=TABLE)
        enqueuer.join(90)
        assert not enqueuer.is_alive(), "the enqueuing thread did not finish"
        end = time.monotonic() + 90
        while not settled(new):
            assert time.monotonic() < end, (
                f"jobs still not done 90 s after the promotion: {new.stats()}"
            )
            time.sleep(0.1)
    finally:
        stop_enqueuing.set()
        for w in workers:
            w.stop(timeout=30)
        enqueuer.join(30)

    # -- what the new primary holds ------------------------------------------------------
    with new.transaction() as tx:
        rows = tx.fetchall(f"SELECT id, status, attempt, claim_id, payload FROM {TABLE}")
        jobs = {int(i): (str(s), int(a), c) for i, s, a, c, _ in rows}
        payloads = {int(i): int(p) for i, *_, p in rows}
        results = tx.fetchall(f"SELECT job_id, attempt, claim_id FROM {RESULTS}")
    # An enqueue acknowledged by the old primary and lost with it; its id may name another
    # job on the new primary (the sequence went back too).
    lost_enqueues = set(acked) - set(payloads.values())
    reused = sum(1 for p, i in acked.items() if i in payloads and payloads[i] != p)

    # -- what the handlers saw -----------------------------------------------------------
    tokens: dict[tuple[int, int], dict[int, float]] = defaultdict(dict)
    for job_id, attempt, token, claimed in rec.claims:
        tokens[(job_id, attempt)][token] = claimed
    # A claim the new primary never saw: its (id, attempt) was handed out again, by a claim
    # made after the old primary stopped (both servers share this machine's clock).
    ghosts = {
        (job_id, t)
        for (job_id, _), claims in tokens.items()
        if len(claims) > 1
        for t, claimed in claims.items()
        if claimed < stopped
    }
    late = [(c, how) for c, began, how in rec.writes if began >= stopped and how != "error"]
    late_ghost = [how for c, how in late if c in ghosts]
    accepted_ghost = late_ghost.count("accepted")
    ran = defaultdict(set)
    for job_id, _, token, _ in rec.claims:
        ran[job_id].add(token)
    ran_again = sum(1 for t in ran.values() if len(t) > 1)
    first_claim = min((c for *_, c in rec.claims if c >= stopped), default=float("nan"))
    first_after = min(
        (began for _, began, how in rec.writes if how == "accepted" and began >= stopped),
        default=float("nan"),
    )
    print(
        f"\n{mode}: {len(jobs)} jobs on the new primary ({len(acked)} enqueues acknowledged, "
        f"{len(lost_enqueues)} of them lost, their ids reused for {reused} other jobs, "
        f"{len(retried_batches)} enqueue batches retried); "
        f"{WORKERS} workers x {CONCURRENCY}; after the primary stopped: standby promoted in "
        f"{promoted - stopped:.1f} s, first claim on it at {first_claim - stopped:.1f} s, "
        f"first completion at {first_after - stopped:.1f} s; {len(rec.claims)} handler runs, "
        f"{ran_again} jobs ran more than once; late fenced writes (tried after the primary "
        f"stopped, answered by the new one): {len(late)}, of which {len(late_ghost)} from "
        f"claims the new primary never saw: {late_ghost.count('refused')} refused, "
        f"{accepted_ghost} accepted; {time.monotonic() - started:.0f} s in all"
    )
    # -- the guarantees ------------------------------------------------------------------
    not_done = {i: s for i, (s, _, _) in jobs.items() if s != "done"}
    assert not not_done, f"{len(not_done)} jobs not done, e.g. {list(not_done.items())[:5]}"
    per_job: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for job_id, attempt, claim_id in results:
        per_job[int(job_id)].append((int(attempt), int(claim_id)))
    twice = {j: r for j, r in per_job.items() if len(r) > 1}
    assert not twice, f"{len(twice)} jobs have two result rows, e.g. {list(twice.items())[:5]}"
    assert set(per_job) == set(jobs), "a done job without its result row, or a row without job"
    by_other = [j for j, [(a, c)] in per_job.items() if (a, c) != jobs[j][1:]]
    assert not by_other, f"result rows written by a claim that did not complete: {by_other[:5]}"
    assert accepted_ghost == 0, f"{accepted_ghost} late writes of lost claims were accepted"
    if mode == "sync":
        assert not lost_enqueues, (
            f"{len(lost_enqueues)} acknowledged enqueues lost; {pair.replication_log()}"
        )
        assert not reused
        assert not ghosts, f"{len(ghosts)} acknowledged claims lost by a synchronous standby"
    else:
        assert late_ghost, "no lost claim tried a late write: the case was not shown"
