"""mysql-connector's C extension against its pure-Python mode, same run, rounds alternating.

    python bench/cext.py --backend mysql --jobs 20000 --runs 3      # or mariadb

Each round drains *n* jobs with ``skiplock.Worker(concurrency=100)`` and with the raw loop,
once with the C extension and once with ``mysql.connector.HAVE_CEXT`` set false (what
skiplock does where the extension cannot load: pure Python for our connections and the raw
loop alike). Prints median jobs/s per mode and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import mysql.connector
from raw import RawMySQL
from run import URLS
from sk import Skiplock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="mysql", choices=["mysql", "mariadb"])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    url, n = URLS[args.backend], args.jobs
    have = mysql.connector.HAVE_CEXT
    if not have:
        sys.exit("the C extension does not load here: nothing to compare")
    got: dict[str, list[float]] = {}
    for r in range(args.runs):
        for mode in ("C extension", "pure Python"):
            mysql.connector.HAVE_CEXT = mode == "C extension"
            s = Skiplock(url)
            driver = s.q.ping().driver
            got.setdefault(f"Worker c100, {mode}", []).append(
                s.drain_worker(n, 1000, concurrency=100)
            )
            s.close()
            raw = RawMySQL(url)
            got.setdefault(f"raw loop, {mode}", []).append(raw.drain(n, 1000))
            raw.close()
            print(f"round {r + 1} {driver}: {got}", file=sys.stderr)
    mysql.connector.HAVE_CEXT = have
    print(f"{args.backend}, {n:,} jobs, drain jobs/s, medians of {args.runs}")
    for key, samples in got.items():
        med = statistics.median(samples)
        print(f"| {key} | {med:,.0f} | {', '.join(f'{v:,.0f}' for v in samples)} |")


if __name__ == "__main__":
    main()
