"""docs/async.md's FastAPI example, run as written; an ``async def`` task deferred with
``defer_async`` and run by the AsyncWorker on an AsyncQueue, on every backend."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import skiplock
from skiplock.drivers.url import parse_url

from .clients import DATABASE, need

# the examples name their table (app_jobs), as a user's code would: one xdist worker runs
# every test of both files, so no two of them share it at once (scripts/test -n 4)
pytestmark = pytest.mark.xdist_group("app_jobs")

DOC = Path(__file__).parents[2] / "docs" / "async.md"
#: database → SQLAlchemy asyncio driver of the example (a database without one skips)
SA_ASYNC = {"postgresql": ("postgresql+asyncpg", "asyncpg")}


def _example() -> tuple[set[str], str]:
    for code in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        m = re.match(r"# runs on: ([\w, ]+)\n", code)
        if m:
            return {d.strip() for d in m[1].split(",")}, code
    raise AssertionError("no '# runs on:' block in docs/async.md")


def _sa_url(url: str, driver: str) -> str:
    u = parse_url(url)
    auth = "" if u.user is None else quote(u.user, safe="")
    auth += "" if not u.password else ":" + quote(u.password, safe="")
    port = "" if u.port is None else f":{u.port}"
    return f"{driver}://{auth}{'@' if auth else ''}{u.host}{port}/{u.database}"


def _reset(url: str) -> skiplock.Queue:
    q = skiplock.connect(url, table="app_jobs")
    with q.transaction() as tx:
        tx.execute("DROP TABLE IF EXISTS app_orders")
    q.uninstall()  # the table, its version table and trigger, whatever release made them
    q.install()
    with q.transaction() as tx:
        tx.execute("CREATE TABLE app_orders (id SERIAL PRIMARY KEY, item TEXT NOT NULL)")
    return q


def test_the_fastapi_example_enqueues_in_the_requests_session(backend: str, url: str) -> None:
    where, code = _example()
    database = DATABASE[backend]
    if database not in where or database not in SA_ASYNC:
        pytest.skip(f"the example runs on {sorted(where)} (a SQLAlchemy asyncio driver)")
    driver, module = SA_ASYNC[database]
    for name in ("sqlalchemy", "greenlet", module):
        need(name)
    pytest.importorskip("fastapi", reason="pip install fastapi (the [test] extra)")
    httpx = pytest.importorskip("httpx", reason="pip install httpx (the [test] extra)")
    q = _reset(url)
    env: dict[str, Any] = {"SQLALCHEMY_URL": _sa_url(url, driver), "SKIPLOCK_URL": url}

    async def run() -> list[Any]:
        exec(compile(code, str(DOC), "exec"), env)
        transport = httpx.ASGITransport(app=env["api"])
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            replies = [await c.post("/orders", params={"item": i}) for i in ("tea", "jam")]
        await env["q"].close()
        await env["engine"].dispose()
        return replies

    try:
        replies = asyncio.run(run())
        assert [r.status_code for r in replies] == [200, 200]
        bodies = [r.json() for r in replies]
        jobs = q.claim(queues="orders", limit=5)
        assert sorted(j.payload["order"] for j in jobs) == sorted(b["order"] for b in bodies)
        assert sorted(j.id for j in jobs) == sorted(b["job"] for b in bodies)
    finally:
        with q.transaction() as tx:
            tx.execute("DROP TABLE IF EXISTS app_orders")
        q.close()


def test_an_async_task_deferred_and_run_by_the_async_worker(make_queue: Any, url: str) -> None:
    table = str(make_queue().table)
    app = skiplock.App(url, table=table)
    seen: list[str] = []

    @app.task(queue="email")
    async def send_welcome(address: str) -> str:
        await asyncio.sleep(0)
        seen.append(address)
        return address.upper()

    async def run() -> int:
        job_id = await send_welcome.defer_async("ada@example.com")
        worker = skiplock.AsyncWorker(
            app.async_queue, app.handle_async, queues=["email"], poll_interval=0.05
        )
        async with worker:
            for _ in range(600):
                record = await app.async_queue.get(job_id)
                if record is not None and record.status == "done":
                    break
                await asyncio.sleep(0.05)
        # the sync Queue the worker made from the AsyncQueue is closed with it ...
        assert worker.queue is not app.async_queue
        with pytest.raises(skiplock.ConfigurationError, match="closed"):
            worker.queue.stats()
        # ... and the AsyncQueue, the caller's, is not
        assert (await app.async_queue.stats()).done >= 1
        await app.async_queue.close()
        return job_id

    job_id = asyncio.run(run())
    record = skiplock.connect(url, table=table).get(job_id)
    assert record is not None and (record.status, record.result) == ("done", "ADA@EXAMPLE.COM")
    assert seen == ["ada@example.com"]


def test_async_worker_refuses_what_is_no_queue(url: str) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="AsyncQueue"):
        skiplock.AsyncWorker(object(), lambda job: None)  # type: ignore[arg-type]


def test_a_sync_connection_on_the_async_queue_and_back_are_refused(
    queue: Any, url: str, api: str
) -> None:
    """Each API names the other for the other's connections, and writes nothing."""
    if api != "sync" or queue.dialect.async_in_thread:
        pytest.skip("the database's sync connections are the async queue's (in a thread)")
    sync_conn = queue.connection()

    async def run() -> None:
        aq = skiplock.connect_async(url, table=str(queue.table))
        try:
            with pytest.raises(skiplock.ConfigurationError, match=r"skiplock\.Queue"):
                await aq.enqueue("x", conn=sync_conn)
            with pytest.raises(skiplock.ConfigurationError, match="AsyncQueue must be"):
                await aq.claim(conn=object())
            own = await aq.dialect.connect_async()
            try:
                with pytest.raises(skiplock.ConfigurationError, match="connect_async"):
                    queue.enqueue("y", conn=own.connection)
            finally:
                await own.close()
        finally:
            await aq.close()

    try:
        asyncio.run(run())
    finally:
        sync_conn.close()
    assert queue.stats().pending == 0
