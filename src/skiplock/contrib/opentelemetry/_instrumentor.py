"""The instrumentor: producer spans around enqueues, consumer spans around handlers."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.trace import Span, SpanKind, Tracer

from ... import __version__
from ..._core.checks import ContextHeaders, EnqueueOptions, headers_json
from ..._core.job import Job
from ..._worker import runners
from ...queue import Queue
from ...queue_async import AsyncQueue

__all__ = ["SkiplockInstrumentor", "job_span", "job_span_async"]

SYSTEM = "skiplock"
#: the patched methods: (class, name, async)
_TARGETS: tuple[tuple[type[Any], str, bool], ...] = (
    (Queue, "enqueue", False),
    (Queue, "enqueue_many", False),
    (AsyncQueue, "enqueue", True),
    (AsyncQueue, "enqueue_many", True),
    # a workflow's requests (skiplock.workflow): one job, or a batch
    (Queue, "_enqueue_checked", False),
    (AsyncQueue, "_enqueue_checked", True),
)

#: the tracer of the instrumentation (None: not instrumented; job_span then uses the
#: global tracer provider)
_tracer: Tracer | None = None


def _get_tracer(tracer_provider: trace.TracerProvider | None = None) -> Tracer:
    if tracer_provider is None and _tracer is not None:
        return _tracer
    return trace.get_tracer(__name__, __version__, tracer_provider)


def _consumer_attributes(job: Job) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.destination.name": job.queue,
        "messaging.operation": "process",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.message.id": str(job.id),
        "messaging.skiplock.attempt": job.attempt,
    }
    payload = job.payload
    if isinstance(payload, dict) and isinstance(payload.get("task"), str):
        attributes["messaging.skiplock.task"] = payload["task"]
    return attributes


@contextmanager
def job_span(job: Job, *, tracer_provider: trace.TracerProvider | None = None) -> Iterator[Span]:
    """A CONSUMER span around the handling of *job*, child of the span that enqueued it,
    current in the block. An exception leaving the block sets the span's status to ERROR.

    ::

        for job in q.claim():
            with job_span(job):
                handle(job)
                q.complete(job)
    """
    parent = propagate.extract(job.headers)
    with _get_tracer(tracer_provider).start_as_current_span(
        f"process {job.queue}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=_consumer_attributes(job),
        record_exception=True,
        set_status_on_exception=True,
    ) as span:
        yield span


@asynccontextmanager
async def job_span_async(
    job: Job, *, tracer_provider: trace.TracerProvider | None = None
) -> AsyncIterator[Span]:
    """:func:`job_span` as ``async with``."""
    with job_span(job, tracer_provider=tracer_provider) as span:
        yield span


class _ConsumerLayer:
    """The worker layer: each handler call in a :func:`job_span`."""

    def around(self, job: Job, call_next: Callable[[Job], Any]) -> Any:
        with job_span(job):
            return call_next(job)

    async def around_async(self, job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any:
        with job_span(job):
            return await call_next(job)


def _producer_span(tracer: Tracer, kw: dict[str, Any]) -> Any:
    queue = kw.get("queue", "default")
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.destination.name": str(queue),
        "messaging.operation": "publish",
        "messaging.operation.type": "send",
        "messaging.operation.name": "enqueue",
    }
    return tracer.start_as_current_span(
        f"enqueue {queue}", kind=SpanKind.PRODUCER, attributes=attributes
    )


def _with_trace_context(kw: dict[str, Any]) -> None:
    """Add the current trace context to a copy of the ``headers`` keyword."""
    given = kw.get("headers")
    if given is not None and not isinstance(given, Mapping):
        return
    context: dict[str, str] = {}
    propagate.inject(context)
    kw["headers"] = ContextHeaders(given or {}, context)


def _ended(span: Span, value: Any, batch: bool) -> None:
    if batch:
        span.set_attribute("messaging.batch.message_count", len(value))
    else:
        span.set_attribute("messaging.message.id", str(value))


def _checked_with_trace_context(options: EnqueueOptions) -> EnqueueOptions:
    kw: dict[str, Any] = {"headers": json.loads(options.headers) if options.headers else None}
    _with_trace_context(kw)
    return replace(options, headers=headers_json(kw["headers"]))


def _wrap_checked(original: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    """The wrapper of ``_enqueue_checked``: a span per request."""
    if is_async:

        @functools.wraps(original)
        async def enqueue_checked_async(
            self: Any, payloads: list[Any], options: EnqueueOptions, conn: Any
        ) -> list[int]:
            with _producer_span(_get_tracer(), {"queue": options.queue}) as span:
                ids: list[int] = await original(
                    self, payloads, _checked_with_trace_context(options), conn
                )
                _ended(span, ids[0] if len(ids) == 1 else ids, len(ids) != 1)
                return ids

        return enqueue_checked_async

    @functools.wraps(original)
    def enqueue_checked(
        self: Any, payloads: list[Any], options: EnqueueOptions, conn: Any
    ) -> list[int]:
        with _producer_span(_get_tracer(), {"queue": options.queue}) as span:
            ids: list[int] = original(self, payloads, _checked_with_trace_context(options), conn)
            _ended(span, ids[0] if len(ids) == 1 else ids, len(ids) != 1)
            return ids

    return enqueue_checked


def _wrap(original: Callable[..., Any], is_async: bool, batch: bool) -> Callable[..., Any]:
    if is_async:

        @functools.wraps(original)
        async def enqueue_async(self: Any, *args: Any, **kw: Any) -> Any:
            with _producer_span(_get_tracer(), kw) as span:
                _with_trace_context(kw)
                value = await original(self, *args, **kw)
                _ended(span, value, batch)
                return value

        return enqueue_async

    @functools.wraps(original)
    def enqueue(self: Any, *args: Any, **kw: Any) -> Any:
        with _producer_span(_get_tracer(), kw) as span:
            _with_trace_context(kw)
            value = original(self, *args, **kw)
            _ended(span, value, batch)
            return value

    return enqueue


class SkiplockInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Traces enqueues and handler calls: ``instrument(tracer_provider=...)`` (default: the
    global provider) and ``uninstrument()``. One per process.
    """

    _originals: dict[tuple[type[Any], str], Callable[..., Any]]
    _layer: _ConsumerLayer | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("skiplock >= 0.1",)

    def _instrument(self, **kwargs: Any) -> None:
        global _tracer
        _tracer = trace.get_tracer(__name__, __version__, kwargs.get("tracer_provider"))
        self._originals = {}
        for cls, name, is_async in _TARGETS:
            original = cls.__dict__[name]
            self._originals[(cls, name)] = original
            if name == "_enqueue_checked":
                setattr(cls, name, _wrap_checked(original, is_async))
            else:
                setattr(cls, name, _wrap(original, is_async, name == "enqueue_many"))
        self._layer = _ConsumerLayer()
        runners.add_instrument(self._layer)

    def _uninstrument(self, **kwargs: Any) -> None:
        global _tracer
        for (cls, name), original in getattr(self, "_originals", {}).items():
            setattr(cls, name, original)
        self._originals = {}
        if self._layer is not None:
            runners.remove_instrument(self._layer)
            self._layer = None
        _tracer = None
