"""The seams between skiplock's entry points, run as one matrix on every local database.

Each entry point was once tested alone, and the bugs were where two met: a worker that
drained another table than its App's, an App whose async half ignored the queue it was
made from. Here every way in meets every other:

==============================  ==========================================================
the App made from               a URL (``App(url, table=T, limits)``), the environment
                                (``App(table=T, limits)`` with ``$SKIPLOCK_URL``), a
                                ``Queue``, an ``AsyncQueue`` (``connect*(url, table=T,
                                limits)``)
its task                        ``def`` or ``async def``
run by                          ``app.worker()`` (Worker), ``app.async_worker()``
                                (AsyncWorker), ``skiplock worker module:app`` in one
                                process, with no option, with ``--url`` (the App's own URL
                                never answers) or with ``--table`` (the App's own table
                                does not exist), and one fleet (``--processes 1 --url``)
==============================  ==========================================================

and every cell checks the same things: the jobs (enqueued with ``defer`` and
``defer_async`` in process) are in the App's table and are run from it; the worker's
queue has the App's queue and rate limits (the rate-limited queue's claims are recorded
in ``<table>_rates``); the metrics are labelled with the task's name and queue. The
in-process cells are the whole product (4 x 2 x 2); the command-line cells pair each way
of building with each option once, the task's kind alternating so that both kinds meet
every build and every option (12 processes, run at once); the fleet's own behaviour is
tests/integration/test_fleet.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import skiplock
from skiplock.drivers.url import parse_url

from .conftest import wait_until

BUILDS = ("url", "env", "Queue", "AsyncQueue")
KINDS = ("sync", "async")
WORKERS = ("Worker", "AsyncWorker")
OPTIONS = ("none", "--url", "--table")
QUEUE = "seams"
LIMITS: dict[str, Any] = {"queue_limits": {QUEUE: 8}, "rate_limits": {QUEUE: (1000, 60.0)}}
PROCESSED = "skiplock_jobs_processed_total"

MakeQueue = Callable[..., skiplock.Queue]
Scrape = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(host: str, port: int) -> Scrape | None:
    """Every sample of the /metrics at *host*:*port* (None without prometheus_client)."""
    try:
        from prometheus_client import parser
    except ImportError:
        return None
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in parser.text_string_to_metric_families(text)
        for s in family.samples
    }


def _labelled(samples: Scrape | None, task: str, queue: str, n: int = 1) -> str | None:
    """Why *samples* lack *n* jobs done of *task* on *queue* (None: they have them, or
    there are no metrics to read)."""
    if samples is None:
        return None
    want = (PROCESSED, (("outcome", "done"), ("queue", queue), ("task", task)))
    if samples.get(want) == n:
        return None
    seen = {k: v for k, v in samples.items() if k[0] == PROCESSED}
    return f"metrics: no {want} == {n} in {seen}"


def _claims_recorded(q: skiplock.Queue, queue: str = QUEUE) -> int:
    """Jobs of *queue* whose claims the rate limit recorded (``<table>_rates``)."""
    sql = f"SELECT COALESCE(SUM(n), 0) FROM {q.dialect.quote(q.table.rates_table)} WHERE queue = %s"
    with q.transaction() as tx:
        row = tx.fetchone(sql, (queue,))
    return int(row[0]) if row else 0


def _task_source(kind: str) -> str:
    prefix = "async " if kind == "async" else ""
    return f"{prefix}def double(x):\n    return 2 * x\n"


# -- in process: every build x kind x worker -----------------------------------------------


@pytest.fixture
def app_of(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], Any]]:
    """``app_of(build, table)``: an App on *table* with LIMITS, made the *build* way."""
    made: list[Any] = []

    def make(build: str, table: str) -> skiplock.App:
        if build == "url":
            return skiplock.App(url, table=table, **LIMITS)
        if build == "env":
            monkeypatch.setenv("SKIPLOCK_URL", url)
            return skiplock.App(table=table, **LIMITS)
        connect = skiplock.connect if build == "Queue" else skiplock.connect_async
        queue = connect(url, table=table, **LIMITS)
        made.append(queue)
        return skiplock.App(queue)

    yield make
    for queue in made:
        if isinstance(queue, skiplock.Queue):
            queue.close()


def _counted(worker: Any) -> None:
    """Until the worker's /metrics count both jobs done, labelled with the task and queue
    (the count follows the completion's write, a moment after ``wait`` returns)."""
    why: list[str | None] = [None]

    def labelled() -> bool:
        why[0] = _labelled(_scrape(*worker.metrics.address), "double", QUEUE, 2)
        return why[0] is None

    try:
        wait_until(labelled, 15, "the jobs counted")
    except AssertionError:
        raise AssertionError(why[0]) from None


@pytest.mark.parametrize("runner", WORKERS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("build", BUILDS)
def test_in_process(
    make_queue: MakeQueue,
    app_of: Callable[[str, str], skiplock.App],
    build: str,
    kind: str,
    runner: str,
) -> None:
    q = make_queue()
    app = app_of(build, str(q.table))
    namespace: dict[str, Any] = {}
    exec(_task_source(kind), namespace)
    task = app.task(name="double", queue=QUEUE)(namespace["double"])
    for half in (app.queue, app.async_queue):  # both halves: the App's table and limits
        assert (half.table, half.queue_limits, half.rate_limits) == (
            q.table,
            LIMITS["queue_limits"],
            LIMITS["rate_limits"],
        )
    make = app.worker if runner == "Worker" else app.async_worker
    worker = make(metrics_port=0, poll_interval=0.05, retention=None)
    assert worker.queue.table == q.table and worker.queue.rate_limits == LIMITS["rate_limits"]
    assert worker.queue.queue_limits == LIMITS["queue_limits"]

    async def run() -> list[int]:
        try:
            ids = [task.defer(1), await task.defer_async(2)]
            if isinstance(worker, skiplock.AsyncWorker):
                async with worker:
                    for job_id in ids:
                        await app.async_queue.wait(job_id, timeout=60)
                    await asyncio.to_thread(_counted, worker)
            else:
                thread = threading.Thread(target=worker.run, kwargs={"install_signals": False})
                thread.start()
                try:
                    for job_id in ids:
                        app.queue.wait(job_id, timeout=60)
                    _counted(worker)
                finally:
                    worker.stop()
                    thread.join(30)
            return ids
        finally:
            await app.async_queue.close()

    ids = asyncio.run(run())
    results = [q.get(i) for i in ids]
    assert [(j.status, j.result) for j in results if j is not None] == [("done", 2), ("done", 4)]
    assert _claims_recorded(q) == 2  # the rate limit counted both claims
    app.queue.close()


# -- the command line: each build with each option, at once --------------------------------


@dataclass
class Cell:
    """One ``skiplock worker`` of the matrix: its App's module and options, and the job it
    must run from the test's table (on a queue of the cell's own, so the cells share the
    table and none runs another's job)."""

    index: int
    build: str
    kind: str
    option: str
    fleet: bool = False
    job_id: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log: Path = field(default_factory=Path)
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        where = "fleet" if self.fleet else "worker"
        made = {"url": "a URL", "env": "$SKIPLOCK_URL", "Queue": "a Queue"}.get(
            self.build, "an AsyncQueue"
        )
        return f"{where} ({self.option}) of an App made from {made}, {self.kind} task"

    @property
    def queue(self) -> str:
        return f"{QUEUE}{self.index}"

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _cells() -> list[Cell]:
    pairs = [(build, option) for build in BUILDS for option in OPTIONS]
    cells = [
        Cell(i, build, KINDS[(BUILDS.index(build) + OPTIONS.index(option)) % 2], option)
        for i, (build, option) in enumerate(pairs)
    ]
    cells.append(Cell(len(cells), "url", "sync", "--url", fleet=True))
    return cells


def _module(cell: Cell, app_url: str, app_table: str) -> str:
    """The source of the cell's App module (its queue's limits as in LIMITS)."""
    limits = f"queue_limits={{{cell.queue!r}: 8}}, rate_limits={{{cell.queue!r}: (1000, 60.0)}}"
    if cell.build == "url":
        make = f"skiplock.App({app_url!r}, table={app_table!r}, {limits})"
    elif cell.build == "env":
        make = f"skiplock.App(table={app_table!r}, {limits})"
    else:
        connect = "connect" if cell.build == "Queue" else "connect_async"
        make = f"skiplock.App(skiplock.{connect}({app_url!r}, table={app_table!r}, {limits}))"
    task = _task_source(cell.kind)
    return f"import skiplock\napp = {make}\n@app.task(name='double', queue={cell.queue!r})\n{task}"


def _start(cell: Cell, url: str, q: skiplock.Queue, tmp: Path) -> None:
    """The cell's module written, its job enqueued, its worker started. ``--url``: the
    App's own URL never answers; ``--table``: the App's own table does not exist."""
    u = parse_url(url)
    app_url = f"{u.scheme}://nobody@127.0.0.1:9/nowhere" if cell.option == "--url" else url
    app_table = f"{q.table.name}_no" if cell.option == "--table" else str(q.table)
    module = f"seams_cell_{cell.index}"
    (tmp / f"{module}.py").write_text(_module(cell, app_url, app_table))
    env = {k: v for k, v in os.environ.items() if k != "SKIPLOCK_URL"}
    if cell.build == "env" and cell.option != "--url":
        env["SKIPLOCK_URL"] = url
    args = {"none": [], "--url": ["--url", url], "--table": ["--table", str(q.table)]}
    more = ["--processes", "1"] if cell.fleet else []
    cell.job_id = q.enqueue({"task": "double", "args": [21], "kwargs": {}}, queue=cell.queue)
    cell.log = tmp / f"{module}.log"
    with open(cell.log, "wb") as out:
        cell.proc = subprocess.Popen(
            [sys.executable, "-m", "skiplock", "worker", f"{module}:app", *args[cell.option],
             *more, "--metrics-port", "0", "--concurrency", "2", "--grace", "5"],
            cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def _check(cell: Cell, q: skiplock.Queue) -> None:
    """What the cell's worker did, into ``cell.problems`` (it still runs)."""
    job = q.get(cell.job_id)
    if job is None or (job.status, job.result) != ("done", 42):
        cell.problems.append(f"its job is {job and (job.status, job.result)}, not done (42)")
        return
    if _claims_recorded(q, cell.queue) != 1:
        cell.problems.append("its claim was not rate-recorded: the App's limits were lost")
    on_loop = "handlers on the event loop" in cell.text()
    if on_loop != (cell.kind == "async"):
        cell.problems.append(f"async def task: {cell.kind == 'async'}, AsyncWorker: {on_loop}")
    pattern = (
        r"metrics of the fleet on http://([\d.]+):(\d+)/"
        if cell.fleet
        else (r"metrics on http://([\d.]+):(\d+)/metrics")
    )
    found = re.search(pattern, cell.text())
    if found is None:
        cell.problems.append("no metrics address in its log")
        return
    why: str | None = None
    end = time.monotonic() + 15  # a fleet's processes report their counts every so often
    while time.monotonic() < end:
        why = _labelled(_scrape(found[1], int(found[2])), "double", cell.queue)
        if why is None:
            return
        time.sleep(0.2)
    cell.problems.append(str(why))


def _stop(cells: list[Cell]) -> None:
    """SIGTERM to every cell's worker at once; then each one's exit status."""
    for cell in cells:
        if cell.proc is not None and cell.proc.poll() is None:
            cell.proc.send_signal(signal.SIGTERM)
    for cell in cells:
        if cell.proc is None:
            continue
        try:
            code = cell.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(cell.proc.pid, signal.SIGKILL)
            code = cell.proc.wait()
        if code != 0:
            cell.problems.append(f"exit status {code}")


def test_the_command_line(queue: skiplock.Queue, url: str, tmp_path: Path) -> None:
    cells = _cells()
    try:
        for cell in cells:
            _start(cell, url, queue, tmp_path)

        def settled() -> bool:
            return all(
                c.proc is not None
                and (c.proc.poll() is not None or queue.get(c.job_id).status == "done")  # type: ignore[union-attr]
                for c in cells
            )

        with contextlib.suppress(AssertionError):  # told cell by cell below
            wait_until(settled, 120, "every cell's job done")
        for cell in cells:
            _check(cell, queue)
    finally:
        _stop(cells)
    failed = [c for c in cells if c.problems]
    assert not failed, "\n\n".join(
        f"{c.name}: {'; '.join(c.problems)}\n{textwrap.indent(c.text()[-3000:], '    ')}"
        for c in failed
    )
