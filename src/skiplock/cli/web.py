"""``skiplock web`` and ``skiplock workers``."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable

from .._core.read_models import WorkerInfo
from ..errors import ConfigurationError
from .schema import cli_queue, cli_table, require_url

__all__ = ["add_commands"]


def cmd_web(args: argparse.Namespace) -> int:
    require_url(args)
    try:
        from ..web import check_host, serve
    except ImportError as exc:
        raise ConfigurationError(
            f"the dashboard needs the web extra: pip install 'skiplock[web]' ({exc})"
        ) from None
    # before anything connects
    check_host(args.host, args.auth, port=args.port, allowed_hosts=args.allowed_hosts)
    serve(
        args.url or os.environ["SKIPLOCK_URL"],
        table=cli_table(args),
        host=args.host,
        port=args.port,
        auth=args.auth,
        read_only=args.read_only,
        allowed_hosts=args.allowed_hosts,
    )
    return 0


def cmd_workers(args: argparse.Namespace) -> int:
    workers = cli_queue(args).workers()
    if args.json:
        print(json.dumps([w.as_dict() for w in workers], ensure_ascii=False))
    elif workers:
        print(table(workers))
    else:
        print("no workers")
    return 0


def table(workers: list[WorkerInfo]) -> str:
    lines = [
        f"{'state':<6} {'host':<20} {'pid':>7} {'in flight':>9} {'conc':>5} "
        f"{'last seen':>10}  {'started (UTC)':<19}  queues"
    ]
    for w in workers:
        started = "-" if w.started_at is None else w.started_at.strftime("%Y-%m-%d %H:%M:%S")
        lines.append(
            f"{'gone' if w.gone else 'alive':<6} {w.host[:20]:<20} {w.pid:>7} {w.in_flight:>9} "
            f"{w.concurrency:>5} {f'{w.seen_ago:.1f}s ago':>10}  {started:<19}  "
            f"{','.join(w.queues)}"
        )
    return "\n".join(lines)


def add_commands(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = add("web", "serve the dashboard (needs the web extra)")
    p.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1 (others need --auth)")
    p.add_argument("--port", type=int, default=8089, help="default 8089")
    p.add_argument(
        "--auth",
        metavar="USER:PASSWORD",
        default=os.environ.get("SKIPLOCK_WEB_AUTH"),
        help="HTTP Basic on every path (default $SKIPLOCK_WEB_AUTH: keeps it out of ps)",
    )
    p.add_argument("--read-only", action="store_true", help="no retry or cancel")
    p.add_argument(
        "--allowed-hosts",
        metavar="NAMES",
        help="with --auth: the Host names answered, comma-separated (.example.com: and "
        "its subdomains); default any. Without --auth only localhost, 127.0.0.1, [::1]",
    )
    p.set_defaults(fn=cmd_web)

    p = add("workers", "the live worker list: host, pid, jobs in flight, last seen")
    p.add_argument("--json", action="store_true", help="a JSON array")
    p.set_defaults(fn=cmd_workers)
