"""OpenTelemetry: the enqueue's PRODUCER span and the handler's CONSUMER span are one
trace, the consumer a child of the producer, with the messaging attributes; on every
backend, both worker kinds, App tasks (sync and async) and plain claim users."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

import skiplock
from skiplock import Job, Worker

from .conftest import drained, wait_until

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from skiplock.contrib.opentelemetry import SkiplockInstrumentor, job_span


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    SkiplockInstrumentor().instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        SkiplockInstrumentor().uninstrument()


def by_kind(exporter: InMemorySpanExporter, kind: SpanKind) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind == kind]


def assert_child(consumer: ReadableSpan, producer: ReadableSpan) -> None:
    assert consumer.context is not None and producer.context is not None
    assert consumer.context.trace_id == producer.context.trace_id
    assert consumer.parent is not None and consumer.parent.span_id == producer.context.span_id


def test_the_handler_span_is_a_child_of_the_enqueue_span(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
    spans: InMemorySpanExporter,
) -> None:
    tracer = trace.get_tracer("test", tracer_provider=TracerProvider())
    with tracer.start_as_current_span("web request") as request:
        ok = queue.enqueue({"ok": True}, queue="t", headers={"request-id": "r1"})
        bad = queue.enqueue({"ok": False}, queue="t", max_attempts=1)
    record = queue.get(ok)
    assert record is not None and record.headers["request-id"] == "r1"
    assert record.headers["traceparent"].startswith("00-")

    def handler(job: Job) -> None:
        if not job.payload["ok"]:
            raise ValueError("no luck")

    workers.append(worker_cls(queue, handler, queues=["t"], poll_interval=0.05).start())
    wait_until(lambda: drained(queue), what="both jobs to end")
    wait_until(lambda: len(by_kind(spans, SpanKind.CONSUMER)) == 2, what="two consumer spans")
    producers = {s.attributes["messaging.message.id"]: s for s in by_kind(spans, SpanKind.PRODUCER)}
    consumers = {s.attributes["messaging.message.id"]: s for s in by_kind(spans, SpanKind.CONSUMER)}
    assert set(producers) == set(consumers) == {str(ok), str(bad)}
    for job_id in (ok, bad):
        producer, consumer = producers[str(job_id)], consumers[str(job_id)]
        assert producer.parent is not None
        assert producer.parent.span_id == request.get_span_context().span_id
        assert_child(consumer, producer)
        assert producer.name == "enqueue t" and consumer.name == "process t"
        assert dict(producer.attributes or {}) == {
            "messaging.system": "skiplock",
            "messaging.destination.name": "t",
            "messaging.operation": "publish",
            "messaging.operation.type": "send",
            "messaging.operation.name": "enqueue",
            "messaging.message.id": str(job_id),
        }
        attributes = consumer.attributes or {}
        assert attributes["messaging.system"] == "skiplock"
        assert attributes["messaging.destination.name"] == "t"
        assert attributes["messaging.operation"] == "process"
        assert attributes["messaging.skiplock.attempt"] == 1
    assert consumers[str(ok)].status.status_code == StatusCode.UNSET
    failed = consumers[str(bad)]
    assert failed.status.status_code == StatusCode.ERROR
    [event] = failed.events
    assert event.name == "exception"
    assert (event.attributes or {})["exception.type"] == "ValueError"


def test_app_tasks_sync_and_async_and_a_transaction(
    queue: skiplock.Queue, url: str, spans: InMemorySpanExporter
) -> None:
    app = skiplock.App(url, table=queue.table.name)

    @app.task(name="hello", queue="apps")
    async def hello(who: str) -> str:
        return who

    async def main() -> list[int]:
        ids = [await hello.defer_async("async")]
        await app.async_queue.close()
        ids.append(hello.defer("sync"))
        with queue.transaction() as tx:
            ids.append(tx.enqueue({"task": "hello", "args": ["tx"]}, queue="apps"))
        async with app.async_worker(poll_interval=0.05):
            for _ in range(200):
                if drained(queue):
                    break
                await asyncio.sleep(0.05)
        return ids

    ids = asyncio.run(main())
    wait_until(lambda: len(by_kind(spans, SpanKind.CONSUMER)) == 3, what="three consumer spans")
    producers = {s.attributes["messaging.message.id"]: s for s in by_kind(spans, SpanKind.PRODUCER)}
    consumers = {s.attributes["messaging.message.id"]: s for s in by_kind(spans, SpanKind.CONSUMER)}
    assert set(producers) == set(consumers) == {str(i) for i in ids}
    for job_id in ids:
        assert_child(consumers[str(job_id)], producers[str(job_id)])
        assert consumers[str(job_id)].attributes["messaging.skiplock.task"] == "hello"


def test_a_claim_user_continues_the_trace_with_job_span(
    queue: skiplock.Queue, spans: InMemorySpanExporter
) -> None:
    ids = queue.enqueue_many(payloads=["a", "b"], headers={"k": "v"})  # by keyword too
    [producer] = by_kind(spans, SpanKind.PRODUCER)
    assert producer.attributes["messaging.batch.message_count"] == 2
    for job in queue.claim(limit=2):
        assert job.headers["k"] == "v"
        with job_span(job):
            queue.complete(job)
    with (
        pytest.raises(RuntimeError),
        job_span(Job(0, "q", None, 0, "running", 1, 1, None, None, "k")),
    ):
        raise RuntimeError("boom")
    consumers = by_kind(spans, SpanKind.CONSUMER)
    assert len(consumers) == 3
    for c in consumers[:2]:
        assert_child(c, producer)
    assert {c.attributes["messaging.message.id"] for c in consumers[:2]} == {str(i) for i in ids}
    assert consumers[2].parent is None  # no headers: a trace of its own
    assert consumers[2].status.status_code == StatusCode.ERROR


def test_uninstrument_undoes_it(queue: skiplock.Queue) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    original = skiplock.Queue.enqueue
    SkiplockInstrumentor().instrument(tracer_provider=provider)
    assert skiplock.Queue.enqueue is not original
    SkiplockInstrumentor().uninstrument()
    assert skiplock.Queue.enqueue is original
    job_id = queue.enqueue("x")
    assert (queue.get(job_id) or pytest.fail()).headers == {}
    ran: list[int] = []
    worker = Worker(queue, lambda job: ran.append(job.id), poll_interval=0.05).start()
    wait_until(lambda: ran == [job_id], what="the job to run")
    worker.stop(timeout=15)
    assert exporter.get_finished_spans() == ()


def test_a_worker_already_running_is_traced_from_its_next_job(queue: skiplock.Queue) -> None:
    ran: list[int] = []
    worker = Worker(queue, lambda job: ran.append(job.id), poll_interval=0.05).start()
    try:
        first = queue.enqueue("before")
        wait_until(lambda: first in ran, what="the first job")
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        SkiplockInstrumentor().instrument(tracer_provider=provider)
        try:
            second = queue.enqueue("after")
            wait_until(lambda: second in ran, what="the second job")
        finally:
            SkiplockInstrumentor().uninstrument()
    finally:
        worker.stop(timeout=15)
    consumers = by_kind(exporter, SpanKind.CONSUMER)
    assert [c.attributes["messaging.message.id"] for c in consumers] == [str(second)]
    [producer] = by_kind(exporter, SpanKind.PRODUCER)
    assert_child(consumers[0], producer)


def test_a_workflows_jobs_carry_the_trace_of_its_enqueue(
    queue: skiplock.Queue, spans: InMemorySpanExporter
) -> None:
    """A workflow's requests (one job, or a batch: skiplock.workflow) are traced as
    enqueue and enqueue_many are: a PRODUCER span each, the trace context in every job."""
    app = skiplock.App(queue)

    @app.task
    def add(x: int, y: int = 0) -> int:
        return x + y

    tracer = trace.get_tracer("test", tracer_provider=TracerProvider())
    flow = skiplock.chain(add.s(1), skiplock.group(add.s(2), add.s(3)), add.s())
    with tracer.start_as_current_span("web request") as request:
        handle = flow.enqueue()
    producers = by_kind(spans, SpanKind.PRODUCER)
    assert len(producers) == 3  # the first step, the group's batch, the last step
    trace_id = request.get_span_context().trace_id
    assert all(p.context is not None and p.context.trace_id == trace_id for p in producers)
    assert [(p.attributes or {}).get("messaging.batch.message_count") for p in producers] == [
        None,
        2,
        None,
    ]
    for job_id in handle.ids:
        job = queue.get(job_id)
        assert job is not None and job.headers["traceparent"].split("-")[1] == f"{trace_id:032x}"


class _HugePropagator:
    """A propagator whose field is larger than any trace context should be."""

    def inject(self, carrier: Any, context: Any = None, setter: Any = None) -> None:
        carrier["x-huge-context"] = "c" * 20_000

    def extract(self, carrier: Any, context: Any = None, getter: Any = None) -> Any:
        from opentelemetry import context as otel_context

        return otel_context.get_current() if context is None else context

    @property
    def fields(self) -> set[str]:
        return {"x-huge-context"}


def _full_headers() -> dict[str, str]:
    """Headers of exactly the documented 8 KiB (8192 bytes as JSON)."""
    headers = {"big": "x" * (8192 - len('{"big":""}'))}
    assert len(json.dumps(headers, separators=(",", ":")).encode()) == 8192
    return headers


def test_the_trace_context_does_not_count_against_the_headers_budget(
    queue: skiplock.Queue, url: str, spans: InMemorySpanExporter
) -> None:
    """Headers that fit untraced fit traced: the traceparent the instrumentor adds is not
    the caller's, on every way to enqueue (one job, a batch, async, an App task)."""
    full = _full_headers()
    app = skiplock.App(url, table=queue.table.name)

    @app.task(name="full", queue="h")
    def noop() -> None:
        return None

    tracer = trace.get_tracer("test", tracer_provider=TracerProvider())
    with tracer.start_as_current_span("web request") as request:
        ids = [queue.enqueue({"n": 1}, queue="h", headers=full)]
        ids += queue.enqueue_many([{"n": 2}, {"n": 3}], queue="h", headers=full)
        ids.append(noop.enqueue([], {}, headers=full))

        async def enqueue_async() -> int:
            try:
                return await app.async_queue.enqueue({"n": 4}, queue="h", headers=full)
            finally:
                await app.async_queue.close()

        ids.append(asyncio.run(enqueue_async()))
        # one byte more is refused, as untraced, with the caller's size in the message
        over = {"big": full["big"] + "x"}
        with pytest.raises(skiplock.ConfigurationError, match="headers take 8193 bytes"):
            queue.enqueue({"n": 5}, queue="h", headers=over)
        # the largest baggage W3C's propagator sends (8192 bytes) fits beside full headers
        from opentelemetry import baggage, context, propagate

        entries = [(f"k{i}", "b" * 4000) for i in range(2)]
        ctx = context.get_current()
        for name, text in entries:
            ctx = baggage.set_baggage(name, text, ctx)
        token = context.attach(ctx)
        try:
            ids.append(queue.enqueue({"n": 6}, queue="h", headers=full))
        finally:
            context.detach(token)
        assert len(queue.get(ids[-1]).headers["baggage"]) > 8000  # type: ignore[union-attr]
        # what a propagator adds is bounded too: one of its own past every limit
        before = propagate.get_global_textmap()
        propagate.set_global_textmap(_HugePropagator())
        try:
            with pytest.raises(skiplock.ConfigurationError, match="trace context"):
                queue.enqueue({"n": 7}, queue="h", headers={"a": "b"})
        finally:
            propagate.set_global_textmap(before)
    trace_id = f"{request.get_span_context().trace_id:032x}"
    app.queue.close()
    assert len(ids) == 6
    for job_id in ids:
        job = queue.get(job_id)
        assert job is not None and job.headers["big"] == full["big"]
        assert job.headers["traceparent"].split("-")[1] == trace_id
    assert queue.stats().pending == 6
