"""What the workflow statements cost jobs that use no workflow: a Worker (concurrency 8,
no-op handler) drains 20,000 plain jobs, with the dialect's statements as shipped
("with") and with the two look-ups taken out of the loaded set ("without": the code
skips them, as it does for an older release's statements): a claim's read of its jobs'
parents' results and an end's look for waiting children. Since has_children and
has_parents mark the rows of jobs in a workflow, plain jobs run neither, so "with" and
"without" should be the same. Three interleaved rounds; median seconds and jobs/s.

    python bench/workflow_cost.py postgresql://postgres@127.0.0.1:5432/test

``drain(url, "with")`` alone, from two trees' venvs in turn, compares two versions.
"""

from __future__ import annotations

import statistics
import sys
import time

import skiplock

JOBS = 20_000


def drain(url: str, variant: str) -> float:
    q = skiplock.connect(url, table="bench_workflow_cost")
    q.uninstall()
    q.install()
    if variant == "without":
        for name in ("deps_children", "deps_results"):
            q.dialect.sql.pop(name)
    q.enqueue_many([{"n": i} for i in range(JOBS)])
    w = skiplock.Worker(q, lambda job: None, concurrency=8, poll_interval=0.05, retention=None)
    started = time.perf_counter()
    w.start()
    while q.stats().done < JOBS:
        time.sleep(0.05)
    took = time.perf_counter() - started
    w.stop()
    q.uninstall()
    q.close()
    return took


def main(url: str) -> None:
    times: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(3):
        for variant, samples in times.items():
            samples.append(drain(url, variant))
    for variant, samples in times.items():
        m = statistics.median(samples)
        rounded = [round(x, 2) for x in samples]
        print(f"{variant}: median {m:.2f} s, {JOBS / m:.0f} jobs/s {rounded}")


if __name__ == "__main__":
    main(sys.argv[1])
