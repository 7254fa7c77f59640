"""The versioned schema: numbered migrations per dialect, the version kept in the database."""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

from .._core.checks import integer
from .._core.sql import NOTHING, Op, Statement, StatementError, render_statements
from ..dialects import Dialect
from ..dialects.base import split_statements
from ..drivers import Adapter
from ..errors import BackendError, ConfigurationError, LockNotAcquired, SkiplockError

__all__ = ["Migration", "Schema", "load_migrations"]

log = logging.getLogger("skiplock")
T = TypeVar("T")

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_COMMIT = re.compile(r"^--\s*commit\s*$", re.MULTILINE)
#: a column of version 1's CREATE TABLE: four spaces, a lower-case name, its type
_V1_COLUMN = re.compile(r"^    ([a-z_]+) +[A-Za-z]", re.MULTILINE)
#: a named index of version 1 (``INDEX "name"``, ``KEY `name```, ``INDEX [name]``)
_V1_INDEX = re.compile(r"\b(?:INDEX|KEY)\s+(?:IF NOT EXISTS\s+)?[\"`\[]([^\"`\]]+)[\"`\]]")
#: how long ``migrate`` waits for another ``migrate`` of the same table to finish
LOCK_WAIT = 300.0
#: tries of one transaction of a migration that timed out waiting for a table lock
_TRIES = 12


@dataclass(frozen=True)
class Migration:
    """One numbered migration, rendered for a table: its transactions, each a list of
    statements."""

    version: int
    name: str
    steps: tuple[tuple[str, ...], ...]


@functools.cache
def _files(dialect_name: str) -> tuple[tuple[int, str, str], ...]:
    folder = resources.files("skiplock.dialects").joinpath("migrations").joinpath(dialect_name)
    found = []
    for entry in folder.iterdir():
        match = _FILE.fullmatch(entry.name)
        if match:
            text = entry.read_text(encoding="utf-8")
            found.append((int(match[1]), entry.name.removesuffix(".sql"), text))
    found.sort()
    if [v for v, _, _ in found] != list(range(1, len(found) + 1)):  # a packaging mistake
        raise RuntimeError(f"{dialect_name} migrations are not numbered 1..n: {found!r:.200}")
    return tuple(found)


def _is_code(statement: str) -> bool:
    return any(
        line.strip() and not line.lstrip().startswith("--") for line in statement.split("\n")
    )


def load_migrations(dialect: Dialect) -> list[Migration]:
    """The dialect's migrations, in order, rendered for its table."""
    out = []
    for version, name, text in _files(dialect.name):
        rendered = render_statements({name: text}, dialect.table, dialect.quote)[name]
        steps = tuple(
            tuple(s for s in split_statements(part) if _is_code(s))
            for part in _COMMIT.split(rendered)
        )
        out.append(Migration(version, name, tuple(s for s in steps if s)))
    return out


def _lock_name(dialect: Dialect) -> tuple[int, str]:
    text = f"skiplock-migrate:{dialect.url.database}.{dialect.table}"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    key = int.from_bytes(digest[:8], "big") & (2**63 - 1)
    return key, (text if len(text) <= 64 else "skiplock-migrate:" + digest.hex()[:40])


class Schema:
    """The schema of one queue table: which version it has, what brings it up to date."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.migrations = load_migrations(dialect)
        self.latest = len(self.migrations)

    def version(self) -> Op[int]:
        """The table's version: 0 when it does not exist, 1 when it has no record."""
        state = (yield from self.dialect.schema_state()) or {}
        if not state.get("has_jobs"):
            return 0
        self._check_name(state.get("jobs_name"))
        if not state.get("has_version"):
            return 1
        version = yield from self.dialect.schema_version_read()
        return 1 if version is None else version

    def _check_name(self, found: object) -> None:
        t = self.dialect.table
        if isinstance(found, str) and found != t.name:
            raise ConfigurationError(
                f"the table {t} in {self.dialect.url.masked()} is the existing table "
                f"{self.dialect.quote(found)}: the database compares table names without "
                "case, so names that differ only in case name one table; choose a table "
                "name that differs otherwise (connect(..., table=...))"
            )

    def v1_shape(self) -> tuple[frozenset[str], frozenset[str]]:
        """The columns and index names version 1 made (read from ``0001_initial``), case
        folded."""
        text = "\n".join(s for step in self.migrations[0].steps for s in step)
        table = text[text.index("CREATE TABLE") :]
        table = table[: table.index("\n)")]
        columns = frozenset(c.casefold() for c in _V1_COLUMN.findall(table))
        return columns, frozenset(i.casefold() for i in _V1_INDEX.findall(text))

    def catalog(self) -> Op[dict[str, set[str]]]:
        """The table's column names (``column``) and index names (``index``), case folded,
        from the database's catalog."""
        rows = yield from self.dialect.schema_catalog()
        found: dict[str, set[str]] = {"column": set(), "index": set()}
        for row in rows:
            found.setdefault(str(row["kind"]), set()).add(str(row["name"]).casefold())
        return found

    def adoptable(self) -> Op[None]:
        """Raise :class:`ConfigurationError` if the table has no version record and is not
        the table version 1 made."""
        d, t = self.dialect, self.dialect.table
        state = (yield from d.schema_state()) or {}
        if not state.get("has_jobs") or state.get("has_version"):
            return
        found = yield from self.catalog()
        columns, indexes = self.v1_shape()
        missing = sorted(columns - found["column"]) + sorted(indexes - found["index"])
        if missing:
            raise ConfigurationError(
                f"the table {t} in {d.url.masked()} has no skiplock version record and is "
                f"not a skiplock queue table of version 1 (it lacks {', '.join(missing)}); "
                "skiplock changes nothing in it: choose another table name "
                "(connect(..., table=...)) or drop or rename that table"
            )

    def check(self, version: int) -> None:
        """Raise :class:`ConfigurationError` unless *version* is the one this code knows."""
        table = self.dialect.table
        if version == 0:
            raise ConfigurationError(
                f"the table {table} does not exist in {self.dialect.url.masked()}: run "
                "`skiplock install` (or q.install()) to create it"
            )
        if version < self.latest:
            raise ConfigurationError(
                f"the table {table} has schema version {version}, this skiplock needs "
                f"{self.latest}: run `skiplock migrate` (or q.migrate()); it is online"
            )
        if version > self.latest:
            raise ConfigurationError(
                f"the table {table} has schema version {version}, newer than this skiplock "
                f"knows ({self.latest}): upgrade skiplock"
            )

    def migrate(self, connect: Callable[[], Any], to: int | None = None) -> list[int]:
        """Bring the table to version *to* (default: the latest); the versions applied.
        Raises ``ConfigurationError`` for a downgrade, ``LockNotAcquired`` after
        ``LOCK_WAIT`` s."""
        target = integer(self.latest if to is None else to, "to (a schema version)", 1, self.latest)
        d = self.dialect
        conn = connect()
        key, name = _lock_name(d)
        try:
            own = d.adapter(conn)
            self._step(own, d.schema_session, "preparing to migrate")
            self._lock(conn, key, name)
            holder = None
            try:
                if self._step(own, d.lock_is_node_local_op, "reading the server's settings"):
                    holder = f"migrating: {uuid.uuid4().hex}"
                    self._cluster_lock(own, holder)
                current = self._step(own, self.version, "reading the version")
                if current > self.latest:
                    self.check(current)
                if current == 1:
                    self._step(own, self.adoptable, "checking the table")
                if current > target:
                    raise ConfigurationError(
                        f"the table {d.table} has schema version {current}; skiplock does not "
                        f"migrate down to {target}"
                    )
                self._step(own, lambda: self._record_upto(current), "recording versions")
                applied = []
                for m in self.migrations[current:target]:
                    self._apply(own, m, holder)
                    applied.append(m.version)
                    log.info(
                        "table %s migrated to schema version %d (%s)", d.table, m.version, m.name
                    )
                return applied
            finally:
                if holder is not None:
                    with suppress(SkiplockError):  # else taken over once stale
                        self._step(own, lambda: d.migrate_lock_release(holder), "unlocking")
                d.lock_release(conn, key, name)
        finally:
            conn.close()

    def _record_upto(self, version: int) -> Op[None]:
        d = self.dialect
        yield from d.schema_version_table_create()
        for m in self.migrations[:version]:
            yield from d.schema_record(m.version, m.name)

    def _lock(self, conn: Any, key: int, name: str) -> None:
        deadline = time.monotonic() + LOCK_WAIT
        while not self.dialect.lock_acquire(conn, key, name, 1.0):
            if time.monotonic() > deadline:
                raise LockNotAcquired(
                    f"another `skiplock migrate` of table {self.dialect.table} has held its "
                    f"lock for {LOCK_WAIT:.0f} s; wait for it, then run migrate again"
                )

    def _cluster_lock(self, own: Adapter, holder: str) -> None:
        d = self.dialect
        self._step(own, functools.partial(self._record_upto, 0), "creating the version table")
        deadline = time.monotonic() + LOCK_WAIT
        while not self._renew(own, holder):
            if time.monotonic() > deadline:
                raise LockNotAcquired(
                    f"a `skiplock migrate` of table {d.table} on another node of the cluster "
                    f"has held its lock for {LOCK_WAIT:.0f} s; wait for it, then run migrate "
                    "again"
                )
            time.sleep(0.5)

    def _renew(self, own: Adapter, holder: str) -> bool:
        take = functools.partial(self.dialect.migrate_lock_acquire, holder, LOCK_WAIT)
        return self._step(own, take, "taking the cluster's migration lock")

    def _step(self, own: Adapter, make: Callable[[], Op[T]], doing: str) -> T:
        where = f"{doing} (table {self.dialect.table})"
        for attempt in range(1, _TRIES + 1):
            try:
                result = own.run(make())
            except StatementError as exc:
                own.connection.rollback()
                err, cause = self.dialect.wrap(exc, where), exc.cause
            else:
                try:
                    own.connection.commit()
                    return result
                except own.errors as exc:
                    err, cause = self.dialect.wrap(exc, where, own.error_info(exc)), exc
                    if not err.connection_lost:
                        own.connection.rollback()
            if not err.retryable or err.connection_lost or attempt == _TRIES:
                raise err from cause
            log.warning("%s; trying again", err)
            time.sleep(min(5.0, 0.2 * attempt))
        raise BackendError("unreachable")

    def _apply_step(self, m: Migration, step: tuple[str, ...], last: bool) -> Op[None]:
        for statement in step:
            if not self.dialect.migration_applies(statement):
                continue
            try:
                yield Statement(statement, None, NOTHING)
            except StatementError as exc:
                if not self.dialect.migration_done(exc.info):
                    raise
                log.info("skipped, already done: %s (%s)", statement[:80], exc)
        if last:
            yield from self.dialect.schema_record(m.version, m.name)

    def _apply(self, own: Adapter, m: Migration, holder: str | None) -> None:
        for i, step in enumerate(m.steps):
            last = i == len(m.steps) - 1
            doing = f"migrating to schema version {m.version} ({m.name})"
            if holder is not None and not self._renew(own, holder):
                raise LockNotAcquired(
                    f"a `skiplock migrate` of table {self.dialect.table} on another node took "
                    f"over the cluster's migration lock while {doing}: run migrate again"
                )
            self._step(own, functools.partial(self._apply_step, m, step, last), doing)

    def script(self, from_version: int = 0) -> str:
        """The DDL from *from_version* to the latest, as a script."""
        integer(from_version, "--from (a schema version)", 0, self.latest)
        d, end = self.dialect, self.dialect.script_end
        out = [
            f"-- skiplock schema of table {d.table} ({d.name}), version {from_version} to "
            f"{self.latest}",
            d.schema_script(0, "")[0] + end,
        ]
        for m in self.migrations[from_version:]:
            out.append(f"\n-- {m.name}: schema version {m.version}")
            for i, step in enumerate(m.steps):
                if i:
                    out.append("-- commit: the statements below run in a new transaction")
                out.extend(s + end for s in step)
            out.append(d.schema_script(m.version, m.name)[1] + end)
        return "\n".join(out) + "\n"
