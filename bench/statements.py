"""The database server's cost per job split by statement: skiplock against the raw loop,
from ``pg_stat_statements`` on a PostgreSQL 18 server nobody else uses.

    python bench/statements.py                        # drains, 20,000 jobs, 3 rounds
    python bench/statements.py --runs 5 --enqueue --plans --explain 200

``bench/cost.py`` says how much server CPU a job costs (issue 13: skiplock's Worker at
concurrency 100 ≤ 1.3x the raw loop); this script says which statement the difference is
in. The server is cost.py's embedded, durable PostgreSQL 18 (fsync, synchronous_commit
and full_page_writes on, autovacuum off), started here with ``pg_stat_statements``
preloaded (``track = all``, ``track_planning`` and ``track_io_timing`` on).

Systems, each round in turn: skiplock's ``Worker(concurrency=100)``; skiplock's bare Queue
loop (``claim(limit=100)`` + ``complete_many``, one step at a time like the raw loop: the
same statements without the Worker's threads and connections); the raw loop
(``bench/raw.py``: claim 100 + one fenced complete). For each: the table is rebuilt and
filled with *n* jobs (calls of 1,000), then the drain (with ``--enqueue`` the enqueue too)
runs between ``pg_stat_statements_reset()`` and a read of it, inside cost.py's
``PgCounters.measure`` (CHECKPOINT first; WAL from the LSN, commits, and the process CPU of
the postmaster and its children in 10 ms ticks, printed next to the statements' sums). The
reset and the read each open one connection (to the ``postgres`` database, so they are not
in the bench database's rows); their CPU is in every system's figure alike. In the two
loops, the server's CPU is also read after every step (``/proc/<pid>/schedstat`` of every
server process, in ns), so each step (claim; complete: its BEGIN, statement and COMMIT)
has its own CPU figure, a counter rather than a clock.

Per statement of the bench database, per job (medians of the rounds, each column on its
own): calls, plans and rows (totals), execution and planning time in µs, WAL bytes,
shared buffers hit and dirtied. WAL, buffers, calls and rows are counters; the times are
clocks inside the server: they include waits for row locks and for the CPU (the Worker's
100 client threads share the machine with the server). Parsing, the protocol, a
connection's start and a COMMIT's WAL flush (done after the COMMIT statement returns) are
in no statement's time, only in the process CPU. Statements run by a function or trigger
(``toplevel`` false) are listed but not summed: their time is in their caller's. Constants
are ``$n`` in ``pg_stat_statements``' text, so statements are named by shape: claim
(``FOR UPDATE SKIP LOCKED``), complete (an ``UPDATE`` of ``finished_at``), enqueue, begin,
commit, other.

``--plans``: one more drain per system with ``auto_explain`` on: how many calls ran which
plan, and their time. ``--explain ROWS``: ``EXPLAIN (ANALYZE, BUFFERS, WAL, SERIALIZE)`` of
one claim of 100 from *ROWS* claimable jobs and of the completion of those 100, skiplock's
against the raw loop's. Both after the measured rounds (``bench/explain.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from common import pg_dsn, v1_claim_index
from cost import PgCounters, _children, _embedded, _phases, _skiplock_phases
from explain import drain_plans, explain, print_plans, print_shapes
from raw import RawPostgres
from sk import TABLE, Skiplock

RAW, LOOP = "raw SQL", "skiplock, Queue loop"
OLD_INDEX = "skiplock + version 15's claim index, Queue loop"
SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "all",
    "pg_stat_statements.track_planning": "on",
    "pg_stat_statements.max": "5000",
    "track_io_timing": "on",
}
READ = """
SELECT s.toplevel, s.query, s.calls, s.plans, s.rows, s.total_exec_time, s.total_plan_time,
       s.wal_bytes, s.shared_blks_hit, s.shared_blks_dirtied
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = %s"""
#: per-job columns: (key in a row, header, scale from the row's unit, decimals)
PER_JOB = [
    ("total_exec_time", "exec µs/job", 1000.0, 2),
    ("total_plan_time", "plan µs/job", 1000.0, 2),
    ("wal_bytes", "WAL B/job", 1.0, 0),
    ("shared_blks_hit", "hit/job", 1.0, 2),
    ("shared_blks_dirtied", "dirtied/job", 1.0, 3),
]
HEADERS = " | ".join(h for _, h, _, _ in PER_JOB)
COUNTS = ("calls", "plans", "rows")
NAMES = ["claim", "complete", "enqueue", "begin", "commit", "other"]

Stats = dict[tuple[bool, str], dict[str, float]]  # (toplevel, query) → column → value
Got = dict[str, tuple[list[Stats], list[dict[str, float]]]]  # "system|phase" → per round


def name_of(query: str) -> str:
    q = " ".join(query.replace('"', "").split()).upper()
    if q.startswith("BEGIN"):
        return "begin"
    if q.startswith("COMMIT"):
        return "commit"
    if "FOR UPDATE SKIP LOCKED" in q:
        return "claim"
    if q.startswith("UPDATE") and "FINISHED_AT" in q:
        return "complete"
    if q.startswith(("INSERT INTO BENCH_", "COPY BENCH_")) or "NEXTVAL(" in q:
        return "enqueue"
    return "other"


def head(query: str, width: int = 60) -> str:
    text = " ".join(query.split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


class Statements:
    """pg_stat_statements of one database, reset and read from the ``postgres`` database."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(pg_dsn(url))
        self.database = parts.path.lstrip("/")
        self.admin = parts._replace(path="/postgres").geturl()

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.admin, autocommit=True)

    def install(self) -> None:
        with self._connect() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def reset(self) -> None:
        with self._connect() as conn:
            conn.execute("SELECT pg_stat_statements_reset()")

    def read(self) -> Stats:
        out: Stats = {}
        with self._connect() as conn:
            for row in conn.execute(READ, (self.database,)).fetchall():
                toplevel, query, *values = row
                cols = COUNTS + tuple(k for k, *_ in PER_JOB)
                got = out.setdefault((bool(toplevel), query), dict.fromkeys(cols, 0.0))
                for k, v in zip(cols, values, strict=True):
                    got[k] += float(v)  # one entry per user and plan kind: add them up
        return out


# -- the run ------------------------------------------------------------------------------


class StepCPU:
    """CPU time (ns, ``/proc/<pid>/schedstat``) of the server's live processes (the
    postmaster and its children), added up per step of a loop between its *mark* calls."""

    def __init__(self, postmaster: int) -> None:
        self.postmaster = postmaster
        self.ns: dict[str, float] = {}
        self.last = 0

    def _now(self) -> int:
        total = 0
        for pid in [self.postmaster, *_children(self.postmaster)]:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0])  # (OSError: exited meanwhile)
        return total

    def start(self) -> None:
        self.ns = {}
        self.last = self._now()

    def __call__(self, step: str) -> None:
        now = self._now()
        self.ns[step] = self.ns.get(step, 0.0) + now - self.last
        self.last = now


class _WithClaimIndex(Skiplock):
    """skiplock's table with version 1's claim index added back, as it was before migration
    0016 dropped it (``--claim-index``: what the index cost each job)."""

    def reset(self) -> None:
        super().reset()
        with self.q.transaction() as tx:
            tx.execute(v1_claim_index("postgresql", TABLE, self.q.dialect.quote))


def systems(
    url: str, n: int, batch: int, steps: StepCPU | None = None, old_index: bool = False
) -> list[Any]:
    """(label, prepare, (enqueue, drain)) of each system, as cost.py's."""
    got = [
        ("skiplock, Worker c100", *_skiplock_phases(url, n, batch, {"concurrency": 100})),
        (LOOP, *_phases(lambda: Skiplock(url), n, batch, lambda s: s.run_loop(n, steps))),
        (RAW, *_phases(lambda: RawPostgres(url), n, batch, lambda r: r.run_drain(n, steps))),
    ]
    if old_index:
        loop = _phases(lambda: _WithClaimIndex(url), n, batch, lambda s: s.run_loop(n, steps))
        got.insert(2, (OLD_INDEX, *loop))
    return got


def run(url: str, postmaster: int, args: argparse.Namespace) -> Got:
    """ "system|phase" → (pg_stat_statements per round, counters per round: cost.py's, and
    for the two loops' drains the server CPU of each step, "step:claim" and so on, µs/job)."""
    n, batch = args.jobs, args.batch
    counters = PgCounters(url, postmaster)
    stmts = Statements(url)
    stmts.install()
    steps = StepCPU(postmaster)
    out: Got = {}
    for r in range(args.runs):
        for label, prepare, (enqueue, drain) in systems(url, n, batch, steps, args.claim_index):
            prepare()
            for phase_name, phase in (("enqueue", enqueue), ("drain", drain)):
                if phase_name == "enqueue" and (LOOP in label or not args.enqueue):
                    phase()  # the drain's jobs, not measured (the loop's: the Worker's enqueue)
                    continue
                print(f"round {r + 1}: {label} {phase_name} ({n:,} jobs)", file=sys.stderr)
                per_round, costs = out.setdefault(f"{label}|{phase_name}", ([], []))
                got = counters.measure(n, _traced(stmts, steps, phase, per_round))
                got.update({f"step:{k}": v / 1000 / n for k, v in steps.ns.items()})
                costs.append(got)
    return out


def _then(*steps: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        for step in steps:
            step()

    return run


def _traced(
    stmts: Statements, steps: StepCPU, phase: Callable[[], object], into: list[Stats]
) -> Any:
    def run() -> None:
        stmts.reset()
        steps.start()
        phase()
        into.append(stmts.read())

    return run


# -- the tables ---------------------------------------------------------------------------


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def by_statement(rounds: list[Stats], n: int) -> list[tuple[str, bool, str, dict[str, float]]]:
    """(name, toplevel, query, column → median) per statement; per-job columns divided by
    *n*; a statement missing from a round counts as 0 there."""
    keys = sorted({k for s in rounds for k in s}, key=lambda k: (not k[0], k[1]))
    out = []
    for key in keys:
        cols = {}
        for col in COUNTS + tuple(k for k, *_ in PER_JOB):
            scale = next((s for k, _, s, _ in PER_JOB if k == col), None)
            values = [s.get(key, {}).get(col, 0.0) for s in rounds]
            cols[col] = _med([v * scale / n for v in values] if scale else values)
        if cols["calls"] or cols["plans"]:
            out.append((name_of(key[1]), key[0], key[1], cols))
    out.sort(key=lambda s: (not s[1], NAMES.index(s[0]), -s[3]["total_exec_time"]))
    return out


def by_name(rounds: list[Stats], n: int) -> dict[str, dict[str, float]]:
    """name (and "total") → column → median over rounds of the top-level statements' sum."""
    sums: dict[str, dict[str, list[float]]] = {}
    for stats in rounds:
        got: dict[str, dict[str, float]] = {}
        for (toplevel, query), cols in stats.items():
            if not toplevel:
                continue
            for name in (name_of(query), "total"):
                into = got.setdefault(name, {})
                for k, v in cols.items():
                    into[k] = into.get(k, 0.0) + v
        for name, cols in got.items():
            for k, v in cols.items():
                sums.setdefault(name, {}).setdefault(k, []).append(v)
    out: dict[str, dict[str, float]] = {}
    for name, samples in sums.items():
        out[name] = {}
        for k, values in samples.items():
            scale = next((s for c, _, s, _ in PER_JOB if c == k), None)
            values += [0.0] * (len(rounds) - len(values))
            out[name][k] = _med([v * scale / n for v in values] if scale else values)
    return out


def print_statements(label: str, phase: str, rounds: list[Stats], n: int) -> None:
    print(f"\n{label}, {phase}: per statement ({n:,} jobs, medians of {len(rounds)})\n")
    print(f"| name | statement | calls | plans | rows | {HEADERS} |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(PER_JOB))
    rows = by_statement(rounds, n)
    total = by_name(rounds, n).get("total", {})
    for name, toplevel, query, cols in [*rows, ("**total** (top level)", True, "", total)]:
        cells = [f"{cols.get(k, 0):,.0f}" for k in COUNTS]
        cells += [f"{cols.get(k, 0):,.{d}f}" for k, _, _, d in PER_JOB]
        shown = name if toplevel else f"{name} (nested)"
        print(f"| {shown} | {head(query) and f'`{head(query)}`'} | " + " | ".join(cells) + " |")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_comparison(phase: str, label: str, sk: list[Stats], raw: list[Stats], n: int) -> None:
    a, b = by_name(sk, n), by_name(raw, n)
    print(f"\n{phase}: {label} / raw SQL per job (÷ raw), top-level statements\n")
    print(f"| statement | calls per 1,000 jobs | {HEADERS} |")
    print("|---|---:|" + "---:|" * len(PER_JOB))
    for name in [*(x for x in NAMES if x in a or x in b), "total"]:
        x, y = a.get(name, {}), b.get(name, {})
        cells = [f"{x.get('calls', 0) * 1000 / n:,.1f} / {y.get('calls', 0) * 1000 / n:,.1f}"]
        for k, _, _, d in PER_JOB:
            xv, yv = x.get(k, 0.0), y.get(k, 0.0)
            cells.append(f"{xv:,.{d}f} / {yv:,.{d}f} ({_ratio(xv, yv)})")
        print(f"| {name} | " + " | ".join(cells) + " |")


def print_cpu(got: Got, n: int) -> None:
    print("\nThe same phases, whole server (cost.py's counters), medians (min to max)\n")
    print(
        "| system | phase | server CPU µs/job (processes) | exec µs/job (statements) | "
        "plan µs/job | WAL B/job (LSN) | WAL B/job (statements) | commits/job |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for key, (rounds, costs) in got.items():
        label, phase = key.split("|")
        cpu = [c["cpu"] for c in costs]
        names = by_name(rounds, n)
        total = names.get("total", {})
        print(
            f"| {label} | {phase} | {_med(cpu):,.1f} ({min(cpu):,.1f} to {max(cpu):,.1f}) | "
            f"{total.get('total_exec_time', 0):,.1f} | {total.get('total_plan_time', 0):,.2f} | "
            f"{_med([c['wal'] for c in costs]):,.0f} | {total.get('wal_bytes', 0):,.0f} | "
            f"{_med([c['commits'] for c in costs]):.3f} |"
        )


def print_steps(got: Got, n: int) -> None:
    """Server CPU per step of the two sequential loops, next to their statements' time."""
    loop, raw = got.get(f"{LOOP}|drain"), got.get(f"{RAW}|drain")
    if not (loop and raw):
        return
    print(
        "\nServer CPU per step of the sequential drains (schedstat of every server process, "
        "from the end of the step before: the step's BEGIN, statement, COMMIT and the "
        "client's turn), µs/job, medians (min to max)\n"
    )
    print(
        "| step | skiplock Queue loop: CPU | its statement's exec | raw SQL: CPU | "
        "its statement's exec | CPU ÷ raw |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    a, b = by_name(loop[0], n), by_name(raw[0], n)
    for step in ("claim", "complete", "total"):
        cells = []
        for costs, names in ((loop[1], a), (raw[1], b)):
            keys = ["step:claim", "step:complete"] if step == "total" else [f"step:{step}"]
            v = [sum(c.get(k, 0.0) for k in keys) for c in costs]
            exec_us = names.get(step, {}).get("total_exec_time", 0.0)
            cells.append((_med(v), f"{_med(v):,.2f} ({min(v):,.2f} to {max(v):,.2f})", exec_us))
        (x, xs, xe), (y, ys, ye) = cells
        print(f"| {step} | {xs} | {xe:,.2f} | {ys} | {ye:,.2f} | {_ratio(x, y)} |")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1000, help="jobs per enqueue call")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--enqueue", action="store_true", help="also measure the enqueues")
    ap.add_argument(
        "--explain", type=int, default=0, metavar="ROWS", help="EXPLAIN a claim from ROWS jobs"
    )
    ap.add_argument("--plans", action="store_true", help="the drains' plans (auto_explain)")
    ap.add_argument(
        "--claim-index",
        action="store_true",
        help="also the Queue loop on a table with version 1's claim index (before 0016)",
    )
    ap.add_argument(
        "--analyze",
        action="store_true",
        help="VACUUM ANALYZE each table before its EXPLAIN (the drains run without statistics)",
    )
    args = ap.parse_args()
    import psycopg

    server, url, postmaster = _embedded(**SETTINGS)
    try:
        with psycopg.connect(pg_dsn(url)) as conn:
            (version,) = conn.execute("SHOW server_version").fetchone() or ("?",)
        got = run(url, postmaster, args) if args.runs else {}
        shapes = {}
        if args.plans:
            print("the drains' plans (auto_explain)", file=sys.stderr)
            drains = [
                (label, _then(prepare, enqueue), drain)
                for label, prepare, (enqueue, drain) in systems(url, args.jobs, args.batch)
            ]
            shapes = drain_plans(url, Path(server._folder) / "postgres.log", drains, name_of)
        plans = {}
        if args.explain:
            print(f"EXPLAIN, {args.explain:,} claimable rows", file=sys.stderr)
            plans = explain(url, args.explain, max(1, args.runs), args.analyze)
    finally:
        server.stop()
    n = args.jobs
    print(
        f"\nPostgreSQL {version} (embedded, isolated; fsync, synchronous_commit and "
        f"full_page_writes on, autovacuum off, pg_stat_statements), {n:,} jobs, enqueue "
        f"calls of {args.batch:,}, medians of {args.runs}"
    )
    for key, (rounds, _) in got.items():
        label, phase = key.split("|")
        print_statements(label, phase, rounds, n)
    for key, (rounds, _) in got.items():
        label, phase = key.split("|")
        raw = got.get(f"{RAW}|{phase}")
        if raw and label != RAW:
            print_comparison(phase, label, rounds, raw[0], n)
    if got:
        print_cpu(got, n)
        print_steps(got, n)
    for label, got_shapes in shapes.items():
        print_shapes(label, got_shapes)
    for label, got_plans in plans.items():
        print_plans(label, args.explain, got_plans)


if __name__ == "__main__":
    main()
