"""The dashboard in a real browser, on every backend: Debian's headless ``chromium`` driven
by Playwright's Python API (never ``playwright install``: its download cannot work here),
one browser for the module, the application served by uvicorn on a free loopback port.

Clicking Retry and Cancel changes the database; a job whose payload, error and queue name
hold ``<script>`` and an ``onerror`` image runs no script and shows the text; a form
posted from another site is refused. Without chromium or Playwright these tests skip;
``SKIPLOCK_REQUIRE=chromium`` (CI) turns that into a failure."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import required_by_name

import skiplock

CHROMIUM = os.environ.get("SKIPLOCK_CHROMIUM", "/usr/bin/chromium")


def _unavailable(reason: str) -> None:
    if required_by_name("chromium"):
        pytest.fail(f"{reason} (SKIPLOCK_REQUIRE names chromium)")
    pytest.skip(reason)


#: one process runs them all, so chromium starts once
pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium for this module (each test opens a context of its own).
    Module scope, not session: while Playwright's sync API runs, its event loop is the
    thread's running loop, and a later test's ``asyncio.run`` in the same process would
    fail ("cannot be called from a running event loop")."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install -e '.[test]'")
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"no browser at {CHROMIUM}: apt-get install -y chromium")
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        _unavailable("uvicorn is not installed: pip install -e '.[web]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Served:
    """An ASGI application served by uvicorn in a thread on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        end = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < end, "uvicorn did not start"
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def page(browser: Any, queue: skiplock.Queue) -> Iterator[Any]:
    """A fresh browser page; ``page.base`` is the dashboard of the test's queue."""
    from skiplock.web import create_app

    served = Served(create_app(queue))
    context = browser.new_context()
    p = context.new_page()
    p.set_default_timeout(10_000)
    p.base = served.url
    try:
        yield p
    finally:
        context.close()
        served.close()


def _fail(q: skiplock.Queue, payload: Any, error: str, **kw: Any) -> int:
    job_id = q.enqueue(payload, **kw)
    (job,) = q.claim(queues=kw.get("queue", "default"))
    q.fail(job, error, final=True)
    return job_id


def test_clicking_retry_and_cancel_changes_the_database(page: Any, queue: skiplock.Queue) -> None:
    failed = _fail(queue, {"task": "app.mail"}, "Traceback (most recent call last):\n  boom")
    pending = queue.enqueue({"task": "app.pdf"})
    page.goto(f"{page.base}/jobs?status=failed")
    page.locator(f"#job-{failed} button.retry").click()
    page.wait_for_url(f"**/jobs/{failed}?notice=retried")
    assert "pending again" in page.locator(".notice").inner_text()
    assert queue.get(failed).status == "pending"  # type: ignore[union-attr]

    page.goto(f"{page.base}/jobs/{pending}")
    page.locator("button.cancel").click()
    page.wait_for_url(f"**/jobs/{pending}?notice=cancelled")
    assert queue.get(pending).status == "cancelled"  # type: ignore[union-attr]
    # the list links each job to its page
    page.goto(f"{page.base}/jobs")
    page.locator(f"#job-{pending} a").first.click()
    page.wait_for_url(f"**/jobs/{pending}")
    assert "cancelled" in page.locator("h1").inner_text()


def test_clicking_pause_and_resume_changes_the_database(page: Any, queue: skiplock.Queue) -> None:
    queue.enqueue({"task": "app.mail"}, queue="mail")
    page.goto(page.base + "/")
    row = page.locator("#queues tr", has_text="mail")
    row.locator("button.pause").click()
    page.wait_for_url("**/?notice=paused")
    assert queue.paused() == {"mail"}
    assert "paused" in page.locator("#queues tr", has_text="mail").inner_text()
    page.locator("#queues tr", has_text="mail").locator("button.resume").click()
    page.wait_for_url("**/?notice=resumed")
    assert queue.paused() == set()


def test_a_job_shows_its_headers_and_progress(page: Any, queue: skiplock.Queue) -> None:
    job_id = queue.enqueue({"n": 1}, headers={"request-id": "<b>r-7</b>"})
    (job,) = queue.claim()
    queue.set_progress(job, {"step": "<i>2 of 3</i>"})
    page.goto(f"{page.base}/jobs/{job_id}")
    assert "request-id: <b>r-7</b>" in page.locator("#headers").inner_text()
    assert "<i>2 of 3</i>" in page.locator("#progress").inner_text()
    assert page.locator("main b, main i").count() == 0  # text, not markup


HOSTILE = (
    "<script>window.__pwned = 1; document.title = 'pwned'</script>"
    '<img src=x onerror="window.__pwned = 2">'
)


def test_a_job_holding_script_runs_none(page: Any, queue: skiplock.Queue) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    job_id = _fail(
        queue, {"task": HOSTILE, "html": HOSTILE}, f"ValueError: {HOSTILE}", queue="<u>q</u>"
    )
    for path in ("/", "/jobs", f"/jobs/{job_id}", "/jobs?queue=%3Cu%3Eq%3C%2Fu%3E"):
        page.goto(page.base + path)
        # the markup stayed text: no element was made from it (whatever the CSP would do)
        assert page.locator("script").count() == 0, path
        assert page.locator("main img").count() == 0, path
        assert page.locator("main u").count() == 0, path
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        assert page.title() != "pwned"
    page.goto(f"{page.base}/jobs/{job_id}")
    assert HOSTILE in page.locator("#error").inner_text()
    assert json.dumps(HOSTILE) in page.locator("#payload").inner_text()  # as JSON text
    assert dialogs == []


def test_a_form_posted_from_another_site_is_refused(
    page: Any, browser: Any, queue: skiplock.Queue
) -> None:
    failed = _fail(queue, {"n": 1}, "boom")
    page.goto(f"{page.base}/jobs/{failed}")  # the browser holds the dashboard's cookie
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    # another site's page, in the same browser, posts the form (with a stolen token even)
    other = Served(_evil_site(f"{page.base}/jobs/{failed}/retry", token))
    try:
        evil = page.context.new_page()
        evil.goto(other.url)
        with evil.expect_navigation():
            evil.locator("button").click()
        assert "refused" in evil.content() or "CSRF" in evil.content()
    finally:
        other.close()
    assert queue.get(failed).status == "failed"  # type: ignore[union-attr]


def _evil_site(action: str, token: str) -> Any:
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    html = (
        f'<form method="post" action="{action}"><input type="hidden" name="csrf" '
        f'value="{token}"><button type="submit">win a prize</button></form>'
    )

    async def home(request: Any) -> HTMLResponse:
        return HTMLResponse(html)

    return Starlette(routes=[Route("/", home)])
