"""The dashboard over HTTP (in process, Starlette's test client), on every backend: its
pages and JSON API, /metrics, mounting under a path, and its security: HTTP Basic on
every path, CSRF on every action, read-only mode, escaping, no password anywhere, and the
loopback-only default of ``skiplock web``. The browser tests are test_web_browser.py."""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

import skiplock
from skiplock.cli import main
from skiplock.errors import ConfigurationError
from skiplock.web import check_host, create_app

HOST = "http://127.0.0.1:8089"


def client(app: Any, **kwargs: Any) -> TestClient:
    return TestClient(app, base_url=HOST, **kwargs)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, "no action form on the page"
    return found.group(1)


def failed_job(q: skiplock.Queue, payload: Any = None, error: str = "boom", **kw: Any) -> int:
    job_id = q.enqueue({"n": 1} if payload is None else payload, **kw)
    (job,) = q.claim(queues=kw.get("queue", "default"))
    assert job.id == job_id
    q.fail(job, error, final=True)
    return job_id


# -- pages and API ----------------------------------------------------------------------


def test_pages_show_queues_jobs_and_a_jobs_record(queue: skiplock.Queue) -> None:
    queue.enqueue({"task": "app.mail", "args": ["ada@example.com"]}, queue="mail")
    queue.enqueue({"task": "app.pdf"}, queue="pdf", delay=3600)
    failed = failed_job(queue, {"task": "app.mail"}, "Traceback (most recent call last):\n  x")
    queue.register_worker("w1", host="box-1", pid=77, queues=["mail"], concurrency=2, interval=5)
    c = client(create_app(queue))
    home = c.get("/")
    assert home.status_code == 200
    assert re.search(r">mail</a>.*?<td class=\"n\"><a[^>]*>1</a>", home.text, re.S)
    assert 'href="/jobs?queue=mail&amp;status=failed"' not in home.text  # mail: none failed
    assert 'href="/jobs?queue=default&amp;status=failed">1</a>' in home.text
    jobs = c.get("/jobs", params={"task": "app.mail"}).text
    assert f'href="/jobs/{failed}"' in jobs and "app.pdf" not in jobs
    assert f'action="/jobs/{failed}/retry"' in jobs
    record = c.get(f"/jobs/{failed}").text
    assert "1 of 5" in record and "Traceback (most recent call last):" in record
    assert "box-1" in c.get("/workers").text
    assert c.get("/jobs/999999").status_code == 404
    assert c.get("/jobs", params={"status": "nonsense"}).status_code == 400


def test_jobs_are_keyset_paged_newest_first(queue: skiplock.Queue) -> None:
    ids = queue.enqueue_many([{"n": i} for i in range(60)])
    c = client(create_app(queue))
    first = c.get("/jobs").text
    shown = [int(i) for i in re.findall(r'<tr id="job-(\d+)">', first)]
    assert shown == ids[::-1][:50]
    more = re.search(r'id="next" href="([^"]+)"', first)
    assert more is not None
    second = c.get(more.group(1).replace("&amp;", "&")).text
    assert [int(i) for i in re.findall(r'<tr id="job-(\d+)">', second)] == ids[::-1][50:]
    api = c.get("/api/jobs", params={"limit": 10}).json()
    assert [j["id"] for j in api["jobs"]] == ids[::-1][:10] and api["next_before"] == ids[-10]


def test_the_json_api_reads_and_acts(queue: skiplock.Queue) -> None:
    failed = failed_job(queue)
    pending = queue.enqueue({"n": 2})
    c = client(create_app(queue))
    (q,) = c.get("/api/queues").json()["queues"]
    assert (q["queue"], q["pending"], q["failed_recent"]) == ("default", 1, 1)
    record = c.get(f"/api/jobs/{failed}").json()
    assert (record["status"], record["last_error"], record["attempt"]) == ("failed", "boom", 1)
    assert c.get("/api/jobs/999999").status_code == 404
    act = {"X-Skiplock-Action": "1"}
    r = c.post(f"/api/jobs/{failed}/retry", headers=act)
    assert r.status_code == 200 and r.json() == {"retried": True, "status": "pending"}
    assert c.post(f"/api/jobs/{pending}/retry", headers=act).status_code == 409
    r = c.post(f"/api/jobs/{pending}/cancel", headers=act)
    assert r.json()["status"] == "cancelled"
    assert queue.get(pending).status == "cancelled"  # type: ignore[union-attr]
    assert c.post("/api/jobs/999999/cancel", headers=act).status_code == 404


def test_metrics_read_the_database_and_are_cached_for_a_second(queue: skiplock.Queue) -> None:
    queue.enqueue({"n": 1}, queue='we"ird')
    failed_job(queue, queue="other")
    queue.register_worker("w1", host="h", pid=1, queues=["other"], concurrency=1, interval=5)
    c = client(create_app(queue))
    text = c.get("/metrics").text
    assert 'skiplock_jobs{queue="we\\"ird",status="pending"} 1' in text
    assert 'skiplock_jobs_finished_recent{queue="other",status="failed"} 1' in text
    assert re.search(r'skiplock_oldest_pending_age_seconds\{queue="we\\"ird"\} \d', text)
    assert 'skiplock_workers{state="alive"} 1' in text
    queue.enqueue({"n": 2}, queue='we"ird')
    assert c.get("/metrics").text == text  # within the second: the cached answer
    time.sleep(1.05)
    assert 'skiplock_jobs{queue="we\\"ird",status="pending"} 2' in c.get("/metrics").text


def test_mounted_under_a_path_in_starlette_and_fastapi(queue: skiplock.Queue) -> None:
    job_id = failed_job(queue)
    host = Starlette(routes=[Mount("/ops/skiplock", app=create_app(queue))])
    c = client(host)
    page = c.get(f"/ops/skiplock/jobs/{job_id}").text
    assert f'action="/ops/skiplock/jobs/{job_id}/retry"' in page
    assert 'href="/ops/skiplock/workers"' in page
    r = c.post(
        f"/ops/skiplock/jobs/{job_id}/retry", data={"csrf": csrf_of(page)}, follow_redirects=False
    )
    assert (
        r.status_code == 303
        and r.headers["location"] == f"/ops/skiplock/jobs/{job_id}?notice=retried"
    )
    assert queue.get(job_id).status == "pending"  # type: ignore[union-attr]
    fastapi = pytest.importorskip("fastapi")
    api = fastapi.FastAPI()
    api.mount("/skiplock", create_app(queue))
    assert client(api).get("/skiplock/api/queues").status_code == 200


def test_an_async_queue_or_a_url_makes_the_apps_own_queue(queue: skiplock.Queue, url: str) -> None:
    job_id = queue.enqueue({"n": 1})
    for source in (skiplock.connect_async(url, table=str(queue.table)), url):
        app = create_app(source, table=None if not isinstance(source, str) else str(queue.table))
        with client(app) as c:  # its lifespan closes the queue it made
            assert c.get(f"/api/jobs/{job_id}").json()["id"] == job_id
    with pytest.raises(ConfigurationError):
        create_app(queue, table="other")
    with pytest.raises(ConfigurationError):
        create_app(42)  # type: ignore[arg-type]


# -- security ---------------------------------------------------------------------------

PATHS = ["/", "/jobs", "/jobs/1", "/workers", "/periodic", "/metrics", "/api/queues",
         "/api/jobs", "/api/jobs/1", "/api/workers", "/no-such-page"]  # fmt: skip


def test_with_auth_every_path_wants_credentials(queue: skiplock.Queue) -> None:
    job_id = queue.enqueue({"n": 1})
    c = client(create_app(queue, auth="ops:s3cret-pw"))
    for path in PATHS:
        r = c.get(path)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"].startswith('Basic realm="skiplock"'), path
        assert c.get(path, auth=("ops", "wrong")).status_code == 401, path
        assert c.get(path, auth=("opsx", "s3cret-pw")).status_code == 401, path
    for action in ("retry", "cancel"):
        r = c.post(f"/api/jobs/{job_id}/{action}", headers={"X-Skiplock-Action": "1"})
        assert r.status_code == 401
    assert c.get("/", headers={"Authorization": "Basic !!notbase64"}).status_code == 401
    assert queue.get(job_id).status == "pending"  # type: ignore[union-attr]
    ok = client(create_app(queue, auth=("ops", "s3cret-pw")))
    for path in ("/", "/jobs", f"/jobs/{job_id}", "/workers", "/periodic", "/metrics"):
        assert ok.get(path, auth=("ops", "s3cret-pw")).status_code == 200, path
    with pytest.raises(ConfigurationError):
        create_app(queue, auth="no-colon")


def test_an_action_needs_its_csrf_token_and_a_post(queue: skiplock.Queue) -> None:
    job_id = failed_job(queue)
    app = create_app(queue)
    c = client(app)
    page = c.get(f"/jobs/{job_id}").text
    token = csrf_of(page)
    url = f"/jobs/{job_id}/retry"
    # a cross-site form: no token (the cookie is SameSite=Strict, but say it came along)
    assert c.post(url, data={}).status_code == 403
    assert c.post(url, data={"csrf": "forged." + "0" * 64}).status_code == 403
    # another server's token, or this token with another browser's cookie
    other = client(create_app(queue))
    assert c.post(url, data={"csrf": csrf_of(other.get(f"/jobs/{job_id}").text)}).status_code == 403
    assert other.post(url, data={"csrf": token}).status_code == 403
    # the right token from a page of another site (the browser names it in Origin)
    evil = {"Origin": "https://evil.example"}
    assert c.post(url, data={"csrf": token}, headers=evil).status_code == 403
    assert c.post(url, data={"csrf": token}, headers={"Origin": "null"}).status_code == 403
    assert (
        c.post(url, data={"csrf": token}, headers={"Referer": "https://evil.example/x"}).status_code
        == 403
    )
    # an action URL is never a GET
    assert c.get(url).status_code == 405
    assert c.get(f"/api/jobs/{job_id}/retry").status_code == 405
    # the JSON API: its header, which a form cannot send
    assert c.post(f"/api/jobs/{job_id}/retry").status_code == 403
    assert (
        c.post(f"/api/jobs/{job_id}/retry", headers={**evil, "X-Skiplock-Action": "1"}).status_code
        == 403
    )
    assert queue.get(job_id).status == "failed"  # type: ignore[union-attr]
    # behind a proxy that rewrites Host, the proxy's X-Forwarded-Host names the site
    proxied = {"Origin": "https://ops.example.com", "X-Forwarded-Host": "ops.example.com"}
    r = c.post(url, data={"csrf": token}, headers=proxied, follow_redirects=False)
    assert r.status_code == 303
    assert queue.get(job_id).status == "pending"  # type: ignore[union-attr]
    queue.fail(queue.claim()[0], "again", final=True)
    r = c.post(url, data={"csrf": token}, headers={"Origin": HOST}, follow_redirects=False)
    assert r.status_code == 303
    assert queue.get(job_id).status == "pending"  # type: ignore[union-attr]


def test_a_queue_is_paused_and_resumed_from_its_page_and_the_api(queue: skiplock.Queue) -> None:
    queue.enqueue({"n": 1}, queue="mail")
    c = client(create_app(queue))
    home = c.get("/").text
    assert re.search(r'name="queue" value="mail"><button class="pause"', home)
    token = csrf_of(home)
    # a form without its token, a GET, the API without its header: refused, nothing paused
    assert c.post("/queues/pause", data={"queue": "mail"}).status_code == 403
    assert c.get("/queues/pause").status_code == 405
    assert c.post("/api/queues/pause", params={"queue": "mail"}).status_code == 403
    assert queue.paused() == set()
    r = c.post("/queues/pause", data={"csrf": token, "queue": "mail"}, follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, "/?notice=paused")
    assert queue.paused() == {"mail"}
    home = c.get("/?notice=paused").text
    assert "The queue is paused" in home and '<b class="err">paused</b>' in home
    assert re.search(r'name="queue" value="mail"><button class="resume"', home)
    assert queue.claim(queues="mail") == []  # the claim skips it
    # the API, for a queue that holds no job: it is listed, paused
    act = {"X-Skiplock-Action": "1"}
    r = c.post("/api/queues/pause", params={"queue": "empty <q>"}, headers=act)
    assert r.json() == {"queue": "empty <q>", "paused": True}
    listed = {q["queue"]: q["paused"] for q in c.get("/api/queues").json()["queues"]}
    assert listed == {"mail": True, "empty <q>": True}
    assert "empty &lt;q&gt;" in c.get("/").text
    assert (
        c.post("/api/queues/resume", params={"queue": "empty <q>"}, headers=act).status_code == 200
    )
    assert c.post("/api/queues/pause", headers=act).status_code == 400  # no queue named
    r = c.post("/queues/resume", data={"csrf": token, "queue": "mail"}, follow_redirects=False)
    assert r.status_code == 303 and queue.paused() == set()
    assert [j.queue for j in queue.claim(queues="mail")] == ["mail"]


def test_read_only_hides_and_refuses_every_action(queue: skiplock.Queue) -> None:
    failed = failed_job(queue)
    pending = queue.enqueue({"n": 2})
    c = client(create_app(queue, read_only=True))
    for page in ("/", "/jobs", f"/jobs/{failed}", f"/jobs/{pending}"):
        text = c.get(page).text
        assert 'method="post"' not in text and "Retry" not in text and "Cancel" not in text
        assert "Pause" not in text
    assert "read-only" in c.get("/").text
    token = csrf_of(client(create_app(queue)).get(f"/jobs/{failed}").text)
    assert c.post(f"/jobs/{failed}/retry", data={"csrf": token}).status_code == 403
    assert c.post(f"/jobs/{pending}/cancel", data={"csrf": token}).status_code == 403
    act = {"X-Skiplock-Action": "1"}
    assert c.post(f"/api/jobs/{failed}/retry", headers=act).status_code == 403
    assert c.post(f"/api/jobs/{pending}/cancel", headers=act).status_code == 403
    assert c.post("/queues/pause", data={"csrf": token, "queue": "default"}).status_code == 403
    assert c.post("/api/queues/pause", params={"queue": "default"}, headers=act).status_code == 403
    assert queue.paused() == set()
    assert queue.get(failed).status == "failed"  # type: ignore[union-attr]
    assert queue.get(pending).status == "pending"  # type: ignore[union-attr]


HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def test_text_from_the_database_is_escaped(queue: skiplock.Queue) -> None:
    job_id = failed_job(
        queue, {"task": HOSTILE, "note": HOSTILE}, f"ValueError: {HOSTILE}", queue=HOSTILE[:60]
    )
    queue.register_worker("w1", host=HOSTILE[:60], pid=1, queues=[HOSTILE[:60]], concurrency=1,
                          interval=5)  # fmt: skip
    c = client(create_app(queue))
    for path in ("/", "/jobs", f"/jobs/{job_id}", "/workers", f"/jobs?queue={HOSTILE[:60]}"):
        r = c.get(path)
        assert r.status_code == 200, path
        assert "<script>" not in r.text and "<img" not in r.text, path
        assert "&lt;script&gt;" in r.text, path
        assert "script-src" not in r.headers["content-security-policy"]  # default-src 'none'
        assert r.headers["content-security-policy"].startswith("default-src 'none'")
        assert r.headers["x-content-type-options"] == "nosniff"


def test_no_password_of_the_database_url_appears(
    queue: skiplock.Queue, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    password = "Pw-Not-To-Be-Seen-42"
    user, rest = url.split("://", 1)[1].split("@", 1)
    secret_url = f"{url.split('://')[0]}://{user.split(':')[0]}:{password}@{rest}"
    caplog.set_level(logging.DEBUG)
    app = create_app(secret_url, table=str(queue.table))
    c = client(app, raise_server_exceptions=False)
    texts = []
    for path in ("/", "/jobs", "/jobs/1", "/workers", "/periodic", "/metrics", "/api/queues"):
        r = c.get(path)
        # PostgreSQL here trusts any password (the pages work); the others refuse it, and
        # the pages show the database error
        assert r.status_code in (200, 404, 503), (path, r.status_code)
        texts.append(r.text)
    assert all(password not in t for t in texts)
    assert password not in caplog.text
    refused = [t for t in texts if "could not connect" in t]
    # the error page names the problem, with the URL's password masked
    assert all(":***@" in t for t in refused)
    assert refused or "postgresql" in url  # only PostgreSQL (trust) takes any password


def test_skiplock_web_listens_on_loopback_unless_given_a_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_host(host, None)
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        with pytest.raises(ConfigurationError, match="--auth"):
            check_host(host, None)
        check_host(host, "ops:pw")
    url = "postgresql://u:TopSecret99@127.0.0.1:1/db"
    assert main(["web", "--url", url, "--host", "0.0.0.0"]) == 3
    err = capsys.readouterr().err
    assert "--auth" in err and "TopSecret99" not in err


def test_skiplock_workers_lists_the_live_workers(
    queue: skiplock.Queue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    table = str(queue.table)
    assert main(["workers", "--url", url, "--table", table]) == 0
    assert capsys.readouterr().out.strip() == "no workers"
    queue.register_worker("w1", host="box-1", pid=4242, queues=["a", "b"], concurrency=3,
                          interval=5)  # fmt: skip
    queue.beat_worker("w1", in_flight=2)
    assert main(["workers", "--url", url, "--table", table]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["state", "host", "pid"]
    assert out[1].split()[:5] == ["alive", "box-1", "4242", "2", "3"] and out[1].endswith("a,b")
    assert main(["workers", "--url", url, "--table", table, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["host"], row["in_flight"], row["gone"], row["queues"]) == (
        "box-1",
        2,
        False,
        ["a", "b"],
    )


def test_skiplock_web_serves_the_dashboard(queue: skiplock.Queue, url: str) -> None:
    """The command as a user runs it: uvicorn on the port asked, the password (PostgreSQL
    here trusts any) in neither its output nor its pages."""
    import socket
    import subprocess
    import sys

    import httpx

    job_id = queue.enqueue({"task": "cli.web"})
    user_part = url.split("://", 1)[1].split("@", 1)[0] if "@" in url else ":"
    if url.startswith("postgresql://") and ":" not in user_part:  # trust: any password works
        url = url.replace("@", ":Cli-Secret-77@", 1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skiplock",
            "web",
            "--url",
            url,
            "--table",
            str(queue.table),
            "--port",
            str(port),
            "--auth",
            "ops:pw",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        end = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/jobs/{job_id}", auth=("ops", "pw"))
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < end, "skiplock web did not start"
                time.sleep(0.1)
        assert r.status_code == 200 and "cli.web" in r.text
        assert httpx.get(f"http://127.0.0.1:{port}/metrics").status_code == 401
        assert "Cli-Secret-77" not in r.text
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/" in out and "Cli-Secret-77" not in out
