"""The App that tests/integration/test_fleet.py runs in ``skiplock worker --processes N``.

Its table and side tables come from the environment (``FLEET_TABLE``, ``FLEET_RESULTS``,
``FLEET_STARTED``; the URL from ``SKIPLOCK_URL``), since each process of a fleet imports
this module again. ``record`` writes a row (job id, attempt, pid) into FLEET_STARTED as it
starts (committed at once) and one into FLEET_RESULTS in the same transaction as its fenced
completion: neither table has a key, so a job run to its end twice shows as two rows.
``hold_gil`` holds the GIL in C code at its first attempt; its second writes into
FLEET_RESULTS, in place of a pid, the pid of the first if that process still lives (0 if
it is gone).
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

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


def _alive(pid: int) -> bool:
    """*pid* runs (a zombie, killed and not yet reaped, does not)."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


@app.task(name="hold_gil", pass_job=True, timeout=1, max_attempts=2)
def hold_gil(job: skiplock.Job) -> None:
    with app.queue.transaction() as tx:
        tx.execute(*_row(job, os.environ["FLEET_STARTED"]))
    if job.attempt == 1:
        # libc's sleep() called through PyDLL, which keeps the GIL: no thread of this
        # process runs (no heartbeat, no timeout, no pipe) until the process is killed
        ctypes.PyDLL(None).sleep(120)
        return
    started = app.queue.dialect.quote(os.environ["FLEET_STARTED"])
    with app.queue.transaction() as tx:
        cur = tx.connection.cursor()
        cur.execute(
            f"SELECT pid FROM {started} WHERE job_id = %(id)s AND attempt = 1", {"id": job.id}
        )
        [(first,)] = cur.fetchall()
        cur.close()
        sql, params = _row(job, os.environ["FLEET_RESULTS"])
        tx.execute(sql, {**params, "pid": first if _alive(int(first)) else 0})
        tx.complete(job)
