"""URL parsing and password masking (no database needed)."""

from __future__ import annotations

import asyncio

import pytest

import skiplock
from skiplock.drivers.url import mask_password, parse_url


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
            "postgresql://h1,h2/app?target_session_attrs=read-write",
        ),
        (
            "postgres://u:hunter2@h1:5432,h2:5433/app?sslmode=require",
            "h1,h2",
            None,
            {"sslmode": "require"},
            "postgres://u:***@h1:5432,h2:5433/app?sslmode=require",
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


#: old code: "." and "1..2" matched the IPv4 shortcut, and every database's resolver
#: raised a raw UnicodeError ("label empty or too long") at the first operation
_EMPTY_LABELS = [".", "..", "1..2", "127.0.0..1", "a..b", ".x", "x..", "a" * 64]


@pytest.mark.parametrize("scheme", ["postgresql", "mysql", "mariadb", "mssql"])
@pytest.mark.parametrize("host", _EMPTY_LABELS)
def test_hosts_with_an_empty_or_long_label_are_refused_at_connect(scheme: str, host: str) -> None:
    url = f"{scheme}://u:hunter2@{host}:1234/db"
    for connect in (skiplock.connect, skiplock.connect_async):
        with pytest.raises(skiplock.ConfigurationError, match="host name has") as info:
            connect(url)  # before any driver call: SQL Server's path is checked here too
        assert "hunter2" not in str(info.value) and f"u:***@{host}:1234/db" in str(info.value)


@pytest.mark.parametrize("host", _EMPTY_LABELS)
def test_hosts_of_a_multi_host_url_are_each_checked(host: str) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(skiplock.ConfigurationError, match="host name has"):
        skiplock.connect(f"postgresql://u:hunter2@127.0.0.1:1,{host}:2/db")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # old code: "127.0.0.1,127.0.0.1/db", the ports lost
        (
            "postgresql://u:secret@127.0.0.1:1,127.0.0.1:2/db",
            "postgresql://u:***@127.0.0.1:1,127.0.0.1:2/db",
        ),
        ("postgresql://u:secret@h1,h2:5433/db", "postgresql://u:***@h1,h2:5433/db"),
        ("postgresql://u:secret@h1:1,h2/db", "postgresql://u:***@h1:1,h2/db"),
        ("postgresql://u:secret@[::1]:1,[::2]:2/db", "postgresql://u:***@[::1]:1,[::2]:2/db"),
        ("postgresql://u:secret@h1,h2/db?port=5", "postgresql://u:***@h1:5,h2:5/db"),
        # old code: the socket folder's port= and every query option were dropped
        (
            "postgresql://u:secret@/db?host=/tmp&port=5433",
            "postgresql://u:***@/db?host=/tmp&port=5433",
        ),
        ("postgresql:///db?host=/a,/b&port=1,2", "postgresql:///db?host=/a,/b&port=1,2"),
        (
            "postgresql://u:secret@h:5/db?sslmode=require&connect_timeout=3",
            "postgresql://u:***@h:5/db?sslmode=require&connect_timeout=3",
        ),
        (
            "mysql://u:secret@h:3306/db?ssl_ca=/etc/ca.pem",
            "mysql://u:***@h:3306/db?ssl_ca=/etc/ca.pem",
        ),
        ("mssql://sa:secret@h/db?appname=x", "mssql://sa:***@h/db?appname=x"),
        ("mysql://us%40er:secret@h/db", "mysql://us%40er:***@h/db"),
    ],
)
def test_urls_are_shown_whole_but_the_password(url: str, shown: str) -> None:
    if url.startswith("postgresql"):
        pytest.importorskip("psycopg")
    q = skiplock.connect(url)
    aq = skiplock.connect_async(url)
    assert str(q.url) == shown
    assert repr(q) == f"<skiplock.Queue {shown} table=skiplock_jobs>"
    assert repr(aq) == f"<skiplock.AsyncQueue {shown} table=skiplock_jobs>"


@pytest.mark.parametrize("key", ["password", "PASSWORD", "passwd", "password1", "pwd"])
def test_a_password_given_as_a_query_option_is_masked(key: str) -> None:
    # old code: a URL refused for another reason was shown with ?password=... as given
    with pytest.raises(skiplock.ConfigurationError) as info:
        skiplock.connect(f"mysql://u@h:99999/db?{key}=hunter2&ssl_ca=/x")
    assert "hunter2" not in str(info.value) and f"{key}=***" in str(info.value)
    assert mask_password(f"see mysql://u@h/db?a=1&{key}=hunter2#x") == (
        f"see mysql://u@h/db?a=1&{key}=***#x"
    )


@pytest.mark.parametrize(
    "host", ["a" * 63 + ".example.com", "db.example.com.", "127.0.0.1", "[::1]", "bücher.de"]
)
def test_good_host_names_pass(host: str) -> None:
    assert parse_url(f"mysql://u@{host}/db").host


def test_a_connection_refused_on_every_host_names_each_host_and_port() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://u:secret@127.0.0.1:1,127.0.0.1:2/db?connect_timeout=5"
    whole = "postgresql://u:***@127.0.0.1:1,127.0.0.1:2/db?connect_timeout=5"
    q = skiplock.connect(url)
    with pytest.raises(skiplock.BackendError, match="could not connect") as info:
        q.stats()
    assert f"at {whole} could not connect" in str(info.value) and "secret" not in str(info.value)

    async def refused() -> str:
        aq = skiplock.connect_async(url)
        try:
            await aq.stats()
        except skiplock.BackendError as exc:
            return str(exc)
        finally:
            await aq.close()
        raise AssertionError("connected to nothing")

    text = asyncio.run(refused())
    assert f"at {whole} could not connect" in text and "secret" not in text


@pytest.mark.parametrize("query", ["host=.", "host=/tmp,1..2", "host=a..b", "host=.."])
def test_hosts_given_in_the_query_are_checked_too(query: str) -> None:
    # old code: host=. passed the IPv4 shortcut and reached libpq's resolver
    pytest.importorskip("psycopg")
    with pytest.raises(skiplock.ConfigurationError, match="host name has"):
        skiplock.connect(f"postgresql://u:hunter2@/db?{query}")
