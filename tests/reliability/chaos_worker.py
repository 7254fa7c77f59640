"""One worker process of the reliability suite (run by :class:`reliability.conftest.Fleet`).

``python chaos_worker.py TABLE RESULTS REJECTED LEASE CONCURRENCY [KIND]``, the URL in
``$SKIPLOCK_URL`` (never on the command line); KIND ``thread`` (default) runs a
:class:`skiplock.Worker`, ``asyncio`` an :class:`skiplock.AsyncWorker` with the same
handler as an ``async def`` (its database work in a thread: the Queue is sync). The
handler writes one row into RESULTS in the same transaction as the job's fenced
completion, so a late attempt's row rolls back with its rejected completion; each rejected
late write (LeaseLost) is recorded in REJECTED in a transaction of its own, then re-raised
so the worker counts the job as lost.

With ``$SKIPLOCK_EVENTS`` naming a folder (the HA tests, tests/reliability/test_patroni.py),
the handler rides out a failover as docs/guarantees.md advises: it tries its transaction
again every 0.2 s (for up to a minute) while the database answers ``BackendError``; and it
appends what it saw to ``events-PID.jsonl`` there, one JSON list a line: ``["claim", id,
attempt, claim_id, time]`` when it starts, then ``[outcome, id, attempt, claim_id, began,
ended]`` for each try of its completion (``accepted``, ``refused`` or ``error``), times
from ``time.time()``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys
import time
from typing import TextIO

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
    folder = os.environ.get("SKIPLOCK_EVENTS")
    events: TextIO | None = None
    if folder is not None:  # open for the process's life, a line at a time
        events = open(os.path.join(folder, f"events-{pid}.jsonl"), "a", buffering=1)  # noqa: SIM115

    def event(*fields: object) -> None:
        if events is not None:
            events.write(json.dumps(fields) + "\n")

    def write_once(job: skiplock.Job) -> None:
        row = {"id": job.id, "attempt": job.attempt, "pid": pid}
        try:
            with q.transaction() as tx:
                tx.execute(write_result, row)
                tx.complete(job, result=pid)
        except skiplock.LeaseLost:
            with q.transaction() as tx:
                tx.execute(write_rejection, row)
            raise

    def write(job: skiplock.Job) -> None:
        if events is None:
            write_once(job)
            return
        give_up = time.monotonic() + 60
        while True:
            began = time.time()
            outcome = "error"
            try:
                write_once(job)
                outcome = "accepted"
                return
            except skiplock.LeaseLost:
                outcome = "refused"
                raise
            except skiplock.BackendError:
                if time.monotonic() > give_up:
                    raise
            finally:
                event(outcome, job.id, job.attempt, job.claim_id, began, time.time())
            time.sleep(0.2)

    def handler(job: skiplock.Job) -> None:
        event("claim", job.id, job.attempt, job.claim_id, time.time())
        time.sleep(random.uniform(0.02, 0.08))  # trivial work that takes a moment
        write(job)

    async def async_handler(job: skiplock.Job) -> None:
        event("claim", job.id, job.attempt, job.claim_id, time.time())
        await asyncio.sleep(random.uniform(0.02, 0.08))
        await asyncio.to_thread(write, job)

    options = {"concurrency": int(concurrency), "lease": float(lease), "poll_interval": 0.2}
    if kind == "asyncio":
        asyncio.run(skiplock.AsyncWorker(q, async_handler, grace=5, **options).run())
    else:
        skiplock.Worker(q, handler, grace=5, **options).run()


if __name__ == "__main__":
    main(sys.argv)
