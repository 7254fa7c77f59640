"""skiplock against the Python queues a team would pick instead, on PostgreSQL, in one run:
PGQueuer 1.6, oban-py 0.7, chancy 0.26 and Procrastinate 3.10.

    python peers.py --setup      # once: a venv per peer under bench/.venvs
    python peers.py --url postgresql://postgres@127.0.0.1:5432/skiplock_bench

Prints one markdown table (and writes its samples to ``bench/results/peers.json``):
enqueue with one job per transaction and in calls of ``--batch``; the drain of ``--jobs``
waiting no-op jobs by each system's own worker, in its documented tuned configuration and
in its defaults; the enqueue → start latency (p50, p99, max over ``--samples`` jobs, one
job at a time into an idle worker, its tuned configuration); the client CPU per job of the
tuned drain. Each figure is the median of ``--runs`` rounds; inside a round the systems
take turns step by step, each round starting with the next system, so that drift on a
noisy machine hits them alike.

Every step runs in a fresh process of its own (bench/peer_step.py): skiplock under this
interpreter, each peer under its venv's (``--setup``; oban-py needs Python 3.12+), or under
this one when it has the peer's package installed and no venv was made. A drain that has
not finished after ``--drain-timeout`` seconds counts the jobs done so far (chancy's
defaults poll every 5 s).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import percentile

HERE = Path(__file__).resolve().parent
STEP = HERE / "peer_step.py"
VENVS = Path(os.environ.get("SKIPLOCK_BENCH_VENVS") or HERE / ".venvs")
RESULTS = HERE / "results"


@dataclass(frozen=True)
class System:
    label: str
    module: str  # the package a peer_<name>.py imports (for a venv-less run)
    requires: tuple[str, ...] = ()
    python: tuple[int, int] = (3, 10)


SYSTEMS = {
    "skiplock": System("skiplock", "skiplock"),
    "pgqueuer": System("PGQueuer", "pgqueuer", ("pgqueuer==1.6.0", "asyncpg>=0.29")),
    "oban": System("oban-py", "oban", ("oban==0.7.0",), (3, 12)),
    "chancy": System("chancy", "chancy", ("chancy==0.26.0",)),
    "procrastinate": System("Procrastinate", "procrastinate", ("procrastinate==3.10.0",)),
}
PEERS = [name for name in SYSTEMS if name != "skiplock"]


def venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def interpreter(name: str) -> str | None:
    """The Python that runs *name*'s steps: its venv's, else this one if it can, else
    None."""
    if name != "skiplock" and venv_python(name).exists():
        return str(venv_python(name))
    system = SYSTEMS[name]
    if sys.version_info >= system.python and importlib.util.find_spec(system.module):
        return sys.executable
    return None


def available(name: str) -> bool:
    return interpreter(name) is not None


def _version_of(python: str) -> tuple[int, int]:
    out = subprocess.run(
        [python, "-c", "import sys; print(*sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1])


def _base_python(need: tuple[int, int], given: str | None) -> str:
    """*given* when new enough, else this interpreter's base when new enough, else the
    oldest suitable ``python3.X`` under pyenv or on PATH (one Python for as many systems as
    can share it)."""
    if given and _version_of(given) >= need:
        return given
    base = getattr(sys, "_base_executable", sys.executable)
    if sys.version_info >= need:
        return base
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for minor in range(need[1], 20):
        found = sorted(root.glob(f"versions/3.{minor}.*/bin/python3"))
        if found:
            return str(found[-1])
        if path := shutil.which(f"python3.{minor}"):
            return path
    raise SystemExit(f"no Python {need[0]}.{need[1]}+ found: give one with --python")


def setup(names: list[str], python: str | None) -> None:
    """A venv per peer in *names*, its pinned packages installed (again when the pins
    changed)."""
    for name in names:
        system = SYSTEMS[name]
        if not system.requires:
            continue
        stamp = VENVS / name / "bench-requires"
        want = " ".join(system.requires)
        if stamp.exists() and stamp.read_text() == want:
            print(f"{name}: {VENVS / name} is ready", file=sys.stderr)
            continue
        base = _base_python(system.python, python)
        print(f"{name}: making {VENVS / name} with {base}", file=sys.stderr)
        subprocess.run([base, "-m", "venv", "--clear", str(VENVS / name)], check=True)
        pip = [str(venv_python(name)), "-m", "pip", "install", "-q", *system.requires]
        subprocess.run(pip, check=True)
        stamp.write_text(want)


class Peer:
    """One system's steps, each in a fresh process under the system's interpreter (see
    bench/peer_step.py); every call blocks until its process has exited."""

    def __init__(self, name: str, dsn: str, *, timeout: float = 600.0) -> None:
        python = interpreter(name)
        if python is None:
            raise RuntimeError(f"{name} is not installed: run `python peers.py --setup`")
        self.name = name
        self.dsn = dsn
        self.python = python
        self.timeout = timeout

    def step(self, step: str, *, wait: float = 0.0, **options: Any) -> dict[str, Any]:
        """Run *step* with *options* (peer_step.py's, ``--key value``), allowing *wait*
        seconds more than ``timeout``; its JSON."""
        argv = [self.python, str(STEP), self.name, step, "--dsn", self.dsn]
        for key, value in options.items():
            argv += [f"--{key}", str(value)]
        limit = self.timeout + wait
        run = subprocess.run(argv, capture_output=True, text=True, timeout=limit, cwd=HERE)
        if run.returncode != 0:
            raise RuntimeError(f"{self.name} {step} failed:\n{run.stderr[-3000:]}")
        return dict(json.loads(run.stdout.strip().splitlines()[-1]))

    def version(self) -> dict[str, Any]:
        return self.step("version")

    def reset(self) -> None:
        self.step("reset")

    def fill(self, n: int, batch: int, config: str = "tuned") -> None:
        """Empty the queue, then enqueue *n* jobs for a worker in *config*."""
        self.step("fill", jobs=n, batch=batch, config=config)

    def enqueue(self, n: int, batch: int) -> float:
        """jobs/s of *n* jobs into an empty queue, *batch* a call (1: the single-job call)."""
        return n / self.step("enqueue", jobs=n, batch=batch)["seconds"]

    def measure_drain(self, n: int, config: str = "tuned", timeout: float = 600.0) -> Any:
        """The worker's drain of the *n* jobs waiting: ``{"done", "seconds", "cpu"}``."""
        return self.step("drain", wait=timeout, jobs=n, config=config, timeout=timeout)

    def run_drain(self, n: int, config: str = "tuned") -> float:
        """jobs/s of the drain of the *n* jobs waiting, all of them."""
        out = self.measure_drain(n, config)
        if out["done"] != n:
            raise RuntimeError(f"{self.name} ran {out['done']} of {n} jobs")
        return float(n / out["seconds"])

    def drain(self, n: int, batch: int, config: str = "tuned") -> float:
        self.fill(n, batch, config)
        return self.run_drain(n, config)

    def latency_samples(self, samples: int, gap: float, timeout: float = 10.0) -> list[float]:
        """ms from just before each enqueue to its handler's first line, one job at a time
        into an idle worker (*gap* seconds after each start)."""
        return list(self.step("latency", samples=samples, gap=gap, timeout=timeout)["ms"])

    def latency(self, count: int, gap: float) -> tuple[float, float]:
        seen = self.latency_samples(count, gap)
        return percentile(seen, 50), percentile(seen, 99)


# -- the table ----------------------------------------------------------------------------

SINGLE = "enqueue, one job per transaction, jobs/s"
TUNED, DEFAULTS = "drain, tuned, jobs/s", "drain, defaults, jobs/s"
P50, P99, MAX = "enqueue → start p50, ms", "enqueue → start p99, ms", "enqueue → start max, ms"
CPU = "client CPU per drained job (tuned), µs"
#: rows where the smallest figure is the best
LOWER = {P50, P99, MAX, CPU}


def bulk_row(batch: int) -> str:
    return f"enqueue, bulk of {batch:,}, jobs/s"


def fmt(value: float) -> str:
    if value != value:  # nan
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


class Table:
    def __init__(self, systems: list[str]) -> None:
        self.systems = systems
        self.rows: dict[str, dict[str, list[float]]] = {}
        self.notes: list[str] = []

    def add(self, row: str, system: str, value: float) -> None:
        self.rows.setdefault(row, {}).setdefault(system, []).append(value)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def medians(self, row: str) -> dict[str, float]:
        return {s: statistics.median(v) for s, v in self.rows.get(row, {}).items() if v}

    def markdown(self, heads: dict[str, str]) -> str:
        lines = [
            "| figure | " + " | ".join(heads[s] for s in self.systems) + " |",
            "|---|" + "---:|" * len(self.systems),
        ]
        for row in self.rows:
            med = self.medians(row)
            best = (min if row in LOWER else max)(med.values()) if len(med) > 1 else None
            cells = []
            for s in self.systems:
                text = fmt(med.get(s, float("nan")))
                cells.append(f"**{text}**" if s in med and med[s] == best else text)
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def bench(args: argparse.Namespace) -> dict[str, Any]:
    systems = [s for s in args.systems.split(",") if s]
    if unknown := set(systems) - set(SYSTEMS):
        raise SystemExit(f"unknown systems: {', '.join(sorted(unknown))}")
    missing = [s for s in systems if not available(s)]
    if missing:
        raise SystemExit(f"not installed: {', '.join(missing)} (run `python peers.py --setup`)")
    peers = {s: Peer(s, args.url) for s in systems}
    about = {s: p.version() for s, p in peers.items()}
    heads = {s: f"{SYSTEMS[s].label} {about[s]['version']}" for s in systems}
    table = Table(systems)
    samples: dict[str, list[list[float]]] = {}
    n, batch, cap = args.jobs, args.batch, args.drain_timeout

    def single(s: str) -> None:
        table.add(SINGLE, s, peers[s].enqueue(args.single_jobs, 1))

    def bulk(s: str) -> None:
        table.add(bulk_row(batch), s, peers[s].enqueue(n, batch))

    def drain(config: str) -> Any:
        def run(s: str) -> None:
            peers[s].fill(n, batch, config)
            out = peers[s].measure_drain(n, config, cap)
            table.add(TUNED if config == "tuned" else DEFAULTS, s, out["done"] / out["seconds"])
            if config == "tuned" and out["done"]:
                table.add(CPU, s, out["cpu"] / out["done"] * 1e6)
            if out["done"] < n:
                table.note(
                    f"{heads[s]}, {config}: {out['done']:,} of {n:,} jobs in the "
                    f"{cap:g} s cap (the rate is of those)"
                )

        return run

    def latency(s: str) -> None:
        ms = peers[s].latency_samples(args.samples, args.gap)
        if len(ms) < args.samples:
            table.note(f"{heads[s]} latency: {len(ms)} of {args.samples} jobs started in time")
        table.add(P50, s, percentile(ms, 50))
        table.add(P99, s, percentile(ms, 99))
        table.add(MAX, s, max(ms, default=float("nan")))
        samples.setdefault(s, []).append(ms)

    steps = [("single enqueue", single), ("bulk enqueue", bulk)]
    steps += [("drain, tuned", drain("tuned")), ("drain, defaults", drain("defaults"))]
    steps += [("latency", latency)]
    # the rows in the table's order, whatever order the steps fill them in
    for row in (TUNED, DEFAULTS, SINGLE, bulk_row(batch), P50, P99, MAX, CPU):
        table.rows[row] = {}
    load0 = os.getloadavg()[0]
    for r in range(args.runs):
        turn = systems[r % len(systems) :] + systems[: r % len(systems)]
        for label, run in steps:
            for s in turn:
                t0 = time.perf_counter()
                run(s)
                took = time.perf_counter() - t0
                print(f"  round {r + 1}: {s} {label} ({took:.1f} s)", file=sys.stderr)
    load1 = os.getloadavg()[0]
    for s in systems:
        cfg = about[s]["config"]
        table.note(
            f"{heads[s]} (Python {about[s]['python']}): tuned {cfg['tuned']}; "
            f"defaults {cfg['defaults']}"
        )
    print(
        f"\nPostgreSQL at {args.url.rsplit('@', 1)[-1]}; {n:,} jobs (single-job enqueue: "
        f"{args.single_jobs:,}), {args.samples} latency samples, medians of {args.runs}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{load0:.1f} → {load1:.1f}; {platform.platform()}, {os.cpu_count()} CPUs\n"
    )
    print(f"`python {' '.join(sys.argv)}`\n")
    print(table.markdown(heads))
    print()
    for text in table.notes:
        print(f"- {text}")
    return {
        "systems": about,
        "jobs": n,
        "runs": args.runs,
        "rows": table.rows,
        "latency_ms": samples,
        "notes": table.notes,
        "load": [load0, load1],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/skiplock_bench")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, in order")
    ap.add_argument("--jobs", type=int, default=20_000, help="jobs per drain and bulk enqueue")
    ap.add_argument("--single-jobs", type=int, default=2_000, help="single-job enqueues")
    ap.add_argument("--batch", type=int, default=1000, help="jobs per bulk enqueue call")
    ap.add_argument("--samples", type=int, default=200, help="latency jobs per round")
    ap.add_argument("--gap", type=float, default=0.02, help="seconds idle after each start")
    ap.add_argument("--runs", type=int, default=3, help="rounds; each figure is the median")
    ap.add_argument("--drain-timeout", type=float, default=60.0, help="seconds per drain")
    ap.add_argument("--json", type=Path, default=RESULTS / "peers.json")
    ap.add_argument("--setup", action="store_true", help="make the peers' venvs, then stop")
    ap.add_argument("--python", help="the base Python for --setup's venvs")
    args = ap.parse_args()
    if args.setup:
        setup([s for s in args.systems.split(",") if s in PEERS], args.python)
        return
    out = bench(args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
