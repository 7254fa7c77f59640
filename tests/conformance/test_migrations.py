"""Versioned schema: a table made by the DDL of the release before versions existed is
recognised as version 1 and upgraded online, while that release's worker drains it, with
nothing lost and fencing intact.

tests/fixtures/schema_v1/<dialect>.sql are that release's statement files, never edited:
their ``install`` block made the table, and the rest is what its workers run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from skiplock.dialects.base import split_statements

import skiplock
from skiplock import Worker
from skiplock._core.sql import parse_statements, render_statements

from .conftest import as_release, wait_until

FIXTURES = Path(__file__).parent.parent / "fixtures" / "schema_v1"


#: Statements whose parameters changed in a later release, not what they read or write:
#: MySQL's compare-and-set claim, its batched completion and its read-back of a batch's ids
#: bind one JSON array since the performance work of issue 13 (a value or two per job
#: before). An old release's text of them cannot run through this release's dialect code,
#: which these simulations of an old release keep, so they use the current text (the same
#: columns, the same effect on them).
REBOUND = {"mysql": ("claim_take", "claim_expire", "complete_held", "ids_by_key")}
#: What the claim token's migration (0010_claim_token: a column an older table lacks) added to this
#: release's statements, as (text, replacement): the simulations of an older release run
#: them without it (its value is still bound, and unused).
TOKEN = (
    # PostgreSQL
    (" AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint", ""),
    (
        ",\n    claim_id = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts\n"
        "                    THEN j.claim_id ELSE %(claim_id)s::bigint END",
        "",
    ),
    (", j.claim_id", ""),
    (", %(claim_ids)s::bigint[]", ""),
    ("AS v(id, attempt, claim_id, result)", "AS v(id, attempt, result)"),
    (" AND j.claim_id IS NOT DISTINCT FROM v.claim_id", ""),
    # MySQL and MariaDB
    (" AND claim_id <=> %(claim_id)s", ""),
    (", t.claim_id = %(claim_id)s", ""),
    (" AND t.claim_id <=> p.cid", ""),
    # both
    ("SELECT id, attempt, claim_id", "SELECT id, attempt"),
    ("SELECT id, attempt, lease_until, claim_id", "SELECT id, attempt, lease_until"),
)


def without_token(sql: str) -> str:
    """*sql* as it was before the claim token's migration (see :data:`TOKEN`)."""
    for text, replacement in TOKEN:
        sql = sql.replace(text, replacement)
    code = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    assert "claim_id" not in "\n".join(code), sql  # TOKEN has kept up with the statements
    return sql


#: what a rebound statement reads of a later schema, taken out for the older table
LATER = {"complete_held": " AND (%(marked)s = 1 OR t.has_children IS NULL)"}


def v1_statements(q: skiplock.Queue, folder: Path = FIXTURES) -> dict[str, str]:
    """The statements of the release before versions (or of the release in *folder*),
    rendered for *q*'s table (but for :data:`REBOUND`). MySQL's claims get that release's
    key test, in the form of the server it talks to (releases since version 5 name it
    ``{no_earlier_pending}``)."""
    name = f"{q.dialect.name}.sql"
    raw = parse_statements((folder / name).read_text(encoding="utf-8"), name)
    old = render_statements(raw, q.table, q.dialect.quote)
    if "no_earlier_pending" in old:  # that release's own key test, in the server's form
        maria = getattr(q.dialect, "mariadb", False)
        code = (maria and old.get("no_earlier_pending_mariadb")) or old["no_earlier_pending"]
        test = "\n".join(line for line in code.splitlines() if not line.startswith("--"))
        old = {n: sql.replace("{no_earlier_pending}", test) for n, sql in old.items()}
    for statement in REBOUND.get(q.dialect.name, ()):
        sql = q.dialect.sql[statement]
        sql = sql.replace(LATER[statement], "") if statement in LATER else sql
        old[statement] = without_token(sql)
    return old


def make_v1_table(q: skiplock.Queue) -> None:
    """Create *q*'s table exactly as the unversioned ``install`` did."""
    ddl = v1_statements(q)["install"]
    q.uninstall()
    with q.transaction() as tx:
        for statement in split_statements(ddl):
            tx.execute(statement)


@pytest.mark.requires("index_names")  # adopts a table of version 1 by its indexes' names
def test_a_table_without_versions_is_version_1_and_refused(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    q = make_queue()
    make_v1_table(q)
    fresh = make_queue()
    assert fresh.schema_version() == 1
    with pytest.raises(skiplock.ConfigurationError, match="skiplock migrate"):
        fresh.enqueue({"n": 1})
    with pytest.raises(skiplock.ConfigurationError, match="skiplock migrate"):
        fresh.claim()
    assert fresh.migrate() == list(range(2, fresh.schema.latest + 1))
    assert fresh.schema_version() == fresh.schema.latest
    job_id = make_queue().enqueue({"n": 1})  # a new queue: its check passes now
    assert make_queue().get(job_id) is not None


def _catalog(q: skiplock.Queue) -> dict[str, set[str]]:
    """The table's column and index names (the schema's catalog read, as adopting a table
    reads it), the table's own name taken out of the latter."""
    table = q.dialect.table.name.casefold()
    found = q._run("reading the catalog", None, q.schema.catalog, check=False)
    return {kind: {n.replace(table, "T") for n in names} for kind, names in found.items()}


@pytest.mark.requires("index_names")  # adopts a table of version 1 by its indexes' names
def test_a_migrated_table_has_what_a_new_one_has(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    """Every migration from version 1 up leaves the columns and indexes a fresh install
    makes: none left over (version 1's claim index is gone since PostgreSQL 0016, MySQL
    and MariaDB 0017), none missing."""
    old = make_queue()
    make_v1_table(old)
    assert {"T_claim_idx", "T_claim"} & _catalog(old)["index"]
    old.migrate()
    new = make_queue()
    new.install()
    migrated, installed = _catalog(old), _catalog(new)
    assert migrated == installed
    if new.dialect.name != "mssql":  # SQL Server's claim index stays (no key_wait yet)
        assert not {"T_claim_idx", "T_claim"} & installed["index"]


def test_a_table_of_the_same_name_that_is_not_a_queue_is_left_alone(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    """A table named like the queue's, with no version record and not version 1's shape,
    is refused by install/migrate with a ConfigurationError, and nothing is written: no
    version table, no column added."""
    q = make_queue()
    q.uninstall()
    table = str(q.dialect.table)
    with q.transaction() as tx:
        tx.execute(f"CREATE TABLE {table} (id INT NOT NULL PRIMARY KEY, note VARCHAR(20))")
        tx.execute(f"INSERT INTO {table} (id, note) VALUES (1, 'mine')")
    fresh = make_queue()
    for step in (fresh.install, fresh.migrate):
        with pytest.raises(skiplock.ConfigurationError, match="not a skiplock queue") as err:
            step()
        assert "lacks" in str(err.value) and "idempotency_key" in str(err.value)
    with q.transaction() as tx:
        assert tx.fetchall(f"SELECT * FROM {table}") == [(1, "mine")]  # still two columns
    assert make_queue().schema_version() == 1  # no version record was written
    q.uninstall()


@pytest.mark.requires("index_names")  # adopts a table of version 1 by its indexes' names
def test_a_version_1_table_without_its_dedupe_index_is_refused(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    """Adopting an unversioned table checks version 1's indexes too: without the unique
    dedupe index, dedupe would silently stop deduplicating."""
    q = make_queue()
    make_v1_table(q)
    dedupe = next(i for i in q.schema.v1_shape()[1] if "dedupe" in i)
    table = str(q.dialect.table)
    drop = {
        "postgresql": f'DROP INDEX "{dedupe}"',
        "mysql": f"ALTER TABLE {table} DROP INDEX `{dedupe}`",
        "mssql": f"DROP INDEX [{dedupe}] ON {table}",
    }[q.dialect.name]
    with q.transaction() as tx:
        tx.execute(drop)
    fresh = make_queue()
    with pytest.raises(skiplock.ConfigurationError, match=dedupe):
        fresh.migrate()
    assert make_queue().schema_version() == 1
    with q.transaction() as tx:  # put it back: then the table is adopted
        tx.execute(_v1_index(q, dedupe))
    assert make_queue().migrate() == list(range(2, q.schema.latest + 1))


def _v1_index(q: skiplock.Queue, name: str) -> str:
    """Version 1's statement that makes index *name*."""
    ddl = v1_statements(q)["install"]
    for statement in split_statements(ddl):
        if name in statement.casefold() and "CREATE" in statement and "INDEX" in statement:
            return statement
    table = str(q.dialect.table)  # MySQL made it inside CREATE TABLE
    return f"ALTER TABLE {table} ADD UNIQUE KEY `{name}` (dedupe_active)"


def test_a_missing_table_says_install(make_queue: Callable[..., skiplock.Queue]) -> None:
    q = make_queue()
    q.uninstall()
    fresh = make_queue()
    assert fresh.schema_version() == 0
    with pytest.raises(skiplock.ConfigurationError, match="skiplock install"):
        fresh.stats()


def test_migrate_is_idempotent_and_install_is_migrate(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    q = make_queue()
    assert q.schema_version() == q.schema.latest
    assert q.migrate() == []
    q.install()
    assert q.schema_version() == q.schema.latest
    q.uninstall()
    q.uninstall()  # idempotent too
    assert q.schema_version() == 0
    q.install()
    assert q.schema_version() == q.schema.latest
    assert q.enqueue({"n": 1}) > 0


@pytest.mark.requires("lock_timeouts")  # the waiting ones ask for the lock every second
def test_concurrent_migrations_run_one_after_the_other(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    q = make_queue()
    q.uninstall()
    queues = [make_queue() for _ in range(4)]
    applied: list[list[int]] = []
    errors: list[BaseException] = []

    def run(one: skiplock.Queue) -> None:
        try:
            applied.append(one.migrate())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(one,)) for one in queues]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert sorted(applied, key=len) == [[], [], [], list(range(1, q.schema.latest + 1))]


def test_a_newer_schema_is_refused(make_queue: Callable[..., skiplock.Queue]) -> None:
    q = make_queue()
    # A later release recorded a version this code does not know.
    newer = q.schema.latest + 1
    with q.transaction() as tx:
        tx.queue.dialect.run(tx.connection, "schema_record", {"version": newer, "name": "x"})
    fresh = make_queue()
    with pytest.raises(skiplock.ConfigurationError, match="upgrade skiplock"):
        fresh.enqueue({"n": 1})
    with pytest.raises(skiplock.ConfigurationError, match="upgrade skiplock"):
        fresh.migrate()


@pytest.mark.requires("index_names")  # adopts a table of version 1 by its indexes' names
def test_upgrade_while_a_worker_drains_every_state(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    setup = make_queue()
    make_v1_table(setup)
    # `old` stands in for the processes of the previous release, which keep running
    # through the upgrade: that release's statements, no schema check.
    old = make_queue()
    as_release(old, v1_statements(old))
    old._schema_ok = True
    done_id = old.enqueue({"state": "done"})
    old.complete(old.claim()[0])
    failed_id = old.enqueue({"state": "failed"}, max_attempts=1)
    old.fail(old.claim()[0], "boom")
    live_id = old.enqueue({"state": "live"}, queue="held")
    (live,) = old.claim(queues="held", lease=300)
    # a job claimed before the token's migration has none (MySQL's dialect code, which the
    # simulation keeps, fills in the token its statements would have written)
    live.claim_id = None
    stale_id = old.enqueue({"state": "expired"}, priority=-1)
    (stale,) = old.claim(lease=0.5)
    scheduled_id = old.enqueue({"state": "scheduled"}, delay=3600)
    pending = old.enqueue_many([{"n": i} for i in range(120)])
    wait_until(lambda: old.stats().expired == 1, 30, "the short lease to expire")

    ran: list[int] = []
    seen = threading.Lock()

    def handler(job: skiplock.Job) -> None:
        time.sleep(0.05)  # slow enough that the upgrade runs while jobs do
        with seen:
            ran.append(job.id)

    # retention=None: the previous release's worker did not prune (and its statements lack
    # the advisory-lock set retention needs)
    worker = Worker(old, handler, concurrency=4, lease=30, poll_interval=0.1, retention=None)
    worker.start()
    try:
        wait_until(lambda: len(ran) >= 5, 60, "the worker to start draining")
        applied = make_queue().migrate()
        assert applied == list(range(2, setup.schema.latest + 1))
        new = make_queue()
        wait_until(lambda: new.stats().pending == 0, 120, "the worker to drain")
        wait_until(lambda: new.stats().running == 1, 60, "the worker to write its outcomes")
    finally:
        worker.stop(timeout=30)

    assert sorted(ran) == sorted([*pending, stale_id])  # each ran once, none lost
    assert all(new.get(i).status == "done" for i in pending)  # type: ignore[union-attr]
    # fencing intact: the expired attempt's late write is rejected, the live lease holds
    with pytest.raises(skiplock.LeaseLost):
        old.complete(stale)
    assert new.get(stale_id).attempt == 2  # type: ignore[union-attr]
    new.heartbeat(live, lease=300)  # this release's statements on the migrated table
    assert not live.cancel_requested
    new.complete(live, result="kept")
    assert new.get(live_id).status == "done"  # type: ignore[union-attr]
    assert new.get(done_id).status == "done"  # type: ignore[union-attr]
    assert new.get(failed_id).status == "failed"  # type: ignore[union-attr]
    sched = new.get(scheduled_id)
    assert sched is not None and sched.status == "pending"
    s = new.stats()
    assert (s.pending, s.scheduled, s.running, s.expired, s.failed) == (0, 1, 0, 0, 1)
    assert s.done == len(pending) + 3
    assert (s.pruned, s.last_pruned_at) == (0, None)  # the counters table came with it
    assert new.claim() == []  # the scheduled job stays scheduled
    assert new.cancel(scheduled_id) == "cancelled"  # version 2's status is allowed now


@pytest.mark.requires("index_names")  # adopts a table of version 1 by its indexes' names
def test_conn_checks_the_version_on_the_callers_connection(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    """With ``conn=`` the version is read on the caller's connection: an old table is
    refused there with nothing written and their transaction still usable, and a queue
    whose one pooled connection is busy in a transaction still passes its check."""
    q = make_queue()
    make_v1_table(q)
    theirs = q.connection()
    try:
        fresh = make_queue(max_size=1, pool_timeout=2.0)
        with pytest.raises(skiplock.ConfigurationError, match="skiplock migrate"):
            fresh.enqueue({"n": 1}, conn=theirs)
        with fresh.transaction(conn=theirs) as tx:
            assert tx.fetchone(f"SELECT COUNT(*) FROM {q.dialect.quote(q.table.name)}")[0] == 0
        theirs.commit()
    finally:
        theirs.close()
    q.migrate()
    single = make_queue(max_size=1, pool_timeout=2.0)
    with single.transaction() as tx:  # holds the pool's only connection
        job_id = tx.enqueue({"n": 2})
    assert single.get(job_id) is not None
