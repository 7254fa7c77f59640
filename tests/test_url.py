"""URL parsing and password masking (no database needed)."""

from __future__ import annotations

import pytest

import skiplock
from skiplock._url import mask_password, parse_url


@pytest.mark.parametrize(
    ("url", "dialect", "port"),
    [
        ("postgresql://u:p@localhost:5432/db", "postgresql", 5432),
        ("postgres://localhost/db", "postgresql", None),
        ("mysql://root@127.0.0.1:3307/test", "mysql", 3307),
        ("mariadb://root@127.0.0.1/test", "mysql", None),
        ("mssql://sa:p%40ss@host:1433/master", "mssql", 1433),
        ("postgresql://u@[::1]:5432/db", "postgresql", 5432),
    ],
)
def test_good_urls(url: str, dialect: str, port: int | None) -> None:
    u = parse_url(url)
    assert (u.dialect, u.port) == (dialect, port)


def test_password_is_decoded_but_never_shown() -> None:
    u = parse_url("mssql://sa:p%40ss@host:1433/master")
    assert u.password == "p@ss"
    assert "p@ss" not in str(u) and "p@ss" not in repr(u) and "p%40ss" not in repr(u)
    assert str(u) == "mssql://sa:***@host:1433/master"


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("oracle://u:hunter2@h/db", "unknown database"),
        ("redis://h:6379/0", "unknown database"),
        ("localhost:5432/db", "malformed"),
        ("postgresql://u:hunter2@h:notaport/db", "malformed"),
        ("postgresql://u:hunter2@h:99999/db", "malformed"),
        ("mysql://u:hunter2@/db", "no host"),
        ("postgresql://u:p%zzhunter2@h/db", "libpq cannot read it"),
        ("postgresql://u:hunter2@h1,,h2/db", "empty host"),
        ("postgresql://u:hunter2@h1:5432,h2:0/db", "malformed"),
        ("postgresql://u:hunter2@h", "name one database"),
        ("postgresql://u:hunter2@h/a/b", "name one database"),
        ("postgresql://u:hunter2@h /db", "whitespace"),
        ("postgresql://[:hunter2@[::1]:/", "malformed"),  # urllib quoted "[:hunter2@[::1"
        ("", "no database URL|malformed"),
    ],
)
def test_bad_urls_are_configuration_errors_without_the_password(url: str, match: str) -> None:
    with pytest.raises(skiplock.ConfigurationError, match=match) as info:
        skiplock.connect(url)
    assert "hunter2" not in str(info.value)


def test_url_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKIPLOCK_URL", raising=False)
    with pytest.raises(skiplock.ConfigurationError, match="SKIPLOCK_URL"):
        skiplock.connect()
    monkeypatch.setenv("SKIPLOCK_URL", "mysql://root@h/db")
    assert skiplock.connect().url.dialect == "mysql"


def test_not_a_string() -> None:
    with pytest.raises(skiplock.ConfigurationError):
        skiplock.connect(42)  # type: ignore[arg-type]


def test_mask_password_in_free_text() -> None:
    text = "failed: postgresql://app:topsecret@db:5432/x and mysql://r:pw@h/y"
    masked = mask_password(text)
    assert "topsecret" not in masked and ":pw@" not in masked
    assert "postgresql://app:***@db:5432/x" in masked


@pytest.mark.parametrize(
    ("url", "host", "port", "options", "shown"),
    [
        ("postgresql:///app", "", None, {}, "postgresql:///app"),
        (
            "postgresql://app@/app?host=/var/run/postgresql",
            "/var/run/postgresql",
            None,
            {},
            "postgresql://app@/app?host=/var/run/postgresql",
        ),
        (
            "postgresql://h1,h2/app?target_session_attrs=read-write",
            "h1,h2",
            None,
            {"target_session_attrs": "read-write"},
            "postgresql://h1,h2/app",
        ),
        (
            "postgres://u:hunter2@h1:5432,h2:5433/app?sslmode=require",
            "h1,h2",
            None,
            {"sslmode": "require"},
            "postgres://u:***@h1,h2/app",
        ),
        (
            "postgresql+psycopg://u@[::1]:5433/app",
            "::1",
            5433,
            {},
            "postgresql+psycopg://u@[::1]:5433/app",
        ),
    ],
)
def test_every_libpq_url_form_is_read_by_libpq(
    url: str, host: str, port: int | None, options: dict[str, str], shown: str
) -> None:
    pytest.importorskip("psycopg")
    u = parse_url(url)
    assert (u.host, u.port, u.options, u.database) == (host, port, options, "app")
    assert str(u) == shown and "hunter2" not in repr(u)


def test_a_password_with_brackets_and_quotes_is_not_shown_in_part() -> None:
    with pytest.raises(skiplock.ConfigurationError) as info:
        parse_url("mysql://app:Xq[9'zK]w@db.example/prod")
    for piece in ("Xq", "9'zK", "zK", "]w", "[9"):
        assert piece not in str(info.value)
    assert "percent-encoded" in str(info.value)


@pytest.mark.parametrize(
    ("host", "match"),
    [
        ("a" * 64 + ".example.com", "longer than 63"),
        ("db." + "b" * 64, "longer than 63"),
        ("a..b", "empty label"),
        (".a", "empty label"),
        ("a." * 127 + "a", "253"),
    ],
)
def test_bad_host_names_are_configuration_errors(host: str, match: str) -> None:
    with pytest.raises(skiplock.ConfigurationError, match=match):
        skiplock.connect(f"postgresql://u:hunter2@{host}:5432/db")


@pytest.mark.parametrize(
    "host", ["a" * 63 + ".example.com", "db.example.com.", "127.0.0.1", "[::1]", "bücher.de"]
)
def test_good_host_names_pass(host: str) -> None:
    assert parse_url(f"mysql://u@{host}/db").host
