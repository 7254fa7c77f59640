"""skiplock's table of every ``SkiplockBackend``, installed or migrated after each
``manage.py migrate`` of its database (``post_migrate``).
"""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.utils.module_loading import import_string

from skiplock.errors import SkiplockError

__all__ = ["install_tables", "post_migrate", "skiplock_backends"]


def skiplock_backends() -> list[Any]:
    """A ``SkiplockBackend`` for each such entry of ``TASKS``. Raises ``CommandError`` for
    bad ``OPTIONS``.
    """
    from .backend import SkiplockBackend

    found = []
    for alias, params in getattr(settings, "TASKS", {}).items():
        try:
            cls = import_string(params["BACKEND"])
        except (ImportError, KeyError, TypeError):
            continue
        if isinstance(cls, type) and issubclass(cls, SkiplockBackend):
            try:
                found.append(cls(alias, params))
            except SkiplockError as exc:
                raise CommandError(f"skiplock: TASKS[{alias!r}]: {exc}") from exc
    return found


def install_tables(using: str, *, verbosity: int = 1, stdout: Any = None) -> None:
    """``Queue.migrate()`` for each skiplock backend on *using*. Raises one ``CommandError``
    naming each backend that failed, after the others are done.
    """
    out = stdout or sys.stdout
    done: set[str] = set()
    failed: list[str] = []
    for backend in skiplock_backends():
        if backend.database != using or backend.table in done:
            continue
        done.add(backend.table)
        try:
            queue = backend.queue
            applied = queue.migrate()
        except SkiplockError as exc:
            failed.append(f"TASKS[{backend.alias!r}] table {backend.table!r}: {exc}")
            continue
        if applied and verbosity >= 1:
            versions = ", ".join(str(v) for v in applied)
            out.write(
                f"  skiplock: table {backend.table!r} of TASKS[{backend.alias!r}] on "
                f"{using!r}: schema versions {versions} applied\n"
            )
        elif verbosity >= 2:
            out.write(f"  skiplock: table {backend.table!r} on {using!r} is current\n")
    if failed:
        raise CommandError(
            "skiplock could not make or migrate its table for "
            + "; ".join(failed)
            + " (fix the backend's OPTIONS or the server, then run migrate again)"
        )


def post_migrate(
    sender: Any, *, using: str, apps: Any = None, verbosity: int = 1, **kwargs: Any
) -> None:
    if apps is not None:
        try:
            apps.get_model("skiplock", "Attempt")
        except LookupError:  # skiplock's migrations are unapplied on this database
            return
    install_tables(using, verbosity=verbosity, stdout=kwargs.get("stdout"))
