"""URL query options: a documented, typed set per database reaches the driver; an option
that would break a guarantee, or one the database's dialect does not know, is refused by
name at connect(), before any connection is made."""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Mapping
from contextlib import suppress
from urllib.parse import urlencode

import pytest
from skiplock.dialects import DIALECT_MODULES

import skiplock
from skiplock._core.options import Option


def with_options(url: str, **options: str) -> str:
    return url + ("&" if "?" in url else "?") + urlencode(options)


@pytest.mark.parametrize(
    "name", ["autocommit", "isolation_level", "transaction_isolation", "password", "user"]
)
def test_options_that_break_a_guarantee_are_refused_by_name(url: str, name: str) -> None:
    # old code: autocommit=1 was a raw TypeError on PostgreSQL and silently committed
    # every statement on MySQL / MariaDB (your rows no longer committed with the fencing)
    with pytest.raises(skiplock.ConfigurationError, match=f"'{name}' is not accepted"):
        skiplock.connect(with_options(url, **{name: "1"}))


def test_unknown_options_are_refused_by_name(url: str) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="unknown URL option 'no_such_opt'"):
        skiplock.connect(with_options(url, no_such_opt="1"))


def test_every_refusal_names_the_accepted_options(url: str) -> None:
    q = skiplock.connect(url)
    with pytest.raises(skiplock.ConfigurationError) as info:
        skiplock.connect(with_options(url, typo="x"))
    for name in q.dialect.URL_OPTIONS:
        assert name in str(info.value)


def connect_timeouts(accepted: Mapping[str, Option]) -> list[str]:
    """The options that bound how long a connect waits: ``connect_timeout`` (libpq,
    mysql-connector's ``connection_timeout``) and pymssql's ``login_timeout``."""
    return [
        n
        for n, o in accepted.items()
        if o.kind == "int" and n.endswith("timeout") and ("connect" in n or "login" in n)
    ]


@pytest.mark.parametrize("name", sorted(DIALECT_MODULES))
def test_every_dialect_has_a_connect_timeout_option(name: str) -> None:
    # old code: the notion was "an int option naming connect", and SQL Server's is
    # login_timeout, so the test below failed there before reaching the server
    module, cls = DIALECT_MODULES[name]
    assert connect_timeouts(getattr(importlib.import_module(module), cls).URL_OPTIONS)


def test_numeric_and_boolean_options_are_converted_and_reach_the_driver(url: str) -> None:
    # old code: numbers reached the driver as strings, reported as a lost connection
    accepted = skiplock.connect(url).dialect.URL_OPTIONS
    options = dict.fromkeys(connect_timeouts(accepted), "30")
    options.update({n: "true" for n in ("compress",) if n in accepted})
    assert options, "every dialect has a connect timeout option"
    # a table of its own: the shared database's default table may be another release's
    q = skiplock.connect(with_options(url, **options), table=f"urlopt_{uuid.uuid4().hex[:10]}")
    try:
        for name, value in options.items():
            assert q.dialect.options[name] == (30 if value == "30" else True)
        assert q.ping().product
        q.install()
        assert q.stats().pending == 0
    finally:
        with suppress(skiplock.SkiplockError):
            q.uninstall()
        q.close()


def test_badly_typed_values_are_refused(url: str) -> None:
    accepted = skiplock.connect(url).dialect.URL_OPTIONS
    for name, option in accepted.items():
        bad = {"int": ["soon", "-1", "1e3", str(option.high + 1)], "bool": ["maybe", ""]}
        for value in bad.get(option.kind, []) + (["bogus"] if option.kind == "choice" else []):
            with pytest.raises(skiplock.ConfigurationError, match=name):
                skiplock.connect(with_options(url, **{name: value}))
