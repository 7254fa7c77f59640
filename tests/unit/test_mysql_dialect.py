"""The parts of the MySQL / MariaDB dialect that need no server: the version check."""

from __future__ import annotations

import pytest
from skiplock.dialects.mysql import parse_server_version

import skiplock


@pytest.mark.parametrize(
    ("text", "product", "version"),
    [
        ("8.0.1", "MySQL", (8, 0, 1)),
        ("9.7.0", "MySQL", (9, 7, 0)),
        ("8.4.3-log", "MySQL", (8, 4, 3)),
        ("10.11.6-MariaDB-0+deb12u1", "MariaDB", (10, 11, 6)),
        ("10.6.0-MariaDB", "MariaDB", (10, 6, 0)),
    ],
)
def test_servers_with_skip_locked_are_accepted(
    text: str, product: str, version: tuple[int, ...]
) -> None:
    info = parse_server_version(text)
    assert (info.product, info.version, info.version_string) == (product, version, text)


@pytest.mark.parametrize(
    "text",
    ["8.0.11-TiDB-v7.5.1", "8.0.11-TiDB-v8.1.0-serverless", "5.7.25-TiDB-v6.5.0"],
)
def test_tidb_is_refused_because_its_skip_locked_does_not_lock(text: str) -> None:
    with pytest.raises(skiplock.UnsupportedServer, match=r"TiDB .* takes no row locks"):
        parse_server_version(text)


@pytest.mark.parametrize(
    ("text", "needed"),
    [("8.0.0", "MySQL 8.0.1"), ("5.7.44-log", "MySQL 8.0.1"), ("10.5.9-MariaDB", "MariaDB 10.6")],
)
def test_servers_without_skip_locked_are_refused(text: str, needed: str) -> None:
    with pytest.raises(skiplock.UnsupportedServer, match=needed):
        parse_server_version(text)


def test_both_servers_get_the_one_form_of_the_claims_key_test() -> None:
    from skiplock.dialects import get_dialect

    from skiplock._core.sql import TableName
    from skiplock.drivers.url import parse_url

    d = get_dialect(parse_url("mysql://u@h/db"), TableName.parse("jobs"))
    form = "ORDER BY e.order_key, e.key_status, e.id LIMIT 1), c.id) >= c.id"
    for name in ("claim_pick", "claim_pick_queues"):
        assert form in d.sql[name] and "{no_earlier_pending}" not in d.sql[name]
        assert "--" not in d.sql[name].split("WHERE")[-1]
    before = dict(d.sql)
    maria = d.for_server(d._server([{"v": "10.11.6-MariaDB-0+deb12u1"}]))
    assert maria.mariadb and not d.mariadb and maria.sql == before


@pytest.mark.parametrize("mariadb", [False, True])
def test_a_migration_statement_marked_for_one_server_runs_only_there(mariadb: bool) -> None:
    """``-- only on MariaDB`` (or MySQL) in a statement of the shared migration files: the
    schema runner skips it on the other server; 0016's MariaDB-only steps are so marked."""
    q = skiplock.connect(
        f"{'mariadb' if mariadb else 'mysql'}://root@127.0.0.1:1/none", table="jobs"
    )
    applies = q.dialect.migration_applies
    assert applies("ALTER TABLE t ADD COLUMN x INT")
    assert applies("-- a note\n-- only on MariaDB: why\nALTER TABLE t DROP INDEX i") == mariadb
    assert applies("-- ONLY ON mysql\nALTER TABLE t DROP INDEX i") != mariadb
    assert applies("-- not only on MariaDB\nALTER TABLE t")  # a phrase inside a comment
    [m16] = [m for m in q.schema.migrations if m.version == 16]
    statements = [s for step in m16.steps for s in step]
    ran = [s for s in statements if applies(s)]
    assert any("ADD COLUMN key_wait" in s for s in ran)
    assert any("`jobs_key_tmp`" in s for s in ran) == mariadb
    assert len(ran) == (len(statements) if mariadb else len(statements) - 4)
