"""A one-job enqueue in a transaction of its own. Where the driver makes it free
(psycopg 3 on PostgreSQL) it runs in autocommit: one round trip, its INSERT its own
transaction. What must hold everywhere: a connection cut after the server answered never
doubles the job (the caller gets its id, or an error that says the outcome is unknown),
and the pooled connection goes back in a transaction of its own for what follows."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import skiplock

from .aio_view import Loop, SyncView
from .proxy import Proxy


def _through(proxy: Proxy, queue: skiplock.Queue, api: str, aio_loop: Loop) -> Any:
    """A queue of *queue*'s table on one connection through *proxy*, in plain text so the
    proxy sees the statements."""
    url = proxy.url + ("?ssl_disabled=true" if queue.dialect.name == "mysql" else "")
    if api == "sync":
        return skiplock.connect(url, table=str(queue.table), max_size=1)
    return SyncView(skiplock.connect_async(url, table=str(queue.table), max_size=1), aio_loop)


def _count(queue: skiplock.Queue, payload: dict[str, Any]) -> int:
    return sum(1 for j in queue.list_jobs(limit=1000) if j.payload == payload)


def test_an_enqueue_cut_after_the_server_answered_is_never_doubled(
    queue: skiplock.Queue, url: str, api: str, aio_loop: Loop
) -> None:
    payload = {"cut": "after the answer"}
    with Proxy(url) as proxy:
        q = _through(proxy, queue, api, aio_loop)
        try:
            q.stats()  # the schema read, the one connection open and idle
            proxy.hold_replies(after=b"INSERT")  # the enqueue's answer waits in the proxy
            got: dict[str, Any] = {}

            def enqueue() -> None:
                try:
                    got["id"] = q.enqueue(payload)
                except skiplock.BackendError as exc:
                    got["error"] = exc

            t = threading.Thread(target=enqueue, daemon=True)
            t.start()
            end = time.monotonic() + 10
            while not proxy.held:  # the server has answered; the client waits for it
                assert time.monotonic() < end and t.is_alive(), "the INSERT was not answered"
                time.sleep(0.01)
            proxy.cut()
            t.join(30)
            assert not t.is_alive()
        finally:
            proxy.close()
            q.close()
    n = _count(queue, payload)
    if "id" in got:  # retried on a new connection: the first INSERT was rolled back
        assert n == 1 and queue.get(got["id"]).payload == payload
    else:  # not retried: committed alone, or rolled back with the connection
        err = got["error"]
        assert err.connection_lost and n <= 1, (err, n)
        if n == 1:
            assert "whether it committed is unknown" in str(err), err


def test_the_connection_of_a_one_job_enqueue_is_transactional_again(
    queue: skiplock.Queue, api: str, aio_loop: Loop
) -> None:
    if api == "sync":
        q: Any = skiplock.connect(str(queue.url), table=str(queue.table), max_size=1)
    else:
        aq = skiplock.connect_async(str(queue.url), table=str(queue.table), max_size=1)
        q = SyncView(aq, aio_loop)
    try:
        first = q.enqueue({"n": 1})  # alone where the driver makes it free
        with pytest.raises(RuntimeError), q.transaction() as tx:  # the same connection
            tx.enqueue({"n": 2})
            tx.enqueue({"n": 3})
            raise RuntimeError("rolled back")
        assert q.pool_stats().open == 1
    finally:
        q.close()
    assert [j.payload for j in queue.list_jobs(limit=10)] == [{"n": 1}]
    assert queue.get(first).status == "pending"
