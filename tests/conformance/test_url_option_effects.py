"""Every documented URL option takes effect, proved by what it does (docs/getting-started.md,
URL options), sync and async: a connect timeout against a server that never answers, the
TCP options on the socket, application_name in pg_stat_activity, TLS options that the
server or the driver act on. An option that cannot take effect on one of the drivers is
refused by name (test_url_options.py)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

import skiplock

from .test_url_options import with_options


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A local TCP port whose listener never accepts: the kernel completes the handshake
    (the backlog) and the server never says a word."""
    with socket.create_server(("127.0.0.1", 0), backlog=64) as listener:
        yield int(listener.getsockname()[1])


def at(url: str, host: str, port: int | None = None) -> str:
    parts = urlsplit(url)
    auth = parts.netloc.rpartition("@")[0]
    netloc = (f"{auth}@" if auth else "") + host + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def refusal(url: str) -> str:
    """The error of a Queue and of an AsyncQueue at their first connect (both must fail)."""
    q = skiplock.connect(url, table="skiplock_probe")
    try:
        with pytest.raises(skiplock.SkiplockError) as sync_info:
            q.ping()
    finally:
        q.close()

    async def run() -> str:
        aq = skiplock.connect_async(url, table="skiplock_probe")
        try:
            with pytest.raises(skiplock.SkiplockError) as info:
                await asyncio.wait_for(aq.ping(), 60)
            return str(info.value)
        finally:
            await aq.close()

    return str(sync_info.value) + "\n" + asyncio.run(run())


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """*sql*'s rows on a connection of a Queue made from *url* (its own driver's)."""
    q = skiplock.connect(url, table="skiplock_probe")
    try:
        with closing(q.connection()) as conn:
            cur = conn.cursor()
            cur.execute(sql)
            found = [tuple(r) for r in cur.fetchall()]
            cur.close()
            conn.rollback()
            return found
    finally:
        q.close()


def async_ok(url: str) -> None:
    async def run() -> None:
        aq = skiplock.connect_async(url, table="skiplock_probe")
        try:
            assert (await asyncio.wait_for(aq.ping(), 30)).product
        finally:
            await aq.close()

    asyncio.run(run())


def _product(url: str) -> str:
    q = skiplock.connect(url, table="skiplock_probe")
    try:
        return q.ping().product
    finally:
        q.close()


# -- every database -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["connect_timeout", "connection_timeout"])
def test_the_connect_timeout_bounds_a_server_that_never_answers(
    url: str, blackhole: int, name: str
) -> None:
    # old code (MySQL, MariaDB): connect_timeout=2 was sent under the alias that
    # mysql-connector reads only without connection_timeout, which skiplock always set to
    # 10: every connect waited 10 s; the asyncio driver bounded only the TCP connect
    dialect = skiplock.connect(url).dialect
    if name not in dialect.URL_OPTIONS:
        pytest.skip(f"{dialect.name} names its connect timeout otherwise")
    silent = with_options(at(url, "127.0.0.1", blackhole), **{name: "2"})
    for connect in ("sync", "async"):
        start = time.monotonic()
        if connect == "sync":
            q = skiplock.connect(silent, table="skiplock_probe")
            with pytest.raises(skiplock.BackendError, match="could not connect"):
                q.ping()
            q.close()
        else:

            async def ping() -> None:
                aq = skiplock.connect_async(silent, table="skiplock_probe")
                try:
                    with pytest.raises(skiplock.BackendError, match="could not connect"):
                        await asyncio.wait_for(aq.ping(), 30)
                finally:
                    await aq.close()

            asyncio.run(ping())
        waited = time.monotonic() - start
        assert 1.5 <= waited < 6, (connect, waited)  # the default is 10 s


# -- PostgreSQL ----------------------------------------------------------------------------


def _pg(url: str) -> None:
    if skiplock.connect(url).dialect.name != "postgresql":
        pytest.skip("libpq's options")


def _tcp(url: str) -> str:
    host = urlsplit(url).hostname or ""
    if not host or host.startswith("/"):
        pytest.skip("the test server is not reached over TCP")
    return host


def test_pg_application_name_is_what_the_server_sees(url: str) -> None:
    _pg(url)
    sql = "SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()"
    assert rows(url, sql) == [("skiplock",)]
    assert rows(with_options(url, application_name="billing-7"), sql) == [("billing-7",)]


def test_pg_tcp_options_are_set_on_the_socket(url: str) -> None:
    _pg(url)
    _tcp(url)
    opts = {
        "keepalives": "1",
        "keepalives_idle": "7",
        "keepalives_interval": "3",
        "keepalives_count": "4",
        "tcp_user_timeout": "9000",
    }
    q = skiplock.connect(with_options(url, **opts), table="skiplock_probe")
    try:
        with closing(q.connection()) as conn:
            fd = os.dup(conn.fileno())
            with socket.socket(fileno=fd) as s:
                assert s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
                assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 7
                assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 3
                assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 4
                assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 9000
    finally:
        q.close()
    off = skiplock.connect(with_options(url, keepalives="0"), table="skiplock_probe")
    try:
        with closing(off.connection()) as conn, socket.socket(fileno=os.dup(conn.fileno())) as s:
            assert s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 0
    finally:
        off.close()


def test_pg_hostaddr_is_used_instead_of_the_host_name(url: str) -> None:
    _pg(url)
    host = _tcp(url)
    try:
        address = socket.gethostbyname(host)
    except OSError:
        pytest.skip(f"{host} does not resolve here")
    port = urlsplit(url).port
    nowhere = with_options(at(url, "skiplock-no-such-host.invalid", port), hostaddr=address)
    assert _product(nowhere) == "PostgreSQL"
    async_ok(nowhere)
    # a name there is refused at connect(), before libpq tries to parse it at the connect
    with pytest.raises(skiplock.ConfigurationError, match="hostaddr"):
        skiplock.connect(with_options(url, hostaddr="db.example"))


def _server_ssl(url: str) -> bool:
    return rows(url, "SHOW ssl") == [("on",)]


def test_pg_sslmode_is_what_the_server_sees(url: str) -> None:
    _pg(url)
    _tcp(url)
    sql = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
    assert rows(with_options(url, sslmode="disable"), sql) == [(False,)]
    if _server_ssl(url):
        assert rows(with_options(url, sslmode="require"), sql) == [(True,)]
    else:
        assert "SSL" in refusal(with_options(url, sslmode="require"))


def test_pg_gssencmode_and_channel_binding_required_are_enforced(url: str) -> None:
    # the test servers offer neither GSSAPI encryption nor SCRAM channel binding: a
    # requirement of either must refuse to connect (an ignored option would connect)
    _pg(url)
    _tcp(url)
    assert "GSS" in refusal(with_options(url, gssencmode="require", sslmode="disable"))
    assert _product(with_options(url, gssencmode="disable")) == "PostgreSQL"
    assert "channel binding" in refusal(with_options(url, channel_binding="require"))
    assert _product(with_options(url, channel_binding="disable")) == "PostgreSQL"


def test_pg_target_session_attrs_is_checked_against_the_server(url: str) -> None:
    _pg(url)
    _tcp(url)
    role = f"skiplock_ro_{os.getpid()}"
    admin = skiplock.connect(url, table="skiplock_probe")
    with closing(admin.connection()) as conn:
        conn.autocommit = True
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")
        try:
            parts = urlsplit(url)
            ro = urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}"))
            assert _product(with_options(ro, target_session_attrs="any")) == "PostgreSQL"
            assert "read-only" in refusal(with_options(ro, target_session_attrs="read-write"))
        finally:
            conn.execute(f"DROP ROLE IF EXISTS {role}")
    admin.close()


def test_pg_file_and_kerberos_options_reach_libpq(url: str, tmp_path: Path) -> None:
    # their effect needs a TLS server, a client certificate or Kerberos (none here): libpq
    # reports the value it was given for each, on the connection it made
    _pg(url)
    given = {
        "sslrootcert": str(tmp_path / "root.crt"),
        "sslcert": str(tmp_path / "client.crt"),
        "sslkey": str(tmp_path / "client.key"),
        "sslcrl": str(tmp_path / "root.crl"),
        "sslcrldir": str(tmp_path / "crl"),
        "krbsrvname": "skiplock_test",
        "passfile": str(tmp_path / "pgpass"),
        "sslmode": "prefer",
    }
    if _server_ssl(url):
        given["sslmode"] = "disable"  # the files do not exist: plain text
    q = skiplock.connect(with_options(url, **given), table="skiplock_probe")
    try:
        with closing(q.connection()) as conn:
            seen = conn.info.get_parameters()
            for name, value in given.items():
                if name != "sslmode":  # prefer, libpq's default, is not reported
                    assert seen.get(name) == value, (name, seen)
    finally:
        q.close()


# -- MySQL, MariaDB -------------------------------------------------------------------------


def _my(url: str) -> None:
    if skiplock.connect(url).dialect.name != "mysql":
        pytest.skip("mysql-connector's options")


def _cipher(url: str) -> str:
    [(_, cipher)] = rows(url, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    return str(cipher)


def _tls(url: str) -> None:
    if not _cipher(url):
        pytest.skip("the server offers no TLS")


def test_my_ssl_disabled_connects_in_plain_text(url: str) -> None:
    _my(url)
    _tls(url)
    assert _cipher(with_options(url, ssl_disabled="1")) == ""
    async_ok(with_options(url, ssl_disabled="1"))


def test_my_certificate_checks_are_applied(url: str, tmp_path: Path) -> None:
    # the test servers' certificates are self-signed: verifying them against the system's
    # CAs (or an unreadable CA file) must fail, where an ignored option would connect
    _my(url)
    _tls(url)
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for options in (
        {"ssl_verify_cert": "1"},
        {"ssl_verify_identity": "1"},
        {"ssl_cert": str(junk), "ssl_key": str(junk)},
        {"ssl_ca": str(junk), "ssl_cert": str(junk), "ssl_key": str(junk)},
    ):
        text = refusal(with_options(url, **options))
        assert "could not connect" in text and text.count("could not connect") == 2, options


def test_my_unix_socket_is_where_it_connects(url: str) -> None:
    _my(url)
    missing = with_options(url, unix_socket="/nonexistent/skiplock.sock")
    text = refusal(missing)
    assert text.count("/nonexistent/skiplock.sock") >= 2 and text.count("could not connect") == 2
    [(path,)] = rows(url, "SELECT @@socket")
    if not path or not Path(str(path)).exists():
        pytest.skip("the server's socket is not on this file system")
    through = with_options(url, unix_socket=str(path))
    # USER() names the client's host as the server saw it (no information_schema query)
    [(user,)] = rows(through, "SELECT USER()")
    assert str(user).endswith("@localhost"), user
    async_ok(through)


@pytest.mark.parametrize("name", ["compress", "force_ipv6", "ssl_cipher", "auth_plugin"])
def test_my_options_without_effect_on_a_driver_are_refused(url: str, name: str) -> None:
    # old code accepted them: compress=1 hung the AsyncQueue's connect, ssl_cipher raised a
    # raw TypeError there, force_ipv6 was ignored by it, auth_plugin meant two things
    _my(url)
    with pytest.raises(skiplock.ConfigurationError, match=f"'{name}' is not accepted"):
        skiplock.connect(with_options(url, **{name: "1"}))


def test_my_the_timeout_s_two_names_with_two_values_are_refused(url: str) -> None:
    _my(url)
    with pytest.raises(skiplock.ConfigurationError, match="the same option"):
        skiplock.connect(with_options(url, connect_timeout="2", connection_timeout="3"))
    assert skiplock.connect(with_options(url, connect_timeout="2", connection_timeout="2"))


def test_my_the_async_driver_s_tls_file_rule_is_a_configuration_error(url: str) -> None:
    # mysql-connector's asyncio driver wants ssl_cert and ssl_key with any of the three;
    # old code let its AttributeError out of AsyncQueue's first operation
    _my(url)

    async def run() -> None:
        aq = skiplock.connect_async(with_options(url, ssl_ca="/nonexistent/ca.pem"))
        try:
            with pytest.raises(skiplock.ConfigurationError, match="ssl_cert"):
                await asyncio.wait_for(aq.ping(), 30)
        finally:
            await aq.close()

    asyncio.run(run())
