"""``skiplock jobs`` and ``skiplock show ID``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import datetime

from .._core.job import STATUSES, Job, record
from ..errors import ConfigurationError
from .schema import cli_queue

__all__ = ["add_commands"]


def _what(job: Job) -> str:
    p = job.payload
    if isinstance(p, dict) and isinstance(p.get("task"), str):
        return str(p["task"])
    return json.dumps(p, ensure_ascii=False)


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())  # one line per job, whatever the error holds
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def table(jobs: list[Job]) -> str:
    """One line per job: id, queue, status, attempts, task, run_at, finished_at, last_error."""
    lines = [
        f"{'id':>8}  {'queue':<12} {'status':<8} {'attempt':>7}  {'task':<28} "
        f"{'run_at':<19}  {'finished_at':<19}  last_error"
    ]
    for j in jobs:
        lines.append(
            f"{j.id:>8}  {_cut(j.queue, 12):<12} {j.status:<8} "
            f"{f'{j.attempt}/{j.max_attempts}':>7}  {_cut(_what(j), 28):<28} "
            f"{_when(j.run_at):<19}  {_when(j.finished_at):<19}  {_cut(j.last_error or '', 60)}"
        )
    return "\n".join(lines)


def cmd_jobs(args: argparse.Namespace) -> int:
    q = cli_queue(args)
    jobs = q.list_jobs(
        status=args.status,
        queue=args.queue,
        task=args.task,
        limit=args.limit,
        before_id=args.before_id,
    )
    if args.json:
        print(json.dumps([record(j) for j in jobs], ensure_ascii=False))
    elif jobs:
        print(table(jobs))
        if len(jobs) == args.limit:
            print(f"(more may follow: --before-id {jobs[-1].id})")
    else:
        print("no jobs")
    if not args.json:
        _print_paused(q.paused(), args.queue)
    return 0


def _print_paused(paused: set[str], queue: str | None) -> None:
    names = sorted(n for n in paused if queue is None or n == queue)
    if names:
        shown = ", ".join(names)
        print(
            f"paused: {shown} (no job of {'it' if len(names) == 1 else 'these'} is claimed "
            "until `skiplock resume QUEUE`)"
        )


def cmd_show(args: argparse.Namespace) -> int:
    q = cli_queue(args)
    job = q.get(args.id)
    if job is None:
        raise ConfigurationError(f"no job {args.id} in table {q.table}")
    if args.json:
        print(json.dumps(record(job), ensure_ascii=False, indent=2))
        return 0
    for name, value in record(job).items():
        shown = value if isinstance(value, str) or value is None else json.dumps(value)
        if name == "last_error" and isinstance(value, str) and "\n" in value:
            shown = "\n  " + value.replace("\n", "\n  ")
        print(f"{name + ':':<17}{'-' if shown is None else shown}")
    return 0


def add_commands(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Add ``jobs`` and ``show``; *add(name, help)* makes a sub-command parser."""
    p = add("jobs", "list jobs, newest first (a table, or --json)")
    p.add_argument("--status", action="append", choices=STATUSES, help="repeatable")
    p.add_argument("--queue", help="only this queue")
    p.add_argument("--task", help="only calls of this App task (its registered name)")
    p.add_argument("--limit", type=int, default=50, help="at most this many (1-1000)")
    p.add_argument("--before-id", type=int, help="the next page: jobs older than this id")
    p.add_argument("--json", action="store_true", help="a JSON array of whole records")
    p.set_defaults(fn=cmd_jobs)

    p = add("show", "one job's whole record: its last error, progress and snoozes")
    p.add_argument("id", type=int)
    p.add_argument("--json", action="store_true", help="as a JSON object")
    p.set_defaults(fn=cmd_show)
