"""skiplock's table for every ``SkiplockBackend`` of a database, made or brought to the current
schema version at the end of each ``manage.py migrate`` of that database (``post_migrate``).

``migrate --plan`` and ``migrate --check`` return before ``post_migrate``: they write
nothing. A ``migrate`` that leaves skiplock's app unapplied (``migrate skiplock zero``)
installs nothing either.
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
    """A ``SkiplockBackend`` for each such entry of ``TASKS``. An entry whose ``BACKEND``
    cannot be imported is not skiplock's to judge (Django reports it on use) and is left
    out; a skiplock entry with bad ``OPTIONS`` raises ``CommandError`` naming it."""
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
    """``Queue.migrate()`` (idempotent) for each skiplock backend whose ``DATABASE`` is
    *using*, once per table. Every table is tried; a failure (a server that cannot be
    reached through ``OPTIONS["URL"]``, ...) raises one ``CommandError`` naming each failed
    backend and its masked URL, after the others are done."""
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
    """The ``post_migrate`` receiver of skiplock's app (connected in ``apps.py``)."""
    if apps is not None:
        try:
            apps.get_model("skiplock", "Attempt")
        except LookupError:  # skiplock's migrations are unapplied on this database
            return
    install_tables(using, verbosity=verbosity, stdout=kwargs.get("stdout"))
