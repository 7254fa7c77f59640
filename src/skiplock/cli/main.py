"""The ``skiplock`` command (also ``python -m skiplock``); docs/cli.md lists its exit
codes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

from .. import __version__
from .._fleet import Fleet, processes_from_text
from .._worker.lifecycle import DEFAULT_RETENTION
from .._worker.runners import is_async_handler
from ..app import App
from ..drivers.url import mask_password
from ..errors import (
    BackendError,
    ConfigurationError,
    LockNotAcquired,
    PayloadError,
    SkiplockError,
    UnsupportedServer,
)
from ..maintenance import prune, retry_failed
from ..queue import DEFAULT_TABLE, Queue
from ..worker import DEFAULT_PREFETCH, Worker
from ..worker_async import AsyncWorker
from .jobs import add_commands as add_job_commands
from .json_args import CommandLineError, json_arg, json_or_text
from .schema import Add, add_schema_commands, cli_queue, require_url
from .targets import _find_task, _load_app, _load_target
from .web import add_commands as add_web_commands

__all__ = ["EXIT_CODES", "main"]

EXIT_CODES = {"ok": 0, "bug": 1, "usage": 2, "config": 3, "database": 4, "locked": 5, "demo": 6}

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``12h``, ``7d``, ``2w`` → seconds."""
    text = text.strip().lower()
    unit = _UNITS.get(text[-1:])
    number = text[:-1] if unit is not None else text
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: use e.g. 90, 15m, 12h, 7d"
        ) from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration of zero or more")
    return value


def refresh(text: str) -> float:
    """``--watch``'s interval: at least half a second."""
    value = duration(text)
    if value < 0.5:
        raise argparse.ArgumentTypeError(f"{text!r}: refresh at most every 0.5 s")
    return value


def processes(text: str) -> int | str:
    try:
        return processes_from_text(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def retention(text: str) -> float | None:
    """A ``duration``, or ``none`` / ``never``."""
    return None if text.strip().lower() in ("none", "never") else duration(text)


# -- commands -------------------------------------------------------------------------------


def cmd_enqueue(args: argparse.Namespace) -> int:
    if (args.task is None) == (args.payload is None):
        raise ConfigurationError("give a task name (with its arguments) or --payload JSON")
    options: dict[str, Any] = {"queue": args.queue, "priority": args.priority}
    options["max_attempts"] = args.max_attempts
    app: App | None = None  # the App of the task (or --app): its URL and table hold
    if args.payload is not None:
        payload = json_arg(args.payload, "--payload")
        if args.app is not None:
            app = _load_app(args.app)
    else:
        task = _find_task(args.task, args.app)
        if task is None and args.queue is None:
            raise ConfigurationError(
                f"unknown task {args.task!r}: no importable module defines it; pass "
                "--app module:app (the App that registers it), or --queue Q to enqueue it "
                "unchecked"
            )
        if task is not None:  # the task's own options, unless given here
            app = task.app
            defaults = {"queue": task.queue, "priority": task.priority}
            defaults["max_attempts"] = task.max_attempts
            options = {k: defaults[k] if v is None else v for k, v in options.items()}
            if args.key is not None and args.key_concurrency is None:
                args.key_concurrency = task.key_concurrency
            if args.key is not None and args.key_rate is None:
                args.key_rate = task.key_rate
        kwargs = json_arg(args.kwargs, "--kwargs") if args.kwargs else {}
        if not isinstance(kwargs, dict):
            raise ConfigurationError('--kwargs must be a JSON object, e.g. \'{"to": "ada"}\'')
        payload = {
            "task": args.task,
            "args": [json_or_text(a, f"ARG {i}") for i, a in enumerate(args.args, 1)],
            "kwargs": kwargs,
        }
    defaults = {"queue": "default", "priority": 0, "max_attempts": 5}
    options = {k: defaults[k] if v is None else v for k, v in options.items()}
    options["key_concurrency"] = args.key_concurrency
    options["key_rate"] = _key_rate(args.key_rate)
    job_id = _app_queue(app, args).enqueue(
        payload, delay=args.delay, dedupe_key=args.dedupe_key, key=args.key, **options
    )
    print(job_id)
    return 0


def _app_queue(app: App | None, args: argparse.Namespace) -> Queue:
    """The queue an App's work goes to: its own URL and table unless ``--url`` / ``--table``
    are given; without an App, ``--url`` (``$SKIPLOCK_URL``) and ``--table``.
    """
    if app is None:
        return cli_queue(args)
    if not app.has_url:
        require_url(args)
    app.use(args.url, table=args.table)
    return app.queue


def cmd_worker(args: argparse.Namespace) -> int:
    target = _load_target(args.target)
    options: dict[str, Any] = {
        "concurrency": args.concurrency,
        "prefetch": args.prefetch,
        "lease": args.lease,
        "heartbeat": args.heartbeat,
        "grace": args.grace,
        "mode": "single" if args.single else "lease",
        "wait_for_lock": not args.no_wait,
        "retention": args.retention,
    }
    if args.metrics_port is not None:
        options["metrics_port"] = args.metrics_port
        options["metrics_host"] = args.metrics_host
    queues = args.queues.split(",") if args.queues else None
    if args.processes is not None:
        if not isinstance(target, App) and not callable(target):
            raise ConfigurationError(f"{args.target} is neither a skiplock.App nor a function")
        if not (isinstance(target, App) and target.has_url):
            require_url(args)  # here, not in each process
        fleet = Fleet(
            args.target, args.processes, url=args.url, table=args.table, queues=queues, **options
        )
        return fleet.run()
    worker: Worker | AsyncWorker
    if isinstance(target, App):
        _app_queue(target, args)  # --url and --table replace the App's only when given
        # an app with async def tasks runs on the asyncio worker, without being asked
        make = target.async_worker if target.has_async_tasks else target.worker
        worker = make(queues=queues, **options)
    elif callable(target):
        kind = AsyncWorker if is_async_handler(target) else Worker
        worker = kind(cli_queue(args), target, queues=queues or ["default"], **options)
    else:
        raise ConfigurationError(f"{args.target} is neither a skiplock.App nor a function")
    if isinstance(worker, AsyncWorker):
        asyncio.run(worker.run())
    else:
        worker.run()
    return 0


def _print_stats(q: Queue, queues: list[str] | None, as_json: bool) -> None:
    s = q.stats(queues)
    if as_json:
        print(json.dumps(s.as_dict()), flush=True)
        return
    age = "-" if s.oldest_pending_age is None else f"{s.oldest_pending_age:.1f}s"
    print(
        f"{'pending':>9} {'scheduled':>9} {'running':>9} {'expired':>9} {'done':>9} "
        f"{'failed':>9} {'cancelled':>9} {'waiting':>9}  oldest pending\n"
        f"{s.pending:>9} {s.scheduled:>9} {s.running:>9} {s.expired:>9} {s.done:>9} "
        f"{s.failed:>9} {s.cancelled:>9} {s.waiting:>9}  {age}",
        flush=True,
    )
    when = "never" if s.last_pruned_at is None else f"last {s.last_pruned_at:%Y-%m-%d %H:%M:%S} UTC"
    print(f"pruned {s.pruned} finished jobs (all queues; {when})", flush=True)
    if s.paused:
        print(f"paused: {', '.join(s.paused)}", flush=True)


def cmd_stats(args: argparse.Namespace) -> int:
    q = cli_queue(args)
    if args.watch is None:
        _print_stats(q, args.queue, args.json)
        return 0
    clear = sys.stdout.isatty() and not args.json
    try:
        while True:
            if clear:
                print("\033[H\033[2J", end="")
                print(f"{q.url} table {q.table}, every {args.watch:g}s (Ctrl-C ends)")
            _print_stats(q, args.queue, args.json)
            time.sleep(args.watch)
    except KeyboardInterrupt:
        return 0


def cmd_retry(args: argparse.Namespace) -> int:
    if not (args.id or args.queue or args.all):
        raise ConfigurationError("say which failed jobs to retry: --id N, --queue NAME or --all")
    n = retry_failed(
        cli_queue(args), ids=args.id or None, queues=args.queue, attempts=args.attempts
    )
    print(f"{n} failed job{'s' if n != 1 else ''} pending again")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    statuses = ("done", "failed") if args.status == "all" else (args.status,)
    tty = sys.stderr.isatty()

    def progress(total: int) -> None:
        if tty:
            print(f"\rdeleted {total} jobs…", end="", file=sys.stderr, flush=True)

    n = prune(
        cli_queue(args), args.older_than, statuses=statuses, batch=args.batch, progress=progress
    )
    if tty:
        print(file=sys.stderr)
    print(f"deleted {n} finished job{'s' if n != 1 else ''}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    q = cli_queue(args)
    status = q.cancel(args.id)
    if status is None:
        raise ConfigurationError(f"there is no job {args.id} in table {q.table}")
    if status == "cancelled":
        print(f"job {args.id} cancelled")
    elif status == "running":
        when = (
            "at once through LISTEN, or at its next heartbeat"
            if q.dialect.supports_notify
            else "at its next heartbeat"
        )
        print(f"job {args.id} is running: cancel requested (its worker sees it {when})")
    else:
        print(f"job {args.id} already finished ({status}): nothing changed")
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    q = cli_queue(args)
    if args.command == "pause":
        if not args.force and not _known_queue(q, args.queue):
            known = _queue_names(q)
            raise ConfigurationError(
                f"no job, live worker or pause names the queue {args.queue!r} in table "
                f"{q.table} (a typo?); queues known: {', '.join(known) or 'none'}. Add --force "
                "to pause it anyway (its jobs, enqueued later, then wait)"
            )
        q.pause(args.queue)
        print(f"queue {args.queue!r} paused: no worker claims its jobs until it is resumed")
    else:
        was = args.queue in q.paused()
        q.resume(args.queue)  # whatever was read: a pause committed since is ended too
        print(f"queue {args.queue!r} " + ("resumed" if was else "was not paused: nothing changed"))
    return 0


def _known_queue(q: Queue, name: str) -> bool:
    """A queue that some job, a pause or a live worker names."""
    if name in q.paused() or any(name in w.queues for w in q.workers() if not w.gone):
        return True
    return bool(q.list_jobs(queue=name, limit=1))


def _queue_names(q: Queue) -> list[str]:
    """The queue names to list when refusing an unknown one."""
    names = {o.queue for o in q.overview()} | q.paused()
    names.update(n for w in q.workers() if not w.gone for n in w.queues)
    return sorted(names)


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo.story import run_demo

    ok = run_demo(args.url, workers=args.workers, jobs=args.jobs, verbose=args.verbose > 0)
    return 0 if ok else EXIT_CODES["demo"]


# -- parser ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    # The same options before or after the command: the main parser sets the defaults, the
    # command's copy (default SUPPRESS) overrides them only when given.
    common = argparse.ArgumentParser(add_help=False)
    parser = argparse.ArgumentParser(
        prog="skiplock",
        description="A job queue in your own database (PostgreSQL, MySQL/MariaDB, SQL Server).",
        epilog="exit codes: 0 ok, 2 usage, 3 configuration, 4 database, 5 lock held, 6 demo failed",
    )
    parser.add_argument("--version", action="version", version=f"skiplock {__version__}")
    _add_global_options(parser, None)
    _add_global_options(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, parents=[common])

    add_schema_commands(add)
    _add_enqueue(add)
    _add_worker(add)
    _add_admin_commands(add)
    add_job_commands(add)
    add_web_commands(add)
    _add_demo(add)
    return parser


def _add_global_options(target: argparse.ArgumentParser, default: str | None) -> None:
    """--url, --table, -v; both stay None when not given (an App then keeps its own)."""
    target.add_argument("--url", default=default, help="database URL ($SKIPLOCK_URL)")
    target.add_argument(
        "--table",
        default=default,
        help=f"default {DEFAULT_TABLE}; for `worker APP`: the App's own table",
    )
    target.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0 if default is None else default,
        help="more log output",
    )


def _add_enqueue(add: Add) -> None:
    p = add("enqueue", "enqueue a task call (or a raw --payload); prints the job id")
    p.add_argument("task", nargs="?", help="task name, as registered with @app.task")
    p.add_argument("args", nargs="*", help="arguments: JSON where they parse, else text")
    p.add_argument("--kwargs", help="keyword arguments as a JSON object")
    p.add_argument("--payload", help="enqueue this JSON payload as it is instead of a task call")
    p.add_argument("--app", help="module:app that registers the task (default: found by name)")
    p.add_argument("--queue", help="default: the task's, else 'default'")
    p.add_argument("--priority", type=int, help="lower runs first (default: the task's, else 0)")
    p.add_argument("--delay", type=duration, help="run after this long (e.g. 30s, 5m)")
    p.add_argument("--max-attempts", type=int, help="default: the task's, else 5")
    p.add_argument("--dedupe-key", help="enqueue nothing while a job with this key is active")
    p.add_argument("--key", help="jobs of one key run one at a time, in enqueue order")
    p.add_argument(
        "--key-concurrency",
        type=int,
        help="with --key: up to N jobs of the key at once (default: the task's, else 1)",
    )
    p.add_argument(
        "--key-rate",
        metavar="N/PER",
        help="with --key: at most N jobs of the key start in any PER seconds, e.g. 10/1 "
        "(default: the task's)",
    )
    p.set_defaults(fn=cmd_enqueue)


def _key_rate(value: object) -> object:
    """``--key-rate N/PER`` as the pair ``enqueue`` checks."""
    if not isinstance(value, str):
        return value
    n, sep, per = value.partition("/")
    try:
        if not sep:
            raise ValueError
        return (int(n), float(per))
    except ValueError:
        raise ConfigurationError(
            f"--key-rate must be N/PER (at most N starts of the key in any PER seconds), "
            f"e.g. 10/1; not {value!r:.80}"
        ) from None


def _add_worker(add: Add) -> None:
    p = add("worker", "run a worker for module:app (an App, or a function taking a Job)")
    p.add_argument("target", help="e.g. myproject.tasks:app")
    p.add_argument("--queues", help="comma-separated (default: the app's task queues)")
    p.add_argument(
        "--concurrency", type=int, default=4, help="handlers at once, per process (default 4)"
    )
    p.add_argument(
        "--processes",
        type=processes,
        help="run N worker processes under a supervisor ('auto': one per CPU); a handler "
        "past its timeout then ends its process, which is replaced (default: one process, "
        "no supervisor)",
    )
    p.add_argument(
        "--prefetch",
        type=int,
        help=f"jobs claimed ahead, at most (default: the concurrency, at least {DEFAULT_PREFETCH})",
    )
    p.add_argument(
        "--lease",
        type=duration,
        default=30.0,
        help="how long a claimed job stays this worker's between heartbeats (default 30s)",
    )
    p.add_argument("--heartbeat", type=duration, help="default: a third of the lease")
    p.add_argument(
        "--grace",
        type=duration,
        default=30.0,
        help="shutdown grace period: running jobs get this long to finish (default 30s)",
    )
    p.add_argument(
        "--single",
        action="store_true",
        help="single-worker mode: one worker holds an advisory lock, a second waits "
        "(default: off, any number of workers)",
    )
    p.add_argument(
        "--no-wait", action="store_true", help="with --single: exit 5 if held (default: wait)"
    )
    p.add_argument(
        "--retention",
        type=retention,
        default=DEFAULT_RETENTION,
        help="delete jobs finished longer ago than this (default 7d; 'none' keeps all)",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics on this port at /metrics (needs skiplock[prometheus]); "
        "with --processes, one endpoint for the whole fleet, served by its supervisor "
        "(default: no metrics)",
    )
    p.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="the address the metrics server binds (default 127.0.0.1; 0.0.0.0: every one)",
    )
    p.set_defaults(fn=cmd_worker)


def _add_admin_commands(add: Add) -> None:
    p = add("stats", "counts of jobs by state, and the table's pruned total")
    p.add_argument("--queue", action="append", help="only this queue (repeatable)")
    p.add_argument("--watch", type=refresh, nargs="?", const=2.0, help="refresh every N s")
    p.add_argument("--json", action="store_true", help="one JSON object per refresh")
    p.set_defaults(fn=cmd_stats)

    p = add("retry", "make failed jobs pending again")
    p.add_argument("--id", type=int, action="append", help="this job (repeatable)")
    p.add_argument("--queue", action="append", help="failed jobs of this queue (repeatable)")
    p.add_argument("--all", action="store_true", help="every failed job")
    p.add_argument("--attempts", type=int, help="attempts to grant (default: max_attempts)")
    p.set_defaults(fn=cmd_retry)

    p = add("prune", "delete jobs that finished long ago")
    p.add_argument("--older-than", type=duration, required=True, help="e.g. 7d, 12h")
    p.add_argument("--status", choices=("done", "failed", "all"), default="all")
    p.add_argument("--batch", type=int, default=1000, help="rows per transaction")
    p.set_defaults(fn=cmd_prune)

    p = add(
        "cancel",
        "cancel a job: pending ones at once; running ones get a request their worker sees "
        "at once on PostgreSQL, else at its next heartbeat",
    )
    p.add_argument("id", type=int, help="the job id")
    p.set_defaults(fn=cmd_cancel)

    p = add(
        "pause",
        "stop every worker claiming a queue's jobs (running ones finish; enqueueing goes on)",
    )
    p.add_argument("queue", help="the queue's name")
    p.add_argument(
        "--force",
        action="store_true",
        help="pause it even when no job, live worker or pause names it yet",
    )
    p.set_defaults(fn=cmd_pause)

    p = add("resume", "let workers claim a paused queue's jobs again")
    p.add_argument("queue", help="the queue's name")
    p.set_defaults(fn=cmd_pause)


def _add_demo(add: Add) -> None:
    p = add("demo", "show the guarantees with real worker processes (embedded PostgreSQL)")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--jobs", type=int, default=24)
    p.set_defaults(fn=cmd_demo)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.DEBUG if args.verbose > 1 else logging.INFO
    # a worker's and the dashboard's lines are INFO: their commands show them unless told
    if args.command not in ("worker", "web") and args.verbose == 0:
        level = logging.WARNING
    # a fleet's processes log to the same stream: each line says whose it is
    who = "[%(process)d]" if getattr(args, "processes", None) is not None else ""
    logging.basicConfig(
        level=level,
        format=f"%(asctime)s %(levelname)s %(name)s{who}: %(message)s",
        stream=sys.stderr,
    )
    if args.verbose < 2:  # mysql-connector logs INFO lines at every connection
        logging.getLogger("mysql.connector").setLevel(logging.WARNING)
    try:
        code: int = args.fn(args)
        return code
    except CommandLineError as exc:
        print(f"skiplock {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_CODES["usage"]
    except LockNotAcquired as exc:
        return _fail(exc, "locked")
    except (ConfigurationError, UnsupportedServer, PayloadError) as exc:
        return _fail(exc, "config")
    except BackendError as exc:
        return _fail(exc, "database")
    except SkiplockError as exc:
        return _fail(exc, "bug")
    except KeyboardInterrupt:
        return 130


def _fail(exc: BaseException, kind: str) -> int:
    print(f"skiplock: error: {mask_password(str(exc))}", file=sys.stderr)
    return EXIT_CODES[kind]
