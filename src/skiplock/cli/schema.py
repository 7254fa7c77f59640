"""``skiplock install``, ``migrate``, ``sql`` and ``uninstall``, and how a command finds
its database.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from .._core.sql import TableName
from .._shell.schema import Schema
from ..dialects import DIALECT_MODULES, get_dialect
from ..drivers.url import parse_url
from ..errors import ConfigurationError
from ..queue import DEFAULT_TABLE, Queue

__all__ = ["add_schema_commands", "cli_queue", "cli_table", "require_url"]

Add = Callable[[str, str], argparse.ArgumentParser]


def require_url(args: argparse.Namespace) -> None:
    """Refuse a command line without ``--url`` or ``$SKIPLOCK_URL``."""
    if args.url is None and not os.environ.get("SKIPLOCK_URL"):
        raise ConfigurationError(
            "no database URL: pass --url URL (before or after the command) or set "
            "SKIPLOCK_URL, e.g. postgresql://user@localhost:5432/dbname"
        )


def cli_table(args: argparse.Namespace) -> str:
    """``--table``, else the default table."""
    return DEFAULT_TABLE if args.table is None else str(args.table)


def cli_queue(args: argparse.Namespace) -> Queue:
    require_url(args)
    return Queue(args.url, table=cli_table(args))


def cmd_install(args: argparse.Namespace) -> int:
    q = cli_queue(args)
    info = q.ping()
    applied = q.migrate()
    version = ".".join(map(str, info.version))
    done = f"schema version {q.schema.latest}"
    if applied:
        done += f" (applied {', '.join(map(str, applied))})"
    via = f" ({info.driver})" if info.driver else ""
    print(f"installed table {q.table} on {info.product} {version} at {q.url}{via}: {done}")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    q = cli_queue(args)
    before = q.schema_version()
    applied = q.migrate(to=args.to)
    if applied:
        print(f"table {q.table}: schema version {before} → {applied[-1]}")
    else:
        print(f"table {q.table}: schema version {before}, nothing to do")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    table = TableName.parse(cli_table(args))
    if args.dialect is not None:
        url = parse_url(f"{args.dialect}://localhost/db")  # only for rendering, never opened
    else:
        require_url(args)
        url = parse_url(args.url)  # or $SKIPLOCK_URL
    print(Schema(get_dialect(url, table)).script(args.from_version), end="")
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    if not args.yes:
        raise ConfigurationError(
            "uninstall drops the table with every job in it: add --yes to confirm"
        )
    q = cli_queue(args)
    q.uninstall()
    print(f"dropped table {q.table} and its schema version table at {q.url}")
    return 0


def add_schema_commands(add: Add) -> None:
    add("install", "create the jobs table, or migrate it to the current schema").set_defaults(
        fn=cmd_install
    )

    p = add("migrate", "bring the jobs table to the current schema version (online)")
    p.add_argument("--to", type=int, help="stop at this version (default: the latest)")
    p.set_defaults(fn=cmd_migrate)

    p = add("sql", "print the DDL that install / migrate run, for your own migration tool")
    p.add_argument("--dialect", choices=sorted(DIALECT_MODULES), help="default: from --url")
    p.add_argument(
        "--from", dest="from_version", type=int, default=0, help="the version you have (0: none)"
    )
    p.set_defaults(fn=cmd_sql)

    p = add(
        "uninstall", "drop the jobs table and the tables and trigger of its own: every job is lost"
    )
    p.add_argument("--yes", action="store_true", help="really drop it")
    p.set_defaults(fn=cmd_uninstall)
