"""The dashboard's inputs from outside: the Host header (a page whose name rebinds to
127.0.0.1 must not read a dashboard served without a password), the port of ``skiplock
web``, and job ids too long to be one in every URL that takes one."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from starlette.testclient import TestClient

import skiplock
from skiplock.cli import main
from skiplock.errors import ConfigurationError
from skiplock.web import check_host, create_app

from .test_web import HOST, client, csrf_of, failed_job

LOOPBACK = ("localhost", "localhost:8089", "127.0.0.1", "127.0.0.1:8089", "[::1]", "[::1]:8089")
FOREIGN = (
    "attacker.test",
    "attacker.test:8089",
    "localhost.attacker.test",
    "127.0.0.1.attacker.test",
    "[::2]:8089",
    "127.0.0.1:80x",
    "",
)


def _get(c: TestClient, path: str, host: str, **kwargs: Any) -> int:
    return c.get(path, headers={"Host": host}, **kwargs).status_code


def test_a_dashboard_without_a_password_answers_only_loopback_names(
    queue: skiplock.Queue,
) -> None:
    job_id = queue.enqueue({"secret": "payload"})
    hosts = check_host("127.0.0.1", None)
    c = client(create_app(queue, allowed_hosts=hosts))
    for host in LOOPBACK:
        assert _get(c, f"/api/jobs/{job_id}", host) == 200, host
    for host in FOREIGN:
        r = c.get(f"/api/jobs/{job_id}", headers={"Host": host})
        assert r.status_code == 400, host
        assert "payload" not in r.text and "Host" in r.text
    # an action from the rebound page: its Origin and Host agree, and still it is refused
    evil = {"Host": "attacker.test:8089", "Origin": "http://attacker.test:8089"}
    r = c.post(f"/api/jobs/{job_id}/cancel", headers={**evil, "X-Skiplock-Action": "1"})
    assert r.status_code == 400
    assert queue.get(job_id).status == "pending"  # type: ignore[union-attr]
    # an address of its own loopback interface is its name too
    assert check_host("127.0.0.2", None) == ("localhost", "127.0.0.1", "[::1]", "127.0.0.2")
    assert "[::1]" in check_host("::1", None)  # type: ignore[operator]


def test_with_a_password_allowed_hosts_names_what_it_answers(queue: skiplock.Queue) -> None:
    hosts = check_host("0.0.0.0", "ops:pw", allowed_hosts="dash.example.com,.ops.example")
    assert hosts == ("dash.example.com", ".ops.example")
    c = client(create_app(queue, auth="ops:pw", allowed_hosts=hosts))
    for host in ("dash.example.com", "DASH.example.com:443", "ops.example", "a.b.ops.example"):
        assert _get(c, "/api/queues", host, auth=("ops", "pw")) == 200, host
    for host in ("example.com", "evil-dash.example.com", "xops.example", "localhost"):
        assert _get(c, "/api/queues", host, auth=("ops", "pw")) == 400, host
    # with a password and no list, any Host (as before): the password is the wall
    assert check_host("0.0.0.0", "ops:pw") is None
    anyhost = client(create_app(queue, auth="ops:pw"))
    assert _get(anyhost, "/api/queues", "attacker.test", auth=("ops", "pw")) == 200
    for bad in ("", "a b", "dash.example.com:8089", "http://x", ["ok.example", 3]):
        with pytest.raises(ConfigurationError, match="allowed_hosts"):
            create_app(queue, allowed_hosts=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="--auth"):
        check_host("127.0.0.1", None, allowed_hosts=["dash.example.com"])


def test_skiplock_web_refuses_a_port_and_a_host_list_it_cannot_honour(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "postgresql://u:TopSecret99@127.0.0.1:1/db"
    for port in (0, 70000, -1, 65536):
        with pytest.raises(ConfigurationError, match="port"):
            check_host("127.0.0.1", None, port=port)
    assert main(["web", "--url", url, "--allowed-hosts", "dash.example.com"]) == 3
    assert "--auth" in capsys.readouterr().err
    # in a process of its own: the old code listened (on 70000 mod 65536) and never ended
    done = subprocess.run(
        [sys.executable, "-m", "skiplock", "web", "--url", url, "--port", "70000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert "port" in done.stderr and "70000" in done.stderr
    assert "TopSecret99" not in done.stdout + done.stderr


def test_skiplock_web_without_a_password_refuses_a_rebound_name(
    queue: skiplock.Queue, url: str
) -> None:
    """The command as a user runs it, reached by a name that resolves to 127.0.0.1."""
    import httpx

    job_id = queue.enqueue({"task": "rebinding"})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "skiplock", "web", "--url", url]
    command += ["--table", str(queue.table), "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    page = f"http://127.0.0.1:{port}/api/jobs/{job_id}"
    try:
        end = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(page)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < end, "skiplock web did not start"
                time.sleep(0.1)
        assert r.status_code == 200 and "rebinding" in r.text
        assert httpx.get(page, headers={"Host": f"localhost:{port}"}).status_code == 200
        rebound = httpx.get(page, headers={"Host": f"attacker.test:{port}"})
        assert rebound.status_code == 400 and "rebinding" not in rebound.text
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_a_job_id_too_long_to_be_one_is_a_bad_request(queue: skiplock.Queue) -> None:
    job_id = failed_job(queue)
    c = client(create_app(queue), raise_server_exceptions=False)
    token = csrf_of(c.get(f"/jobs/{job_id}").text)
    action = {"X-Skiplock-Action": "1", "Origin": HOST}
    for digits in (20, 5000):
        long_id = "9" * digits
        assert c.get(f"/jobs/{long_id}").status_code == 400, digits
        assert c.get(f"/api/jobs/{long_id}").status_code == 400, digits
        for verb in ("retry", "cancel"):
            form = c.post(f"/jobs/{long_id}/{verb}", data={"csrf": token}, headers=action)
            assert form.status_code == 400, (verb, digits)
            assert c.post(f"/api/jobs/{long_id}/{verb}", headers=action).status_code == 400
    assert "whole number" in c.get(f"/api/jobs/{'1' * 5000}").json()["error"]
    assert c.get("/jobs/abc").status_code == 404
    assert c.get(f"/jobs/{job_id}").status_code == 200
    assert c.get(f"/api/jobs/{job_id}").json()["status"] == "failed"


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=-1",
        "limit=1001",
        "limit=%D9%A1",
        "limit=1_0",
        "limit=+5",
        "before=%D9%A1",
        "before=0",
        "before=-3",
        "before=1e3",
        f"before={'9' * 20}",
        "status=nope",
    ],
)
def test_a_bad_list_parameter_is_a_bad_request(queue: skiplock.Queue, query: str) -> None:
    # never read as another number or left to a default: `limit=0` once meant 50 and
    # `before=%D9%A1` (an Arabic-Indic one, which int() reads) meant 1
    queue.enqueue({"n": 1})
    c = client(create_app(queue), raise_server_exceptions=False)
    r = c.get(f"/api/jobs?{query}")
    assert r.status_code == 400, (query, r.text)
    assert "error" in r.json()
    if not query.startswith("limit"):  # the page takes no limit
        assert c.get(f"/jobs?{query}").status_code == 400


def test_good_list_parameters_page_through_every_job(queue: skiplock.Queue) -> None:
    ids = [queue.enqueue({"n": n}) for n in range(5)]
    c = client(create_app(queue))
    seen: list[int] = []
    before = ""
    while True:
        page = c.get(f"/api/jobs?limit=2{before}").json()
        seen += [j["id"] for j in page["jobs"]]
        if page["next_before"] is None:
            break
        before = f"&before={page['next_before']}"
    assert sorted(seen) == sorted(ids)
    assert c.get("/api/jobs?limit=&before=").status_code == 200
