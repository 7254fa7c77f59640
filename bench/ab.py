"""Two source trees of skiplock, one drain per process, taking turns: is a change faster?

    git worktree add /tmp/before main~1
    python bench/ab.py --url postgresql://postgres@127.0.0.1:5432/skiplock_bench \\
        --before /tmp/before --after . --mode worker --rounds 4

Each sample is a fresh ``python`` process that imports ``skiplock`` *and its dialects* from
one tree (``skiplock.dialects`` is mapped to ``<tree>/dialects`` by the editable install's
package map, so putting ``<tree>/src`` first on ``sys.path`` alone would still load the
installed tree's SQL: this script installs a finder for it and checks both paths), fills
the bench table with 20,000 no-op jobs, then drains them (``--mode``: ``worker`` c100,
``metrics`` (worker c100 with ``metrics_port=0``: its Prometheus metrics kept and served),
``defaults``, ``async`` c100, ``bare`` Queue loop of ``claim(limit=200)`` +
``complete_many``, or ``enqueue`` in calls of 1,000) and prints jobs/s and the process's
CPU per job (``time.process_time``: every thread of the client, not the server);
``latency``: ``--jobs`` jobs (default 300) one at a time, 20 ms apart, into an idle worker,
enqueue to handler start, p50 and p99 in ms. The trees
alternate inside each round, so a burst of load on this shared machine lands on both.
``--raw`` adds bench/raw.py's loop to the turns (its drain or its enqueue, in a process of
its own) and each tree's ratio to it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

#: the child: argv = tree, url, mode, jobs; prints {"rate": …, "cpu_us": …}
CHILD = r"""
import importlib.abc, importlib.util, json, os, sys, time
tree, url, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

class Dialects(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "skiplock.dialects":
            return None  # its submodules are found through the package's __path__
        folder = os.path.join(tree, "dialects")
        return importlib.util.spec_from_file_location(
            name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])

sys.meta_path.insert(0, Dialects())
sys.path[:0] = [os.path.join(tree, "src"), sys.argv[5]]
import skiplock, skiplock.dialects, sk
for module in (skiplock, skiplock.dialects):
    assert module.__file__.startswith(tree), module.__file__
s = sk.Skiplock(url)
if mode == "latency":  # n jobs one at a time, 20 ms apart, into an idle worker
    p50, p99, _ = s.latency(n, 0.02, poll_interval=1.0)
    print(json.dumps({"rate": p50, "cpu_us": p99}))
    s.close()
    sys.exit(0)
s.reset()
if mode != "enqueue":
    s.fill(n, 1000)
cpu, start = time.process_time(), time.perf_counter()
if mode == "worker":
    rate = s.run_worker(n, concurrency=100)
elif mode == "metrics":
    rate = s.run_worker(n, concurrency=100, metrics_port=0)
elif mode == "defaults":
    rate = s.run_worker(n)
elif mode == "async":
    rate = s.run_async_worker(n, concurrency=100)
elif mode == "bare":
    while jobs := s.q.claim(limit=200, lease=60):
        s.q.complete_many(jobs)
    rate = n / (time.perf_counter() - start)
else:
    s.fill(n, 1000)
    rate = n / (time.perf_counter() - start)
print(json.dumps({"rate": rate, "cpu_us": (time.process_time() - cpu) / n * 1e6}))
s.close()
"""

#: the raw loop of bench/raw.py in a child of its own: argv = url, mode, jobs, bench folder
RAW_CHILD = r"""
import json, sys, time
url, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
import raw
r = raw.RawPostgres(url) if url.startswith("postgres") else raw.RawMySQL(url)
r.reset()
if mode != "enqueue":
    r.fill(n, 1000)
cpu, start = time.process_time(), time.perf_counter()
if mode == "enqueue":
    r.fill(n, 1000)
    rate = n / (time.perf_counter() - start)
else:
    rate = r.run_drain(n)
print(json.dumps({"rate": rate, "cpu_us": (time.process_time() - cpu) / n * 1e6}))
"""

MODES = ("worker", "metrics", "defaults", "async", "bare", "enqueue", "latency")
RAW = "raw loop"


def sample(tree: str, url: str, mode: str, jobs: int) -> dict[str, float]:
    if tree == RAW:
        argv = [sys.executable, "-c", RAW_CHILD, url, mode, str(jobs), HERE]
    else:
        argv = [sys.executable, "-c", CHILD, os.path.abspath(tree), url, mode, str(jobs), HERE]
    out = subprocess.run(
        argv,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--before", required=True, help="a checkout of the old tree")
    parser.add_argument("--after", default=os.path.dirname(HERE), help="default: this tree")
    parser.add_argument("--mode", choices=MODES, default="worker")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, help="default: 20,000; 300 for latency")
    parser.add_argument(
        "--raw", action="store_true", help="bench/raw.py's loop takes its turn too (÷ raw)"
    )
    args = parser.parse_args()
    if args.jobs is None:  # latency sends one job each 20 ms: 20,000 would take 7 minutes
        args.jobs = 300 if args.mode == "latency" else 20_000
    trees = {"before": args.before, "after": args.after}
    if args.raw:
        trees["raw"] = RAW
    got: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, {args.mode}", file=sys.stderr)
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))  # each goes first in turn
        for name in order:
            got[name].append(sample(trees[name], args.url, args.mode, args.jobs))
            last = got[name][-1]
            unit = "ms p50" if args.mode == "latency" else "jobs/s"
            print(f"round {r + 1} {name}: {last['rate']:,.2f} {unit}", file=sys.stderr)
    if args.mode == "latency":
        print(f"| latency, {args.jobs} jobs | p50 ms (samples) | p99 ms (samples) |")
        print("|---|---:|---:|")
        for name, samples in got.items():
            p50 = statistics.median(s["rate"] for s in samples)
            p99 = statistics.median(s["cpu_us"] for s in samples)
            each = ", ".join(f"{s['rate']:.2f}" for s in samples)
            tails = ", ".join(f"{s['cpu_us']:.1f}" for s in samples)
            print(f"| {name} ({trees[name]}) | {p50:.2f} ({each}) | {p99:.1f} ({tails}) |")
        return
    medians = {name: statistics.median(s["rate"] for s in got[name]) for name in got}
    raw = medians.get("raw")
    print(f"| {args.mode}, {args.jobs:,} jobs | jobs/s (samples) | client CPU µs/job | ÷ raw |")
    print("|---|---:|---:|---:|")
    for name, samples in got.items():
        rates = ", ".join(f"{s['rate']:,.0f}" for s in samples)
        cpu = statistics.median(s["cpu_us"] for s in samples)
        ratio = f"{medians[name] / raw:.2f}" if raw else ""
        print(f"| {name} ({trees[name]}) | {medians[name]:,.0f} ({rates}) | {cpu:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
