"""Run skiplock's benchmarks and print the figures with same-run ratios.

    python bench/run.py --backend postgresql --jobs 20000
    python bench/run.py --backend all            # PostgreSQL, MariaDB, MySQL in turn

Each figure is the median of ``--runs`` runs (default 3); the systems take turns inside each
round so that drift on a noisy machine hits them alike. Only ratios measured in the same
run mean much. Writes the figures as JSON to ``bench/results/<backend>.json`` as well.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import pg_dsn
from raw import RawMySQL, RawPostgres
from sk import Skiplock

URLS = {
    "postgresql": "postgresql://postgres@127.0.0.1:5432/skiplock_bench",
    "mariadb": "mariadb://root@127.0.0.1:3306/skiplock_bench",
    "mysql": "mysql://root@127.0.0.1:3307/skiplock_bench",
}
RESULTS = Path(__file__).resolve().parent / "results"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


class Table:
    """Rows of metric → system → samples, printed with skiplock ÷ peer ratios."""

    def __init__(self, systems: list[str], *, ratios: bool = True) -> None:
        self.systems = systems
        self.ratios = ratios
        self.rows: dict[str, dict[str, list[float]]] = {}
        self.notes: list[str] = []
        #: a row of skiplock alone → the row whose peers its ratios are taken against
        self.like: dict[str, str] = {}

    def add(self, metric: str, system: str, value: float) -> None:
        self.rows.setdefault(metric, {}).setdefault(system, []).append(value)

    def print(self) -> None:
        peers = [s for s in self.systems if s != "skiplock"] if self.ratios else []
        head = f"{'metric':<30}" + "".join(f"{s:>15}" for s in self.systems)
        head += "".join(f"{'sk÷' + p[:10]:>15}" for p in peers)
        print(head)
        for metric, by in self.rows.items():
            line = f"{metric:<30}"
            for s in self.systems:
                v = median(by.get(s, []))
                line += f"{v:>15,.2f}" if by.get(s) else f"{'-':>15}"
            sk = median(by.get("skiplock", []))
            others = self.rows.get(self.like.get(metric, metric), {})
            for p in peers:
                ok = others.get(p) and by.get("skiplock")
                line += f"{sk / median(others[p]):>15.2f}" if ok else f"{'-':>15}"
            print(line)
        for note in self.notes:
            print("  " + note)

    def as_json(self) -> dict[str, Any]:
        return {
            "rows": {
                m: {s: {"samples": v, "median": median(v)} for s, v in by.items()}
                for m, by in self.rows.items()
            },
            "notes": self.notes,
            "ratios_against": self.like,
        }


def rounds(runs: int, steps: list[tuple[str, Callable[[], None]]]) -> None:
    for r in range(runs):
        for label, step in steps:
            t0 = time.perf_counter()
            step()
            print(f"  round {r + 1}: {label} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)


def bench_backend(backend: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    n, batch = args.jobs, args.batch
    sk = Skiplock(url)
    server = sk.q.ping()
    raw: Any = RawPostgres(url) if backend == "postgresql" else RawMySQL(url)
    peers: list[Any] = []
    if backend == "postgresql" and not args.no_peers:
        from peers import Peer, available

        # each in its own venv (python peers.py --setup), or in this one
        names = [name for name in ("pgqueuer", "procrastinate") if available(name)]
        peers = [Peer(name, pg_dsn(url)) for name in names]
    systems = ["skiplock", "raw SQL"] + [p.name for p in peers]
    table = Table(systems)
    c = args.concurrency
    enq, drn = f"enqueue jobs/s (b{batch})", f"drain jobs/s (Worker c{c})"
    drn_default, drn_loop = "drain, Worker defaults", "drain, bare Queue loop"
    drn_async = f"drain, AsyncWorker c{c}"
    table.like.update({drn_loop: drn, drn_async: drn})
    if not peers:  # no PGQueuer with its defaults to compare with: the raw loop's row
        table.like[drn_default] = drn
    steps: list[tuple[str, Callable[[], None]]] = [
        ("skiplock enqueue", lambda: table.add(enq, "skiplock", sk.enqueue(n, batch))),
        ("raw enqueue", lambda: table.add(enq, "raw SQL", raw.enqueue(n, batch))),
        (
            f"skiplock Worker drain, concurrency {c}",
            lambda: table.add(drn, "skiplock", sk.drain_worker(n, batch, concurrency=c)),
        ),
        (
            "skiplock Worker drain, defaults",
            lambda: table.add(drn_default, "skiplock", sk.drain_worker(n, batch)),
        ),
        (
            f"skiplock AsyncWorker drain, concurrency {c}",
            lambda: table.add(
                drn_async, "skiplock", sk.drain_async_worker(n, batch, concurrency=c)
            ),
        ),
        ("skiplock loop drain", lambda: table.add(drn_loop, "skiplock", sk.drain(n, batch)[0])),
        ("raw drain", lambda: table.add(drn, "raw SQL", raw.drain(n, batch))),
    ]
    if args.procs:
        # scale-out: that many processes on one table, Worker c{c} and defaults against
        # as many processes of the raw loop (the ceiling), in the same run
        import scale

        k = args.procs
        scaled, scaled_default = f"drain, {k} procs (Worker c{c})", f"drain, {k} procs (defaults)"
        table.like[scaled_default] = scaled
        steps += [
            (
                f"skiplock {k} Worker processes, concurrency {c}",
                lambda: table.add(
                    scaled, "skiplock", scale.drain_workers(url, n, batch, k, concurrency=c)
                ),
            ),
            (
                f"skiplock {k} Worker processes, defaults",
                lambda: table.add(
                    scaled_default, "skiplock", scale.drain_workers(url, n, batch, k)
                ),
            ),
            (
                f"raw {k} processes",
                lambda: table.add(scaled, "raw SQL", scale.drain_raw(url, backend, n, batch, k)),
            ),
        ]
    for more in args.also_concurrency:
        row = f"drain, Worker c{more}"
        table.like[row] = drn
        steps.insert(
            4,
            (
                f"skiplock Worker drain, concurrency {more}",
                lambda row=row, more=more: table.add(
                    row, "skiplock", sk.drain_worker(n, batch, concurrency=more)
                ),
            ),
        )
    if backend == "postgresql":
        copy = "enqueue COPY jobs/s"
        steps.insert(2, ("raw COPY", lambda: table.add(copy, "raw SQL", raw.enqueue_copy(n))))
    for p in peers:
        steps.append((f"{p.name} enqueue", lambda p=p: table.add(enq, p.name, p.enqueue(n, batch))))
        size = min(n, args.slow_peer_jobs) if p.name == "procrastinate" else n
        steps.append(
            (f"{p.name} drain", lambda p=p, k=size: table.add(drn, p.name, p.drain(k, batch)))
        )
        if p.name == "pgqueuer":  # with its defaults (batch_size 10), next to the Worker's
            steps.append(
                (
                    "pgqueuer drain, defaults",
                    lambda p=p: table.add(drn_default, p.name, p.drain(n, batch, "defaults")),
                )
            )
    if not args.no_latency:

        def sk_latency() -> None:
            p50, p99, how = sk.latency(args.latency_jobs, args.gap, concurrency=c)
            table.add("latency p50 ms", "skiplock", p50)
            table.add("latency p99 ms", "skiplock", p99)
            note = f"skiplock latency: {how}"
            if note not in table.notes:
                table.notes.append(note)

        steps.append(("skiplock latency", sk_latency))
        for p in peers:

            def peer_latency(p: Any = p) -> None:
                p50, p99 = p.latency(args.latency_jobs, args.gap)
                table.add("latency p50 ms", p.name, p50)
                table.add("latency p99 ms", p.name, p99)

            steps.append((f"{p.name} latency", peer_latency))
    print(f"\n== {backend}: {server.product} {server.version} ==", file=sys.stderr)
    rounds(args.runs, steps)
    table.notes.append(
        f"skiplock drain: skiplock.Worker(concurrency={c}) and with its defaults (concurrency "
        "4; prefetch: the concurrency, at least 32), from start() to the last completion "
        "committed; AsyncWorker: an async def no-op handler; the bare loop is "
        "claim(limit=100) + complete_many on the Queue; their ratios are against the peers' "
        "drain row (PGQueuer batch_size 100, Procrastinate concurrency 30), "
        "except the defaults row's: PGQueuer with its defaults (batch_size 10)"
    )
    if args.procs:
        table.notes.append(
            f"{args.procs} procs: {args.procs} processes drain one table together (started "
            "and connected before the clock), Worker rows against as many raw loops"
        )
    if peers and args.slow_peer_jobs < n:
        table.notes.append(f"Procrastinate drain measured on {args.slow_peer_jobs} jobs")

    growth = Table(["empty", f"+{args.growth_rows:,} done", "ratio"], ratios=False)
    if not args.no_growth:
        # Both sides drain --runs times into one table without a reset in between, so dead
        # rows left by earlier drains weigh on both alike; only the finished rows differ.
        empty_claim: list[float] = []
        empty_drain: list[float] = []
        sk.reset()
        for _ in range(args.runs):
            d, c = sk.drain(n, batch, fresh=False)
            empty_drain.append(d)
            empty_claim.append(c * 1000)
        sk.reset()
        took = sk.add_finished(args.growth_rows)
        print(f"  added {args.growth_rows:,} finished rows in {took:.1f} s", file=sys.stderr)
        full_claim: list[float] = []
        full_drain: list[float] = []
        for _ in range(args.runs):
            d, c = sk.drain(n, batch, fresh=False)
            full_drain.append(d)
            full_claim.append(c * 1000)
        pairs = (
            ("claim ms per 100", empty_claim, full_claim),
            ("drain jobs/s", empty_drain, full_drain),
        )
        for metric, a, b in pairs:
            for x, y in zip(a, b, strict=True):  # every sample kept, for the JSON
                growth.add(metric, "empty", x)
                growth.add(metric, f"+{args.growth_rows:,} done", y)
            growth.add(metric, "ratio", median(b) / median(a))
        growth.notes.append(
            "bare Queue loop (claim(limit=100) + complete_many); claim ms per 100: time "
            "inside Queue.claim(limit=100) per 100 jobs"
        )

    version = ".".join(map(str, server.version))
    via = f" via {server.driver}" if server.driver else ""
    print(f"\n== {backend}: {server.product} {version}{via}; {n:,} jobs, medians of {args.runs} ==")
    table.print()
    if growth.rows:
        print(f"-- growth: skiplock with {args.growth_rows:,} finished jobs in the table --")
        growth.print()
    sk.close()
    raw.close()
    return {
        "backend": backend,
        "server": server.version_string,
        "driver": server.driver,
        "jobs": n,
        "runs": args.runs,
        "main": table.as_json(),
        "growth": growth.as_json(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--backend", default="postgresql", choices=[*URLS, "all"])
    ap.add_argument("--url", help="override the backend's URL (its database must exist)")
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1000, help="jobs per enqueue call")
    ap.add_argument(
        "--concurrency", type=int, default=100, help="the Worker's concurrency for drain"
    )
    ap.add_argument(
        "--also-concurrency",
        type=int,
        nargs="*",
        default=[],
        help="more Worker concurrencies to drain with (a row each)",
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency-jobs", type=int, default=100)
    ap.add_argument("--gap", type=float, default=0.02, help="seconds between latency jobs")
    ap.add_argument("--growth-rows", type=int, default=1_000_000)
    ap.add_argument("--slow-peer-jobs", type=int, default=5000, help="Procrastinate drain size")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--no-growth", action="store_true")
    ap.add_argument(
        "--procs", type=int, default=4, help="processes for the scale-out rows (0: none)"
    )
    ap.add_argument(
        "--cost",
        action="store_true",
        help="then the cost-per-job tables of bench/cost.py (PostgreSQL: an embedded server "
        "of its own; MySQL/MariaDB: the backend's global counters)",
    )
    args = ap.parse_args()
    backends = list(URLS) if args.backend == "all" else [args.backend]
    RESULTS.mkdir(exist_ok=True)
    cpu = platform.processor() or platform.machine()
    print(f"machine: {platform.platform()}, {cpu}, Python {platform.python_version()}")
    for backend in backends:
        url = args.url or URLS[backend]
        out = bench_backend(backend, url, args)
        (RESULTS / f"{backend}.json").write_text(json.dumps(out, indent=1))
        if args.cost:
            import cost

            cost_args = argparse.Namespace(
                jobs=args.jobs,
                slow_peer_jobs=min(args.slow_peer_jobs, 2000),
                batch=args.batch,
                runs=args.runs,
            )
            if backend == "postgresql":
                cost.postgresql_cost(cost_args)
            else:
                cost.mysql_cost(url, cost_args)


if __name__ == "__main__":
    main()
