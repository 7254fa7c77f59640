"""Pool settings are checked when the queue is made (no server needed: nothing connects)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import skiplock

URL = "postgresql://app:secret-pw@db.example/app"


@pytest.mark.parametrize(
    "options",
    [
        {"max_size": 0},
        {"max_size": -1},
        {"max_size": 1.5},
        {"max_size": "4"},
        {"max_size": True},
        {"max_size": 10**6},
        {"max_idle": -1},
        {"max_idle": "2"},
        {"max_size": 2, "max_idle": 3},
        {"pool_timeout": 0},
        {"pool_timeout": -1},
        {"pool_timeout": float("nan")},
        {"pool_timeout": float("inf")},
        {"pool_timeout": 10**400},
        {"pool_timeout": "30"},
        {"pool_timeout": None},
        {"max_lifetime": 0},
        {"max_lifetime": float("inf")},
        {"max_idle_time": -0.5},
        {"max_idle_time": None},
    ],
    ids=repr,
)
@pytest.mark.parametrize(
    "connect", [skiplock.connect, skiplock.connect_async], ids=["sync", "async"]
)
def test_bad_pool_settings_are_configuration_errors(
    options: dict[str, Any], connect: Callable[..., Any]
) -> None:
    with pytest.raises(skiplock.ConfigurationError) as caught:
        connect(URL, **options)
    assert "secret-pw" not in str(caught.value)


@pytest.mark.parametrize(
    "connect", [skiplock.connect, skiplock.connect_async], ids=["sync", "async"]
)
def test_max_idle_alone_keeps_working_and_sizes_the_pool(connect: Callable[..., Any]) -> None:
    assert connect(URL, max_idle=16)._pool.max_size == 16  # larger than the default
    assert connect(URL, max_idle=2)._pool.max_size == 10
    assert connect(URL, max_idle=0)._pool.max_idle == 0  # open and close each time
    q = connect(URL, max_size=3, pool_timeout=1, max_lifetime=60, max_idle_time=5)
    assert (q._pool.max_size, q._pool.max_idle, q._pool.timeout) == (3, 3, 1.0)


def test_an_async_queues_sync_queue_has_its_pool_settings() -> None:
    aq = skiplock.connect_async(URL, max_size=3, pool_timeout=2, max_idle_time=5)
    q = aq.sync_queue()
    assert q.pool_settings == aq.pool_settings
    q.close()


def test_pool_timeout_is_a_retryable_backend_error() -> None:
    err = skiplock.PoolTimeout()
    assert isinstance(err, skiplock.BackendError)
    assert err.retryable and not err.connection_lost
    assert "max_size" in str(err)
