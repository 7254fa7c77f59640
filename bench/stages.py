"""Where the time from enqueue to handler start goes, stage by stage, at an idle Worker.

    python bench/stages.py --url postgresql://postgres@127.0.0.1:5432/skiplock_bench

``--jobs`` jobs (default 300), one each ``--gap`` seconds (0.02), into an idle
``skiplock.Worker`` (defaults, ``poll_interval=1.0``) on a table of its own (``--table``,
dropped at the end). Each job gets timestamps (``time.perf_counter``, one process):

- ``enqueue``: from just before ``q.enqueue`` to its return (the INSERT committed);
- ``notify``: to the Worker's listener thread hearing the notification (LISTEN/NOTIFY;
  MySQL and MariaDB have no listener: their row is the idle probe's ``wake``);
- ``to claim``: to the claim loop starting the claim that took the job (below 0 when
  that claim began before the notification was heard: the loop was looking anyway);
- ``claim``: that claim's round trips (its transaction, committed);
- ``to handler``: from the claim's end to the handler's first line.

It times private methods of the worker (the listener's wait, the claim loop's claim) by
wrapping them in this process: a figure for a contributor, not an API. Prints p50, p90 and
p99 in ms per stage and for the whole, over the jobs that passed every stage.
"""

from __future__ import annotations

import argparse
import os
import time

import skiplock
from skiplock._shell.worker_port import Listening
from skiplock._worker import claiming

STAGES = ("enqueue", "notify", "to claim", "claim", "to handler")
MARKS = ("t0", "enqueued", "woken", "claiming", "claimed", "started")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--gap", type=float, default=0.02)
    parser.add_argument("--table", default=f"skiplock_stages_{os.getpid()}")
    args = parser.parse_args()

    marks: dict[int, dict[str, float]] = {}
    current: list[int] = [-1]  # the job being enqueued (one at a time)

    def mark(name: str, at: float | None = None) -> None:
        marks.setdefault(current[0], {}).setdefault(name, at or time.perf_counter())

    wait = Listening.wait

    def timed_wait(self: Listening, seconds: float, cancels: list[int]) -> bool:
        woken = wait(self, seconds, cancels)
        if woken:
            mark("woken")
        return woken

    claim = claiming.Producer.claim

    def timed_claim(self: claiming.Producer) -> int:
        began = time.perf_counter()
        n = claim(self)
        if n:
            mark("claiming", began)
            mark("claimed")
        return n

    Listening.wait = timed_wait  # type: ignore[method-assign]
    claiming.Producer.claim = timed_claim  # type: ignore[method-assign]

    q = skiplock.Queue(args.url, table=args.table)
    q.install()
    try:
        worker = skiplock.Worker(q, lambda job: mark("started"), poll_interval=1.0).start()
        time.sleep(2.0)  # idle: marked waiting, listening
        for i in range(args.jobs):
            current[0] = i
            mark("t0")
            q.enqueue({"n": i})
            mark("enqueued")
            time.sleep(args.gap)
        time.sleep(1.0)
        worker.stop(timeout=30)
    finally:
        q.uninstall()
        q.close()

    if not q.dialect.supports_notify:  # the idle probe wakes the claim loop: no listener
        for m in marks.values():
            m.setdefault("woken", m.get("claiming", 0.0))
    rows = [m for m in marks.values() if all(k in m for k in MARKS)]
    print(f"{q.dialect.name}: {len(rows)} of {args.jobs} jobs timed at every stage")
    print("| stage | p50 ms | p90 ms | p99 ms |\n|---|---:|---:|---:|")
    spans = [*zip(STAGES, MARKS, MARKS[1:], strict=False), ("enqueue to handler", "t0", "started")]
    for name, a, b in spans:
        ms = sorted((m[b] - m[a]) * 1000 for m in rows)
        if not ms:
            continue
        p = [ms[min(len(ms) - 1, int(len(ms) * f))] for f in (0.5, 0.9, 0.99)]
        print(f"| {name} | {p[0]:.2f} | {p[1]:.2f} | {p[2]:.2f} |")


if __name__ == "__main__":
    main()
