"""skiplock on a MariaDB Galera cluster: three nodes that all take writes, made by
``scripts/galera-cluster start`` on this machine's loopback (ports 15301-15303).

- ``install()`` / ``migrate()`` at once on every node: all succeed (a cluster-wide lock
  beside the node's GET_LOCK, certification failures at COMMIT tried again).
- A node that is not ready (error 1047, "WSREP has not yet prepared node for application
  use") is a database that went away: ``BackendError(retryable=True)`` from the public
  API, and ``skiplock worker`` backs off and goes on once the node is back.
- Single-worker mode is refused (``ConfigurationError``): GET_LOCK is one node's.
- Claims and completions from every node at once: certification conflicts at COMMIT are
  tried again, never raised; no job is claimed twice at one attempt.
- A drain under faults: workers on one node, or spread over the three, while a node is
  killed with SIGKILL: 0 lost, 0 completed twice (late fenced writes refused), 0 stuck.

Skipped when the cluster is not up (``scripts/galera-cluster status`` fails), failed instead
with ``SKIPLOCK_REQUIRE=galera``. The tests take turns (one xdist group): they stop nodes.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import required

import skiplock
from skiplock import ConfigurationError, Job, Worker

pytestmark = pytest.mark.xdist_group("galera")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "galera-cluster"


def cluster(*args: str, timeout: float = 180) -> str:
    done = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"galera-cluster {' '.join(args)}: {done.stderr[-2000:]}")
    return done.stdout.strip()


@pytest.fixture(scope="module")
def urls() -> list[str]:
    """The three nodes' URLs, once every node is synced."""
    try:
        found = cluster("status", timeout=30).split()
    except (RuntimeError, OSError) as exc:
        reason = f"no Galera cluster up: run scripts/galera-cluster start ({str(exc).strip()})"
        if required("galera"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@pytest.fixture
def nodes(urls: list[str]) -> Iterator[list[str]]:
    """The URLs; afterwards, every node killed by the test started again and synced, and
    every node taking queries."""
    yield urls
    for n in (1, 2, 3):
        try:
            mysql(n, "SET GLOBAL wsrep_reject_queries = NONE")
        except RuntimeError:
            cluster("restart", str(n))


def mysql(node: int, sql: str) -> str:
    """Run *sql* on node *node* with the mariadb client (root, no password)."""
    port = cluster("url", str(node)).rsplit(":", 1)[1].split("/")[0]
    done = subprocess.run(
        ["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", str(port), "-u", "root", "-N",
         "-B", "-e", sql, "test"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"node {node}: {done.stderr.strip()}")
    return done.stdout.strip()


def wait(probe: Callable[[], object], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while True:
        try:
            if probe():
                return
        except skiplock.BackendError:
            pass
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.1)


def install(nodes: list[str], table: str) -> skiplock.Queue:
    """The queue on node 1, installed there; returns once every node has applied it (a
    node applies what another committed a moment later: a read there may lag behind)."""
    q = skiplock.Queue(nodes[0], table=table)
    q.install()
    for url in nodes[1:]:
        other = skiplock.Queue(url, table=table)
        wait(lambda: other.schema_version() == q.schema.latest, 30, f"{url} to apply it")  # noqa: B023
        other.close()
    return q


@pytest.fixture
def table(nodes: list[str]) -> Iterator[str]:
    name = f"galera_{os.getpid()}_{random.randrange(10**6)}"
    yield name
    q = skiplock.Queue(nodes[0], table=name)
    try:
        q.uninstall()
        with q.transaction() as tx:
            for extra in ("results",):
                tx.execute(f"DROP TABLE IF EXISTS {name}_{extra}")
    except skiplock.SkiplockError:
        pass
    finally:
        q.close()


# -- (a) install / migrate on every node at once --------------------------------------------


def test_install_on_every_node_at_once_succeeds_everywhere(nodes: list[str], table: str) -> None:
    """Three rounds, each on a table of its own: every install() returns, the table is at
    the latest version on every node, and no lock row is left in its version table."""
    for round_ in range(3):
        name = f"{table}_{round_}"
        queues = [skiplock.Queue(u, table=name) for u in nodes]
        outcomes: dict[int, BaseException | None] = {}
        start = threading.Barrier(len(queues))

        def install_one(
            i: int,
            q: skiplock.Queue,
            start: threading.Barrier = start,
            outcomes: dict[int, BaseException | None] = outcomes,
        ) -> None:
            start.wait()
            try:
                q.install()
                outcomes[i] = None
            except BaseException as exc:  # what a caller would see
                outcomes[i] = exc

        threads = [threading.Thread(target=install_one, args=(i, q)) for i, q in enumerate(queues)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            assert outcomes == dict.fromkeys(range(len(queues))), outcomes
            for q in queues:
                assert q.schema_version() == q.schema.latest
            with queues[0].transaction() as tx:
                rows = tx.fetchall(f"SELECT version FROM {name}_schema ORDER BY version")
            assert [int(v) for (v,) in rows] == list(range(1, queues[0].schema.latest + 1))
        finally:
            with suppress(skiplock.SkiplockError):
                queues[0].uninstall()
            for q in queues:
                q.close()


# -- (b) a node that is not ready --------------------------------------------------------------


def test_a_node_that_is_not_ready_is_a_database_that_went_away(
    nodes: list[str], table: str
) -> None:
    install(nodes, table)
    q = skiplock.Queue(nodes[1], table=table)
    q.enqueue({"n": 0})  # a pooled connection, open before the node turns away
    mysql(2, "SET GLOBAL wsrep_reject_queries = ALL")
    try:
        for call in (lambda: q.enqueue({"n": 1}), q.stats):
            with pytest.raises(skiplock.BackendError) as raised:
                call()
            assert raised.value.retryable, raised.value
        fresh = skiplock.Queue(nodes[1], table=table)  # a new connection to that node
        with pytest.raises(skiplock.BackendError) as raised:
            fresh.enqueue({"n": 2})
        assert raised.value.retryable, raised.value
        assert "WSREP" in str(raised.value)
    finally:
        mysql(2, "SET GLOBAL wsrep_reject_queries = NONE")
    assert q.enqueue({"n": 3}) > 0  # back


def test_skiplock_worker_backs_off_while_its_node_is_not_ready(
    nodes: list[str], table: str, tmp_path: Path
) -> None:
    (tmp_path / "galera_tasks.py").write_text("def handle(job):\n    pass\n")
    setup = install(nodes, table)
    setup.enqueue_many(list(range(10)))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SKIPLOCK_URL": nodes[1]}
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "skiplock", "worker", "--table", table, "--lease", "5",
         "galera_tasks:handle"],
        env=env, stdout=log, stderr=log, cwd=tmp_path,
    )  # fmt: skip
    try:
        wait(lambda: setup.stats().done == 10, 60, "the worker to start and drain")
        # ALL_KILL: the node also ends the connections it has
        mysql(2, "SET GLOBAL wsrep_reject_queries = ALL_KILL")
        text = lambda: (tmp_path / "worker.log").read_text()  # noqa: E731
        wait(lambda: "WSREP" in text() or worker.poll() is not None, 60, "the worker to notice")
        time.sleep(3)  # several claims meet the node that is not ready
        mysql(2, "SET GLOBAL wsrep_reject_queries = NONE")
        assert worker.poll() is None, f"the worker exited ({worker.returncode}):\n{text()}"
        setup.enqueue_many(list(range(10)))
        wait(lambda: setup.stats().done == 20, 90, "the worker to go on once the node is back")
        assert worker.poll() is None, text()
    finally:
        worker.terminate()
        worker.wait(30)
        log.close()


# -- (c) single-worker mode -------------------------------------------------------------------


def test_single_worker_mode_is_refused_on_a_galera_node(nodes: list[str], table: str) -> None:
    q = install(nodes, table)
    q.enqueue({"n": 1})
    ran: list[int] = []
    w = Worker(q, lambda job: ran.append(job.id), mode="single")
    raised: list[BaseException] = []

    def run() -> None:
        try:
            w.run()
        except BaseException as exc:
            raised.append(exc)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(60)
    if runner.is_alive():  # it took the lock and ran: stop it, then fail
        w.stop()
        runner.join(30)
    assert raised and isinstance(raised[0], ConfigurationError), (raised, ran)
    assert "Galera" in str(raised[0]) and "mode='lease'" in str(raised[0])
    assert not ran
    assert q.stats().pending == 1  # nothing was claimed


# -- (d) certification conflicts on claims and completions ------------------------------------


def test_claims_and_completions_on_every_node_at_once_retry_certification_conflicts(
    nodes: list[str], table: str
) -> None:
    setup = install(nodes, table)
    total = 1_500
    setup.enqueue_many(list(range(total)))
    errors: list[BaseException] = []
    claimed: Counter[tuple[int, int]] = Counter()
    mutex = threading.Lock()

    def work(url: str) -> None:
        q = skiplock.Queue(url, table=table)
        try:
            while jobs := q.claim(limit=5, lease=60):
                with mutex:
                    claimed.update((j.id, j.attempt) for j in jobs)
                q.complete_many(jobs)
        except BaseException as exc:
            with mutex:
                errors.append(exc)
        finally:
            q.close()

    # two claimers per node: each picks the same first jobs as the others on other nodes
    threads = [threading.Thread(target=work, args=(u,)) for u in nodes for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors[:3]
    assert sum(claimed.values()) == len(claimed) == total  # each job claimed once
    stats = setup.stats()
    assert (stats.done, stats.pending, stats.running) == (total, 0, 0)


# -- (e) a drain while a node is killed -------------------------------------------------------

TOTAL, PRELOAD, WORKERS, CONCURRENCY, LEASE = 1_500, 1_200, 3, 4, 4.0


@dataclass
class Record:
    """What the handlers saw: each run (id, attempt) and each try of a fenced completion
    ((id, attempt), when it began, how it ended)."""

    runs: list[tuple[int, int]] = field(default_factory=list)
    writes: list[tuple[tuple[int, int], float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def make_handler(q: skiplock.Queue, rec: Record, results: str) -> Callable[[Job], None]:
    insert = f"INSERT INTO {results} (job_id, attempt) VALUES (%s, %s)"

    def handle(job: Job) -> None:
        with rec.lock:
            rec.runs.append((job.id, job.attempt))
        time.sleep(random.uniform(0.005, 0.03))
        give_up = time.monotonic() + 60
        while True:
            began = time.time()
            try:
                with q.transaction() as tx:  # the result row commits with the completion
                    tx.execute(insert, (job.id, job.attempt))
                    tx.complete(job)
            except skiplock.LeaseLost:
                with rec.lock:
                    rec.writes.append(((job.id, job.attempt), began, "refused"))
                raise
            except skiplock.BackendError:
                # the node is gone (or an outcome unknown): try again until it answers,
                # or until another worker took the job back (then refused)
                with rec.lock:
                    rec.writes.append(((job.id, job.attempt), began, "error"))
                if time.monotonic() > give_up:
                    raise
                time.sleep(0.3)
                continue
            with rec.lock:
                rec.writes.append(((job.id, job.attempt), began, "accepted"))
            return

    return handle


@pytest.mark.parametrize("spread", ["one node", "three nodes"])
def test_drain_while_a_node_is_killed(nodes: list[str], table: str, spread: str) -> None:
    """Workers on node 1 (node 2 killed), or one on each node (node 3 killed, the workers
    on it cut off until it is started again); an enqueuer on node 1 throughout."""
    started = time.monotonic()
    victim = 2 if spread == "one node" else 3
    results = f"{table}_results"
    setup = install(nodes, table)
    with setup.transaction() as tx:
        tx.execute(
            f"CREATE TABLE {results} (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
            "job_id BIGINT NOT NULL, attempt INT NOT NULL)"
        )
    ids = setup.enqueue_many(list(range(PRELOAD)), max_attempts=100)
    where = [nodes[0]] * WORKERS if spread == "one node" else list(nodes)
    rec = Record()
    queues = [skiplock.Queue(u, table=table) for u in where]
    workers = [
        Worker(q, make_handler(q, rec, results), concurrency=CONCURRENCY, lease=LEASE)
        for q in queues
    ]
    stop = threading.Event()
    enqueued: list[int] = []
    retried = 0

    def enqueue_meanwhile() -> None:
        nonlocal retried
        n = PRELOAD
        while n < TOTAL and not stop.is_set():
            batch = list(range(n, min(n + 10, TOTAL)))
            try:
                enqueued.extend(setup.enqueue_many(batch, max_attempts=100))
            except skiplock.BackendError:
                retried += 1  # refused or unknown: enqueued again (a repeat is seen below)
                time.sleep(0.2)
                continue
            n += len(batch)
            time.sleep(0.05)

    enqueuer = threading.Thread(target=enqueue_meanwhile)
    for w in workers:
        w.start()
    enqueuer.start()
    killed = restarted = float("nan")
    try:
        wait(lambda: (setup.stats().done or 0) >= 300, 60, "300 jobs done")
        cluster("kill", str(victim))  # SIGKILL, mid-drain
        killed = time.time()
        if spread == "three nodes":
            time.sleep(LEASE + 2)  # the cut-off workers' leases end; others take the jobs
            cluster("restart", str(victim))
            restarted = time.time()
        enqueuer.join(120)
        assert not enqueuer.is_alive(), "the enqueuer did not finish"
        wait(lambda: settled(setup), 120, f"every job to end: {setup.stats()}")
    finally:
        stop.set()
        for w in workers:
            w.stop(timeout=30)
        enqueuer.join(30)
        if spread == "one node":
            cluster("restart", str(victim))
            restarted = time.time()

    with setup.transaction() as tx:
        rows = tx.fetchall(f"SELECT id, status, attempt FROM {table}")
        done_rows = tx.fetchall(f"SELECT job_id, attempt FROM {results}")
    jobs = {int(i): (str(s), int(a)) for i, s, a in rows}
    per_job: dict[int, list[int]] = defaultdict(list)
    for job_id, attempt in done_rows:
        per_job[int(job_id)].append(int(attempt))
    wanted = set(ids) | set(enqueued)
    lost = wanted - set(jobs)
    stuck = {i: s for i, (s, _) in jobs.items() if s != "done"}
    twice = {j: a for j, a in per_job.items() if len(a) > 1}
    missing = set(jobs) - set(per_job)
    by_other = {j: (a, jobs[j][1]) for j, [a] in per_job.items() if a != jobs[j][1]}
    ran = Counter(job_id for job_id, _ in rec.runs)
    ran_again = sum(1 for n in ran.values() if n > 1)
    late = [(c, how) for c, began, how in rec.writes if began >= killed and how != "error"]
    first_after = min(
        (b for _, b, how in rec.writes if how == "accepted" and b >= killed),
        default=float("nan"),
    )
    print(
        f"\nGalera, {WORKERS} workers x {CONCURRENCY} on {spread}, node {victim} killed "
        f"(SIGKILL) after 300 of {len(wanted)} jobs: first completion "
        f"{first_after - killed:.1f} s after the kill"
        + (f", node restarted at {restarted - killed:.1f} s" if restarted == restarted else "")
        + f"; {len(lost)} lost, {len(twice)} completed twice, {len(stuck)} stuck; "
        f"{ran_again} jobs ran more than once (leases ended on the cut-off node), "
        f"{sum(1 for _, h in late if h == 'refused')} late writes refused, "
        f"{retried} enqueue batches retried; {time.monotonic() - started:.0f} s in all"
    )
    assert not lost, f"{len(lost)} acknowledged jobs lost, e.g. {sorted(lost)[:5]}"
    assert not stuck, f"{len(stuck)} jobs not done, e.g. {list(stuck.items())[:5]}"
    assert not twice, f"{len(twice)} jobs have two result rows, e.g. {list(twice.items())[:5]}"
    assert not missing, f"done jobs without their result row: {sorted(missing)[:5]}"
    assert not by_other, f"result rows of an attempt that did not complete: {by_other}"
    # an enqueue retried after an unknown outcome may have gone in twice: as two jobs,
    # each run once (never one job run twice)
    assert len(jobs) >= len(wanted)


def settled(q: skiplock.Queue) -> bool:
    s = q.stats()
    return bool(s.pending + s.scheduled + s.running + s.expired == 0)
