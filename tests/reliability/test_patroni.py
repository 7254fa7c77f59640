"""PostgreSQL under Patroni: 3 worker processes and an enqueuer drain a queue through the
cluster's multi-host URL (target_session_attrs=read-write) while the leader fails, with
Patroni's synchronous mode on and off.

The cluster is scripts/patroni-cluster's (``scripts/patroni-cluster start``: one etcd, 3
Patroni nodes of this machine's PostgreSQL 15 on loopback ports 15000-15023); the tests
are skipped when it is not up, failed when SKIPLOCK_REQUIRE names ``patroni``. They share
it, one after another, and leave it with 3 nodes streaming.

The faults: (1) the leader's postmaster killed with SIGKILL (Patroni restarts it in
place), (2) the leader's Patroni killed with SIGKILL (its PostgreSQL runs on until a
replica takes the leader key after the key's TTL, 10 s, and fences it before its
promotion), (3) a planned ``patronictl switchover``. The worker processes are
chaos_worker.py's (with ``SKIPLOCK_EVENTS``: each handler writes its result row in its
completion's transaction, tries that transaction again while the database is away, and
logs what it saw).

Measured per run, printed (``-s``): time from the fault to the first commit on the new
leader, jobs lost (acknowledged enqueues or completions that Patroni's leader at the end,
read on its own port, lacks), jobs run twice (completed twice with an acknowledgement
each), late fenced completions accepted (acknowledged completions tried once the new
leader led that the final leader lacks: a split brain's, or a lost claim's), jobs stuck
(not done 90 s after the fault), restarts needed (worker processes that exited, an
enqueuer that could not go on). Asserted: synchronous mode, 0 lost and 0 run twice; every
mode, 0 late completions accepted, 0 stuck, no restart. Without the cluster's fence
(``SKIPLOCK_PATRONI_FENCE=0 scripts/patroni-cluster start``) the Patroni-kill runs fail.

1,200 jobs a run (5,000 with SKIPLOCK_SOAK=1): 800 enqueued first, the rest by the
enqueuer during the drain, 10 a batch, through the fault, which comes after 300 are done.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import required_by_name

import skiplock
from reliability.conftest import Fleet, SideTables, fetch_all, soak
from reliability.test_failover import settled

# one cluster for all the runs: one after another, on one xdist worker
pytestmark = pytest.mark.xdist_group("patroni")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "patroni-cluster"
TOTAL = 5_000 if soak() else 1_200
PRELOAD, FAULT_AFTER, WORKERS, CONCURRENCY, LEASE = 800, 300, 3, 8, 5.0
FAULTS = {"postmaster": ("kill", "postmaster"), "patroni": ("kill", "patroni"),
          "switchover": ("switchover",)}  # fmt: skip


def cluster(*args: str) -> str:
    done = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, f"patroni-cluster {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout.strip()


@pytest.fixture(scope="module")
def cluster_url() -> str:
    done = subprocess.run(
        [str(SCRIPT), "status"], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        reason = f"no Patroni cluster up: scripts/patroni-cluster start ({done.stderr.strip()})"
        if required_by_name("patroni"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return done.stdout.strip()


@pytest.fixture
def healthy(cluster_url: str) -> Iterator[str]:
    """The cluster with 3 nodes streaming, before and after the test."""
    cluster("revive")
    yield cluster_url
    cluster("revive")


def leads_after(before: str, fault: str) -> bool:
    """Whether a leader takes writes again after *fault* (another node than *before*,
    unless the fault kills the postmaster, which Patroni restarts in place)."""
    done = subprocess.run([str(SCRIPT), "leader"], capture_output=True, text=True, timeout=60)
    leader = done.stdout.strip()
    return done.returncode == 0 and (fault == "postmaster" or leader != before)


def events(folder: Path) -> list[list[Any]]:
    found = []
    for path in folder.glob("events-*.jsonl"):
        found += [json.loads(line) for line in path.read_text().splitlines() if line]
    return found


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_drain_while_the_leader_fails(healthy: str, fault: str, mode: str, tmp_path: Path) -> None:
    url = healthy
    cluster("sync", "on" if mode == "sync" else "off")
    table = f"patroni_{fault}_{mode}"
    tables = SideTables(f"{table}_res", f"{table}_rej")
    q = skiplock.Queue(url, table=table)
    q.uninstall()
    q.install()
    with q.transaction() as tx:
        for name in (tables.results, tables.rejected):
            tx.execute(f"DROP TABLE IF EXISTS {name}")
            tx.execute(
                f"CREATE TABLE {name} (job_id bigint NOT NULL, attempt int NOT NULL, "
                "pid int NOT NULL, at double precision NOT NULL DEFAULT "
                "extract(epoch FROM clock_timestamp()), port int DEFAULT inet_server_port())"
            )
    acked: dict[int, int] = {}  # payload: the id its acknowledged enqueue returned

    def enqueue(batch: list[int]) -> None:
        ids = q.enqueue_many(batch, max_attempts=100, dedupe_keys=[f"p{n}" for n in batch])
        acked.update(zip(batch, ids, strict=True))

    for start in range(0, PRELOAD, 500):
        enqueue(list(range(start, start + 500)))

    fleet = Fleet(url, q, tables, tmp_path, lease=LEASE)
    fleet.env["SKIPLOCK_EVENTS"] = str(tmp_path)
    stop_enqueuing, faulted = threading.Event(), threading.Event()
    enqueue_errors: list[str] = []

    hung = [PRELOAD]  # how far the enqueuer got

    def enqueue_meanwhile() -> None:
        n = PRELOAD
        while n < TOTAL and not stop_enqueuing.is_set():
            hung[0] = n
            if n >= TOTAL - 100 and not faulted.is_set():
                time.sleep(0.05)  # the last 100 wait for the leader after the fault
                continue
            batch = list(range(n, min(n + 10, TOTAL)))
            try:
                enqueue(batch)
            except skiplock.BackendError as exc:
                enqueue_errors.append(str(exc))  # outcome unknown: the dedupe keys make
                time.sleep(0.2)  # enqueuing it again safe
                continue
            n += len(batch)
            time.sleep(0.2)  # 50 jobs a second at most: they go on through the fault

    enqueuer = threading.Thread(target=enqueue_meanwhile, daemon=True)
    restarts: list[str] = []
    started = time.time()
    for _ in range(WORKERS):
        fleet.start(CONCURRENCY)
    enqueuer.start()
    try:
        end = time.monotonic() + 90
        while (q.stats().done or 0) < FAULT_AFTER:
            assert time.monotonic() < end, f"jobs not done in 90 s:\n{fleet.log_tail()}"
            time.sleep(0.05)
        assert enqueuer.is_alive(), "the enqueuer ended before the fault"
        before = cluster("leader")
        # the moment of the kill, or of patronictl's start
        fault_at = float(cluster(*FAULTS[fault]).split()[1])
        # a leader again: after a kill of its Patroni, the old leader's PostgreSQL takes
        # writes until the key's TTL ends and the next leader fences it
        end = time.monotonic() + 90
        while not leads_after(before, fault):
            assert time.monotonic() < end, "no new leader 90 s after the fault"
            time.sleep(0.2)
        led_at = time.time()
        faulted.set()
        # Patroni's leader, read directly: through the multi-host URL a client may reach
        # an old primary that still takes writes (one not fenced)
        after = cluster("leader")
        final = skiplock.Queue(cluster("url", after), table=table)
        end = time.monotonic() + 90
        while not (settled(final) and not enqueuer.is_alive()):
            if time.monotonic() > end:
                break  # what is left is counted as stuck below
            time.sleep(0.2)
        settled_at = time.time()
        # a restart is needed for a worker process that exited, or for an enqueuer that
        # could not enqueue its jobs
        restarts = [f"enqueuer at job {n}" for n in hung if enqueuer.is_alive()]
    finally:
        stop_enqueuing.set()
        enqueuer.join(30)
        restarts += [f"worker exited {p.returncode}" for p in fleet.procs if p.poll() is not None]
        fleet.stop()
    assert cluster("leader") == after, "the leader changed again during the run"

    # -- what the final leader holds -----------------------------------------------------
    q = final
    quoted = q.dialect.quote(table)
    rows = fetch_all(q, f"SELECT id, status, attempt, claim_id, payload FROM {quoted}")
    jobs = {int(i): (str(s), int(a), None if c is None else int(c)) for i, s, a, c, _ in rows}
    payload_ids = {int(p): int(i) for i, *_, p in rows}
    results = fetch_all(q, f"SELECT job_id, attempt, at, port FROM {tables.results}")
    # the leader's first commit after the fault: after its postmaster started, if it was
    # restarted (the same node may lead again after a kill of its postmaster)
    [(leader_port, up)] = fetch_all(
        q, "SELECT inet_server_port(), extract(epoch FROM pg_postmaster_start_time())"
    )
    since = max(fault_at, float(up))
    new_commits = [float(at) for _, _, at, port in results if at > since and port == leader_port]
    first_commit = min(new_commits, default=float("nan"))

    # -- what the clients were told ------------------------------------------------------
    seen = events(tmp_path)
    lost_enqueues = sorted(p for p, i in acked.items() if payload_ids.get(p) != i)
    acks: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
    for kind, job_id, attempt, claim_id, began, *_ in seen:
        if kind == "accepted":
            acks[int(job_id)].append((int(attempt), int(claim_id), float(began)))
    kept = {
        j: [a for a in acked_runs if jobs.get(j, ("", 0, None))[1:] == a[:2]]
        for j, acked_runs in acks.items()
    }
    lost_completions = [(j, a) for j, runs in acks.items() for a in runs if a not in kept[j]]
    # tried once the new leader led (it was seen to lead, or took its first commit)
    took_over = min(led_at, first_commit) if new_commits else led_at
    late_accepted = [(j, a) for j, a in lost_completions if a[2] >= took_over]
    run_twice = [j for j, runs in acks.items() if len(runs) > 1]
    # the outage as the clients saw it: the longest wait between two acknowledged completions
    ended = sorted(float(e[5]) for e in seen if e[0] == "accepted")
    outage = max((b - a for a, b in pairwise(ended)), default=0.0)
    stuck = {i: s for i, (s, _, _) in jobs.items() if s != "done"}
    per_job: dict[int, int] = defaultdict(int)
    for job_id, *_ in results:
        per_job[int(job_id)] += 1
    result_twice = [j for j, n in per_job.items() if n > 1]
    refused = sum(1 for e in seen if e[0] == "refused")
    print(
        f"\n{fault}/{mode}: leader {before} -> {after}; first commit on the new leader "
        f"{first_commit - fault_at:.1f} s after the fault (longest pause between two "
        f"acknowledged completions {outage:.1f} s); {len(jobs)} jobs "
        f"({len(acked)} enqueues acknowledged, {len(enqueue_errors)} batches retried); "
        f"lost: {len(lost_enqueues)} enqueues, {len(lost_completions)} completions; "
        f"run twice: {len(run_twice)}; late completions accepted: {len(late_accepted)} "
        f"({refused} late writes refused); stuck: {len(stuck)}; restarts needed: "
        f"{len(restarts)}; {sum(1 for e in seen if e[0] == 'claim')} handler runs; "
        f"{fault_at - started:.0f} s to the fault, {settled_at - fault_at:.0f} s after it"
    )
    # -- the guarantees ------------------------------------------------------------------
    assert not restarts, f"restarts needed: {restarts}\n{fleet.log_tail()}"
    assert not stuck, f"{len(stuck)} jobs not done 90 s after the fault: {list(stuck.items())[:5]}"
    assert not late_accepted, f"late completions accepted: {late_accepted[:5]}"
    assert not result_twice, f"jobs with two result rows: {result_twice[:5]}"
    assert set(per_job) == set(jobs), "a done job without its result row, or a row without job"
    if mode == "sync":
        assert not lost_enqueues, f"acknowledged enqueues lost: {lost_enqueues[:5]}"
        assert not lost_completions, f"acknowledged completions lost: {lost_completions[:5]}"
        assert not run_twice, f"jobs completed twice: {run_twice[:5]}"
