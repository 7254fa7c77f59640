"""The App that tests/integration/test_fleet.py runs in ``skiplock worker --processes N``.

Its table and side tables come from the environment (``FLEET_TABLE``, ``FLEET_RESULTS``,
``FLEET_STARTED``; the URL from ``SKIPLOCK_URL``), since each process of a fleet imports
this module again. ``record`` writes a row (job id, attempt, pid) into FLEET_STARTED as it
starts (committed at once) and one into FLEET_RESULTS in the same transaction as its fenced
completion: neither table has a key, so a job run to its end twice shows as two rows.
"""

from __future__ import annotations

import os
import time

import skiplock

app = skiplock.App(os.environ["SKIPLOCK_URL"], table=os.environ["FLEET_TABLE"])


def _row(job: skiplock.Job, table: str) -> tuple[str, dict[str, int]]:
    sql = (
        f"INSERT INTO {app.queue.dialect.quote(table)} (job_id, attempt, pid) "
        "VALUES (%(id)s, %(attempt)s, %(pid)s)"
    )
    return sql, {"id": job.id, "attempt": job.attempt, "pid": os.getpid()}


@app.task(name="record", pass_job=True, max_attempts=3)
def record(job: skiplock.Job, sleep: float = 0.0) -> None:
    with app.queue.transaction() as tx:
        tx.execute(*_row(job, os.environ["FLEET_STARTED"]))
    time.sleep(sleep)
    with app.queue.transaction() as tx:
        tx.execute(*_row(job, os.environ["FLEET_RESULTS"]))
        tx.complete(job, result=os.getpid())


@app.task(name="hang", timeout=1, max_attempts=2)
def hang() -> None:
    time.sleep(3600)  # a sync handler no thread can stop: in a fleet, its process ends


@app.task(name="hang_long", pass_job=True, timeout=4)
def hang_long(job: skiplock.Job) -> None:
    """As hang, with time to stop the fleet while it runs: it marks its start first."""
    with app.queue.transaction() as tx:
        tx.execute(*_row(job, os.environ["FLEET_STARTED"]))
    time.sleep(3600)
