"""The dashboard's ASGI application: :func:`create_app`. Pages are rendered by Jinja2
with autoescaping, with no script; actions are POSTs guarded against cross-site requests
(docs/dashboard.md, "Security").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, FunctionLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from .._core.job import STATUSES, Job, record
from ..errors import ConfigurationError, SkiplockError
from ..maintenance import retry_failed
from ..queue import DEFAULT_TABLE, Queue
from ..queue_async import AsyncQueue
from .metrics import MetricsCache

__all__ = ["create_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: jobs per page of ``/jobs``
PAGE = 50
#: the overview's window of finished jobs (seconds) and the most finished jobs it reads
WINDOW = 600.0
CAP = 100_000
CSRF_COOKIE = "skiplock_csrf"
ACTION_HEADER = "x-skiplock-action"
#: what a redirect after an action may say (by key: no text from the request is shown)
NOTICES = {
    "retried": "The job is pending again.",
    "not-retried": "Nothing was retried: only a failed job can be (or an active job holds "
    "its dedupe key).",
    "cancelled": "The job was cancelled.",
    "cancel-requested": "A cancel request was recorded: its worker stops it at its next "
    "heartbeat (at once on PostgreSQL).",
    "not-cancelled": "The job had finished already: nothing changed.",
    "paused": "The queue is paused: no worker claims its jobs until it is resumed; the "
    "running ones finish.",
    "resumed": "The queue is resumed: workers claim its jobs again.",
}
_SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def create_app(
    url_or_queue: str | Queue | AsyncQueue,
    *,
    table: str | None = None,
    auth: str | tuple[str, str] | None = None,
    read_only: bool = False,
    allowed_hosts: Iterable[str] | None = None,
) -> ASGIApp:
    """The dashboard as an ASGI application, to serve with uvicorn or mount
    (``app.mount("/skiplock", create_app(q))``).

    *url_or_queue*: a database URL (a queue on *table*, closed with the app), a
    :class:`~skiplock.Queue` (the caller closes it) or an :class:`~skiplock.AsyncQueue`.
    *auth*: ``"user:password"`` or a pair (HTTP Basic). *read_only*: actions refused (403).
    *allowed_hosts*: the ``Host`` names answered (``.example.com``: with subdomains), any
    other refused (400); None: any.
    """
    credentials = _credentials(auth)
    hosts = host_patterns(allowed_hosts)
    owned = not isinstance(url_or_queue, Queue)
    if isinstance(url_or_queue, Queue):
        if table is not None:
            raise ConfigurationError("table= is for a URL; a queue has its own table")
        queue = url_or_queue
    elif isinstance(url_or_queue, AsyncQueue):
        if table is not None:
            raise ConfigurationError("table= is for a URL; a queue has its own table")
        queue = url_or_queue.sync_queue()
    elif isinstance(url_or_queue, str):
        queue = Queue(url_or_queue, table=DEFAULT_TABLE if table is None else table)
    else:
        raise ConfigurationError(
            "create_app takes a database URL, a skiplock.Queue or a skiplock.AsyncQueue, "
            f"not {type(url_or_queue).__name__}"
        )
    board = Board(queue, read_only)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # served on its own (uvicorn runs the lifespan); mounted, the host app's runs instead
        yield
        if owned:
            await run_in_threadpool(queue.close)

    app = Starlette(
        routes=board.routes(),
        lifespan=lifespan,
        exception_handlers={SkiplockError: board.error},
    )
    return _Guard(app, credentials, board.origin_ok, hosts)


# -- the pages and the API ------------------------------------------------------------------


class Board:
    def __init__(self, queue: Queue, read_only: bool) -> None:
        self.queue = queue
        self.read_only = read_only
        self.secret = secrets.token_bytes(32)
        self.metrics = MetricsCache(queue, WINDOW, CAP)
        self.env = Environment(
            loader=FunctionLoader(_template),
            autoescape=select_autoescape(default=True, default_for_string=True),
            auto_reload=False,
        )
        self.env.filters["when"] = _when
        self.env.filters["age"] = _age
        self.env.filters["pretty"] = _pretty
        self.env.filters["compact"] = _compact
        self.env.filters["summary"] = _summary

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home, name="home"),
            Route("/jobs", self.jobs, name="jobs"),
            Route("/jobs/{job_id:skiplock_job_id}", self.job, name="job"),
            Route(
                "/jobs/{job_id:skiplock_job_id}/retry", self.retry, methods=["POST"], name="retry"
            ),
            Route(
                "/jobs/{job_id:skiplock_job_id}/cancel",
                self.cancel,
                methods=["POST"],
                name="cancel",
            ),
            # a queue's name is any text: it travels in the form (or the API's query), not
            # in the path
            Route("/queues/pause", self.pause, methods=["POST"], name="pause"),
            Route("/queues/resume", self.resume, methods=["POST"], name="resume"),
            Route("/workers", self.workers, name="workers"),
            Route("/periodic", self.periodic, name="periodic"),
            Route("/metrics", self.metrics_page, name="metrics"),
            Route("/api/queues", self.api_queues),
            Route("/api/jobs", self.api_jobs),
            Route("/api/jobs/{job_id:skiplock_job_id}", self.api_job),
            Route("/api/jobs/{job_id:skiplock_job_id}/retry", self.api_retry, methods=["POST"]),
            Route("/api/jobs/{job_id:skiplock_job_id}/cancel", self.api_cancel, methods=["POST"]),
            Route("/api/queues/pause", self.api_pause, methods=["POST"]),
            Route("/api/queues/resume", self.api_resume, methods=["POST"]),
            Route("/api/workers", self.api_workers),
        ]

    # -- rendering ----------------------------------------------------------------------

    def render(self, request: Request, name: str, status: int = 200, **values: Any) -> Response:
        nonce = request.cookies.get(CSRF_COOKIE, "")
        fresh = not _is_nonce(nonce)
        if fresh:
            nonce = secrets.token_urlsafe(24)
        base = _base(request)
        page = self.env.get_template(name).render(
            base=base,
            read_only=self.read_only,
            csrf=self._token(nonce),
            table=str(self.queue.table),
            path=request.url.path,
            **values,
        )
        response = HTMLResponse(page, status_code=status)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE,
                nonce,
                httponly=True,
                samesite="strict",
                path=base or "/",
                secure=request.url.scheme == "https",
            )
        return response

    def _token(self, nonce: str) -> str:
        mac = hmac.new(self.secret, nonce.encode(), hashlib.sha256).hexdigest()
        return f"{nonce}.{mac}"

    async def error(self, request: Request, exc: Exception) -> Response:
        """A database or configuration error's message (passwords masked), never a traceback."""
        status = 400 if isinstance(exc, ConfigurationError) else 503
        if request.url.path.startswith(_api_prefix(request)):
            return _json({"error": str(exc)}, status)
        return self.render(request, "error.html", status, message=str(exc))

    # -- pages ----------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        def read() -> tuple[Any, Any, Any]:
            q = self.queue
            return q.overview(window=WINDOW, cap=CAP), q.workers(), q.ticks()

        queues, workers, ticks = await run_in_threadpool(read)
        return self.render(
            request,
            "home.html",
            notice=NOTICES.get(request.query_params.get("notice", "")),
            queues=queues,
            alive=sum(not w.gone for w in workers),
            gone=sum(w.gone for w in workers),
            ticks=ticks,
            window_minutes=int(WINDOW // 60),
            cap=CAP,
        )

    async def jobs(self, request: Request) -> Response:
        wanted = _filters(request)
        jobs = await run_in_threadpool(self._list, wanted, PAGE)
        more = None
        if len(jobs) == PAGE:
            more = urlencode({**wanted.query(), "before": jobs[-1].id})
        return self.render(
            request,
            "jobs.html",
            jobs=jobs,
            wanted=wanted,
            statuses=STATUSES,
            more=more,
            task_of=_task,
        )

    async def job(self, request: Request) -> Response:
        job_id = _job_id(request)
        job = await run_in_threadpool(self.queue.get, job_id)
        if job is None:
            return self.render(request, "error.html", 404, message=f"There is no job {job_id}.")
        notice = NOTICES.get(request.query_params.get("notice", ""))
        return self.render(request, "job.html", job=job, task=_task(job), notice=notice)

    async def workers(self, request: Request) -> Response:
        workers = await run_in_threadpool(self.queue.workers)
        return self.render(request, "workers.html", workers=workers)

    async def periodic(self, request: Request) -> Response:
        ticks = await run_in_threadpool(self.queue.ticks)
        return self.render(request, "periodic.html", ticks=ticks)

    async def metrics_page(self, request: Request) -> Response:
        text = await run_in_threadpool(self.metrics.text)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    # -- actions (HTML forms) ---------------------------------------------------------------

    async def retry(self, request: Request) -> Response:
        job_id = _job_id(request)
        refused = await self._refuse_form(request)
        if refused is not None:
            return refused
        n = await run_in_threadpool(self._retry, job_id)
        return self._back(request, job_id, "retried" if n else "not-retried")

    async def cancel(self, request: Request) -> Response:
        job_id = _job_id(request)
        refused = await self._refuse_form(request)
        if refused is not None:
            return refused
        status = await run_in_threadpool(self.queue.cancel, job_id)
        if status is None:
            return self.render(request, "error.html", 404, message=f"There is no job {job_id}.")
        notice = {"cancelled": "cancelled", "running": "cancel-requested"}.get(
            status, "not-cancelled"
        )
        return self._back(request, job_id, notice)

    async def pause(self, request: Request) -> Response:
        return await self._pause_form(request, True)

    async def resume(self, request: Request) -> Response:
        return await self._pause_form(request, False)

    async def _pause_form(self, request: Request, paused: bool) -> Response:
        refused = await self._refuse_form(request)
        if refused is not None:
            return refused
        name = (await request.form()).get("queue")
        if not isinstance(name, str) or not name:
            return self.render(request, "error.html", 400, message="The form names no queue.")
        await run_in_threadpool(self.queue.pause if paused else self.queue.resume, name)
        notice = "paused" if paused else "resumed"
        return RedirectResponse(f"{_base(request)}/?notice={notice}", status_code=303)

    async def _refuse_form(self, request: Request) -> Response | None:
        if self.read_only:
            return _forbidden(request, "This dashboard is read-only.")
        form = await request.form()
        token = form.get("csrf")
        nonce = request.cookies.get(CSRF_COOKIE, "")
        if (
            not isinstance(token, str)
            or not _is_nonce(nonce)
            or not hmac.compare_digest(token.encode(), self._token(nonce).encode())
        ):
            return _forbidden(request, "The form's CSRF token is missing or wrong: reload the page")
        return None

    def _back(self, request: Request, job_id: int, notice: str) -> Response:
        base = _base(request)
        return RedirectResponse(f"{base}/jobs/{job_id}?notice={notice}", status_code=303)

    def _retry(self, job_id: int) -> int:
        return retry_failed(self.queue, ids=[job_id])

    def _list(self, wanted: Filters, limit: int) -> list[Job]:
        return self.queue.list_jobs(
            status=wanted.status,
            queue=wanted.queue,
            task=wanted.task,
            before_id=wanted.before,
            limit=limit,
        )

    # -- the JSON API -----------------------------------------------------------------------

    async def api_queues(self, request: Request) -> Response:
        queues = await run_in_threadpool(self.queue.overview, window=WINDOW, cap=CAP)
        return _json({"queues": [o.as_dict() for o in queues]})

    async def api_jobs(self, request: Request) -> Response:
        wanted = _filters(request)
        limit = _int(request.query_params.get("limit"), "limit")
        limit = PAGE if limit is None else limit
        jobs = await run_in_threadpool(self._list, wanted, limit)
        after = jobs[-1].id if len(jobs) == limit else None
        return _json({"jobs": [record(j) for j in jobs], "next_before": after})

    async def api_job(self, request: Request) -> Response:
        job = await run_in_threadpool(self.queue.get, _job_id(request))
        if job is None:
            return _json({"error": "no such job"}, 404)
        return _json(record(job))

    async def api_retry(self, request: Request) -> Response:
        job_id = _job_id(request)
        refused = self._refuse_api(request)
        if refused is not None:
            return refused
        n = await run_in_threadpool(self._retry, job_id)
        job = await run_in_threadpool(self.queue.get, job_id)
        if job is None:
            return _json({"error": "no such job"}, 404)
        return _json({"retried": bool(n), "status": job.status}, 200 if n else 409)

    async def api_cancel(self, request: Request) -> Response:
        job_id = _job_id(request)
        refused = self._refuse_api(request)
        if refused is not None:
            return refused
        status = await run_in_threadpool(self.queue.cancel, job_id)
        if status is None:
            return _json({"error": "no such job"}, 404)
        return _json({"status": status, "cancel_requested": status == "running"})

    async def api_pause(self, request: Request) -> Response:
        return await self._pause_api(request, True)

    async def api_resume(self, request: Request) -> Response:
        return await self._pause_api(request, False)

    async def _pause_api(self, request: Request, paused: bool) -> Response:
        refused = self._refuse_api(request)
        if refused is not None:
            return refused
        name = request.query_params.get("queue")
        if not name:
            return _json({"error": "name the queue: ?queue=NAME"}, 400)
        await run_in_threadpool(self.queue.pause if paused else self.queue.resume, name)
        return _json({"queue": name, "paused": paused})

    async def api_workers(self, request: Request) -> Response:
        workers = await run_in_threadpool(self.queue.workers)
        return _json({"workers": [w.as_dict() for w in workers]})

    def _refuse_api(self, request: Request) -> Response | None:
        if self.read_only:
            return _json({"error": "this dashboard is read-only"}, 403)
        if request.headers.get(ACTION_HEADER) != "1":
            return _json({"error": f"an action needs the header {ACTION_HEADER}: 1"}, 403)
        return None

    @staticmethod
    def origin_ok(scope: Scope) -> bool:
        """False for a POST whose Origin (else Referer) names another host."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        source = headers.get("origin") or headers.get("referer")
        if not source:
            return True
        if source == "null":
            return False
        netloc = urlsplit(source).netloc.lower()
        forwarded = headers.get("x-forwarded-host", "").split(",")[0].strip().lower()
        return netloc in (headers.get("host", "").lower(), forwarded) and bool(netloc)


# -- the outer guard: HTTP Basic on every path, and the Origin of every POST -----------


class _Guard:
    """Every request: the Host check, HTTP Basic, a POST's origin, the security headers."""

    def __init__(
        self,
        app: ASGIApp,
        credentials: bytes | None,
        origin_ok: Callable[[Scope], bool],
        hosts: tuple[str, ...] | None = None,
    ) -> None:
        self.app = app
        self.credentials = credentials
        self.origin_ok = origin_ok
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.hosts is not None and not host_allowed(_host_header(scope), self.hosts):
            await _plain(send, 400, _BAD_HOST, [])
            return
        if self.credentials is not None and not self._authorized(scope):
            await _plain(send, 401, b"Authentication required.\n", _CHALLENGE)
            return
        if scope["method"] == "POST" and not self.origin_ok(scope):
            await _plain(send, 403, b"Cross-site request refused.\n", [])
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.encode(), v.encode())
                    for k, v in _SECURITY_HEADERS.items()
                    if k.encode() not in have
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _authorized(self, scope: Scope) -> bool:
        assert self.credentials is not None
        given = b""
        for key, value in scope["headers"]:
            if key.lower() == b"authorization" and value[:6].lower() == b"basic ":
                try:
                    given = base64.b64decode(value[6:].strip(), validate=True)
                except (binascii.Error, ValueError):
                    given = b""
        # compared in constant time, the whole "user:password" at once
        return hmac.compare_digest(hashlib.sha256(given).digest(), self.credentials)


_CHALLENGE = [(b"www-authenticate", b'Basic realm="skiplock", charset="UTF-8"')]
_BAD_HOST = (
    b"Bad Host header: this dashboard answers only the names it was told (without a "
    b"password: localhost, 127.0.0.1, [::1]).\n"
)
#: the names a dashboard served without a password answers to (``skiplock web``)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def host_patterns(allowed: Iterable[str] | None) -> tuple[str, ...] | None:
    """*allowed_hosts*, checked and lower-cased; None stays None."""
    if allowed is None:
        return None
    if isinstance(allowed, str):
        allowed = allowed.split(",")
    if not isinstance(allowed, Iterable):
        raise ConfigurationError(f"allowed_hosts must be host names, not {allowed!r:.80}")
    names = []
    for name in allowed:
        name = name.strip().lower() if isinstance(name, str) else name
        if not isinstance(name, str) or not _HOST_NAME.fullmatch(name):
            raise ConfigurationError(
                "allowed_hosts takes host names without a port (dash.example.com, "
                f"10.0.0.5, [::1]; .example.com for its subdomains too), not {name!r:.80}"
            )
        names.append(name)
    if not names:
        raise ConfigurationError("allowed_hosts names no host")
    return tuple(names)


_HOST_NAME = re.compile(r"\.?[a-z0-9_]([a-z0-9_.-]{0,252})?|\[[0-9a-f:.]+\]")


def _host_header(scope: Scope) -> str:
    for key, value in scope["headers"]:
        if key.lower() == b"host":
            return str(value.decode("latin-1"))
    return ""


def host_allowed(header: str, patterns: tuple[str, ...]) -> bool:
    """*header* (``name[:port]``) names one of *patterns*."""
    header = header.strip().lower()
    if header.startswith("["):
        name, bracket, rest = header.partition("]")
        name += bracket
        if not bracket or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return False
    else:
        name, colon, port = header.partition(":")
        if colon and not port.isdigit():
            return False
    if not name:
        return False
    name = name.rstrip(".")  # "localhost." is localhost
    return any(
        name == p or (p.startswith(".") and (name.endswith(p) or name == p[1:])) for p in patterns
    )


async def _plain(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    base = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *((k.encode(), v.encode()) for k, v in _SECURITY_HEADERS.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": base + headers})
    await send({"type": "http.response.body", "body": body})


def _credentials(auth: str | tuple[str, str] | None) -> bytes | None:
    """The SHA-256 of ``user:password`` (a comparison of fixed length)."""
    if auth is None:
        return None
    if isinstance(auth, tuple) and len(auth) == 2:
        user, password = auth
    elif isinstance(auth, str) and ":" in auth:
        user, password = auth.split(":", 1)
    else:
        raise ConfigurationError("auth must be 'user:password' or a (user, password) pair")
    if not isinstance(user, str) or not isinstance(password, str) or not user or not password:
        raise ConfigurationError("auth needs a non-empty user and a non-empty password")
    if ":" in user:
        raise ConfigurationError("the auth user may not contain ':' (HTTP Basic splits on it)")
    return hashlib.sha256(f"{user}:{password}".encode()).digest()


# -- helpers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """The ``/jobs`` filters from the query string."""

    queue: str | None
    status: str | None
    task: str | None
    before: int | None

    def query(self) -> dict[str, str]:
        return {
            k: str(v)
            for k, v in (("queue", self.queue), ("status", self.status), ("task", self.task))
            if v is not None
        }


def _filters(request: Request) -> Filters:
    p = request.query_params
    status = p.get("status") or None
    if status is not None and status not in STATUSES:
        raise ConfigurationError(f"status must be one of {', '.join(STATUSES)}")
    return Filters(
        queue=p.get("queue") or None,
        status=status,
        task=p.get("task") or None,
        before=_int(p.get("before"), "before"),
    )


def _int(text: str | None, what: str) -> int | None:
    """A query parameter's ASCII digits (``int()`` takes other scripts' digits and
    ``1_0``); None when absent or empty."""
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        raise ConfigurationError(f"{what} must be a whole number from 0 to {2**63 - 1}")
    return int(text)


class _JobIdText(Convertor[str]):
    """A job id in a path, kept as text so that a too long one is refused with 400."""

    regex = "[0-9]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return str(value)


register_url_convertor("skiplock_job_id", _JobIdText())


def _job_id(request: Request) -> int:
    text = str(request.path_params["job_id"])
    if len(text) > 19:  # 2**63 - 1 has 19 digits
        raise ConfigurationError(f"a job id is a whole number from 1 to {2**63 - 1}")
    return int(text)


def _is_nonce(text: str) -> bool:
    return 16 <= len(text) <= 64 and all(c.isalnum() or c in "-_" for c in text)


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _api_prefix(request: Request) -> str:
    return _base(request) + "/api/"


def _forbidden(request: Request, message: str) -> Response:
    if request.url.path.startswith(_api_prefix(request)):
        return _json({"error": message}, 403)
    return PlainTextResponse(message + "\n", status_code=403)


def _json(value: Any, status: int = 200) -> Response:
    return JSONResponse(value, status_code=status)


def _task(job: Job) -> str | None:
    p = job.payload
    if isinstance(p, dict) and isinstance(p.get("task"), str):
        return str(p["task"])
    return None


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _summary(error: str | None) -> str:
    """An error's last line, for a list."""
    lines = [line for line in (error or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _template(name: str) -> str:
    folder = resources.files(__package__).joinpath("templates")
    return folder.joinpath(name).read_text(encoding="utf-8")
