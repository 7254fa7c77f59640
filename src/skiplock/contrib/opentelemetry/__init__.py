"""OpenTelemetry traces for skiplock (extra ``skiplock[opentelemetry]``).

::

    from skiplock.contrib.opentelemetry import SkiplockInstrumentor

    SkiplockInstrumentor().instrument(tracer_provider=provider)   # uninstrument() undoes it

- Every ``enqueue`` / ``enqueue_many`` (of a Queue, an AsyncQueue, a transaction, a task's
  ``defer`` / ``enqueue``) runs in a PRODUCER span, ``enqueue <queue>``, whose W3C trace
  context (``traceparent``, ``tracestate``: the global propagator's fields) is stored in the
  job's headers.
- Every handler call of every worker of the process runs in a CONSUMER span,
  ``process <queue>``, whose parent is the producer span (the context read from the job's
  headers), through the worker's middleware chain.
- A user of ``q.claim`` continues the trace with :func:`job_span`.

Attributes (OpenTelemetry's messaging conventions): ``messaging.system`` = ``skiplock``,
``messaging.destination.name`` = the queue, ``messaging.operation`` = ``publish`` /
``process`` (with the newer ``messaging.operation.type`` = ``send`` / ``process`` and
``messaging.operation.name`` = ``enqueue`` / ``process``), ``messaging.message.id`` = the job
id (a batch's span has ``messaging.batch.message_count`` instead), and on the consumer span
``messaging.skiplock.attempt`` and, for an App task call, ``messaging.skiplock.task``. A
handler that raises ends its span with status ERROR and the exception recorded.
"""

from ._instrumentor import SkiplockInstrumentor, job_span, job_span_async

__all__ = ["SkiplockInstrumentor", "job_span", "job_span_async"]
