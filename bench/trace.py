"""How much of skiplock one job passes through: modules and functions, counted with
``sys.setprofile``.

    python bench/trace.py --url postgresql://postgres@127.0.0.1/test [--list]

An ``App`` with one task on a table of its own (``skiplock_trace``, dropped at the end):
one job is enqueued with ``task.defer()`` (the *enqueue*), then ``app.worker()`` runs until
that job is done and stops (the *worker run*: start, claim, the handler, the outcome,
stop). A first round runs untraced, so imports and the pool's first connection are not
counted. Every skiplock function called is counted once, on every thread the worker
starts, by its qualified name (``Queue.enqueue``, ``claim.<locals>.finish``); module
bodies, lambdas and comprehensions are not counted (Python 3.12 inlines the latter, so
counting them would make the figure depend on the version). ``--list`` prints them. The
figure a contributor reads: how many modules and
functions the path of one job crosses.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import skiplock

TABLE = "skiplock_trace"


def _folder(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, package
    return Path(spec.origin).resolve().parent


#: the folders whose files count as skiplock's, with their dotted prefixes
ROOTS = {_folder("skiplock"): "skiplock", _folder("skiplock.dialects"): "skiplock.dialects"}


def module_of(filename: str, cache: dict[str, str | None] = {}) -> str | None:  # noqa: B006
    """The dotted module of a source file of skiplock, or None for any other file."""
    if filename not in cache:
        cache[filename] = None
        path = Path(filename).resolve()
        for root, prefix in sorted(ROOTS.items(), key=lambda r: -len(r[0].parts)):
            if path.suffix == ".py" and path.is_relative_to(root):
                parts = path.relative_to(root).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                cache[filename] = ".".join((prefix, *parts))
                break
    return cache[filename]


class Tracer:
    """The skiplock functions called on the threads it profiles: ``{(module, function)}``."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        module = module_of(code.co_filename)
        if module is not None and not code.co_name.startswith("<"):
            self.seen.add((module, getattr(code, "co_qualname", code.co_name)))


def one_round(app: skiplock.App, task: Any) -> tuple[Tracer, Tracer]:
    """Enqueue one job (traced on this thread), then run a worker until that job is done
    (traced on this thread and the threads the worker starts; the watcher that stops it is
    not traced)."""
    enqueue, worker_run = Tracer(), Tracer()
    ready = threading.Event()
    job_id: list[int] = []

    def watch() -> None:  # started before threading.setprofile: never traced
        ready.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            job = app.queue.get(job_id[0])
            if job is not None and job.status == "done":
                break
            time.sleep(0.01)
        else:
            print("trace: the job was not done within 60 s", file=sys.stderr)
        worker.stop(wait=False)

    watcher = threading.Thread(target=watch, name="trace-watcher")
    watcher.start()
    sys.setprofile(enqueue)
    job_id.append(task.defer(1))
    sys.setprofile(None)

    threading.setprofile(worker_run)
    sys.setprofile(worker_run)
    worker = app.worker(poll_interval=0.05)
    ready.set()
    worker.run(install_signals=False)
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]
    watcher.join()
    return enqueue, worker_run


def report(name: str, seen: set[tuple[str, str]], listing: bool) -> None:
    modules = {m for m, _ in seen}
    print(f"{name:<8} {len(modules):>4} modules {len(seen):>5} functions")
    if listing:
        for module in sorted(modules):
            functions = sorted(f for m, f in seen if m == module)
            print(f"    {module} ({len(functions)}): {', '.join(functions)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("SKIPLOCK_TEST_POSTGRESQL_URL") or os.environ.get("SKIPLOCK_URL"),
        help="the database (default: $SKIPLOCK_TEST_POSTGRESQL_URL, then $SKIPLOCK_URL)",
    )
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--list", action="store_true", help="print each module's functions")
    args = parser.parse_args()
    if not args.url:
        parser.error("give --url (or set SKIPLOCK_URL)")

    app = skiplock.App(args.url, table=args.table)

    @app.task(name="trace.noop")
    def noop(n: int) -> int:
        return n

    app.queue.install()
    try:
        one_round(app, noop)  # thrown away: imports, the pool's first connections
        enqueue, worker = (t.seen for t in one_round(app, noop))
    finally:
        app.queue.uninstall()
        app.queue.close()
    report("enqueue", enqueue, args.list)
    report("worker", worker, args.list)
    report("both", enqueue | worker, args.list)


if __name__ == "__main__":
    main()
