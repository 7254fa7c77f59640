"""One worker process of the workflow reliability run (tests/reliability/test_workflow_chaos.py).

``python workflow_worker.py TABLE RESULTS LEASE CONCURRENCY``, the URL in
``$SKIPLOCK_URL``. A job's payload names its parents (``{"parents": [...], "fail": bool}``).
The handler checks that ``job.parent_results`` holds every parent's result (each parent's
result is its own id), then writes one row into RESULTS (its id, attempt, pid, the wall
clock at its start and just before the commit, and whether the check passed) in the same
transaction as its fenced completion; a job marked ``fail`` raises instead (one attempt:
it ends failed).
"""

from __future__ import annotations

import logging
import os
import random
import sys
import time

import skiplock


def main(argv: list[str]) -> None:
    table, results, lease, concurrency = argv[1:5]
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(process)d %(message)s")
    q = skiplock.connect(os.environ["SKIPLOCK_URL"], table=table)
    write_result = (
        f"INSERT INTO {q.dialect.quote(results)} (job_id, attempt, pid, started, ended, ok) "
        "VALUES (%(id)s, %(attempt)s, %(pid)s, %(started)s, %(ended)s, %(ok)s)"
    )
    pid = os.getpid()

    def handler(job: skiplock.Job) -> None:
        started = time.time()
        parents = job.payload["parents"]
        ok = int(job.parent_results == {p: p for p in parents})
        if job.payload["fail"]:
            raise RuntimeError(f"job {job.id} fails, as planned")
        time.sleep(random.uniform(0.005, 0.03))  # trivial work that takes a moment
        row = {"id": job.id, "attempt": job.attempt, "pid": pid, "started": started, "ok": ok}
        with q.transaction() as tx:
            row["ended"] = time.time()
            tx.execute(write_result, row)
            tx.complete(job, result=job.id)

    options = {"concurrency": int(concurrency), "lease": float(lease), "poll_interval": 0.1}
    skiplock.Worker(q, handler, grace=5, **options).run()


if __name__ == "__main__":
    main(sys.argv)
