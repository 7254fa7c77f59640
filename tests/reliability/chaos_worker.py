"""One worker process of the reliability suite (run by :class:`reliability.conftest.Fleet`).

``python chaos_worker.py TABLE RESULTS REJECTED LEASE CONCURRENCY [KIND]``, the URL in
``$SKIPLOCK_URL`` (never on the command line); KIND ``thread`` (default) runs a
:class:`skiplock.Worker`, ``asyncio`` an :class:`skiplock.AsyncWorker` with the same
handler as an ``async def`` (its database work in a thread: the Queue is sync). The
handler writes one row into RESULTS in the same transaction as the job's fenced
completion, so a late attempt's row rolls back with its rejected completion; each rejected
late write (LeaseLost) is recorded in REJECTED in a transaction of its own, then re-raised
so the worker counts the job as lost.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sys
import time

import skiplock


def main(argv: list[str]) -> None:
    table, results, rejected, lease, concurrency = argv[1:6]
    kind = argv[6] if len(argv) > 6 else "thread"
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(process)d %(message)s")
    q = skiplock.connect(os.environ["SKIPLOCK_URL"], table=table)
    columns = "(job_id, attempt, pid) VALUES (%(id)s, %(attempt)s, %(pid)s)"
    write_result = f"INSERT INTO {q.dialect.quote(results)} {columns}"
    write_rejection = f"INSERT INTO {q.dialect.quote(rejected)} {columns}"
    pid = os.getpid()

    def write(job: skiplock.Job) -> None:
        row = {"id": job.id, "attempt": job.attempt, "pid": pid}
        try:
            with q.transaction() as tx:
                tx.execute(write_result, row)
                tx.complete(job, result=pid)
        except skiplock.LeaseLost:
            with q.transaction() as tx:
                tx.execute(write_rejection, row)
            raise

    def handler(job: skiplock.Job) -> None:
        time.sleep(random.uniform(0.02, 0.08))  # trivial work that takes a moment
        write(job)

    async def async_handler(job: skiplock.Job) -> None:
        await asyncio.sleep(random.uniform(0.02, 0.08))
        await asyncio.to_thread(write, job)

    options = {"concurrency": int(concurrency), "lease": float(lease), "poll_interval": 0.2}
    if kind == "asyncio":
        asyncio.run(skiplock.AsyncWorker(q, async_handler, grace=5, **options).run())
    else:
        skiplock.Worker(q, handler, grace=5, **options).run()


if __name__ == "__main__":
    main(sys.argv)
